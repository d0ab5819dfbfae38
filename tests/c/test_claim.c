/*
 * test_claim.c: the calls that hand out leases (claim, claim_wait, claim_many,
 * ack_and_claim, ack_and_claim_many), the lease they hand out (its lengths, what another
 * program stored, its attempts against max_attempts), and what ends a wait: a commit in this
 * process or another, a lease's or a park's end, a cancel, an interrupt. What they do to the
 * queue is the Rust contract's; here, each call's mapping: its outputs, who owns what, its
 * statuses and bad arguments, and waits ended from other threads and processes. Timings are
 * loose (a wait of 30 s ends "well under" it), for valgrind's sake.
 */
#include "harel_test.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>

/* The lease's lengths: a multi-byte group id and an event with spaces handed out whole,
 * their lengths in bytes, each NUL-terminated, the library's copies. */
static void the_lease_lengths(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  const char group[] = "gr\xc3\xa9-\xe6\x97\xa5";                      /* 9 bytes */
  const char event[] = " {\"text\": \"h\xc3\xa9llo \xf0\x9f\x8e\x89\"} "; /* as published */
  harel_lease *l;
  if (t == NULL) return;
  EXPECT_STATUS(harel_transport_publish(t, group, event, 0, NULL, NULL), HAREL_OK);
  l = CLAIM(t, "worker-7", event);
  if (l != NULL) {
    /* the bytes, then a NUL (compared only when the length is right) */
    if (EXPECT(l->group_id_len == strlen(group)))
      EXPECT(memcmp(l->group_id, group, sizeof group) == 0);
    if (EXPECT(l->event_len == strlen(event))) EXPECT(memcmp(l->event, event, sizeof event) == 0);
    EXPECT_STR(l->worker_id, "worker-7");
    EXPECT(l->group_id != group && l->event != event); /* the library's copies */
  }
  ACK(t, l);
  harel_transport_close(t);
}

/* A group id and an event with NUL bytes, written into the file by another program:
 * claimed whole (the lengths give every byte), acked (the group id read by its length, not
 * up to its first NUL), and gone. The 0.1 library cut both at the NUL: its ack was
 * HAREL_ERR_LEASE_LOST and the message stayed. */
static const char WRITE_NUL_BYTES[] =
    "import sqlite3, sys\n"
    "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "c.execute('BEGIN IMMEDIATE')\n"
    "c.execute('INSERT INTO harel_transport_groups (group_id, last_claimed_at, priority, '\n"
    "          'routing_key) VALUES (?, 0.0, 0, NULL)', ('a\\0b',))\n"
    "c.execute('INSERT INTO harel_transport_messages (group_id, event) VALUES (?, ?)',\n"
    "          ('a\\0b', '{\"k\":\"x\"}\\0tail'))\n"
    "c.execute('COMMIT')\n"
    "print('written', flush=True)\n";

static const char COUNT_ROWS[] =
    "import sqlite3, sys\n"
    "c = sqlite3.connect(sys.argv[1])\n"
    "m = c.execute('SELECT count(*) FROM harel_transport_messages').fetchone()[0]\n"
    "g = c.execute('SELECT count(*) FROM harel_transport_groups').fetchone()[0]\n"
    "print(m, g, flush=True)\n";

static void nul_bytes_written_by_another_process(void) {
  double now = T0;
  char path[300], line[64];
  static const char group[] = "a\0b";             /* 3 bytes and the NUL */
  static const char event[] = "{\"k\":\"x\"}\0tail"; /* 14 bytes and the NUL */
  harel_transport *t = open_at(new_path(path, sizeof path), &now); /* makes the schema */
  harel_lease *l = NULL;
  harel_error *e = NULL;
  if (t == NULL) return;
  if (!EXPECT(python_run(WRITE_NUL_BYTES, path, line, sizeof line) &&
              strcmp(line, "written\n") == 0)) {
    harel_transport_close(t);
    return;
  }
  EXPECT_CALL(harel_transport_claim(t, "w", VIS, 0, NULL, 0, &l, &e), &e, HAREL_OK);
  if (EXPECT(l != NULL)) {
    /* every byte, then the NUL (compared only when the length is right) */
    if (EXPECT(l->group_id_len == sizeof group - 1))
      EXPECT(memcmp(l->group_id, group, sizeof group) == 0);
    if (EXPECT(l->event_len == sizeof event - 1))
      EXPECT(memcmp(l->event, event, sizeof event) == 0);
    EXPECT_STR(l->worker_id, "w");
    EXPECT_CALL(harel_transport_ack(t, l, &e), &e, HAREL_OK);
  }
  harel_lease_free(l);
  l = NOT_SET_LEASE;
  EXPECT_CALL(harel_transport_claim(t, "w", VIS, 0, NULL, 0, &l, &e), &e, HAREL_EMPTY);
  EXPECT(l == NULL);
  harel_transport_close(t);
  /* the message and its group row are gone from the file */
  EXPECT(python_run(COUNT_ROWS, path, line, sizeof line) && strcmp(line, "0 0\n") == 0);
}

/* Text another program stored that is not UTF-8, an event and a group id: the claim that
 * meets such a head moves it to the dead letters, with a reason that says why, and goes on
 * with the next deliverable message, so the queue is never blocked behind it. (Earlier
 * ABI 1 builds failed that claim with HAREL_ERR_DATABASE, and before that panicked,
 * HAREL_ERR_PANIC, keeping the write transaction open.) The dead letters show the bad
 * bytes as U+FFFD. */
static const char WRITE_INVALID_UTF8[] =
    "import sqlite3, sys\n"
    "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "c.execute('BEGIN IMMEDIATE')\n"
    "for g, e in ((b'bad', b'\\xff{}'), (b'\\xfe', b'{}')):\n"
    "    c.execute('INSERT INTO harel_transport_groups (group_id, last_claimed_at, priority, '\n"
    "              'routing_key) VALUES (CAST(? AS TEXT), 0.0, 0, NULL)', (g,))\n"
    "    c.execute('INSERT INTO harel_transport_messages (group_id, event) '\n"
    "              'VALUES (CAST(? AS TEXT), CAST(? AS TEXT))', (g, e))\n"
    "c.execute('COMMIT')\n"
    "print('written', flush=True)\n";

static void invalid_utf8_written_by_another_process(void) {
  double now = T0;
  char path[300], line[64];
  static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */
  harel_transport *t = open_at(new_path(path, sizeof path), &now);
  harel_lease *l = NULL;
  harel_dead_page *dead = NULL;
  harel_stats *s = NULL;
  harel_error *e = NULL;
  if (t == NULL) return;
  if (!EXPECT(python_run(WRITE_INVALID_UTF8, path, line, sizeof line) &&
              strcmp(line, "written\n") == 0)) {
    harel_transport_close(t);
    return;
  }
  /* a good message in another group, published after the two bad heads */
  PUBLISH(t, "g", "\"good\"");
  now += 1;
  EXPECT_CALL(harel_transport_claim(t, "w", VIS, 0, NULL, 0, &l, &e), &e, HAREL_OK);
  if (EXPECT(l != NULL)) {
    EXPECT_STR(l->group_id, "g");
    EXPECT_STR(l->event, "\"good\"");
  }
  ACK(t, l);
  CLAIM_EMPTY(t);
  /* both bad heads are dead letters, in their order, their groups gone */
  EXPECT_CALL(harel_transport_dead_letters(t, NULL, NULL, 10, &dead, &e), &e, HAREL_OK);
  if (EXPECT(dead != NULL) && EXPECT(dead->n_letters == 2)) {
    const harel_dead_letter *bad_event = &dead->letters[0], *bad_group = &dead->letters[1];
    EXPECT(bad_event->seq < bad_group->seq);
    EXPECT(bad_event->group_id_len == 3 && memcmp(bad_event->group_id, "bad", 4) == 0);
    if (EXPECT(bad_event->event_len == 5)) {
      EXPECT(memcmp(bad_event->event, replacement, 3) == 0);
      EXPECT_STR(bad_event->event + 3, "{}");
    }
    EXPECT(strstr(bad_event->reason, "UTF-8") != NULL && strstr(bad_event->reason, "event") != NULL);
    EXPECT(bad_event->attempts == 0 && bad_event->last_worker == NULL);
    EXPECT(bad_event->dead_at == T0 + 1);
    if (EXPECT(bad_group->group_id_len == 3)) EXPECT_STR(bad_group->group_id, replacement);
    EXPECT(bad_group->event_len == 2 && strcmp(bad_group->event, "{}") == 0);
    EXPECT(strstr(bad_group->reason, "UTF-8") != NULL &&
           strstr(bad_group->reason, "group_id") != NULL);
    EXPECT(dead->next_cursor == NULL);
  }
  harel_dead_page_free(dead);
  EXPECT_CALL(harel_transport_stats(t, &s, &e), &e, HAREL_OK);
  if (EXPECT(s != NULL)) EXPECT(s->messages == 0 && s->groups == 0 && s->dead == 2);
  harel_stats_free(s);
  /* and the queue works on */
  PUBLISH(t, "h", "1");
  ACK(t, CLAIM(t, "w", "1"));
  CLAIM_EMPTY(t);
  harel_transport_close(t);
}

/* lease.attempts counts every claim, this one included; max_attempts (an option) moves a
 * message that would be handed out once more to the dead letters, and its group goes on. */
static void attempts_and_max_attempts(void) {
  double now = T0;
  harel_options *o = harel_options_new();
  harel_transport *t = NULL;
  harel_lease *l;
  harel_dead_page *dead;
  harel_error *e = NULL;
  int n;
  if (!EXPECT(o != NULL)) return;
  EXPECT_CALL(harel_options_set_clock(o, test_clock, &now, &e), &e, HAREL_OK);
  /* 0, the default, is no limit; the largest value is taken too */
  EXPECT_CALL(harel_options_set_max_attempts(o, 0, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_max_attempts(o, UINT32_MAX, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_max_attempts(o, 0, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_open(":memory:", o, &t, &e), &e, HAREL_OK);
  if (t != NULL) {
    PUBLISH(t, "g", "\"m\"");
    for (n = 1; n <= 5; n++) { /* no limit: handed out every time, counted */
      l = CLAIM(t, "w", "\"m\"");
      if (l == NULL) break;
      EXPECT(l->attempts == n);
      EXPECT_STATUS(harel_transport_nack(t, l, 0.0, NULL), HAREL_OK);
      harel_lease_free(l);
    }
    ACK(t, CLAIM(t, "w", "\"m\""));
    harel_transport_close(t);
  }
  /* max_attempts 3: the fourth claim moves the message out and serves the next */
  t = NULL;
  EXPECT_CALL(harel_options_set_max_attempts(o, 3, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_open(":memory:", o, &t, &e), &e, HAREL_OK);
  harel_options_free(o);
  if (t == NULL) return;
  PUBLISH(t, "g", "\"poison\"");
  PUBLISH(t, "g", "\"next\"");
  for (n = 1; n <= 3; n++) {
    l = CLAIM(t, n == 3 ? "w3" : "w", "\"poison\"");
    if (l == NULL) break;
    EXPECT(l->attempts == n);
    if (n < 3) EXPECT_STATUS(harel_transport_nack(t, l, 0.0, NULL), HAREL_OK);
    harel_lease_free(l); /* the third: w3 dies holding it */
  }
  now += VIS + 1;
  l = CLAIM(t, "w", "\"next\"");
  if (l != NULL) EXPECT(l->attempts == 1);
  ACK(t, l);
  dead = DEAD_PAGE(t, "g", NULL, 10);
  if (dead != NULL && EXPECT(dead->n_letters == 1)) {
    const harel_dead_letter *d = &dead->letters[0];
    EXPECT_STR(d->event, "\"poison\"");
    EXPECT(d->attempts == 3);
    EXPECT_STR(d->last_worker, "w3");
    EXPECT(strstr(d->reason, "max_attempts is 3") != NULL);
    EXPECT(d->dead_at == now);
  }
  harel_dead_page_free(dead);
  CLAIM_EMPTY(t);
  harel_transport_close(t);
}

/* HAREL_EMPTY with *out NULL (*n_out 0, leases_out not written) when nothing is
 * deliverable: claim, ack_and_claim, claim_wait, claim_many and ack_and_claim_many. */
static void status_empty(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *l = NOT_SET_LEASE, *held, *got[2] = {NOT_SET_LEASE, NOT_SET_LEASE};
  const harel_lease *done[1];
  harel_status outcomes[1] = {HAREL_ERR_PANIC};
  harel_error *e = NULL;
  size_t n = NOT_SET_COUNT;
  if (t == NULL) return;
  EXPECT_STATUS(harel_transport_claim(t, "w", VIS, 0, NULL, 0, &l, NULL), HAREL_EMPTY);
  EXPECT(l == NULL);
  l = NOT_SET_LEASE;
  EXPECT_CALL(harel_transport_claim(t, "w", VIS, 0, NULL, 0, &l, &e), &e, HAREL_EMPTY);
  EXPECT(l == NULL);
  PUBLISH(t, "g", "1");
  held = CLAIM(t, "w", "1");
  if (held != NULL) {
    l = NOT_SET_LEASE;
    EXPECT_CALL(harel_transport_ack_and_claim(t, held, "w", VIS, 0, NULL, 0, &l, &e), &e,
                HAREL_EMPTY);
    EXPECT(l == NULL);
  }
  harel_lease_free(held);
  /* the worker loop's: nothing within the wait (0: one look), *out NULL, *n_out 0 */
  l = NOT_SET_LEASE;
  EXPECT_CALL(harel_transport_claim_wait(t, "w", VIS, 0, NULL, 0, 0.0, NULL, &l, &e), &e,
              HAREL_EMPTY);
  EXPECT(l == NULL);
  EXPECT_CALL(harel_transport_claim_many(t, "w", VIS, 0, NULL, 0, 2, 0.0, NULL, got, &n, &e), &e,
              HAREL_EMPTY);
  EXPECT(n == 0 && got[0] == NOT_SET_LEASE && got[1] == NOT_SET_LEASE);
  PUBLISH(t, "h", "2");
  held = CLAIM(t, "w", "2");
  if (held != NULL) {
    done[0] = held;
    n = NOT_SET_COUNT;
    EXPECT_CALL(harel_transport_ack_and_claim_many(t, done, 1, outcomes, "w", VIS, 0, NULL, 0, 2,
                                                   got, &n, &e),
                &e, HAREL_EMPTY);
    EXPECT(outcomes[0] == HAREL_OK && n == 0 && got[0] == NOT_SET_LEASE); /* acked */
  }
  harel_lease_free(held);
  CLAIM_EMPTY(t);
  harel_transport_close(t);
}

/* claim refuses a NULL t or out, a bad worker id (NULL, empty, reserved, not UTF-8), a bad
 * list of routing keys, and a visibility or a priority floor out of range: *out NULL, the
 * fixture unchanged. */
static void bad_arguments_of_claim(void) {
  const char *const with_null[] = {"k", NULL};
  const char *const with_empty[] = {"k", ""};
  fixture fx;
  size_t i;
  if (!fixture_open(&fx)) return;
  CLAIM_BAD("t", NULL, "w", VIS, 0, NULL, 0);
  CLAIM_BAD("worker_id", fx.t, NULL, VIS, 0, NULL, 0);
  CLAIM_BAD("worker_id", fx.t, "", VIS, 0, NULL, 0);
  CLAIM_BAD("worker_id", fx.t, "__parked__", VIS, 0, NULL, 0);
  CLAIM_BAD("worker_id", fx.t, "__delayed__", VIS, 0, NULL, 0);
  CLAIM_BAD("routing_keys", fx.t, "w", VIS, 0, NULL, 1);
  CLAIM_BAD("routing_keys", fx.t, "w", VIS, 0, NULL, SIZE_MAX);
  CLAIM_BAD("routing_keys", fx.t, "w", VIS, 0, with_null, 2);
  CLAIM_BAD("routing_keys", fx.t, "w", VIS, 0, with_empty, 2);
  EXPECT_BAD("out", harel_transport_claim(fx.t, "w", VIS, 0, NULL, 0, NULL, ERR));
  for (i = 0; i < N_OF(BAD_VISIBILITY); i++)
    CLAIM_BAD("visibility", fx.t, "w", BAD_VISIBILITY[i], 0, NULL, 0);
  for (i = 0; i < N_OF(BAD_MIN_PRIORITY); i++)
    CLAIM_BAD("min_priority", fx.t, "w", VIS, BAD_MIN_PRIORITY[i], NULL, 0);
  for (i = 0; i < N_BAD_UTF8; i++) {
    const char *const keys[] = {"k", BAD_UTF8[i]};
    CLAIM_BAD("worker_id", fx.t, BAD_UTF8[i], VIS, 0, NULL, 0);
    CLAIM_BAD("routing_keys", fx.t, "w", VIS, 0, keys, 2);
  }
  FIXTURE_CLOSE(&fx);
}

/* ack_and_claim refuses a bad lease as ack does, and a bad claim as claim does: *out NULL,
 * nothing acked (the fixture unchanged). */
static void bad_arguments_of_ack_and_claim(void) {
  const char *const with_null[] = {"k", NULL};
  fixture fx;
  size_t i;
  if (!fixture_open(&fx)) return;
  ACK_AND_CLAIM_BAD("t", NULL, fx.held, "w1", VIS, 0, NULL, 0);
#define ACK_AND_CLAIM_LEASE_BAD(parameter) \
  ACK_AND_CLAIM_BAD(parameter, fx.t, bad, "w1", VIS, 0, NULL, 0)
  EACH_BAD_LEASE(fx, ACK_AND_CLAIM_LEASE_BAD);
#undef ACK_AND_CLAIM_LEASE_BAD
  ACK_AND_CLAIM_BAD("worker_id", fx.t, fx.held, NULL, VIS, 0, NULL, 0);
  ACK_AND_CLAIM_BAD("worker_id", fx.t, fx.held, "", VIS, 0, NULL, 0);
  ACK_AND_CLAIM_BAD("worker_id", fx.t, fx.held, "__parked__", VIS, 0, NULL, 0);
  ACK_AND_CLAIM_BAD("worker_id", fx.t, fx.held, "__delayed__", VIS, 0, NULL, 0);
  ACK_AND_CLAIM_BAD("routing_keys", fx.t, fx.held, "w1", VIS, 0, NULL, 3);
  ACK_AND_CLAIM_BAD("routing_keys", fx.t, fx.held, "w1", VIS, 0, with_null, 2);
  EXPECT_BAD("out",
             harel_transport_ack_and_claim(fx.t, fx.held, "w1", VIS, 0, NULL, 0, NULL, ERR));
  for (i = 0; i < N_OF(BAD_VISIBILITY); i++)
    ACK_AND_CLAIM_BAD("visibility", fx.t, fx.held, "w1", BAD_VISIBILITY[i], 0, NULL, 0);
  for (i = 0; i < N_OF(BAD_MIN_PRIORITY); i++)
    ACK_AND_CLAIM_BAD("min_priority", fx.t, fx.held, "w1", VIS, BAD_MIN_PRIORITY[i], NULL, 0);
  for (i = 0; i < N_BAD_UTF8; i++) {
    const char *const keys[] = {BAD_UTF8[i]};
    ACK_AND_CLAIM_BAD("worker_id", fx.t, fx.held, BAD_UTF8[i], VIS, 0, NULL, 0);
    ACK_AND_CLAIM_BAD("routing_keys", fx.t, fx.held, "w1", VIS, 0, keys, 1);
  }
  FIXTURE_CLOSE(&fx);
}

/* Entries of a leases_out the call did not write become NULL, so the test may free them
 * all; how many it had written past `n` (0 when the call kept to its *n_out). */
static size_t unwritten_to_null(harel_lease **leases, size_t size, size_t n) {
  size_t i, written_past = 0;
  for (i = 0; i < size; i++) {
    if (leases[i] == NOT_SET_LEASE) leases[i] = NULL;
    else if (i >= n) written_past++;
  }
  return written_past;
}

/* The same message, leased to the same worker until the same end, on two queues. */
#define SAME_LEASE(got, want) same_lease((got), (want), __FILE__, __LINE__)
static void same_lease(const harel_lease *got, const harel_lease *want, const char *file,
                       int line) {
  if (got == NULL || want == NULL) {
    test_fail(file, line, "a lease is missing (%s)", got == NULL ? "claim_many's" : "claim's");
    return;
  }
  if (got->seq != want->seq || got->group_id_len != want->group_id_len ||
      strcmp(got->group_id, want->group_id) != 0 || strcmp(got->event, want->event) != 0 ||
      got->event_len != want->event_len || strcmp(got->worker_id, want->worker_id) != 0 ||
      got->lock_expiry != want->lock_expiry || got->attempts != want->attempts)
    test_fail(file, line, "claim_many gave %s #%lld, claim gave %s #%lld", got->group_id,
              (long long)got->seq, want->group_id, (long long)want->seq);
}

/* claim_wait: with nothing deliverable, wait 0 looks once and a wait returns HAREL_EMPTY
 * once it has passed; with something, a lease at once, by the claim's arguments. */
static void claim_wait_maps_the_claim(void) {
  double now = T0, started;
  const char *const keys[] = {"k"};
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *l = NOT_SET_LEASE;
  harel_error *e = NULL;
  if (t == NULL) return;
  /* nothing deliverable: wait 0 looks once; a wait returns HAREL_EMPTY once it has passed */
  EXPECT_CALL(harel_transport_claim_wait(t, "w", VIS, 0, NULL, 0, 0.0, NULL, &l, &e), &e,
              HAREL_EMPTY);
  EXPECT(l == NULL);
  l = NOT_SET_LEASE;
  started = monotonic();
  EXPECT_CALL(harel_transport_claim_wait(t, "w", VIS, 0, NULL, 0, 0.3, NULL, &l, &e), &e,
              HAREL_EMPTY);
  EXPECT(l == NULL && monotonic() - started >= 0.25);
  /* something deliverable: a lease at once, by the claim's arguments */
  PUBLISH(t, "plain", "1");
  EXPECT_STATUS(harel_transport_publish(t, "keyed", "2", 1, "k", NULL), HAREL_OK);
  started = monotonic();
  EXPECT_CALL(harel_transport_claim_wait(t, "w1", VIS, 1, keys, 1, 30.0, NULL, &l, &e), &e,
              HAREL_OK);
  EXPECT(monotonic() - started < 15.0);
  if (EXPECT(l != NULL)) {
    EXPECT(l->group_id_len == 5 && strcmp(l->group_id, "keyed") == 0);
    EXPECT(l->event_len == 1 && strcmp(l->event, "2") == 0);
    EXPECT_STR(l->worker_id, "w1");
    EXPECT(l->lock_expiry == T0 + VIS && l->attempts == 1);
  }
  ACK(t, l);
  l = NOT_SET_LEASE; /* "plain" has neither the priority nor the key */
  EXPECT_CALL(harel_transport_claim_wait(t, "w1", VIS, 1, keys, 1, 0.0, NULL, &l, &e), &e,
              HAREL_EMPTY);
  EXPECT(l == NULL);
  ACK(t, CLAIM(t, "w", "1"));
  harel_transport_close(t);
}

/* claim_many hands out what claim would, one call after another: the same heads, in the
 * same order, each group once; the rest of leases_out is not written. Two queues with the
 * same messages, one drained by claim_many, one by claim; twice, the second time after the
 * first round's claims changed who waited longest. */
static void claim_many_hands_out_what_claims_would(void) {
  static const struct {
    const char *group;
    int32_t priority;
  } groups[] = {{"a", 0}, {"b", 2}, {"c", 0}, {"d", 4}, {"e", 1}};
  double now = T0;
  const char *const keys[] = {"k", "other"};
  harel_transport *many = open_at(":memory:", &now), *one = open_at(":memory:", &now), *keyed;
  harel_lease *got[8], *want[8];
  harel_error *e = NULL;
  size_t n = NOT_SET_COUNT, i, j;
  char event[32];
  int round;
  if (many == NULL || one == NULL) {
    harel_transport_close(many);
    harel_transport_close(one);
    return;
  }
  for (i = 0; i < 2; i++)
    for (j = 0; j < N_OF(groups); j++) {
      snprintf(event, sizeof event, "\"%s%d\"", groups[j].group, (int)i + 1);
      EXPECT_STATUS(harel_transport_publish(many, groups[j].group, event, groups[j].priority,
                                            NULL, NULL), HAREL_OK);
      EXPECT_STATUS(harel_transport_publish(one, groups[j].group, event, groups[j].priority,
                                            NULL, NULL), HAREL_OK);
    }
  for (round = 0; round < 2; round++) {
    for (i = 0; i < N_OF(got); i++) got[i] = NOT_SET_LEASE, want[i] = NULL;
    EXPECT_CALL(harel_transport_claim_many(many, "w", VIS, 0, NULL, 0, 4, 0.0, NULL, got, &n, &e),
                &e, HAREL_OK);
    EXPECT(n == 4);
    for (i = 0; i < 4; i++) want[i] = CLAIM(one, "w", NULL);
    /* max above what there is: the one group left with nothing in flight */
    EXPECT_CALL(harel_transport_claim_many(many, "w", VIS, 0, NULL, 0, 3, 0.0, NULL, got + 4, &n,
                                           &e),
                &e, HAREL_OK);
    EXPECT(n == 1);
    want[4] = CLAIM(one, "w", NULL);
    /* every group in flight now */
    EXPECT_CALL(harel_transport_claim_many(many, "w", VIS, 0, NULL, 0, 1, 0.0, NULL, got + 5, &n,
                                           &e),
                &e, HAREL_EMPTY);
    EXPECT(n == 0);
    EXPECT(unwritten_to_null(got, N_OF(got), 5) == 0);
    for (i = 0; i < 5; i++) {
      SAME_LEASE(got[i], want[i]);
      for (j = 0; j < i; j++)
        if (got[i] != NULL && got[j] != NULL) EXPECT(strcmp(got[i]->group_id, got[j]->group_id) != 0);
    }
    /* each one the caller's: acked and freed on its own */
    for (i = 0; i < 5; i++) {
      ACK(many, got[i]);
      ACK(one, want[i]);
    }
    now += 10;
  }
  CLAIM_EMPTY(one);
  EXPECT_STATUS(harel_transport_claim_many(many, "w", VIS, 0, NULL, 0, 5, 0.0, NULL, got, &n, NULL),
                HAREL_EMPTY);
  harel_transport_close(many);
  harel_transport_close(one);

  /* the claim's arguments reach it: a priority floor, routing keys */
  keyed = open_at(":memory:", &now);
  if (keyed == NULL) return;
  EXPECT_STATUS(harel_transport_publish(keyed, "x", "1", 0, "k", NULL), HAREL_OK);
  EXPECT_STATUS(harel_transport_publish(keyed, "y", "2", 3, "k", NULL), HAREL_OK);
  EXPECT_STATUS(harel_transport_publish(keyed, "z", "3", 3, NULL, NULL), HAREL_OK);
  EXPECT_STATUS(harel_transport_publish(keyed, "v", "4", 3, "other", NULL), HAREL_OK);
  for (i = 0; i < N_OF(got); i++) got[i] = NOT_SET_LEASE;
  EXPECT_CALL(harel_transport_claim_many(keyed, "w", VIS, 1, keys, 1, 8, 0.0, NULL, got, &n, &e),
              &e, HAREL_OK);
  if (EXPECT(n == 1)) EXPECT_STR(got[0]->group_id, "y");
  EXPECT_CALL(harel_transport_claim_many(keyed, "w", VIS, 3, keys, 2, 8, 0.0, NULL, got + 1, &n,
                                         &e),
              &e, HAREL_OK);
  if (EXPECT(n == 1)) EXPECT_STR(got[1]->group_id, "v");
  EXPECT(unwritten_to_null(got, N_OF(got), 2) == 0);
  ACK(keyed, got[0]);
  ACK(keyed, got[1]);
  harel_transport_close(keyed);
}

/* HAREL_EMPTY with *n_out 0 (at once with wait 0, after the wait otherwise); and a batch of
 * HAREL_MAX_CLAIM leases, each the caller's, acked in one ack_many and freed one by one (the
 * leak checkers see each). */
static void claim_many_empty_and_a_full_batch(void) {
  double now = T0, started;
  static char groups[HAREL_MAX_CLAIM + 1][16];
  static harel_message batch[HAREL_MAX_CLAIM + 1];
  static harel_lease *got[HAREL_MAX_CLAIM + 1];
  static const harel_lease *done[HAREL_MAX_CLAIM];
  static harel_status outcomes[HAREL_MAX_CLAIM];
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *first = NOT_SET_LEASE;
  harel_error *e = NULL;
  size_t n = NOT_SET_COUNT, i, distinct = 1;
  if (t == NULL) return;
  EXPECT_CALL(harel_transport_claim_many(t, "w", VIS, 0, NULL, 0, 3, 0.0, NULL, &first, &n, &e),
              &e, HAREL_EMPTY);
  EXPECT(n == 0 && first == NOT_SET_LEASE);
  n = NOT_SET_COUNT;
  started = monotonic();
  EXPECT_CALL(harel_transport_claim_many(t, "w", VIS, 0, NULL, 0, 3, 0.3, NULL, &first, &n, &e),
              &e, HAREL_EMPTY);
  EXPECT(n == 0 && first == NOT_SET_LEASE && monotonic() - started >= 0.25);

  for (i = 0; i < N_OF(batch); i++) {
    snprintf(groups[i], sizeof groups[i], "g%d", (int)i);
    batch[i].group_id = groups[i];
    batch[i].event_json = "{}";
    batch[i].priority = 0;
    batch[i].routing_key = NULL;
  }
  EXPECT_STATUS(harel_transport_publish_many(t, batch, N_OF(batch), NULL), HAREL_OK);
  for (i = 0; i < N_OF(got); i++) got[i] = NOT_SET_LEASE;
  EXPECT_CALL(harel_transport_claim_many(t, "w", VIS, 0, NULL, 0, HAREL_MAX_CLAIM, 0.0, NULL, got,
                                         &n, &e),
              &e, HAREL_OK);
  EXPECT(n == HAREL_MAX_CLAIM);
  EXPECT(unwritten_to_null(got, N_OF(got), n) == 0);
  for (i = 0; i < n && i < HAREL_MAX_CLAIM; i++) {
    done[i] = got[i];
    outcomes[i] = HAREL_ERR_PANIC;
    if (got[i] == NULL || strcmp(got[i]->worker_id, "w") != 0 || got[i]->group_id[0] != 'g')
      distinct = 0;
    else if (i > 0 && got[i - 1] != NULL && got[i]->seq == got[i - 1]->seq)
      distinct = 0;
  }
  EXPECT(distinct);
  EXPECT_CALL(harel_transport_ack_many(t, done, n, outcomes, &e), &e, HAREL_OK);
  for (i = 0; i < n && i < HAREL_MAX_CLAIM; i++) {
    if (outcomes[i] != HAREL_OK)
      test_fail(__FILE__, __LINE__, "outcomes[%d] is %s", (int)i, harel_status_name(outcomes[i]));
    harel_lease_free(got[i]);
  }
  ACK(t, CLAIM(t, "w", "{}")); /* the one past max */
  CLAIM_EMPTY(t);
  harel_transport_close(t);
}

/* The acks, then a claim of the next batch in the same transaction: a lost lease reported
 * and not stopping the claim; the groups just acked served again; HAREL_EMPTY (acked,
 * nothing deliverable) with *n_out 0; no leases at all: a claim_many that does not wait. */
static void ack_and_claim_many_acks_then_claims(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *first[2] = {NOT_SET_LEASE, NOT_SET_LEASE}, *next[4], *last[2];
  const harel_lease *leases[3];
  harel_status outcomes[3];
  harel_error *e = NULL;
  size_t n = NOT_SET_COUNT, i;
  int seen_a2 = 0, seen_b2 = 0, seen_c1 = 0;
  if (t == NULL) return;
  PUBLISH(t, "a", "\"a1\"");
  PUBLISH(t, "b", "\"b1\"");
  PUBLISH(t, "c", "\"c1\"");
  PUBLISH(t, "a", "\"a2\"");
  PUBLISH(t, "b", "\"b2\"");
  /* no leases to ack: claims, as claim_many with wait 0 */
  EXPECT_CALL(harel_transport_ack_and_claim_many(t, NULL, 0, NULL, "w", VIS, 0, NULL, 0, 2, first,
                                                 &n, &e),
              &e, HAREL_OK);
  EXPECT(n == 2 && unwritten_to_null(first, 2, n) == 0);
  if (n != 2 || first[0] == NULL || first[1] == NULL) {
    harel_lease_free(first[0]);
    harel_lease_free(first[1]);
    harel_transport_close(t);
    return;
  }
  EXPECT_STATUS(harel_transport_ack(t, first[1], NULL), HAREL_OK); /* lost to the batch */
  leases[0] = first[0];
  leases[1] = first[1];
  for (i = 0; i < N_OF(next); i++) next[i] = NOT_SET_LEASE;
  outcomes[0] = outcomes[1] = HAREL_ERR_PANIC;
  now += 1;
  EXPECT_CALL(harel_transport_ack_and_claim_many(t, leases, 2, outcomes, "w2", VIS, 0, NULL, 0, 4,
                                                 next, &n, &e),
              &e, HAREL_OK);
  EXPECT(outcomes[0] == HAREL_OK && outcomes[1] == HAREL_ERR_LEASE_LOST);
  /* a1's and b1's groups are served again: every head there is, each of its own group */
  EXPECT(n == 3 && unwritten_to_null(next, N_OF(next), n) == 0);
  for (i = 0; i < n && i < N_OF(next); i++) {
    if (next[i] == NULL) continue;
    seen_a2 += strcmp(next[i]->event, "\"a2\"") == 0;
    seen_b2 += strcmp(next[i]->event, "\"b2\"") == 0;
    seen_c1 += strcmp(next[i]->event, "\"c1\"") == 0;
    EXPECT_STR(next[i]->worker_id, "w2");
    EXPECT(next[i]->lock_expiry == T0 + 1 + VIS);
  }
  EXPECT(seen_a2 == 1 && seen_b2 == 1 && seen_c1 == 1);
  harel_lease_free(first[0]);
  harel_lease_free(first[1]);
  /* all three acked; nothing left: acked, HAREL_EMPTY, *n_out 0, leases_out not written */
  for (i = 0; i < 3; i++) leases[i] = next[i];
  last[0] = last[1] = NOT_SET_LEASE;
  n = NOT_SET_COUNT;
  EXPECT_CALL(harel_transport_ack_and_claim_many(t, leases, 3, outcomes, "w2", VIS, 0, NULL, 0, 2,
                                                 last, &n, &e),
              &e, HAREL_EMPTY);
  EXPECT(outcomes[0] == HAREL_OK && outcomes[1] == HAREL_OK && outcomes[2] == HAREL_OK);
  EXPECT(n == 0 && last[0] == NOT_SET_LEASE && last[1] == NOT_SET_LEASE);
  for (i = 0; i < N_OF(next); i++) harel_lease_free(next[i]);
  CLAIM_EMPTY(t);
  harel_transport_close(t);
}

/* A cancel: not fired, it changes nothing; fired (once or twice: firing is final) before
 * the call, the call returns HAREL_ERR_INTERRUPTED at once, having claimed nothing, even
 * with something deliverable; each cancel its own. */
static void a_cancel_fired_before_the_call(void) {
  double now = T0, started;
  harel_transport *t = open_at(":memory:", &now);
  harel_cancel *fired = harel_cancel_new(), *unfired = harel_cancel_new();
  harel_lease *l = NOT_SET_LEASE, *got[2] = {NOT_SET_LEASE, NOT_SET_LEASE};
  harel_error *e = NULL;
  size_t n = NOT_SET_COUNT;
  if (!EXPECT(fired != NULL && unfired != NULL && fired != unfired) || t == NULL) {
    harel_cancel_free(fired);
    harel_cancel_free(unfired);
    harel_transport_close(t);
    return;
  }
  PUBLISH(t, "g", "1");
  EXPECT_CALL(harel_transport_claim_wait(t, "w", VIS, 0, NULL, 0, 0.0, unfired, &l, &e), &e,
              HAREL_OK);
  ACK(t, l);
  PUBLISH(t, "g", "2");
  harel_cancel_fire(fired);
  harel_cancel_fire(fired);
  started = monotonic();
  l = NOT_SET_LEASE;
  EXPECT_CALL_NAMING(harel_transport_claim_wait(t, "w", VIS, 0, NULL, 0, 30.0, fired, &l, &e), &e,
                     HAREL_ERR_INTERRUPTED, "cancelled");
  EXPECT(l == NULL);
  EXPECT_CALL_NAMING(harel_transport_claim_many(t, "w", VIS, 0, NULL, 0, 2, 30.0, fired, got, &n,
                                                &e),
                     &e, HAREL_ERR_INTERRUPTED, "cancelled");
  EXPECT(n == 0 && got[0] == NOT_SET_LEASE);
  /* wait 0 too, and err NULL */
  CLAIM_WAIT_FAILS(HAREL_ERR_INTERRUPTED, "cancelled", t, "w", VIS, 0, NULL, 0, 0.0, fired);
  CLAIM_MANY_FAILS(HAREL_ERR_INTERRUPTED, "cancelled", t, "w", VIS, 0, NULL, 0, 2, 0.0, fired);
  EXPECT(monotonic() - started < 10.0);
  /* nothing was claimed: "2" is there for a call with no cancel, or the other one */
  EXPECT_CALL(harel_transport_claim_many(t, "w", VIS, 0, NULL, 0, 2, 0.0, unfired, got, &n, &e),
              &e, HAREL_OK);
  EXPECT(n == 1 && unwritten_to_null(got, 2, n) == 0);
  if (got[0] != NULL) EXPECT_STR(got[0]->event, "2");
  ACK(t, got[0]);
  CLAIM_EMPTY(t);
  harel_cancel_free(fired);
  harel_cancel_free(unfired);
  harel_transport_close(t);
}

/* Waits and maxima out of range. */
static const double BAD_WAIT[] = {-1.0, -1e-9, NAN, INFINITY, -INFINITY, 1e30};
static const size_t BAD_MAX[] = {0, HAREL_MAX_CLAIM + 1, SIZE_MAX};

/* claim_wait refuses what claim refuses, and a wait out of range (with a cancel or
 * without). */
static void bad_arguments_of_claim_wait(void) {
  const char *const with_null[] = {"k", NULL};
  const char *const with_empty[] = {"k", ""};
  harel_cancel *cancel = harel_cancel_new();
  fixture fx;
  size_t i;
  if (!fixture_open(&fx)) {
    harel_cancel_free(cancel);
    return;
  }
  CLAIM_WAIT_BAD("t", NULL, "w", VIS, 0, NULL, 0, 0.0, NULL);
  CLAIM_WAIT_BAD("worker_id", fx.t, NULL, VIS, 0, NULL, 0, 0.0, NULL);
  CLAIM_WAIT_BAD("worker_id", fx.t, "", VIS, 0, NULL, 0, 0.0, NULL);
  CLAIM_WAIT_BAD("worker_id", fx.t, "__parked__", VIS, 0, NULL, 0, 0.0, NULL);
  CLAIM_WAIT_BAD("worker_id", fx.t, "__delayed__", VIS, 0, NULL, 0, 0.0, NULL);
  CLAIM_WAIT_BAD("routing_keys", fx.t, "w", VIS, 0, NULL, 1, 0.0, NULL);
  CLAIM_WAIT_BAD("routing_keys", fx.t, "w", VIS, 0, NULL, SIZE_MAX, 0.0, NULL);
  CLAIM_WAIT_BAD("routing_keys", fx.t, "w", VIS, 0, with_null, 2, 0.0, NULL);
  CLAIM_WAIT_BAD("routing_keys", fx.t, "w", VIS, 0, with_empty, 2, 0.0, NULL);
  EXPECT_BAD("out", harel_transport_claim_wait(fx.t, "w", VIS, 0, NULL, 0, 0.0, NULL, NULL, ERR));
  for (i = 0; i < N_OF(BAD_VISIBILITY); i++)
    CLAIM_WAIT_BAD("visibility", fx.t, "w", BAD_VISIBILITY[i], 0, NULL, 0, 0.0, NULL);
  for (i = 0; i < N_OF(BAD_MIN_PRIORITY); i++)
    CLAIM_WAIT_BAD("min_priority", fx.t, "w", VIS, BAD_MIN_PRIORITY[i], NULL, 0, 0.0, NULL);
  for (i = 0; i < N_OF(BAD_WAIT); i++) {
    CLAIM_WAIT_BAD("wait", fx.t, "w", VIS, 0, NULL, 0, BAD_WAIT[i], NULL);
    CLAIM_WAIT_BAD("wait", fx.t, "w", VIS, 0, NULL, 0, BAD_WAIT[i], cancel);
  }
  for (i = 0; i < N_BAD_UTF8; i++) {
    const char *const keys[] = {"k", BAD_UTF8[i]};
    CLAIM_WAIT_BAD("worker_id", fx.t, BAD_UTF8[i], VIS, 0, NULL, 0, 0.0, NULL);
    CLAIM_WAIT_BAD("routing_keys", fx.t, "w", VIS, 0, keys, 2, 0.0, NULL);
  }
  FIXTURE_CLOSE(&fx);
  harel_cancel_free(cancel);
}

/* claim_many refuses what claim refuses, a NULL leases_out or n_out, and a max or a wait
 * out of range: *n_out 0, leases_out not written. */
static void bad_arguments_of_claim_many(void) {
  const char *const with_null[] = {"k", NULL};
  const char *const with_empty[] = {"k", ""};
  size_t n = NOT_SET_COUNT;
  fixture fx;
  size_t i;
  if (!fixture_open(&fx)) return;
  CLAIM_MANY_BAD("t", NULL, "w", VIS, 0, NULL, 0, 2, 0.0, NULL);
  CLAIM_MANY_BAD("worker_id", fx.t, NULL, VIS, 0, NULL, 0, 2, 0.0, NULL);
  CLAIM_MANY_BAD("worker_id", fx.t, "", VIS, 0, NULL, 0, 2, 0.0, NULL);
  CLAIM_MANY_BAD("worker_id", fx.t, "__parked__", VIS, 0, NULL, 0, 2, 0.0, NULL);
  CLAIM_MANY_BAD("worker_id", fx.t, "__delayed__", VIS, 0, NULL, 0, 2, 0.0, NULL);
  CLAIM_MANY_BAD("routing_keys", fx.t, "w", VIS, 0, NULL, 1, 2, 0.0, NULL);
  CLAIM_MANY_BAD("routing_keys", fx.t, "w", VIS, 0, NULL, SIZE_MAX, 2, 0.0, NULL);
  CLAIM_MANY_BAD("routing_keys", fx.t, "w", VIS, 0, with_null, 2, 2, 0.0, NULL);
  CLAIM_MANY_BAD("routing_keys", fx.t, "w", VIS, 0, with_empty, 2, 2, 0.0, NULL);
  EXPECT_BAD("leases_out",
             harel_transport_claim_many(fx.t, "w", VIS, 0, NULL, 0, 2, 0.0, NULL, NULL, &n, ERR));
  EXPECT(n == 0);
  many_out_reset();
  EXPECT_BAD("n_out", harel_transport_claim_many(fx.t, "w", VIS, 0, NULL, 0, 2, 0.0, NULL,
                                                 many_out, NULL, ERR));
  EXPECT(many_out_untouched());
  for (i = 0; i < N_OF(BAD_MAX); i++)
    CLAIM_MANY_BAD("max", fx.t, "w", VIS, 0, NULL, 0, BAD_MAX[i], 0.0, NULL);
  for (i = 0; i < N_OF(BAD_VISIBILITY); i++)
    CLAIM_MANY_BAD("visibility", fx.t, "w", BAD_VISIBILITY[i], 0, NULL, 0, 2, 0.0, NULL);
  for (i = 0; i < N_OF(BAD_MIN_PRIORITY); i++)
    CLAIM_MANY_BAD("min_priority", fx.t, "w", VIS, BAD_MIN_PRIORITY[i], NULL, 0, 2, 0.0, NULL);
  for (i = 0; i < N_OF(BAD_WAIT); i++)
    CLAIM_MANY_BAD("wait", fx.t, "w", VIS, 0, NULL, 0, 2, BAD_WAIT[i], NULL);
  for (i = 0; i < N_BAD_UTF8; i++) {
    const char *const keys[] = {"k", BAD_UTF8[i]};
    CLAIM_MANY_BAD("worker_id", fx.t, BAD_UTF8[i], VIS, 0, NULL, 0, 2, 0.0, NULL);
    CLAIM_MANY_BAD("routing_keys", fx.t, "w", VIS, 0, keys, 2, 2, 0.0, NULL);
  }
  FIXTURE_CLOSE(&fx);
}

/* ack_and_claim_many refuses a bad lease of its batch, named by its index, NULL outcomes,
 * and what claim_many refuses: nothing acked (the fixture unchanged), *n_out 0, leases_out
 * not written. */
static void bad_arguments_of_ack_and_claim_many(void) {
  const char *const with_null[] = {"k", NULL};
  harel_status outcomes[2];
  const harel_lease *leases[2];
  size_t n = NOT_SET_COUNT;
  char name[64];
  fixture fx;
  size_t i;
  if (!fixture_open(&fx)) return;
  leases[0] = fx.held;
  leases[1] = NULL;
  ACK_AND_CLAIM_MANY_BAD("t", NULL, leases, 1, "w1", VIS, 0, NULL, 0, 2);
  ACK_AND_CLAIM_MANY_BAD("leases", fx.t, NULL, 1, "w1", VIS, 0, NULL, 0, 2);
  ACK_AND_CLAIM_MANY_BAD("leases[1]", fx.t, leases, 2, "w1", VIS, 0, NULL, 0, 2);
#define ACK_AND_CLAIM_MANY_LEASE_BAD(parameter)                                              \
  do {                                                                                       \
    leases[1] = bad;                                                                         \
    ACK_AND_CLAIM_MANY_BAD(element(name, sizeof name, 1, parameter), fx.t, leases, 2, "w1", \
                           VIS, 0, NULL, 0, 2);                                             \
  } while (0)
  EACH_BAD_LEASE(fx, ACK_AND_CLAIM_MANY_LEASE_BAD);
#undef ACK_AND_CLAIM_MANY_LEASE_BAD
  EXPECT_BAD("outcomes", harel_transport_ack_and_claim_many(fx.t, leases, 1, NULL, "w1", VIS, 0,
                                                            NULL, 0, 2, many_out, &n, ERR));
  EXPECT(n == 0);
  ACK_AND_CLAIM_MANY_BAD("worker_id", fx.t, leases, 1, NULL, VIS, 0, NULL, 0, 2);
  ACK_AND_CLAIM_MANY_BAD("worker_id", fx.t, leases, 1, "", VIS, 0, NULL, 0, 2);
  ACK_AND_CLAIM_MANY_BAD("worker_id", fx.t, leases, 1, "__parked__", VIS, 0, NULL, 0, 2);
  ACK_AND_CLAIM_MANY_BAD("routing_keys", fx.t, leases, 1, "w1", VIS, 0, NULL, 3, 2);
  ACK_AND_CLAIM_MANY_BAD("routing_keys", fx.t, leases, 1, "w1", VIS, 0, with_null, 2, 2);
  n = NOT_SET_COUNT;
  EXPECT_BAD("leases_out", harel_transport_ack_and_claim_many(fx.t, leases, 1, outcomes, "w1",
                                                              VIS, 0, NULL, 0, 2, NULL, &n, ERR));
  EXPECT(n == 0);
  many_out_reset();
  EXPECT_BAD("n_out", harel_transport_ack_and_claim_many(fx.t, leases, 1, outcomes, "w1", VIS, 0,
                                                         NULL, 0, 2, many_out, NULL, ERR));
  EXPECT(many_out_untouched());
  for (i = 0; i < N_OF(BAD_MAX); i++)
    ACK_AND_CLAIM_MANY_BAD("max", fx.t, leases, 1, "w1", VIS, 0, NULL, 0, BAD_MAX[i]);
  for (i = 0; i < N_OF(BAD_VISIBILITY); i++)
    ACK_AND_CLAIM_MANY_BAD("visibility", fx.t, leases, 1, "w1", BAD_VISIBILITY[i], 0, NULL, 0, 2);
  for (i = 0; i < N_OF(BAD_MIN_PRIORITY); i++)
    ACK_AND_CLAIM_MANY_BAD("min_priority", fx.t, leases, 1, "w1", VIS, BAD_MIN_PRIORITY[i], NULL,
                           0, 2);
  for (i = 0; i < N_BAD_UTF8; i++) {
    const char *const keys[] = {BAD_UTF8[i]};
    ACK_AND_CLAIM_MANY_BAD("worker_id", fx.t, leases, 1, BAD_UTF8[i], VIS, 0, NULL, 0, 2);
    ACK_AND_CLAIM_MANY_BAD("routing_keys", fx.t, leases, 1, "w1", VIS, 0, keys, 1, 2);
  }
  FIXTURE_CLOSE(&fx);
}

/* Workers sharing one handle drain a queue: each message arrives once. Half the threads
 * claim and ack, half ack_and_claim; each call with its own error. */
#define DRAINERS 4
#define DRAIN_GROUPS 8
#define DRAIN_PER_GROUP 10
#define DRAIN_TOTAL (DRAIN_GROUPS * DRAIN_PER_GROUP)

typedef struct {
  harel_transport *t;
  pthread_mutex_t lock;
  int seen[DRAIN_TOTAL];
  int acked;
  char problem[600];
} drain_state;

typedef struct {
  drain_state *d;
  int id;
} drainer;

static void drain_problem(drain_state *d, const char *what, harel_status s, harel_error *e) {
  pthread_mutex_lock(&d->lock);
  if (d->problem[0] == '\0')
    snprintf(d->problem, sizeof d->problem, "%s: %s %s", what, harel_status_name(s),
             or_null(harel_error_message(e)));
  pthread_mutex_unlock(&d->lock);
}

static void *drain_thread(void *arg) {
  drainer *me = arg;
  drain_state *d = me->d;
  harel_lease *l = NULL;
  char worker[16];
  snprintf(worker, sizeof worker, "d%d", me->id);
  for (;;) {
    harel_lease *next = NULL;
    harel_error *e = NULL;
    harel_status s;
    int k, finished;
    if (l != NULL && me->id % 2 == 0) {
      s = harel_transport_ack(d->t, l, &e);
      harel_lease_free(l);
      l = NULL;
      if (s != HAREL_OK || e != NULL) {
        drain_problem(d, "ack", s, e);
        harel_error_free(e);
        break;
      }
      pthread_mutex_lock(&d->lock);
      d->acked++;
      pthread_mutex_unlock(&d->lock);
      continue;
    }
    if (l == NULL) {
      s = harel_transport_claim(d->t, worker, VIS, 0, NULL, 0, &next, &e);
    } else {
      s = harel_transport_ack_and_claim(d->t, l, worker, VIS, 0, NULL, 0, &next, &e);
      harel_lease_free(l);
      l = NULL;
      if (s == HAREL_OK || s == HAREL_EMPTY) {
        pthread_mutex_lock(&d->lock);
        d->acked++;
        pthread_mutex_unlock(&d->lock);
      }
    }
    if (s < 0 || e != NULL || harel_last_error() != NULL) {
      drain_problem(d, "claim", s, e);
      harel_error_free(e);
      harel_lease_free(next);
      break;
    }
    pthread_mutex_lock(&d->lock);
    if (s == HAREL_OK) {
      if (sscanf(next->event, "{\"m\":%d}", &k) == 1 && k >= 0 && k < DRAIN_TOTAL) d->seen[k]++;
      else if (d->problem[0] == '\0')
        snprintf(d->problem, sizeof d->problem, "event %s", next->event);
    }
    finished = d->acked == DRAIN_TOTAL || d->problem[0] != '\0';
    pthread_mutex_unlock(&d->lock);
    if (s == HAREL_OK) {
      l = next;
    } else if (finished) {
      break;
    } else {
      sched_yield();
    }
  }
  harel_lease_free(l);
  return NULL;
}

static void threads_drain_one_handle(void) {
  double now = T0;
  char path[300], events[DRAIN_TOTAL][32], groups[DRAIN_GROUPS][16];
  harel_message batch[DRAIN_TOTAL];
  drain_state d;
  drainer me[DRAINERS];
  pthread_t threads[DRAINERS];
  int i;
  memset(&d, 0, sizeof d);
  d.t = open_at(new_path(path, sizeof path), &now);
  if (d.t == NULL) return;
  for (i = 0; i < DRAIN_GROUPS; i++) snprintf(groups[i], sizeof groups[i], "g%d", i);
  for (i = 0; i < DRAIN_TOTAL; i++) {
    snprintf(events[i], sizeof events[i], "{\"m\":%d}", i);
    batch[i].group_id = groups[i % DRAIN_GROUPS];
    batch[i].event_json = events[i];
    batch[i].priority = 0;
    batch[i].routing_key = NULL;
  }
  EXPECT_STATUS(harel_transport_publish_many(d.t, batch, DRAIN_TOTAL, NULL), HAREL_OK);
  pthread_mutex_init(&d.lock, NULL);
  for (i = 0; i < DRAINERS; i++) {
    me[i].d = &d;
    me[i].id = i;
    EXPECT(pthread_create(&threads[i], NULL, drain_thread, &me[i]) == 0);
  }
  for (i = 0; i < DRAINERS; i++) pthread_join(threads[i], NULL);
  pthread_mutex_destroy(&d.lock);
  if (d.problem[0] != '\0') test_fail(__FILE__, __LINE__, "%s", d.problem);
  EXPECT(d.acked == DRAIN_TOTAL);
  for (i = 0; i < DRAIN_TOTAL; i++)
    if (d.seen[i] != 1) test_fail(__FILE__, __LINE__, "message %d arrived %d times", i, d.seen[i]);
  CLAIM_EMPTY(d.t);
  harel_transport_close(d.t);
}

/* A test clock that also notes the threads that read it. A waiting claim first reads the
 * clock once its wait has begun (its cancel, its handle's interrupts and the queue's wake
 * are armed by then), so a fire, an interrupt or a commit after a thread was seen here
 * reaches that thread's wait. */
#define MAX_READERS 16
typedef struct {
  double now;
  pthread_mutex_t lock;
  pthread_t readers[MAX_READERS];
  int n_readers;
} watched_clock;

static double watched_read(void *ctx) {
  watched_clock *c = ctx;
  pthread_t me = pthread_self();
  double now;
  int i;
  pthread_mutex_lock(&c->lock);
  for (i = 0; i < c->n_readers && !pthread_equal(c->readers[i], me); i++) {
  }
  if (i == c->n_readers && i < MAX_READERS) c->readers[c->n_readers++] = me;
  now = c->now;
  pthread_mutex_unlock(&c->lock);
  return now;
}

static void watched_init(watched_clock *c) {
  memset(c, 0, sizeof *c);
  c->now = T0;
  pthread_mutex_init(&c->lock, NULL);
}

/* Forgets the readers (a joined thread's id may be a new thread's). */
static void watched_forget(watched_clock *c) {
  pthread_mutex_lock(&c->lock);
  c->n_readers = 0;
  pthread_mutex_unlock(&c->lock);
}

/* Waits until `n` threads have read the clock; false if they did not within a minute. */
#define WATCHED_WAIT(c, n) EXPECT(watched_wait((c), (n)))
static int watched_wait(watched_clock *c, int n) {
  double deadline = monotonic() + 60.0;
  int seen = 0;
  while (monotonic() < deadline) {
    pthread_mutex_lock(&c->lock);
    seen = c->n_readers;
    pthread_mutex_unlock(&c->lock);
    if (seen >= n) return 1;
    pause_for(0.002);
  }
  return 0;
}

static harel_transport *open_watched(const char *database, watched_clock *c) {
  harel_options *o = harel_options_new();
  harel_transport *t = NULL;
  harel_error *e = NULL;
  if (!EXPECT(o != NULL)) return NULL;
  EXPECT_CALL(harel_options_set_clock(o, watched_read, c, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_synchronous_full(o, false, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_open(database, o, &t, &e), &e, HAREL_OK);
  harel_options_free(o);
  return t;
}

/* One waiting claim on a thread of its own: claim_wait (max 0) or claim_many. */
#define WAITER_MAX 8
typedef struct {
  harel_transport *t;
  const char *worker;
  double wait;
  const harel_cancel *cancel;
  size_t max;                          /* 0: claim_wait; else claim_many up to max */
  pthread_t thread;
  int started;
  harel_status status;                 /* out */
  harel_lease *leases[WAITER_MAX];     /* out: the first n */
  size_t n;                            /* out; NOT_SET_COUNT if claim_wait left *out alone */
  char message[512];                   /* out: the error's message */
  double began, ended;                 /* out: monotonic() around the call */
} waiter;

static void *waiter_run(void *arg) {
  waiter *w = arg;
  harel_error *e = NULL;
  w->began = monotonic();
  if (w->max == 0) {
    harel_lease *l = NOT_SET_LEASE;
    w->status = harel_transport_claim_wait(w->t, w->worker, VIS, 0, NULL, 0, w->wait, w->cancel,
                                           &l, &e);
    w->n = l == NOT_SET_LEASE ? NOT_SET_COUNT : l != NULL;
    w->leases[0] = l == NOT_SET_LEASE ? NULL : l;
  } else {
    w->status = harel_transport_claim_many(w->t, w->worker, VIS, 0, NULL, 0, w->max, w->wait,
                                           w->cancel, w->leases, &w->n, &e);
  }
  w->ended = monotonic();
  snprintf(w->message, sizeof w->message, "%s", e != NULL ? or_null(harel_error_message(e)) : "");
  harel_error_free(e);
  return NULL;
}

static void waiter_start(waiter *w, harel_transport *t, const char *worker, double wait,
                         const harel_cancel *cancel, size_t max) {
  memset(w, 0, sizeof *w);
  w->t = t;
  w->worker = worker;
  w->wait = wait;
  w->cancel = cancel;
  w->max = max < WAITER_MAX ? max : WAITER_MAX;
  w->started = EXPECT(pthread_create(&w->thread, NULL, waiter_run, w) == 0);
}

/* Joins the waiter; its call returned `want`, handing out leases only on HAREL_OK. */
#define WAITER_ENDS(w, want) waiter_ends((w), (want), __FILE__, __LINE__)
static int waiter_ends(waiter *w, harel_status want, const char *file, int line) {
  const char *call = w->max == 0 ? "claim_wait" : "claim_many";
  if (!w->started) return 0;
  pthread_join(w->thread, NULL);
  w->started = 0;
  if (w->status != want) {
    test_fail(file, line, "%s's %s returned %s, want %s (%s)", w->worker, call,
              harel_status_name(w->status), harel_status_name(want), w->message);
    return 0;
  }
  if (want == HAREL_OK ? w->n < 1 || w->n > (w->max ? w->max : 1) : w->n != 0) {
    test_fail(file, line, "%s's %s: %s with %d leases", w->worker, call,
              harel_status_name(w->status), (int)w->n);
    return 0;
  }
  if (want < 0 && w->message[0] == '\0') {
    test_fail(file, line, "%s's %s: %s with no message", w->worker, call, harel_status_name(want));
    return 0;
  }
  return 1;
}

/* Acks (on the waiter's handle) and frees what the waiter claimed. */
static void waiter_done(waiter *w) {
  size_t i;
  for (i = 0; i < w->n && i < WAITER_MAX; i++) ACK(w->t, w->leases[i]);
  w->n = 0;
}

/* A cancel fired on another thread ends the waits given it (two calls share it) at once,
 * with nothing claimed: the one lease there is, another worker's, stays the only one. */
static void a_cancel_fired_on_another_thread_ends_the_wait(void) {
  double now = T0, fired_at;
  char path[300];
  harel_transport *t = open_at(new_path(path, sizeof path), &now);
  harel_cancel *cancel = harel_cancel_new();
  harel_lease *held;
  harel_stats *s;
  waiter one, many;
  if (t == NULL || !EXPECT(cancel != NULL)) {
    harel_transport_close(t);
    harel_cancel_free(cancel);
    return;
  }
  PUBLISH(t, "g", "1");
  held = CLAIM(t, "w0", "1"); /* nothing deliverable while it is held */
  waiter_start(&one, t, "w1", 30.0, cancel, 0);
  waiter_start(&many, t, "w2", 30.0, cancel, 4);
  pause_for(0.2);
  fired_at = monotonic();
  harel_cancel_fire(cancel);
  if (WAITER_ENDS(&one, HAREL_ERR_INTERRUPTED)) EXPECT(strstr(one.message, "cancelled") != NULL);
  if (WAITER_ENDS(&many, HAREL_ERR_INTERRUPTED)) EXPECT(strstr(many.message, "cancelled") != NULL);
  EXPECT(one.ended - fired_at < 10.0 && many.ended - fired_at < 10.0);
  harel_cancel_free(cancel); /* no call uses it any more */
  s = STATS(t);
  if (s != NULL) EXPECT(s->leased == 1 && s->ready == 0 && s->messages == 1);
  harel_stats_free(s);
  ACK(t, held);
  CLAIM_EMPTY(t);
  harel_transport_close(t);
}

/* harel_transport_interrupt on another thread ends every wait on that handle (two
 * threads'), not a wait on another handle of the same queue, nor later waits; while the
 * threads wait, other calls on the handle go ahead. */
static void interrupt_ends_every_wait_on_the_handle(void) {
  double now = T0, started, interrupted_at;
  char path[300];
  watched_clock c;
  harel_transport *t, *u;
  harel_lease *held = NULL, *l = NOT_SET_LEASE;
  harel_stats *s;
  harel_error *e = NULL;
  waiter one, many, elsewhere;
  watched_init(&c);
  t = open_watched(new_path(path, sizeof path), &c);
  u = open_at(path, &now);
  if (t != NULL && u != NULL) {
    PUBLISH(t, "g", "1");
    held = CLAIM(t, "w0", "1");
    watched_forget(&c);
    waiter_start(&one, t, "w1", 30.0, NULL, 0);
    waiter_start(&many, t, "w2", 30.0, NULL, 3);
    WATCHED_WAIT(&c, 2);
    waiter_start(&elsewhere, u, "w3", 1.5, NULL, 0);
    /* calls on the handle while two of its calls wait: a publish (into g, in flight: the
     * waiters wake, look, and wait on) and a look */
    started = monotonic();
    PUBLISH(t, "g", "2");
    s = STATS(t);
    if (s != NULL) EXPECT(s->messages == 2 && s->leased == 1);
    harel_stats_free(s);
    EXPECT(monotonic() - started < 10.0);
    interrupted_at = monotonic();
    harel_transport_interrupt(t);
    if (WAITER_ENDS(&one, HAREL_ERR_INTERRUPTED))
      EXPECT(strstr(one.message, "interrupted") != NULL);
    if (WAITER_ENDS(&many, HAREL_ERR_INTERRUPTED))
      EXPECT(strstr(many.message, "interrupted") != NULL);
    EXPECT(one.ended - interrupted_at < 10.0 && many.ended - interrupted_at < 10.0);
    if (WAITER_ENDS(&elsewhere, HAREL_EMPTY)) EXPECT(elsewhere.ended - elsewhere.began >= 1.4);
    /* a later wait waits */
    started = monotonic();
    EXPECT_CALL(harel_transport_claim_wait(t, "w1", VIS, 0, NULL, 0, 0.3, NULL, &l, &e), &e,
                HAREL_EMPTY);
    EXPECT(l == NULL && monotonic() - started >= 0.25);
    s = STATS(t); /* nothing claimed but held */
    if (s != NULL) EXPECT(s->leased == 1);
    harel_stats_free(s);
    ACK(t, held);
    ACK(t, CLAIM(t, "w1", "2"));
    CLAIM_EMPTY(t);
  }
  harel_transport_close(t);
  harel_transport_close(u);
  pthread_mutex_destroy(&c.lock);
}

/* A commit by another handle of this process on the same file wakes a waiter at once; a
 * claim_many woken by one publish_many takes every group of it. */
static void a_commit_on_another_handle_wakes_a_waiter(void) {
  double now = T0, published;
  char path[300];
  const harel_message batch[] = {{"x", "\"x\"", 0, NULL}, {"y", "\"y\"", 0, NULL},
                                 {"z", "\"z\"", 0, NULL}};
  watched_clock c;
  harel_transport *t, *other;
  waiter one, many;
  watched_init(&c);
  t = open_watched(new_path(path, sizeof path), &c);
  other = open_at(path, &now);
  if (t != NULL && other != NULL) {
    watched_forget(&c);
    waiter_start(&one, t, "w1", 30.0, NULL, 0);
    WATCHED_WAIT(&c, 1);
    published = monotonic();
    PUBLISH(other, "g", "\"hello\"");
    if (WAITER_ENDS(&one, HAREL_OK)) {
      EXPECT_STR(one.leases[0]->event, "\"hello\"");
      EXPECT(one.ended - published < 10.0);
    }
    waiter_done(&one);
    watched_forget(&c);
    waiter_start(&many, t, "w2", 30.0, NULL, 5);
    WATCHED_WAIT(&c, 1);
    published = monotonic();
    EXPECT_STATUS(harel_transport_publish_many(other, batch, 3, NULL), HAREL_OK);
    if (WAITER_ENDS(&many, HAREL_OK)) {
      EXPECT(many.n == 3);
      EXPECT(many.ended - published < 10.0);
    }
    waiter_done(&many);
    CLAIM_EMPTY(other);
  }
  harel_transport_close(t);
  harel_transport_close(other);
  pthread_mutex_destroy(&c.lock);
}

/* A commit by another process (this program run again as a child, `--publish`) wakes a
 * waiter. */
static void a_commit_of_another_process_wakes_a_waiter(void) {
  char path[300];
  double spawned;
  watched_clock c;
  harel_transport *t;
  waiter one;
  watched_init(&c);
  t = open_watched(new_path(path, sizeof path), &c);
  if (t != NULL) {
    watched_forget(&c);
    waiter_start(&one, t, "w1", 30.0, NULL, 0);
    WATCHED_WAIT(&c, 1);
    spawned = monotonic();
    EXPECT(publish_from_a_child(path, "g", "\"from a child\""));
    if (WAITER_ENDS(&one, HAREL_OK)) {
      EXPECT_STR(one.leases[0]->event, "\"from a child\"");
      EXPECT(one.ended - spawned < 15.0);
    }
    waiter_done(&one);
    CLAIM_EMPTY(t);
  }
  harel_transport_close(t);
  pthread_mutex_destroy(&c.lock);
}

/* The system clock: a lease of 1 s lapses and a waiting claim takes the message about
 * then; a park of 1 s ends and the same. */
static void the_end_of_a_lease_or_a_park_wakes_a_waiter(void) {
  harel_transport *t = NULL;
  harel_lease *first = NULL, *next = NULL;
  harel_error *e = NULL;
  double started;
  EXPECT_CALL(harel_transport_open(":memory:", NULL, &t, &e), &e, HAREL_OK);
  if (t == NULL) return;
  PUBLISH(t, "g", "1");
  started = monotonic();
  EXPECT_CALL(harel_transport_claim(t, "w1", 1.0, 0, NULL, 0, &first, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_claim_wait(t, "w2", VIS, 0, NULL, 0, 20.0, NULL, &next, &e), &e,
              HAREL_OK);
  EXPECT(monotonic() - started >= 0.9 && monotonic() - started < 10.0);
  if (first != NULL && next != NULL) EXPECT(next->seq == first->seq && next->attempts == 2);
  harel_lease_free(first);
  first = NULL;
  if (next != NULL) {
    started = monotonic();
    EXPECT_STATUS(harel_transport_nack(t, next, 1.0, NULL), HAREL_OK);
    EXPECT_CALL(harel_transport_claim_wait(t, "w3", VIS, 0, NULL, 0, 20.0, NULL, &first, &e), &e,
                HAREL_OK);
    EXPECT(monotonic() - started >= 0.9 && monotonic() - started < 10.0);
    if (first != NULL) EXPECT(first->seq == next->seq && first->attempts == 3);
  }
  harel_lease_free(next);
  ACK(t, first);
  CLAIM_EMPTY(t);
  harel_transport_close(t);
}

/* Eight threads wait, each on a handle of its own; one message is published: exactly one
 * gets it, at once; the others' waits end HAREL_EMPTY. */
#define WAITERS 8
static void one_message_for_eight_waiters(void) {
  static const char *const workers[WAITERS] = {"w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7"};
  double now = T0, published;
  char path[300];
  watched_clock c;
  harel_transport *publisher, *handles[WAITERS];
  waiter w[WAITERS];
  int i, winners = 0;
  watched_init(&c);
  publisher = open_at(new_path(path, sizeof path), &now);
  for (i = 0; i < WAITERS; i++) handles[i] = open_watched(path, &c);
  watched_forget(&c);
  for (i = 0; i < WAITERS; i++) waiter_start(&w[i], handles[i], workers[i], 4.0, NULL, 0);
  WATCHED_WAIT(&c, WAITERS);
  published = monotonic();
  PUBLISH(publisher, "g", "\"the one\"");
  for (i = 0; i < WAITERS; i++) {
    pthread_join(w[i].thread, NULL);
    w[i].started = 0;
    if (w[i].status == HAREL_OK && w[i].n == 1) {
      winners++;
      EXPECT_STR(w[i].leases[0]->event, "\"the one\"");
      EXPECT(w[i].ended - published < 3.0);
      waiter_done(&w[i]);
    } else if (w[i].status != HAREL_EMPTY || w[i].n != 0) {
      test_fail(__FILE__, __LINE__, "%s: %s with %d leases (%s)", workers[i],
                harel_status_name(w[i].status), (int)w[i].n, w[i].message);
    }
  }
  EXPECT(winners == 1);
  CLAIM_EMPTY(publisher);
  for (i = 0; i < WAITERS; i++) harel_transport_close(handles[i]);
  harel_transport_close(publisher);
  pthread_mutex_destroy(&c.lock);
}

const test_case claim_tests[] = {
    TEST(the_lease_lengths),
    TEST(nul_bytes_written_by_another_process),
    TEST(invalid_utf8_written_by_another_process),
    TEST(attempts_and_max_attempts),
    TEST(status_empty),
    TEST(bad_arguments_of_claim),
    TEST(bad_arguments_of_ack_and_claim),
    TEST(claim_wait_maps_the_claim),
    TEST(claim_many_hands_out_what_claims_would),
    TEST(claim_many_empty_and_a_full_batch),
    TEST(ack_and_claim_many_acks_then_claims),
    TEST(a_cancel_fired_before_the_call),
    TEST(bad_arguments_of_claim_wait),
    TEST(bad_arguments_of_claim_many),
    TEST(bad_arguments_of_ack_and_claim_many),
    TEST(threads_drain_one_handle),
    TEST(a_cancel_fired_on_another_thread_ends_the_wait),
    TEST(interrupt_ends_every_wait_on_the_handle),
    TEST(a_commit_on_another_handle_wakes_a_waiter),
    TEST(a_commit_of_another_process_wakes_a_waiter),
    TEST(the_end_of_a_lease_or_a_park_wakes_a_waiter),
    TEST(one_message_for_eight_waiters),
    {NULL, NULL}};
