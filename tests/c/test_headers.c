/*
 * test_headers.c: a message's headers through C: harel_transport_publish_headers,
 * _publish_with_headers, _publish_many_with_headers and harel_tx_publish_headers, and the
 * headers handed back beside every lease (claim, claim_wait, claim_many, ack_and_claim,
 * ack_and_claim_many), on every page of peek and of dead_letters, and after a redrive. The
 * rules themselves are tested once, in Rust (src/headers.rs); here, the mapping: the pairs
 * back in order and byte for byte (copied in, living as long as what handed them out), each
 * output of the publishes, every status they return, each bad header named (by its index,
 * and by its message's in a batch) with nothing written and the outputs untouched, and a
 * lease the caller fills with the fields of 0.4.0 only, which every finishing call still
 * takes.
 */
#include "harel_test.h"

#include <pthread.h>
#include <stdlib.h>

#define TRACEPARENT "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

/* Headers as a producer sends them: a name repeated (order kept), an empty value, UTF-8 of
 * two, three and four bytes, control characters and the characters a name may not hold, a
 * name of every punctuation character a name may hold. */
static const harel_header SET[] = {
    {"traceparent", TRACEPARENT},
    {"content-type", "application/json; charset=utf-8"},
    {"empty", ""},
    {"note", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 = , ; \" \\ \t\n\r\x01\x7f <b>"},
    {"traceparent", "a repeated name keeps its place"},
    {"!\"#$%&'()*+,-./:;<>?@[\\]^_`{|}~", "every punctuation a name may hold"},
};
static const harel_header OTHER[] = {{"k", "v"}};
#define N_SET N_OF(SET)

/* ---- helpers ---------------------------------------------------------------------------- */

/* `got` (n pairs) holds `want` (n_want pairs): in order, byte for byte, copies (not the
 * caller's pointers); items NULL when there are none if `null_when_none`. */
#define SAME_HEADERS(got, n, want, n_want, null_when_none)                                     \
  same_headers_at((got), (n), (want), (n_want), (null_when_none), #got, __FILE__, __LINE__)
static int same_headers_at(const harel_header *got, size_t n, const harel_header *want,
                           size_t n_want, int null_when_none, const char *expr, const char *file,
                           int line) {
  size_t i;
  if (n != n_want) {
    test_fail(file, line, "%s: %zu headers, want %zu", expr, n, n_want);
    return 0;
  }
  if (n == 0) {
    if (null_when_none && got != NULL) {
      test_fail(file, line, "%s: no headers, but the pointer is not NULL", expr);
      return 0;
    }
    return 1;
  }
  if (got == NULL) {
    test_fail(file, line, "%s: NULL with %zu headers", expr, n);
    return 0;
  }
  for (i = 0; i < n; i++) {
    if (got[i].name == NULL || got[i].value == NULL || strcmp(got[i].name, want[i].name) != 0 ||
        strcmp(got[i].value, want[i].value) != 0) {
      test_fail(file, line, "%s[%zu] is (\"%s\", \"%s\"), want (\"%s\", \"%s\")", expr, i,
                or_null(got[i].name), or_null(got[i].value), want[i].name, want[i].value);
      return 0;
    }
    if (got[i].name == want[i].name || got[i].value == want[i].value) {
      test_fail(file, line, "%s[%zu] points to the caller's strings: not copied", expr, i);
      return 0;
    }
  }
  return 1;
}

/* The lease's headers are `want`; a NULL lease is no (the claim's check said why). */
#define LEASE_HEADERS(lease, want, n_want) \
  lease_headers_at((lease), (want), (n_want), __FILE__, __LINE__)
static int lease_headers_at(const harel_lease *lease, const harel_header *want, size_t n_want,
                            const char *file, int line) {
  return lease != NULL && same_headers_at(lease->headers, lease->n_headers, want, n_want, 1,
                                          "lease->headers", file, line);
}

/* Opens `path` on the test clock with `max_attempts` (0: none) and busy timeout `busy`
 * (negative: the default). */
static harel_transport *open_with(const char *path, double *now, uint32_t max_attempts,
                                  double busy) {
  harel_options *o = harel_options_new();
  harel_transport *t = NULL;
  harel_error *e = NULL;
  if (!EXPECT(o != NULL)) return NULL;
  EXPECT_CALL(harel_options_set_clock(o, test_clock, now, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_synchronous_full(o, false, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_max_attempts(o, max_attempts, &e), &e, HAREL_OK);
  if (busy >= 0) EXPECT_CALL(harel_options_set_busy_timeout(o, busy, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_open(path, o, &t, &e), &e, HAREL_OK);
  harel_options_free(o);
  return t;
}

#define PUBLISH_HEADERS(t, group, event, headers, n)                                         \
  EXPECT_STATUS(harel_transport_publish_headers((t), (group), (event), 0, NULL, (headers),   \
                                                (n), NULL),                                  \
                HAREL_OK)

/* The queue's message count. */
static uint64_t messages_in(harel_transport *t) {
  harel_stats *s = STATS(t);
  uint64_t n = s != NULL ? s->messages : 0;
  harel_stats_free(s);
  return n;
}

/* ---- publishing, and the leases -------------------------------------------------------- */

/* publish_headers: the pairs back on the lease in order, byte for byte, copied at the
 * publish (the caller's buffers changed after it do not show), living as long as the lease
 * (read again after the ack); none (NULL with 0, or a pointer with 0): NULL and 0; with a
 * priority and a routing key, which it sets as publish does. */
static void publish_headers_hands_them_to_the_lease(void) {
  double now = T0;
  char name[16] = "mutable", value[16] = "before";
  harel_header mine[1];
  const char *const keys[] = {"rk"};
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *l;
  harel_error *e = NULL;
  if (t == NULL) return;
  mine[0].name = name;
  mine[0].value = value;
  EXPECT_CALL(harel_transport_publish_headers(t, "a", "{\"n\":1}", 0, NULL, SET, N_SET, &e), &e,
              HAREL_OK);
  EXPECT_CALL(harel_transport_publish_headers(t, "b", "{\"n\":2}", 0, NULL, NULL, 0, &e), &e,
              HAREL_OK);
  EXPECT_CALL(harel_transport_publish_headers(t, "c", "{\"n\":3}", 0, NULL, SET, 0, &e), &e,
              HAREL_OK);
  EXPECT_CALL(harel_transport_publish_headers(t, "d", "{\"n\":4}", 0, NULL, mine, 1, &e), &e,
              HAREL_OK);
  EXPECT_CALL(harel_transport_publish_headers(t, "e", "{\"n\":5}", 4, "rk", OTHER, 1, &e), &e,
              HAREL_OK);
  strcpy(name, "changed");
  strcpy(value, "after");

  l = CLAIM(t, "w", "{\"n\":1}");
  if (LEASE_HEADERS(l, SET, N_SET)) {
    EXPECT_STATUS(harel_transport_ack(t, l, NULL), HAREL_OK);
    SAME_HEADERS(l->headers, l->n_headers, SET, N_SET, 1); /* the lease's, until its free */
  }
  harel_lease_free(l);
  l = CLAIM(t, "w", "{\"n\":2}");
  LEASE_HEADERS(l, SET, 0);
  ACK(t, l);
  l = CLAIM(t, "w", "{\"n\":3}");
  LEASE_HEADERS(l, SET, 0);
  ACK(t, l);
  l = CLAIM(t, "w", "{\"n\":4}");
  if (l != NULL) {
    EXPECT(l->n_headers == 1 && strcmp(l->headers[0].name, "mutable") == 0 &&
           strcmp(l->headers[0].value, "before") == 0);
  }
  ACK(t, l);
  /* e's priority and routing key: only a claim at priority 4 for "rk" finds it */
  l = NOT_SET_LEASE;
  EXPECT_CALL(harel_transport_claim(t, "w", VIS, 4, keys, 1, &l, &e), &e, HAREL_OK);
  if (EXPECT(l != NULL && l != NOT_SET_LEASE)) {
    LEASE_HEADERS(l, OTHER, 1);
    ACK(t, l);
  }
  CLAIM_EMPTY(t);
  harel_transport_close(t);
}

/* The exact limits are taken: 64 pairs, 16384 bytes of names and values, a name of 128
 * bytes; and come back whole. */
static void the_limits_themselves_are_taken(void) {
  static char big[MAX_HEADERS_BYTES], long_name[MAX_HEADER_NAME_LEN + 1], names[MAX_HEADERS][8];
  harel_header full[MAX_HEADERS], one[1], longest[1];
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *l;
  size_t i;
  if (t == NULL) return;
  for (i = 0; i < MAX_HEADERS; i++) {
    snprintf(names[i], sizeof names[i], "h%zu", i);
    full[i].name = names[i];
    full[i].value = "v";
  }
  memset(big, 'v', MAX_HEADERS_BYTES - 1); /* "a" and 16383 bytes: 16384 */
  big[MAX_HEADERS_BYTES - 1] = '\0';
  one[0].name = "a";
  one[0].value = big;
  longest[0].name = key_of(long_name, MAX_HEADER_NAME_LEN);
  longest[0].value = "x";
  PUBLISH_HEADERS(t, "full", "1", full, MAX_HEADERS);
  PUBLISH_HEADERS(t, "big", "2", one, 1);
  PUBLISH_HEADERS(t, "long", "3", longest, 1);
  l = CLAIM(t, "w", "1");
  LEASE_HEADERS(l, full, MAX_HEADERS);
  ACK(t, l);
  l = CLAIM(t, "w", "2");
  if (LEASE_HEADERS(l, one, 1)) EXPECT(strlen(l->headers[0].value) == MAX_HEADERS_BYTES - 1);
  ACK(t, l);
  l = CLAIM(t, "w", "3");
  if (LEASE_HEADERS(l, longest, 1)) EXPECT(strlen(l->headers[0].name) == MAX_HEADER_NAME_LEN);
  ACK(t, l);
  harel_transport_close(t);
}

/* publish_with_headers: its seq and duplicate (each output may be NULL); a duplicate
 * stores nothing, its headers neither (the first message's come back); a delayed message
 * keeps its headers until it is due. */
static void publish_with_headers_hands_out_seq_and_duplicate(void) {
  double now = T0;
  int64_t seq = NOT_SET_SEQ, again = NOT_SET_SEQ;
  int dup = NOT_SET_DUP;
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *l;
  harel_error *e = NULL;
  if (t == NULL) return;
  EXPECT_CALL(harel_transport_publish_with_headers(t, "g", "\"first\"", 0, NULL, SET, N_SET, "k",
                                                   0.0, -1.0, &seq, &dup, &e),
              &e, HAREL_OK);
  EXPECT(seq > 0 && dup == 0);
  dup = NOT_SET_DUP;
  EXPECT_CALL(harel_transport_publish_with_headers(t, "g", "\"second\"", 0, NULL, OTHER, 1, "k",
                                                   0.0, -1.0, &again, &dup, &e),
              &e, HAREL_OK);
  EXPECT(again == seq && dup == 1);
  EXPECT_CALL(harel_transport_publish_with_headers(t, "late", "\"late\"", 0, NULL, OTHER, 1, NULL,
                                                   60.0, -1.0, NULL, NULL, &e),
              &e, HAREL_OK);
  EXPECT_CALL(harel_transport_publish_with_headers(t, "none", "\"none\"", 0, NULL, NULL, 0, NULL,
                                                   0.0, -1.0, NULL, &dup, &e),
              &e, HAREL_OK);
  EXPECT(dup == 0);
  EXPECT(messages_in(t) == 3);
  l = CLAIM(t, "w", "\"first\"");
  if (LEASE_HEADERS(l, SET, N_SET)) EXPECT(l->seq == seq);
  ACK(t, l);
  l = CLAIM(t, "w", "\"none\"");
  LEASE_HEADERS(l, SET, 0);
  ACK(t, l);
  CLAIM_EMPTY(t); /* "late" is not due */
  now = T0 + 61;
  l = CLAIM(t, "w", "\"late\"");
  LEASE_HEADERS(l, OTHER, 1);
  ACK(t, l);
  harel_transport_close(t);
}

/* publish_many_with_headers: `headers` NULL (none for any message) or one list per
 * message (n 0: none), with or without keys and delays; each message's seq and duplicate;
 * each lease of claim_many carries its own message's headers. */
static void publish_many_with_headers_gives_each_message_its_own(void) {
  const harel_message batch[4] = {
      {"a", "\"a\"", 0, NULL}, {"b", "\"b\"", 0, NULL}, {"c", "\"c\"", 0, NULL}, {"d", "\"d\"", 0, NULL}};
  const harel_headers each[4] = {{SET, N_SET}, {NULL, 0}, {OTHER, 1}, {SET, 0}};
  const char *const keys[4] = {"ka", NULL, "kc", "ka"};
  const double delays[4] = {0.0, 0.0, 0.0, 0.0};
  double now = T0;
  int64_t seqs[4];
  int dups[4];
  harel_lease *leases[8];
  size_t n = NOT_SET_COUNT, i;
  harel_transport *t = open_at(":memory:", &now);
  harel_error *e = NULL;
  if (t == NULL) return;
  EXPECT_CALL(harel_transport_publish_many_with_headers(t, batch, 4, each, keys, delays, NULL,
                                                        seqs, dups, &e),
              &e, HAREL_OK);
  EXPECT(dups[0] == 0 && dups[1] == 0 && dups[2] == 0 && dups[3] == 1 && seqs[3] == seqs[0]);
  EXPECT(seqs[0] < seqs[1] && seqs[1] < seqs[2]);
  EXPECT(messages_in(t) == 3); /* d was a's duplicate */
  EXPECT_CALL(harel_transport_claim_many(t, "w", VIS, 0, NULL, 0, 8, 0.0, NULL, leases, &n, &e),
              &e, HAREL_OK);
  if (EXPECT(n == 3)) {
    LEASE_HEADERS(leases[0], SET, N_SET);
    LEASE_HEADERS(leases[1], SET, 0);
    LEASE_HEADERS(leases[2], OTHER, 1);
    for (i = 0; i < n; i++) ACK(t, leases[i]);
  }
  /* headers NULL: none for any; no outputs */
  EXPECT_CALL(harel_transport_publish_many_with_headers(t, batch, 2, NULL, NULL, NULL, NULL, NULL,
                                                        NULL, &e),
              &e, HAREL_OK);
  n = NOT_SET_COUNT;
  EXPECT_CALL(harel_transport_claim_many(t, "w", VIS, 0, NULL, 0, 8, 0.0, NULL, leases, &n, &e),
              &e, HAREL_OK);
  if (EXPECT(n == 2)) {
    for (i = 0; i < n; i++) {
      LEASE_HEADERS(leases[i], SET, 0);
      ACK(t, leases[i]);
    }
  }
  /* an empty batch writes nothing, NULL arrays and all */
  EXPECT_CALL(harel_transport_publish_many_with_headers(t, NULL, 0, NULL, NULL, NULL, NULL, NULL,
                                                        NULL, &e),
              &e, HAREL_OK);
  EXPECT_CALL(harel_transport_publish_many_with_headers(t, batch, 0, each, NULL, NULL, NULL, NULL,
                                                        NULL, &e),
              &e, HAREL_OK);
  EXPECT(messages_in(t) == 0);
  harel_transport_close(t);
}

/* harel_tx_publish_headers: the messages of a commit carry their headers; a key's
 * duplicate stores nothing; a rollback keeps nothing. */
static void tx_publish_headers_commits_them(void) {
  double now = T0;
  int64_t seqs[3];
  int dups[3];
  size_t n = NOT_SET_COUNT;
  harel_transport *t = open_at(":memory:", &now);
  harel_tx *tx;
  harel_lease *l;
  harel_error *e = NULL;
  if (t == NULL) return;
  if ((tx = BEGIN(t)) != NULL) {
    EXPECT_CALL(harel_tx_publish_headers(tx, "g", "\"tx1\"", 0, NULL, SET, N_SET, "k", 0.0, -1.0,
                                         &e),
                &e, HAREL_OK);
    EXPECT_CALL(harel_tx_publish_headers(tx, "g", "\"tx2\"", 0, NULL, NULL, 0, NULL, 0.0, -1.0,
                                         &e),
                &e, HAREL_OK);
    EXPECT_CALL(harel_tx_publish_headers(tx, "g", "\"dup\"", 0, NULL, OTHER, 1, "k", 0.0, -1.0,
                                         &e),
                &e, HAREL_OK);
    EXPECT_CALL(harel_tx_commit(tx, seqs, dups, 3, &n, &e), &e, HAREL_OK);
    EXPECT(n == 3 && dups[0] == 0 && dups[1] == 0 && dups[2] == 1 && seqs[2] == seqs[0]);
    harel_tx_free(tx);
  }
  if ((tx = BEGIN(t)) != NULL) {
    EXPECT_CALL(harel_tx_publish_headers(tx, "g", "\"gone\"", 0, NULL, SET, N_SET, NULL, 0.0,
                                         -1.0, &e),
                &e, HAREL_OK);
    EXPECT_CALL(harel_tx_rollback(tx, &e), &e, HAREL_OK);
    harel_tx_free(tx);
  }
  EXPECT(messages_in(t) == 2);
  l = CLAIM(t, "w", "\"tx1\"");
  LEASE_HEADERS(l, SET, N_SET);
  ACK(t, l);
  l = CLAIM(t, "w", "\"tx2\"");
  LEASE_HEADERS(l, SET, 0);
  ACK(t, l);
  CLAIM_EMPTY(t);
  harel_transport_close(t);
}

/* ---- every kind of claim ----------------------------------------------------------------- */

typedef struct {
  harel_transport *t;
  size_t max; /* 0: claim_wait; else claim_many of up to max */
  harel_status status;
  harel_lease *leases[4];
  size_t n;
} waiting;

static void *wait_for_work(void *arg) {
  waiting *w = arg;
  if (w->max == 0) {
    w->status = harel_transport_claim_wait(w->t, "waiter", VIS, 0, NULL, 0, 20.0, NULL,
                                           &w->leases[0], NULL);
    w->n = w->leases[0] != NULL;
  } else {
    w->status = harel_transport_claim_many(w->t, "waiter", VIS, 0, NULL, 0, w->max, 20.0, NULL,
                                           w->leases, &w->n, NULL);
  }
  return NULL;
}

/* A waiting claim (claim_wait, claim_many with a wait) woken by a publish with headers
 * hands them out. */
static void waiting_claims_hand_them_out(void) {
  double now = T0;
  char path[300];
  harel_transport *t = open_at(new_path(path, sizeof path), &now);
  waiting w;
  pthread_t thread;
  int kind;
  if (t == NULL) return;
  for (kind = 0; kind < 2; kind++) {
    memset(&w, 0, sizeof w);
    w.t = t;
    w.max = kind == 0 ? 0 : 4;
    w.status = HAREL_ERR_PANIC;
    if (!EXPECT(pthread_create(&thread, NULL, wait_for_work, &w) == 0)) break;
    pause_for(0.1); /* the claim is waiting: nothing to claim yet */
    PUBLISH_HEADERS(t, kind == 0 ? "woke" : "woke-many", "\"w\"", SET, N_SET);
    pthread_join(thread, NULL);
    if (EXPECT(w.status == HAREL_OK && w.n == 1)) {
      LEASE_HEADERS(w.leases[0], SET, N_SET);
      ACK(t, w.leases[0]);
    }
  }
  harel_transport_close(t);
}

/* claim, ack_and_claim and ack_and_claim_many hand out the headers of the message each
 * lease is of. */
static void every_claim_hands_them_out(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *first, *next = NOT_SET_LEASE, *batch[4];
  const harel_lease *acking[1];
  harel_status outcomes[1];
  harel_error *e = NULL;
  size_t n = NOT_SET_COUNT, i;
  if (t == NULL) return;
  PUBLISH_HEADERS(t, "g", "1", SET, N_SET);
  PUBLISH_HEADERS(t, "g", "2", OTHER, 1);
  PUBLISH_HEADERS(t, "g", "3", SET, 2);
  PUBLISH_HEADERS(t, "h", "4", SET + 3, 1);
  first = CLAIM(t, "w", "1");
  if (!LEASE_HEADERS(first, SET, N_SET)) {
    harel_lease_free(first);
    harel_transport_close(t);
    return;
  }
  EXPECT_CALL(harel_transport_ack_and_claim(t, first, "w", VIS, 0, NULL, 0, &next, &e), &e,
              HAREL_OK);
  if (EXPECT(next != NULL && next != NOT_SET_LEASE)) {
    /* g's next, or h's head: whichever waited longer */
    if (strcmp(next->event, "2") == 0) LEASE_HEADERS(next, OTHER, 1);
    else if (EXPECT(strcmp(next->event, "4") == 0)) LEASE_HEADERS(next, SET + 3, 1);
    acking[0] = next;
    EXPECT_CALL(harel_transport_ack_and_claim_many(t, acking, 1, outcomes, "w", VIS, 0, NULL, 0,
                                                   4, batch, &n, &e),
                &e, HAREL_OK);
    EXPECT(outcomes[0] == HAREL_OK);
    for (i = 0; i < n && i < 4; i++) {
      if (strcmp(batch[i]->event, "2") == 0) LEASE_HEADERS(batch[i], OTHER, 1);
      else if (strcmp(batch[i]->event, "3") == 0) LEASE_HEADERS(batch[i], SET, 2);
      else if (EXPECT(strcmp(batch[i]->event, "4") == 0)) LEASE_HEADERS(batch[i], SET + 3, 1);
      ACK(t, batch[i]);
    }
    harel_lease_free(next);
  }
  harel_lease_free(first);
  drain_now(t, NULL, NULL);
  harel_transport_close(t);
}

/* ---- the looks: peek, dead letters, a redrive -------------------------------------------- */

/* peek: page->headers[i] holds messages[i]'s, page after page. */
static void peek_pages_carry_them(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_message_page *p = NOT_SET_MESSAGES, *rest = NOT_SET_MESSAGES;
  harel_error *e = NULL;
  if (t == NULL) return;
  PUBLISH_HEADERS(t, "g", "1", SET, N_SET);
  PUBLISH_HEADERS(t, "g", "2", NULL, 0);
  PUBLISH_HEADERS(t, "g", "3", OTHER, 1);
  PUBLISH(t, "g", "4"); /* a plain publish: none */
  EXPECT_CALL(harel_transport_peek(t, "g", NULL, 100, &p, &e), &e, HAREL_OK);
  if (EXPECT(p != NULL && p != NOT_SET_MESSAGES && p->n_messages == 4 && p->headers != NULL)) {
    SAME_HEADERS(p->headers[0].items, p->headers[0].n, SET, N_SET, 0);
    SAME_HEADERS(p->headers[1].items, p->headers[1].n, SET, 0, 0);
    SAME_HEADERS(p->headers[2].items, p->headers[2].n, OTHER, 1, 0);
    SAME_HEADERS(p->headers[3].items, p->headers[3].n, SET, 0, 0);
  }
  harel_message_page_free(p);
  /* by pages of two: the second page's are its own messages' */
  p = NOT_SET_MESSAGES;
  EXPECT_CALL(harel_transport_peek(t, "g", NULL, 2, &p, &e), &e, HAREL_OK);
  if (EXPECT(p != NULL && p != NOT_SET_MESSAGES && p->n_messages == 2 && p->next_cursor != NULL)) {
    SAME_HEADERS(p->headers[0].items, p->headers[0].n, SET, N_SET, 0);
    EXPECT_CALL(harel_transport_peek(t, "g", p->next_cursor, 2, &rest, &e), &e, HAREL_OK);
    if (EXPECT(rest != NULL && rest != NOT_SET_MESSAGES && rest->n_messages == 2)) {
      EXPECT(rest->messages[0].seq == p->messages[1].seq + 1);
      SAME_HEADERS(rest->headers[0].items, rest->headers[0].n, OTHER, 1, 0);
      SAME_HEADERS(rest->headers[1].items, rest->headers[1].n, SET, 0, 0);
    }
    harel_message_page_free(rest);
  }
  harel_message_page_free(p);
  harel_transport_close(t);
}

/* The dead letters keep their headers: a worker's dead_letter and a claim over
 * max_attempts, on every page; a redrive (by seq, by group, all) brings them back with the
 * message, to peek and to the next lease. */
static void dead_letters_and_redrives_keep_them(void) {
  double now = T0;
  char path[300];
  harel_transport *t = open_with(new_path(path, sizeof path), &now, 1, -1.0);
  harel_dead_page *d, *rest;
  harel_message_page *p = NOT_SET_MESSAGES;
  harel_lease *l;
  const int64_t *seq;
  uint64_t moved = 0;
  int64_t first_seq = 0;
  harel_error *e = NULL;
  if (t == NULL) return;
  PUBLISH_HEADERS(t, "worker", "\"by a worker\"", SET, N_SET);
  PUBLISH_HEADERS(t, "claim", "\"by a claim\"", OTHER, 1);
  PUBLISH(t, "plain", "\"plain\"");
  BURY(t, 1, "reason 1"); /* "worker", the oldest head */
  l = CLAIM(t, "w", "\"by a claim\"");
  if (l != NULL) EXPECT_STATUS(harel_transport_nack(t, l, 0.0, NULL), HAREL_OK);
  harel_lease_free(l);
  l = CLAIM(t, "w", "\"plain\"");
  if (l != NULL) EXPECT_STATUS(harel_transport_dead_letter(t, l, "reason 3", NULL), HAREL_OK);
  harel_lease_free(l);
  CLAIM_EMPTY(t); /* "claim" is over its one attempt: this claim buries it */

  d = DEAD_PAGE(t, NULL, NULL, 100);
  if (d != NULL && EXPECT(d->n_letters == 3 && d->headers != NULL)) {
    EXPECT(strcmp(d->letters[0].event, "\"by a worker\"") == 0);
    SAME_HEADERS(d->headers[0].items, d->headers[0].n, SET, N_SET, 0);
    EXPECT(strcmp(d->letters[1].event, "\"by a claim\"") == 0);
    SAME_HEADERS(d->headers[1].items, d->headers[1].n, OTHER, 1, 0);
    SAME_HEADERS(d->headers[2].items, d->headers[2].n, SET, 0, 0);
    first_seq = d->letters[0].seq;
  }
  harel_dead_page_free(d);
  /* a page of one, then the next; and one group's */
  d = DEAD_PAGE(t, NULL, NULL, 1);
  if (d != NULL && EXPECT(d->n_letters == 1 && d->next_cursor != NULL)) {
    SAME_HEADERS(d->headers[0].items, d->headers[0].n, SET, N_SET, 0);
    rest = DEAD_PAGE(t, NULL, d->next_cursor, 1);
    if (rest != NULL && EXPECT(rest->n_letters == 1))
      SAME_HEADERS(rest->headers[0].items, rest->headers[0].n, OTHER, 1, 0);
    harel_dead_page_free(rest);
  }
  harel_dead_page_free(d);
  d = DEAD_PAGE(t, "claim", NULL, 10);
  if (d != NULL && EXPECT(d->n_letters == 1))
    SAME_HEADERS(d->headers[0].items, d->headers[0].n, OTHER, 1, 0);
  harel_dead_page_free(d);

  /* redrive by seq: back in its group with its headers, to peek and to a claim */
  seq = &first_seq;
  EXPECT_CALL(harel_transport_redrive(t, false, NULL, seq, 1, &moved, &e), &e, HAREL_OK);
  EXPECT(moved == 1);
  EXPECT_CALL(harel_transport_peek(t, "worker", NULL, 10, &p, &e), &e, HAREL_OK);
  if (EXPECT(p != NULL && p != NOT_SET_MESSAGES && p->n_messages == 1))
    SAME_HEADERS(p->headers[0].items, p->headers[0].n, SET, N_SET, 0);
  harel_message_page_free(p);
  l = CLAIM(t, "w", "\"by a worker\"");
  if (LEASE_HEADERS(l, SET, N_SET)) EXPECT(l->attempts == 1); /* claimed 0 times before */
  ACK(t, l);
  /* by group, then all: the lease's headers are the message's */
  EXPECT_CALL(harel_transport_redrive(t, false, "claim", NULL, 0, &moved, &e), &e, HAREL_OK);
  l = CLAIM(t, "w", "\"by a claim\"");
  LEASE_HEADERS(l, OTHER, 1);
  ACK(t, l);
  EXPECT_CALL(harel_transport_redrive(t, true, NULL, NULL, 0, &moved, &e), &e, HAREL_OK);
  l = CLAIM(t, "w", "\"plain\"");
  LEASE_HEADERS(l, SET, 0);
  ACK(t, l);
  CLAIM_EMPTY(t);
  harel_transport_close(t);
}

/* ---- what is refused ----------------------------------------------------------------------- */

/* publish_with_headers refused: *seq and *duplicate untouched in both runs. */
#define PUBLISH_WITH_HEADERS_FAILS(want, parameter, t, group, headers, n, key)                \
  do {                                                                                         \
    int64_t seq_ = NOT_SET_SEQ;                                                                \
    int dup_ = NOT_SET_DUP, kept_ = 0;                                                         \
    harel_status s_;                                                                           \
    EXPECT_FAILS((want), (parameter),                                                          \
                 (seq_ = NOT_SET_SEQ, dup_ = NOT_SET_DUP,                                      \
                  s_ = harel_transport_publish_with_headers((t), (group), "\"x\"", 0, NULL,    \
                                                            (headers), (n), (key), 0.0, -1.0,  \
                                                            &seq_, &dup_, ERR),                \
                  kept_ += seq_ == NOT_SET_SEQ && dup_ == NOT_SET_DUP, s_));                   \
    EXPECT(kept_ == 2);                                                                        \
  } while (0)

/* publish_many_with_headers refused: seqs and duplicates untouched in both runs. */
#define PUBLISH_MANY_HEADERS_FAILS(want, parameter, t, messages, n, headers, keys)            \
  do {                                                                                         \
    int kept_ = 0;                                                                             \
    harel_status s_;                                                                           \
    EXPECT_FAILS((want), (parameter),                                                          \
                 (outputs_reset(),                                                             \
                  s_ = harel_transport_publish_many_with_headers((t), (messages), (n),         \
                                                                 (headers), (keys), NULL, NULL, \
                                                                 seqs_out, dups_out, ERR),     \
                  kept_ += outputs_untouched(), s_));                                          \
    EXPECT(kept_ == 2);                                                                        \
  } while (0)

/* `headers` (n pairs) refused by every form, naming `parameter` ("headers[1].name"): the
 * three publishes (in a batch, message 1's, named "messages[1]." + parameter) and a
 * transaction's, which goes on (a good publish after it is taken; the fixture's
 * FIXTURE_CLOSE sees nothing written, the transaction rolled back). */
static void refused_everywhere(fixture *fx, const harel_header *headers, size_t n,
                               const char *parameter) {
  const harel_message batch[3] = {{"new", "\"a\"", 0, NULL}, {"new", "\"b\"", 0, NULL},
                                  {"new", "\"c\"", 0, NULL}};
  harel_headers each[3];
  char named[80];
  harel_tx *tx;
  each[0].items = OTHER;
  each[0].n = 1;
  each[1].items = headers;
  each[1].n = n;
  each[2].items = NULL;
  each[2].n = 0;
  snprintf(named, sizeof named, "messages[1].%s", parameter);
  EXPECT_BAD(parameter,
             harel_transport_publish_headers(fx->t, "g1", "\"x\"", 0, NULL, headers, n, ERR));
  PUBLISH_WITH_HEADERS_FAILS(HAREL_ERR_ARGUMENT, parameter, fx->t, "g1", headers, n, "key");
  PUBLISH_MANY_HEADERS_FAILS(HAREL_ERR_ARGUMENT, named, fx->t, batch, 3, each, NULL);
  if ((tx = BEGIN(fx->t)) != NULL) {
    EXPECT_BAD(parameter, harel_tx_publish_headers(tx, "g1", "\"x\"", 0, NULL, headers, n, NULL,
                                                   0.0, -1.0, ERR));
    EXPECT_STATUS(harel_tx_publish_headers(tx, "g1", "\"x\"", 0, NULL, OTHER, 1, NULL, 0.0, -1.0,
                                           NULL),
                  HAREL_OK);
    harel_tx_free(tx); /* rolled back */
  }
}

/* Every bad header, in every form: NULL with n > 0, a name or value NULL, a name empty, of
 * 129 bytes, holding '=', a space, a tab, DEL, a byte above 0x7e (UTF-8 or not), a value
 * not UTF-8, 65 pairs, 16385 bytes (a NUL in a value cannot be written in C's strings);
 * each refused, named by its index, nothing written (the fixture checks), the outputs
 * untouched. */
static void bad_headers_are_refused_by_every_form(void) {
  static char long_name[MAX_HEADER_NAME_LEN + 2], big[MAX_HEADERS_BYTES + 1],
      names[MAX_HEADERS + 1][8];
  const char *const bad_names[] = {"", "a=b", "=", "a b", " a", "a\tb", "a\x7f", "caf\xc3\xa9",
                                   "\xe2\x82\xac", "a\nb"};
  harel_header h[3], many[MAX_HEADERS + 1];
  char parameter[32];
  fixture fx;
  size_t i, at;
  if (!fixture_open(&fx)) return;
  h[0] = OTHER[0];
  h[2] = OTHER[0];
  /* NULL with n > 0 */
  refused_everywhere(&fx, NULL, 1, "headers");
  refused_everywhere(&fx, NULL, SIZE_MAX, "headers");
  /* a NULL name or value, at each index */
  for (at = 0; at < 3; at++) {
    h[0] = h[1] = h[2] = OTHER[0];
    h[at].name = NULL;
    snprintf(parameter, sizeof parameter, "headers[%zu].name", at);
    refused_everywhere(&fx, h, 3, parameter);
    h[at] = OTHER[0];
    h[at].value = NULL;
    snprintf(parameter, sizeof parameter, "headers[%zu].value", at);
    refused_everywhere(&fx, h, 3, parameter);
  }
  /* names it may not be */
  h[0] = h[1] = h[2] = OTHER[0];
  for (i = 0; i < N_OF(bad_names); i++) {
    h[1].name = bad_names[i];
    refused_everywhere(&fx, h, 3, "headers[1].name");
  }
  h[1].name = key_of(long_name, MAX_HEADER_NAME_LEN + 1);
  refused_everywhere(&fx, h, 3, "headers[1].name");
  for (i = 0; i < N_BAD_UTF8; i++) {
    h[1] = OTHER[0];
    h[1].name = BAD_UTF8[i];
    refused_everywhere(&fx, h, 3, "headers[1].name");
    h[1] = OTHER[0];
    h[1].value = BAD_UTF8[i];
    refused_everywhere(&fx, h, 3, "headers[1].value");
  }
  /* 65 pairs */
  for (i = 0; i <= MAX_HEADERS; i++) {
    snprintf(names[i], sizeof names[i], "h%zu", i);
    many[i].name = names[i];
    many[i].value = "";
  }
  refused_everywhere(&fx, many, MAX_HEADERS + 1, "headers");
  /* 16385 bytes: "ab" and 16383, or 64 pairs of "hN" and values filling the rest */
  memset(big, 'v', MAX_HEADERS_BYTES - 1);
  big[MAX_HEADERS_BYTES - 1] = '\0';
  h[0].name = "ab";
  h[0].value = big;
  refused_everywhere(&fx, h, 1, "headers");
  h[0] = OTHER[0];
  h[1].name = "a";
  h[1].value = big; /* "k" "v" "a" and 16383: 16386 */
  refused_everywhere(&fx, h, 2, "headers");
  FIXTURE_CLOSE(&fx);
}

/* The rest of each form's arguments, with good headers: t NULL (tx NULL, or ended), the
 * batch's messages NULL, a message's headers NULL with n > 0; nothing written. */
static void the_other_arguments_are_still_checked(void) {
  const harel_message batch[2] = {{"new", "\"a\"", 0, NULL}, {"", "\"b\"", 0, NULL}};
  const harel_message good[2] = {{"new", "\"a\"", 0, NULL}, {"new", "\"b\"", 0, NULL}};
  const harel_headers each[2] = {{SET, N_SET}, {OTHER, 1}};
  const harel_headers null_items[2] = {{SET, N_SET}, {NULL, 2}};
  fixture fx;
  harel_tx *tx;
  if (!fixture_open(&fx)) return;
  EXPECT_BAD("t", harel_transport_publish_headers(NULL, "g1", "1", 0, NULL, SET, N_SET, ERR));
  EXPECT_BAD("group_id", harel_transport_publish_headers(fx.t, "", "1", 0, NULL, SET, N_SET, ERR));
  EXPECT_BAD("event_json", harel_transport_publish_headers(fx.t, "g1", "{", 0, NULL, SET, 1, ERR));
  EXPECT_BAD("priority", harel_transport_publish_headers(fx.t, "n", "1", 5, NULL, SET, 1, ERR));
  PUBLISH_WITH_HEADERS_FAILS(HAREL_ERR_ARGUMENT, "t", NULL, "g1", SET, N_SET, NULL);
  PUBLISH_WITH_HEADERS_FAILS(HAREL_ERR_ARGUMENT, "key", fx.t, "g1", SET, N_SET, "");
  PUBLISH_WITH_HEADERS_FAILS(HAREL_ERR_ARGUMENT, "group_id", fx.t, NULL, SET, N_SET, NULL);
  PUBLISH_MANY_HEADERS_FAILS(HAREL_ERR_ARGUMENT, "t", NULL, batch, 1, each, NULL);
  PUBLISH_MANY_HEADERS_FAILS(HAREL_ERR_ARGUMENT, "messages", fx.t, NULL, 2, each, NULL);
  PUBLISH_MANY_HEADERS_FAILS(HAREL_ERR_ARGUMENT, "messages[1].group_id", fx.t, batch, 2, each,
                             NULL);
  PUBLISH_MANY_HEADERS_FAILS(HAREL_ERR_ARGUMENT, "messages[1].headers", fx.t, good, 2,
                             null_items, NULL);
  EXPECT_BAD("tx", harel_tx_publish_headers(NULL, "g1", "1", 0, NULL, SET, N_SET, NULL, 0.0, -1.0,
                                            ERR));
  if ((tx = BEGIN(fx.t)) != NULL) {
    EXPECT_BAD("group_id", harel_tx_publish_headers(tx, "", "1", 0, NULL, SET, N_SET, NULL, 0.0,
                                                    -1.0, ERR));
    EXPECT_BAD("delay", harel_tx_publish_headers(tx, "g1", "1", 0, NULL, SET, N_SET, NULL, -1.0,
                                                 -1.0, ERR));
    EXPECT_STATUS(harel_tx_rollback(tx, NULL), HAREL_OK);
    /* ended: refused, saying so */
    EXPECT_BAD(NULL, harel_tx_publish_headers(tx, "g1", "1", 0, NULL, SET, N_SET, NULL, 0.0, -1.0,
                                              ERR));
    harel_tx_free(tx);
  }
  FIXTURE_CLOSE(&fx);
}

/* A refused header costs no key, and a transaction goes on after one: its commit publishes
 * what was taken. */
static void a_refused_header_takes_no_key_and_a_transaction_goes_on(void) {
  const harel_header bad[1] = {{"a b", "v"}};
  const harel_message batch[1] = {{"g", "\"b\"", 0, NULL}};
  const harel_headers each[1] = {{bad, 1}};
  const char *const keys[1] = {"kb"};
  double now = T0;
  int64_t seqs[2];
  int dups[2];
  size_t n = NOT_SET_COUNT;
  harel_transport *t = open_at(":memory:", &now);
  harel_tx *tx;
  harel_lease *l;
  harel_error *e = NULL;
  if (t == NULL) return;
  PUBLISH_WITH_HEADERS_FAILS(HAREL_ERR_ARGUMENT, "headers[0].name", t, "g", bad, 1, "ka");
  PUBLISH_MANY_HEADERS_FAILS(HAREL_ERR_ARGUMENT, "messages[0].headers[0].name", t, batch, 1, each,
                             keys);
  EXPECT(PUBLISH_WITH(t, "g", "\"a\"", "ka", 0.0, -1.0, 0) > 0);
  EXPECT(PUBLISH_WITH(t, "g", "\"b\"", "kb", 0.0, -1.0, 0) > 0);
  if ((tx = BEGIN(t)) != NULL) {
    EXPECT_STATUS(harel_tx_publish_headers(tx, "g", "\"c\"", 0, NULL, SET, N_SET, "kc", 0.0, -1.0,
                                           NULL),
                  HAREL_OK);
    EXPECT_ARG(harel_tx_publish_headers(tx, "g", "\"d\"", 0, NULL, bad, 1, "kd", 0.0, -1.0, NULL),
               "headers[0].name");
    EXPECT_CALL(harel_tx_commit(tx, seqs, dups, 2, &n, &e), &e, HAREL_OK);
    EXPECT(n == 1 && dups[0] == 0);
    harel_tx_free(tx);
  }
  EXPECT(PUBLISH_WITH(t, "g", "\"d\"", "kd", 0.0, -1.0, 0) > 0); /* kd not taken */
  ACK(t, CLAIM(t, "w", "\"a\""));
  ACK(t, CLAIM(t, "w", "\"b\""));
  l = CLAIM(t, "w", "\"c\"");
  LEASE_HEADERS(l, SET, N_SET);
  ACK(t, l);
  ACK(t, CLAIM(t, "w", "\"d\""));
  CLAIM_EMPTY(t);
  harel_transport_close(t);
}

/* A `*err` already set: each form refused, nothing written, the outputs untouched. */
static void a_set_err_is_refused(void) {
  const harel_message batch[1] = {{"g", "\"stale\"", 0, NULL}};
  const harel_headers each[1] = {{SET, N_SET}};
  double now = T0;
  char was_text[512];
  harel_transport *t = open_at(":memory:", &now);
  harel_error *stale = NULL;
  const harel_error *was;
  harel_tx *tx;
  int64_t seq = NOT_SET_SEQ;
  int dup = NOT_SET_DUP;
  size_t n = NOT_SET_COUNT;
  if (t == NULL) return;
  EXPECT(harel_transport_publish_headers(NULL, "g", "1", 0, NULL, NULL, 0, &stale) ==
         HAREL_ERR_ARGUMENT);
  if (!EXPECT(stale != NULL)) {
    harel_transport_close(t);
    return;
  }
  was = stale;
  snprintf(was_text, sizeof was_text, "%s", harel_error_message(stale));
  REFUSED(harel_transport_publish_headers(t, "g", "\"stale\"", 0, NULL, SET, N_SET, &stale));
  REFUSED(harel_transport_publish_with_headers(t, "g", "\"stale\"", 0, NULL, SET, N_SET, "k", 0.0,
                                               -1.0, &seq, &dup, &stale));
  EXPECT(seq == NOT_SET_SEQ && dup == NOT_SET_DUP);
  outputs_reset();
  REFUSED(harel_transport_publish_many_with_headers(t, batch, 1, each, NULL, NULL, NULL, seqs_out,
                                                    dups_out, &stale));
  EXPECT(outputs_untouched());
  if ((tx = BEGIN(t)) != NULL) {
    REFUSED(harel_tx_publish_headers(tx, "g", "\"stale\"", 0, NULL, SET, N_SET, NULL, 0.0, -1.0,
                                     &stale));
    EXPECT_STATUS(harel_tx_commit(tx, NULL, NULL, 0, &n, NULL), HAREL_OK);
    EXPECT(n == 0);
    harel_tx_free(tx);
  }
  EXPECT(messages_in(t) == 0);
  harel_transport_close(t);
  harel_error_free(stale);
}

/* ---- the other statuses ------------------------------------------------------------------ */

static const char DROP_KEYS_TABLE[] =
    "import sqlite3, sys\n"
    "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "c.execute('DROP TABLE harel_transport_keys')\n"
    "print('dropped', flush=True)\n";

/* HAREL_ERR_BUSY (another process holds the write lock, busy timeout 0) and
 * HAREL_ERR_DATABASE (another process dropped the tables; a key on a queue without the keys
 * table), from each form; nothing written by the busy ones once the lock is free. */
static void busy_and_database(void) {
  const harel_message batch[1] = {{"g", "\"lost\"", 0, NULL}};
  const harel_headers each[1] = {{SET, N_SET}};
  const char *const keys[1] = {"lost"};
  double now = T0;
  char path[300], release[300], line[32];
  harel_transport *t;
  harel_options *o;
  harel_tx *tx;
  harel_error *e = NULL;
  FILE *holder;
  snprintf(release, sizeof release, "%s/release-headers", temp_dir);
  t = open_with(new_path(path, sizeof path), &now, 0, 0.0);
  if (t == NULL) return;
  PUBLISH_HEADERS(t, "g", "\"kept\"", OTHER, 1);
  holder = hold_write_lock(path, release);
  if (EXPECT(holder != NULL)) {
    EXPECT_FAILS(HAREL_ERR_BUSY, NULL, harel_transport_publish_headers(t, "g", "\"lost\"", 0, NULL,
                                                                       SET, N_SET, ERR));
    PUBLISH_WITH_HEADERS_FAILS(HAREL_ERR_BUSY, NULL, t, "g", SET, N_SET, "lost");
    PUBLISH_MANY_HEADERS_FAILS(HAREL_ERR_BUSY, NULL, t, batch, 1, each, keys);
    if ((tx = BEGIN(t)) != NULL) {
      EXPECT_STATUS(harel_tx_publish_headers(tx, "g", "\"lost\"", 0, NULL, SET, N_SET, "lost",
                                             0.0, -1.0, NULL),
                    HAREL_OK);
      EXPECT_CALL(harel_tx_commit(tx, NULL, NULL, 0, NULL, &e), &e, HAREL_ERR_BUSY);
      harel_tx_free(tx);
    }
    EXPECT(release_write_lock(holder, release));
  }
  EXPECT(messages_in(t) == 1);
  EXPECT(PUBLISH_WITH(t, "g", "\"kept too\"", "lost", 0.0, -1.0, 0) > 0); /* "lost" not taken */
  harel_transport_close(t);

  /* the tables dropped under an open handle */
  t = open_at(new_path(path, sizeof path), &now);
  if (t == NULL) return;
  PUBLISH_HEADERS(t, "g", "1", OTHER, 1);
  if (EXPECT(python_run(DROP_TABLES, path, line, sizeof line) && strcmp(line, "dropped\n") == 0)) {
    EXPECT_FAILS(HAREL_ERR_DATABASE, NULL,
                 harel_transport_publish_headers(t, "g", "2", 0, NULL, SET, N_SET, ERR));
    PUBLISH_WITH_HEADERS_FAILS(HAREL_ERR_DATABASE, NULL, t, "g", SET, N_SET, NULL);
    PUBLISH_MANY_HEADERS_FAILS(HAREL_ERR_DATABASE, NULL, t, batch, 1, each, NULL);
    if ((tx = BEGIN(t)) != NULL) {
      EXPECT_STATUS(harel_tx_publish_headers(tx, "g", "2", 0, NULL, SET, N_SET, NULL, 0.0, -1.0,
                                             NULL),
                    HAREL_OK);
      EXPECT_CALL(harel_tx_commit(tx, NULL, NULL, 0, NULL, &e), &e, HAREL_ERR_DATABASE);
      harel_tx_free(tx);
    }
  }
  harel_transport_close(t);

  /* a key on a queue without the keys table: the transaction's publish says so at once */
  t = open_at(new_path(path, sizeof path), &now);
  harel_transport_close(t);
  if (!EXPECT(python_run(DROP_KEYS_TABLE, path, line, sizeof line) &&
              strcmp(line, "dropped\n") == 0))
    return;
  o = harel_options_new();
  t = NULL;
  if (!EXPECT(o != NULL)) return;
  EXPECT_STATUS(harel_options_set_create_schema(o, false, NULL), HAREL_OK);
  EXPECT_CALL(harel_transport_open(path, o, &t, &e), &e, HAREL_OK);
  harel_options_free(o);
  if (t == NULL) return;
  PUBLISH_WITH_HEADERS_FAILS(HAREL_ERR_DATABASE, "harel_transport_keys", t, "g", SET, N_SET, "k");
  PUBLISH_MANY_HEADERS_FAILS(HAREL_ERR_DATABASE, "harel_transport_keys", t, batch, 1, each, keys);
  if ((tx = BEGIN(t)) != NULL) {
    EXPECT_FAILS(HAREL_ERR_DATABASE, "harel_transport_keys",
                 harel_tx_publish_headers(tx, "g", "1", 0, NULL, SET, N_SET, "k", 0.0, -1.0, ERR));
    harel_tx_free(tx);
  }
  PUBLISH_HEADERS(t, "g", "\"no key\"", SET, N_SET); /* without a key it works */
  EXPECT(messages_in(t) == 1);
  harel_transport_close(t);
}

/* ---- a lease the caller fills ------------------------------------------------------------ */

/* The size of harel_lease in 0.4.0: the fields before `headers`. */
#define LEASE_0_4_SIZE offsetof(harel_lease, headers)

/* A copy of `from` as a program built against 0.4.0 holds it: only the fields of then, in
 * a block exactly that long (valgrind sees a read past it). Freed with free(). */
static harel_lease *old_lease(const harel_lease *from) {
  harel_lease *l = malloc(LEASE_0_4_SIZE);
  if (l != NULL) memcpy(l, from, LEASE_0_4_SIZE);
  return l;
}

/* A lease filled by the caller with the fields of 0.4.0 only (a block that ends before
 * `headers`, or a struct whose headers fields hold garbage) is taken by ack, nack, extend,
 * dead_letter, ack_and_claim and ack_many: none reads the headers. */
static void a_lease_filled_by_the_caller_still_finishes(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *l, *old, *next = NOT_SET_LEASE, garbage;
  const harel_lease *batch[1];
  harel_status outcomes[1] = {HAREL_ERR_PANIC};
  harel_error *e = NULL;
  int i;
  if (t == NULL) return;
  for (i = 0; i < 6; i++) PUBLISH_HEADERS(t, "g", "\"m\"", SET, N_SET);

  /* ack */
  l = CLAIM(t, "w", NULL);
  if (l != NULL && (old = old_lease(l)) != NULL) {
    EXPECT_CALL(harel_transport_ack(t, old, &e), &e, HAREL_OK);
    free(old);
  }
  harel_lease_free(l);
  /* nack, then extend and ack of the next claim */
  l = CLAIM(t, "w", NULL);
  if (l != NULL && (old = old_lease(l)) != NULL) {
    EXPECT_CALL(harel_transport_nack(t, old, 0.0, &e), &e, HAREL_OK);
    free(old);
  }
  harel_lease_free(l);
  l = CLAIM(t, "w", NULL);
  if (l != NULL && (old = old_lease(l)) != NULL) {
    EXPECT(l->attempts == 2);
    now = T0 + 1;
    EXPECT_CALL(harel_transport_extend(t, old, 2 * VIS, &e), &e, HAREL_OK);
    EXPECT(old->lock_expiry == T0 + 1 + 2 * VIS);
    EXPECT_CALL(harel_transport_ack(t, old, &e), &e, HAREL_OK);
    free(old);
  }
  harel_lease_free(l);
  /* dead_letter */
  l = CLAIM(t, "w", NULL);
  if (l != NULL && (old = old_lease(l)) != NULL) {
    EXPECT_CALL(harel_transport_dead_letter(t, old, "old lease", &e), &e, HAREL_OK);
    free(old);
  }
  harel_lease_free(l);
  /* ack_and_claim: the next lease has its headers */
  l = CLAIM(t, "w", NULL);
  if (l != NULL && (old = old_lease(l)) != NULL) {
    EXPECT_CALL(harel_transport_ack_and_claim(t, old, "w", VIS, 0, NULL, 0, &next, &e), &e,
                HAREL_OK);
    if (EXPECT(next != NULL && next != NOT_SET_LEASE)) LEASE_HEADERS(next, SET, N_SET);
    free(old);
    /* ack_many of a struct whose headers fields hold garbage */
    if (next != NULL && next != NOT_SET_LEASE) {
      memset(&garbage, 0xa5, sizeof garbage);
      memcpy(&garbage, next, LEASE_0_4_SIZE);
      batch[0] = &garbage;
      EXPECT_CALL(harel_transport_ack_many(t, batch, 1, outcomes, &e), &e, HAREL_OK);
      EXPECT(outcomes[0] == HAREL_OK);
      harel_lease_free(next);
    }
  }
  harel_lease_free(l);
  EXPECT(messages_in(t) == 1);
  l = CLAIM(t, "w", NULL);
  if (l != NULL) {
    memset(&garbage, 0xa5, sizeof garbage);
    memcpy(&garbage, l, LEASE_0_4_SIZE);
    EXPECT_CALL(harel_transport_ack(t, &garbage, &e), &e, HAREL_OK);
  }
  harel_lease_free(l);
  CLAIM_EMPTY(t);
  harel_transport_close(t);
}

const test_case headers_tests[] = {
    TEST(publish_headers_hands_them_to_the_lease),
    TEST(the_limits_themselves_are_taken),
    TEST(publish_with_headers_hands_out_seq_and_duplicate),
    TEST(publish_many_with_headers_gives_each_message_its_own),
    TEST(tx_publish_headers_commits_them),
    TEST(waiting_claims_hand_them_out),
    TEST(every_claim_hands_them_out),
    TEST(peek_pages_carry_them),
    TEST(dead_letters_and_redrives_keep_them),
    TEST(bad_headers_are_refused_by_every_form),
    TEST(the_other_arguments_are_still_checked),
    TEST(a_refused_header_takes_no_key_and_a_transaction_goes_on),
    TEST(a_set_err_is_refused),
    TEST(busy_and_database),
    TEST(a_lease_filled_by_the_caller_still_finishes),
    {NULL, NULL}};
