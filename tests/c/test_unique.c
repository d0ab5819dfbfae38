/*
 * test_unique.c: a publish's delivery options through C, unique keys above all:
 * harel_transport_publish_delivery, _publish_many_delivery and harel_tx_publish_delivery,
 * with harel_delivery, harel_unique_mode and harel_published. The rules are the Rust
 * contract's (tests/common/contract_rules.rs); here, the mapping: a NULL delivery (and a
 * zeroed one) is a plain publish; each outcome (HAREL_PUBLISHED_STORED, _DUPLICATE,
 * _REPLACED) with its seq, for each mode (keep, replace, debounce on the test clock); a
 * leased message never replaced; the key freed by an ack, a dead letter and a purge, and a
 * redriven dead letter without one; a caller's smaller `size` reading the rest as defaults
 * (a block exactly that long: valgrind sees a read past it); every bad delivery refused by
 * every form (HAREL_ERR_ARGUMENT naming it, the batch's by its message, the queue and the
 * outputs untouched, a transaction going on); harel_tx_commit's `duplicates` carrying the
 * outcome; a set `*err` refused; HAREL_ERR_DATABASE on a queue without the column.
 */
#include "harel_test.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

static const harel_header FIRST[] = {{"v", "first"}};
static const harel_header SECOND[] = {{"v", "second"}, {"extra", "1"}};

/* ---- helpers ---------------------------------------------------------------------------- */

/* A delivery of `unique_key` (NULL: none) in `mode`, the rest zeroed. */
static harel_delivery unique_of(const char *unique_key, int32_t mode) {
  harel_delivery d = {0};
  d.size = sizeof d;
  d.unique_key = unique_key;
  d.unique_mode = mode;
  return d;
}

static harel_delivery debounce_of(const char *unique_key, double delay, double max_delay) {
  harel_delivery d = unique_of(unique_key, HAREL_UNIQUE_DEBOUNCE);
  d.debounce_delay = delay;
  d.debounce_max_delay = max_delay;
  return d;
}

/* publish_delivery (priority 0, no routing key) that succeeds with outcome `want`; the seq,
 * or -1. */
#define PUBLISH_D(t, group, event, headers, n, delivery, want)                                   \
  publish_d_at((t), (group), (event), (headers), (n), (delivery), (want), __FILE__, __LINE__)
static int64_t publish_d_at(harel_transport *t, const char *group, const char *event,
                            const harel_header *headers, size_t n, const harel_delivery *delivery,
                            int want, const char *file, int line) {
  int64_t seq = NOT_SET_SEQ;
  int outcome = NOT_SET_DUP;
  harel_error *e = NULL;
  harel_status s = harel_transport_publish_delivery(t, group, event, 0, NULL, headers, n, delivery,
                                                    &seq, &outcome, &e);
  if (!expect_call(s, &e, HAREL_OK, NULL, "harel_transport_publish_delivery", file, line))
    return -1;
  if (seq <= 0 || outcome != want) {
    test_fail(file, line, "publish_delivery handed out seq %lld, outcome %d; want a seq and %d",
              (long long)seq, outcome, want);
    return -1;
  }
  return seq;
}

/* The queue's counts, one field. */
static uint64_t messages_in(harel_transport *t) {
  harel_stats *s = STATS(t);
  uint64_t n = s != NULL ? s->messages : 0;
  harel_stats_free(s);
  return n;
}

/* The queue's next due instant (-1: none) and how many groups are delayed. */
static double next_due(harel_transport *t, uint64_t *delayed) {
  harel_stats *s = STATS(t);
  double due = s != NULL ? s->next_due_at : -2.0;
  *delayed = s != NULL ? s->delayed : 777;
  harel_stats_free(s);
  return due;
}

/* `group`'s message `seq` holds `event` and headers `want` (n_want pairs), by peek. */
#define HOLDS(t, group, seq, event, want, n_want) \
  holds_at((t), (group), (seq), (event), (want), (n_want), __FILE__, __LINE__)
static int holds_at(harel_transport *t, const char *group, int64_t seq, const char *event,
                    const harel_header *want, size_t n_want, const char *file, int line) {
  harel_message_page *page = NOT_SET_MESSAGES;
  harel_error *e = NULL;
  size_t i, j;
  int listed = 0, ok = 1;
  if (!expect_call(harel_transport_peek(t, group, NULL, 100, &page, &e), &e, HAREL_OK, NULL,
                   "harel_transport_peek", file, line))
    return 0;
  for (i = 0; i < page->n_messages; i++) {
    const harel_message_info *m = &page->messages[i];
    const harel_headers *h = &page->headers[i];
    if (m->seq != seq) continue;
    listed = 1;
    if (strcmp(m->event, event) != 0) {
      test_fail(file, line, "message %lld of %s holds %s, want %s", (long long)seq, group,
                m->event, event);
      ok = 0;
    } else if (h->n != n_want) {
      test_fail(file, line, "message %lld of %s has %zu headers, want %zu", (long long)seq, group,
                h->n, n_want);
      ok = 0;
    } else {
      for (j = 0; j < n_want; j++)
        if (strcmp(h->items[j].name, want[j].name) != 0 ||
            strcmp(h->items[j].value, want[j].value) != 0) {
          test_fail(file, line, "message %lld's header %zu is (%s, %s), want (%s, %s)",
                    (long long)seq, j, h->items[j].name, h->items[j].value, want[j].name,
                    want[j].value);
          ok = 0;
        }
    }
  }
  if (!listed) test_fail(file, line, "no message %lld in group %s", (long long)seq, group);
  harel_message_page_free(page);
  return listed && ok;
}

/* ---- a plain publish ------------------------------------------------------------------- */

/* NULL delivery, and a zeroed one with its size: a plain publish (stored, its seq); seq and
 * outcome may each be NULL; the priority, routing key and headers reach the message as
 * publish_headers gives them; the idempotency key, delay and due instant of the delivery work
 * as publish_with's; not_before 0 and negative are none. */
static void no_delivery_is_a_plain_publish(void) {
  const char *const rk[] = {"rk"};
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_delivery d = {0};
  harel_lease *l = NOT_SET_LEASE;
  harel_error *e = NULL;
  int64_t s1, s2, s3, seq = NOT_SET_SEQ;
  int outcome = NOT_SET_DUP;
  uint64_t delayed;
  if (t == NULL) return;
  d.size = sizeof d;
  s1 = PUBLISH_D(t, "a", "1", NULL, 0, NULL, HAREL_PUBLISHED_STORED);
  s2 = PUBLISH_D(t, "a", "2", NULL, 0, &d, HAREL_PUBLISHED_STORED);
  EXPECT(s1 > 0 && s2 > s1);
  EXPECT_CALL(harel_transport_publish_delivery(t, "a", "3", 0, NULL, NULL, 0, NULL, NULL, NULL, &e),
              &e, HAREL_OK);
  EXPECT_CALL(harel_transport_publish_delivery(t, "a", "4", 0, NULL, NULL, 0, &d, NULL, &outcome,
                                               &e),
              &e, HAREL_OK);
  EXPECT(outcome == HAREL_PUBLISHED_STORED);
  EXPECT_CALL(harel_transport_publish_delivery(t, "a", "5", 0, NULL, NULL, 0, &d, &seq, NULL, &e),
              &e, HAREL_OK);
  EXPECT(seq > s2);
  /* a group's priority, routing key and headers */
  EXPECT_CALL(harel_transport_publish_delivery(t, "r", "\"r\"", 4, "rk", FIRST, 1, &d, NULL, NULL,
                                               &e),
              &e, HAREL_OK);
  EXPECT_CALL(harel_transport_claim(t, "w", VIS, 4, rk, 1, &l, &e), &e, HAREL_OK);
  if (EXPECT(l != NULL && l != NOT_SET_LEASE)) {
    EXPECT(strcmp(l->event, "\"r\"") == 0 && l->n_headers == 1 &&
           strcmp(l->headers[0].value, "first") == 0);
    ACK(t, l);
  }
  /* the delivery's idempotency key, delay and due instant */
  d.key = "idem";
  s3 = PUBLISH_D(t, "k", "1", NULL, 0, &d, HAREL_PUBLISHED_STORED);
  EXPECT(PUBLISH_D(t, "k2", "2", NULL, 0, &d, HAREL_PUBLISHED_DUPLICATE) == s3);
  d.key = NULL;
  d.delay = 10.0;
  PUBLISH_D(t, "late", "1", NULL, 0, &d, HAREL_PUBLISHED_STORED);
  d.delay = 0.0;
  d.not_before = T0 + 20.0;
  PUBLISH_D(t, "later", "1", NULL, 0, &d, HAREL_PUBLISHED_STORED);
  EXPECT(next_due(t, &delayed) == T0 + 10.0 && delayed == 2);
  d.not_before = 0.0;
  PUBLISH_D(t, "none0", "1", NULL, 0, &d, HAREL_PUBLISHED_STORED);
  d.not_before = -5.0;
  PUBLISH_D(t, "none1", "1", NULL, 0, &d, HAREL_PUBLISHED_STORED);
  EXPECT(next_due(t, &delayed) == T0 + 10.0 && delayed == 2);
  EXPECT(drain_now(t, NULL, NULL) == 8); /* a's five, k, none0, none1 */
  now = T0 + 20.5; /* due: a due time is passed when now is past it */
  EXPECT(drain_now(t, NULL, NULL) == 2);
  harel_transport_close(t);
}

/* ---- each mode, each outcome ----------------------------------------------------------- */

/* HAREL_UNIQUE_KEEP (also the zeroed mode): stored once; while its message is pending (ready,
 * leased), another publish with the key stores nothing, in any group, and is a duplicate with
 * its seq; acked, the key is free and the next publish is stored. */
static void keep_stores_nothing_while_pending(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_delivery d = unique_of("invoice-42", HAREL_UNIQUE_KEEP);
  harel_lease *l;
  int64_t s1, s2;
  if (t == NULL) return;
  s1 = PUBLISH_D(t, "a", "\"first\"", FIRST, 1, &d, HAREL_PUBLISHED_STORED);
  EXPECT(PUBLISH_D(t, "a", "\"again\"", SECOND, 2, &d, HAREL_PUBLISHED_DUPLICATE) == s1);
  EXPECT(PUBLISH_D(t, "b", "\"elsewhere\"", NULL, 0, &d, HAREL_PUBLISHED_DUPLICATE) == s1);
  EXPECT(messages_in(t) == 1);
  HOLDS(t, "a", s1, "\"first\"", FIRST, 1);
  l = CLAIM(t, "w", "\"first\"");
  EXPECT(PUBLISH_D(t, "a", "\"leased\"", NULL, 0, &d, HAREL_PUBLISHED_DUPLICATE) == s1);
  ACK(t, l);
  /* acked: the key is free */
  s2 = PUBLISH_D(t, "a", "\"after\"", NULL, 0, &d, HAREL_PUBLISHED_STORED);
  EXPECT(s2 > s1);
  EXPECT(PUBLISH_D(t, "a", "\"after again\"", NULL, 0, &d, HAREL_PUBLISHED_DUPLICATE) == s2);
  EXPECT(messages_in(t) == 1);
  harel_transport_close(t);
}

/* HAREL_UNIQUE_REPLACE: the pending message takes the new event and headers (REPLACED, its
 * seq) in its place in its group's FIFO, the group given ignored; a message leased to a
 * worker is never replaced (DUPLICATE, the lease's event stays); a nack or a lapsed lease
 * lets the replace happen again (the lapsed lease's holder then finds it lost); acked, the
 * key is free. */
static void replace_gives_the_pending_message_the_new_event(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_delivery d = unique_of("sync-7", HAREL_UNIQUE_REPLACE);
  harel_stats *st;
  harel_lease *l, *again;
  int64_t s1, behind, s2;
  if (t == NULL) return;
  s1 = PUBLISH_D(t, "a", "\"v1\"", FIRST, 1, &d, HAREL_PUBLISHED_STORED);
  behind = PUBLISH_D(t, "a", "\"behind\"", NULL, 0, NULL, HAREL_PUBLISHED_STORED);
  EXPECT(PUBLISH_D(t, "b", "\"v2\"", SECOND, 2, &d, HAREL_PUBLISHED_REPLACED) == s1);
  st = STATS(t);
  if (st != NULL) EXPECT(st->messages == 2 && st->groups == 1); /* no group b */
  harel_stats_free(st);
  HOLDS(t, "a", s1, "\"v2\"", SECOND, 2);
  HOLDS(t, "a", behind, "\"behind\"", NULL, 0);
  /* leased: kept, a duplicate */
  l = CLAIM(t, "w", "\"v2\"");
  if (l != NULL) EXPECT(l->seq == s1 && strcmp(l->group_id, "a") == 0 && l->n_headers == 2);
  EXPECT(PUBLISH_D(t, "a", "\"v3\"", NULL, 0, &d, HAREL_PUBLISHED_DUPLICATE) == s1);
  HOLDS(t, "a", s1, "\"v2\"", SECOND, 2);
  /* nacked: replaced again */
  if (l != NULL) EXPECT_STATUS(harel_transport_nack(t, l, 0.0, NULL), HAREL_OK);
  harel_lease_free(l);
  EXPECT(PUBLISH_D(t, "a", "\"v4\"", NULL, 0, &d, HAREL_PUBLISHED_REPLACED) == s1);
  HOLDS(t, "a", s1, "\"v4\"", NULL, 0);
  /* a lapsed lease holds nothing: replaced, and the next claim has the new event */
  l = CLAIM(t, "w", "\"v4\"");
  now = T0 + VIS + 1.0;
  EXPECT(PUBLISH_D(t, "a", "\"v5\"", FIRST, 1, &d, HAREL_PUBLISHED_REPLACED) == s1);
  if (l != NULL) EXPECT_ERROR(harel_transport_ack(t, l, NULL), HAREL_ERR_LEASE_LOST, NULL);
  again = CLAIM(t, "w2", "\"v5\"");
  if (again != NULL) EXPECT(again->seq == s1 && again->n_headers == 1);
  ACK(t, again);
  harel_lease_free(l);
  /* acked: the key is free */
  s2 = PUBLISH_D(t, "a", "\"v6\"", NULL, 0, &d, HAREL_PUBLISHED_STORED);
  EXPECT(s2 > behind);
  EXPECT(messages_in(t) == 2);
  harel_transport_close(t);
}

/* HAREL_UNIQUE_DEBOUNCE on the test clock: a new message is due debounce_delay from now;
 * each publish while it is pending replaces it (REPLACED) and moves its due time to now +
 * delay, never past its first publish + max_delay; claimed when due, with the last event.
 * Delay and cap 0: due at once. */
static void debounce_moves_the_due_time_within_its_cap(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_delivery d = debounce_of("user-9", 10.0, 30.0), at_once = debounce_of("now", 0.0, 0.0);
  harel_lease *l;
  uint64_t delayed;
  int64_t s1;
  if (t == NULL) return;
  s1 = PUBLISH_D(t, "u", "\"e1\"", NULL, 0, &d, HAREL_PUBLISHED_STORED);
  EXPECT(next_due(t, &delayed) == T0 + 10.0 && delayed == 1);
  CLAIM_EMPTY(t);
  now = T0 + 5.0;
  EXPECT(PUBLISH_D(t, "u", "\"e2\"", NULL, 0, &d, HAREL_PUBLISHED_REPLACED) == s1);
  EXPECT(next_due(t, &delayed) == T0 + 15.0 && delayed == 1);
  now = T0 + 14.0;
  CLAIM_EMPTY(t);
  now = T0 + 25.0;
  EXPECT(PUBLISH_D(t, "u", "\"e3\"", FIRST, 1, &d, HAREL_PUBLISHED_REPLACED) == s1);
  EXPECT(next_due(t, &delayed) == T0 + 30.0 && delayed == 1); /* the cap, not T0 + 35 */
  EXPECT(messages_in(t) == 1);
  now = T0 + 30.0;
  CLAIM_EMPTY(t);
  now = T0 + 30.5;
  l = CLAIM(t, "w", "\"e3\"");
  if (l != NULL) EXPECT(l->seq == s1 && l->n_headers == 1);
  /* leased: a duplicate, the due time untouched */
  EXPECT(PUBLISH_D(t, "u", "\"e4\"", NULL, 0, &d, HAREL_PUBLISHED_DUPLICATE) == s1);
  ACK(t, l);
  /* no delay, no cap: a new message is ready at once; replaced, it is due now (claimable
   * once the clock passes now) */
  s1 = PUBLISH_D(t, "n", "\"n1\"", NULL, 0, &at_once, HAREL_PUBLISHED_STORED);
  EXPECT(next_due(t, &delayed) == -1.0 && delayed == 0);
  EXPECT(PUBLISH_D(t, "n", "\"n2\"", NULL, 0, &at_once, HAREL_PUBLISHED_REPLACED) == s1);
  EXPECT(next_due(t, &delayed) == now);
  now += 0.5;
  ACK(t, CLAIM(t, "w", "\"n2\""));
  CLAIM_EMPTY(t);
  harel_transport_close(t);
}

/* The key is freed at ack (the tests above), dead letter and purge; a redriven dead letter
 * has no key (a publish with it is stored beside it). */
static void dead_letters_and_purges_free_the_key(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_delivery d = unique_of("job-1", HAREL_UNIQUE_KEEP);
  harel_lease *l;
  harel_error *e = NULL;
  uint64_t n = NOT_SET_COUNT;
  int64_t s1, s2, s3, s4;
  if (t == NULL) return;
  s1 = PUBLISH_D(t, "a", "\"dead\"", NULL, 0, &d, HAREL_PUBLISHED_STORED);
  l = CLAIM(t, "w", "\"dead\"");
  if (l != NULL) EXPECT_CALL(harel_transport_dead_letter(t, l, "poison", &e), &e, HAREL_OK);
  harel_lease_free(l);
  s2 = PUBLISH_D(t, "a", "\"after dead\"", NULL, 0, &d, HAREL_PUBLISHED_STORED);
  EXPECT(s2 > s1);
  ACK(t, CLAIM(t, "w", "\"after dead\""));
  /* redriven, the dead letter is pending again, without its key */
  EXPECT_CALL(harel_transport_redrive(t, true, NULL, NULL, 0, &n, &e), &e, HAREL_OK);
  EXPECT(n == 1 && messages_in(t) == 1);
  s3 = PUBLISH_D(t, "a", "\"beside\"", NULL, 0, &d, HAREL_PUBLISHED_STORED);
  EXPECT(s3 > s2 && messages_in(t) == 2);
  /* purged with its group: free */
  n = NOT_SET_COUNT;
  EXPECT_CALL(harel_transport_purge_group(t, "a", &n, &e), &e, HAREL_OK);
  EXPECT(n == 2 && messages_in(t) == 0);
  s4 = PUBLISH_D(t, "b", "\"after purge\"", NULL, 0, &d, HAREL_PUBLISHED_STORED);
  EXPECT(s4 > s3);
  n = NOT_SET_COUNT;
  EXPECT_CALL(harel_transport_purge(t, &n, &e), &e, HAREL_OK);
  EXPECT(n == 1);
  EXPECT(PUBLISH_D(t, "b", "\"after purge all\"", NULL, 0, &d, HAREL_PUBLISHED_STORED) > s4);
  harel_transport_close(t);
}

/* ---- a caller built against an older harel_delivery ------------------------------------ */

/* A smaller `size`: the fields past it read as 0 and NULL. offsetof(unique_key): the key and
 * delay work, a unique key and a bad mode past it unread; offsetof(debounce_delay): a
 * debounce with delay and cap 0; only the size: a plain publish. */
static void a_smaller_size_reads_the_rest_as_defaults(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_delivery full = unique_of("past the size", 7), *d;
  uint64_t delayed;
  int64_t s1, s2;
  int seen = 0;
  if (t == NULL) return;
  full.key = "idem";
  full.delay = 10.0;
  full.debounce_delay = NAN;
  if ((d = short_delivery(&full, offsetof(harel_delivery, unique_key))) != NULL) {
    s1 = PUBLISH_D(t, "a", "1", NULL, 0, d, HAREL_PUBLISHED_STORED);
    EXPECT(PUBLISH_D(t, "b", "2", NULL, 0, d, HAREL_PUBLISHED_DUPLICATE) == s1); /* the key */
    EXPECT(next_due(t, &delayed) == T0 + 10.0 && delayed == 1);                  /* the delay */
    free(d);
  }
  /* the same cut in a whole struct: what lies past the size is not read */
  full.key = NULL;
  full.delay = 0.0;
  full.size = offsetof(harel_delivery, unique_key);
  s1 = PUBLISH_D(t, "c", "1", NULL, 0, &full, HAREL_PUBLISHED_STORED);
  s2 = PUBLISH_D(t, "c", "2", NULL, 0, &full, HAREL_PUBLISHED_STORED);
  EXPECT(s2 > s1);
  /* a debounce whose delay and cap lie past the size: 0 and 0, due at once */
  full = debounce_of("cut", 60.0, 120.0);
  if ((d = short_delivery(&full, offsetof(harel_delivery, debounce_delay))) != NULL) {
    s1 = PUBLISH_D(t, "d", "\"d1\"", NULL, 0, d, HAREL_PUBLISHED_STORED);
    EXPECT(PUBLISH_D(t, "d", "\"d2\"", NULL, 0, d, HAREL_PUBLISHED_REPLACED) == s1);
    free(d);
  }
  /* only the size */
  full = unique_of("ignored", HAREL_UNIQUE_KEEP);
  if ((d = short_delivery(&full, sizeof(size_t))) != NULL) {
    s1 = PUBLISH_D(t, "e", "1", NULL, 0, d, HAREL_PUBLISHED_STORED);
    EXPECT(PUBLISH_D(t, "e", "2", NULL, 0, d, HAREL_PUBLISHED_STORED) > s1);
    free(d);
  }
  EXPECT(drain_now(t, NULL, NULL) == 4); /* c's two, e's two; d, replaced, is due now */
  now = T0 + 0.5;
  EXPECT(drain_now(t, "\"d2\"", &seen) == 1 && seen); /* a waits */
  EXPECT(next_due(t, &delayed) == T0 + 10.0 && delayed == 1);
  harel_transport_close(t);
}

/* ---- bad deliveries --------------------------------------------------------------------- */

/* `bad` refused by each form, with HAREL_ERR_ARGUMENT naming `single` (publish_delivery, the
 * transaction's) or `batched` (message 1 of a batch whose message 0 is good): outputs
 * untouched, nothing written (the fixture checks), and the transaction goes on (its commit
 * publishes nothing). */
static void refused_everywhere(fixture *fx, const harel_delivery *bad, const char *group,
                               const char *single, const char *batched) {
  const harel_message batch[2] = {{"new", "\"ok\"", 0, NULL}, {group, "\"bad\"", 0, NULL}};
  const harel_delivery *deliveries[2];
  harel_delivery good = unique_of("good", HAREL_UNIQUE_KEEP);
  int64_t seq = NOT_SET_SEQ;
  int outcome = NOT_SET_DUP, kept = 0;
  size_t n = NOT_SET_COUNT;
  harel_tx *tx;
  harel_status s;
  deliveries[0] = &good;
  deliveries[1] = bad;
  EXPECT_FAILS(HAREL_ERR_ARGUMENT, single,
               (seq = NOT_SET_SEQ, outcome = NOT_SET_DUP,
                s = harel_transport_publish_delivery(fx->t, group, "\"bad\"", 0, NULL, FIRST, 1,
                                                     bad, &seq, &outcome, ERR),
                kept += seq == NOT_SET_SEQ && outcome == NOT_SET_DUP, s));
  EXPECT(kept == 2);
  kept = 0;
  EXPECT_FAILS(HAREL_ERR_ARGUMENT, batched,
               (outputs_reset(),
                s = harel_transport_publish_many_delivery(fx->t, batch, 2, NULL, deliveries,
                                                          seqs_out, dups_out, ERR),
                kept += outputs_untouched(), s));
  EXPECT(kept == 2);
  if ((tx = BEGIN(fx->t)) != NULL) {
    EXPECT_FAILS(HAREL_ERR_ARGUMENT, single,
                 harel_tx_publish_delivery(tx, group, "\"bad\"", 0, NULL, NULL, 0, bad, ERR));
    EXPECT_STATUS(harel_tx_commit(tx, NULL, NULL, 0, &n, NULL), HAREL_OK);
    EXPECT(n == 0);
    harel_tx_free(tx);
  }
}

/* Every bad delivery: size 0, larger than the library's, SIZE_MAX; unique_mode outside the
 * enum; unique_key empty, 257 bytes, not UTF-8; key and unique_key both; a debounce delay or
 * cap NaN, infinite, negative, over ten years, the cap below the delay; key empty, a delay
 * negative; and the message's own arguments (group NULL) with a good delivery. Nothing
 * written, no key taken: the keys publish after. */
static void bad_deliveries_are_refused_by_every_form(void) {
  const double not_durations[] = {NAN, INFINITY, -INFINITY, -1.0, MAX_DELAY + 1.0};
  const int32_t bad_modes[] = {7, 3, -1, INT32_MIN, INT32_MAX};
  char long_key[HAREL_MAX_KEY_LEN + 2], name[64];
  harel_delivery d;
  fixture fx;
  size_t i;
  if (!fixture_open(&fx)) return;
  /* the size */
  d = unique_of("u", HAREL_UNIQUE_KEEP);
  d.size = 0;
  refused_everywhere(&fx, &d, "new", "delivery.size", "messages[1].delivery.size");
  d.size = sizeof d + 1;
  refused_everywhere(&fx, &d, "new", "delivery.size", "messages[1].delivery.size");
  d.size = SIZE_MAX;
  refused_everywhere(&fx, &d, "new", "delivery.size", "messages[1].delivery.size");
  /* the mode */
  for (i = 0; i < N_OF(bad_modes); i++) {
    d = unique_of("u", bad_modes[i]);
    refused_everywhere(&fx, &d, "new", "delivery.unique_mode", "messages[1].delivery.unique_mode");
  }
  /* the unique key */
  d = unique_of("", HAREL_UNIQUE_REPLACE);
  refused_everywhere(&fx, &d, "new", "unique_key", "messages[1].unique_key");
  d = unique_of(key_of(long_key, HAREL_MAX_KEY_LEN + 1), HAREL_UNIQUE_KEEP);
  refused_everywhere(&fx, &d, "new", "unique_key", "messages[1].unique_key");
  for (i = 0; i < N_BAD_UTF8; i++) {
    d = unique_of(BAD_UTF8[i], HAREL_UNIQUE_KEEP);
    refused_everywhere(&fx, &d, "new", "unique_key is not valid UTF-8",
                       "messages[1].unique_key is not valid UTF-8");
  }
  d = unique_of("u", HAREL_UNIQUE_KEEP);
  d.key = "k";
  refused_everywhere(&fx, &d, "new", "unique_key", "messages[1].unique_key");
  /* the debounce's delay and cap */
  for (i = 0; i < N_OF(not_durations); i++) {
    d = debounce_of("u", not_durations[i], 60.0);
    refused_everywhere(&fx, &d, "new", "debounce", "messages[1].debounce");
    d = debounce_of("u", 1.0, not_durations[i]);
    refused_everywhere(&fx, &d, "new", "max_delay", "messages[1].debounce");
  }
  d = debounce_of("u", 10.0, 5.0);
  refused_everywhere(&fx, &d, "new", "max_delay", "messages[1].debounce");
  /* the other delivery options */
  d = unique_of(NULL, HAREL_UNIQUE_KEEP);
  d.key = "";
  refused_everywhere(&fx, &d, "new", "key", "messages[1].key");
  d.key = NULL;
  d.delay = -1.0;
  refused_everywhere(&fx, &d, "new", "delay", "messages[1].delay");
  d.delay = 0.0;
  d.not_before = NAN;
  refused_everywhere(&fx, &d, "new", "not_before", "messages[1].not_before");
  /* a good delivery, a bad message */
  d = unique_of("u", HAREL_UNIQUE_KEEP);
  refused_everywhere(&fx, &d, NULL, "group_id", "messages[1].group_id");
  refused_everywhere(&fx, &d, "", "group_id", "messages[1].group_id");
  /* the messages' text: the mode's own words */
  {
    harel_error *e = NULL;
    d = unique_of("u", 7);
    EXPECT(harel_transport_publish_delivery(fx.t, "new", "1", 0, NULL, NULL, 0, &d, NULL, NULL,
                                            &e) == HAREL_ERR_ARGUMENT);
    EXPECT(e != NULL && strstr(harel_error_message(e), "delivery.unique_mode is 7") != NULL);
    harel_error_free(e);
    e = NULL;
    d = debounce_of("u", 10.0, 5.0);
    EXPECT(harel_transport_publish_delivery(fx.t, "new", "1", 0, NULL, NULL, 0, &d, NULL, NULL,
                                            &e) == HAREL_ERR_ARGUMENT);
    EXPECT(e != NULL && strstr(harel_error_message(e), "max_delay is 5") != NULL);
    harel_error_free(e);
    e = NULL;
    d = unique_of("u", HAREL_UNIQUE_KEEP);
    d.size = 0;
    snprintf(name, sizeof name, "sizeof(harel_delivery) (%zu", sizeof(harel_delivery));
    EXPECT(harel_transport_publish_delivery(fx.t, "new", "1", 0, NULL, NULL, 0, &d, NULL, NULL,
                                            &e) == HAREL_ERR_ARGUMENT);
    EXPECT(e != NULL && strstr(harel_error_message(e), name) != NULL);
    harel_error_free(e);
  }
  /* the rest of each form's arguments, with a good delivery */
  d = unique_of("u", HAREL_UNIQUE_KEEP);
  EXPECT_BAD("t", harel_transport_publish_delivery(NULL, "g", "1", 0, NULL, NULL, 0, &d, NULL,
                                                   NULL, ERR));
  EXPECT_BAD("event_json", harel_transport_publish_delivery(fx.t, "new", "{", 0, NULL, NULL, 0,
                                                            &d, NULL, NULL, ERR));
  EXPECT_BAD("headers", harel_transport_publish_delivery(fx.t, "new", "1", 0, NULL, NULL, 2, &d,
                                                         NULL, NULL, ERR));
  EXPECT_BAD("t",
             harel_transport_publish_many_delivery(NULL, NULL, 0, NULL, NULL, NULL, NULL, ERR));
  EXPECT_BAD("messages", harel_transport_publish_many_delivery(fx.t, NULL, 2, NULL, NULL, NULL,
                                                               NULL, ERR));
  EXPECT_BAD("tx", harel_tx_publish_delivery(NULL, "g", "1", 0, NULL, NULL, 0, &d, ERR));
  FIXTURE_CLOSE(&fx);
}

/* A refused delivery takes no key: each key of the refused calls publishes after them. */
static void a_refused_delivery_takes_no_key(void) {
  const harel_message batch[2] = {{"g", "\"a\"", 0, NULL}, {"g", "\"b\"", 0, NULL}};
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_delivery good = unique_of("ka", HAREL_UNIQUE_KEEP), bad = unique_of("kb", 9);
  const harel_delivery *deliveries[2];
  harel_tx *tx;
  if (t == NULL) return;
  deliveries[0] = &good;
  deliveries[1] = &bad;
  EXPECT_ARG(harel_transport_publish_many_delivery(t, batch, 2, NULL, deliveries, NULL, NULL, NULL),
             "messages[1].delivery.unique_mode");
  if ((tx = BEGIN(t)) != NULL) {
    EXPECT_ARG(harel_tx_publish_delivery(tx, "g", "\"b\"", 0, NULL, NULL, 0, &bad, NULL),
               "delivery.unique_mode");
    harel_tx_free(tx); /* rolled back */
  }
  EXPECT(messages_in(t) == 0);
  PUBLISH_D(t, "g", "\"a\"", NULL, 0, &good, HAREL_PUBLISHED_STORED);
  bad.unique_mode = HAREL_UNIQUE_KEEP;
  PUBLISH_D(t, "g", "\"b\"", NULL, 0, &bad, HAREL_PUBLISHED_STORED);
  harel_transport_close(t);
}

/* ---- batches and transactions ----------------------------------------------------------- */

/* publish_many_delivery: each message's outcome and seq, in one transaction: none, a key new
 * in the batch, the same key met earlier in the batch (replaced), a key pending before the
 * batch (replaced, and kept), an idempotency key; headers per message reach the replaced one.
 * `deliveries` NULL: plain publishes; seqs and outcomes NULL; an empty batch. */
static void publish_many_delivery_hands_out_each_outcome(void) {
  const harel_message batch[6] = {{"a", "\"0\"", 0, NULL}, {"a", "\"1\"", 0, NULL},
                                  {"b", "\"2\"", 0, NULL}, {"c", "\"3\"", 0, NULL},
                                  {"d", "\"4\"", 0, NULL}, {"d", "\"5\"", 0, NULL}};
  const harel_headers each[6] = {{NULL, 0},  {FIRST, 1}, {SECOND, 2},
                                 {FIRST, 1}, {NULL, 0},  {NULL, 0}};
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_delivery k2_keep = unique_of("k2", HAREL_UNIQUE_KEEP);
  harel_delivery k2_replace = unique_of("k2", HAREL_UNIQUE_REPLACE);
  harel_delivery k1_replace = unique_of("k1", HAREL_UNIQUE_REPLACE);
  harel_delivery k1_keep = unique_of("k1", HAREL_UNIQUE_KEEP);
  harel_delivery idem = unique_of(NULL, HAREL_UNIQUE_KEEP);
  const harel_delivery *deliveries[6];
  harel_error *e = NULL;
  int64_t s0, seqs[6];
  int outcomes[6], i;
  if (t == NULL) return;
  idem.key = "idem";
  deliveries[0] = NULL;
  deliveries[1] = &k2_keep;
  deliveries[2] = &k2_replace;
  deliveries[3] = &k1_replace;
  deliveries[4] = &idem;
  deliveries[5] = &k1_keep;
  s0 = PUBLISH_D(t, "p", "\"pending\"", NULL, 0, &k1_keep, HAREL_PUBLISHED_STORED);
  for (i = 0; i < 6; i++) seqs[i] = NOT_SET_SEQ, outcomes[i] = NOT_SET_DUP;
  EXPECT_CALL(harel_transport_publish_many_delivery(t, batch, 6, each, deliveries, seqs, outcomes,
                                                    &e),
              &e, HAREL_OK);
  EXPECT(outcomes[0] == HAREL_PUBLISHED_STORED && outcomes[1] == HAREL_PUBLISHED_STORED &&
         outcomes[2] == HAREL_PUBLISHED_REPLACED && outcomes[3] == HAREL_PUBLISHED_REPLACED &&
         outcomes[4] == HAREL_PUBLISHED_STORED && outcomes[5] == HAREL_PUBLISHED_DUPLICATE);
  EXPECT(s0 < seqs[0] && seqs[0] < seqs[1] && seqs[1] < seqs[4]);
  EXPECT(seqs[2] == seqs[1] && seqs[3] == s0 && seqs[5] == s0);
  EXPECT(messages_in(t) == 4); /* pending, 0, 1 (holding 2), 4 */
  HOLDS(t, "a", seqs[1], "\"2\"", SECOND, 2);
  HOLDS(t, "p", s0, "\"3\"", FIRST, 1);
  HOLDS(t, "a", seqs[0], "\"0\"", NULL, 0);
  HOLDS(t, "d", seqs[4], "\"4\"", NULL, 0);
  /* deliveries NULL: plain publishes; the outputs may be NULL */
  for (i = 0; i < 6; i++) seqs[i] = NOT_SET_SEQ, outcomes[i] = NOT_SET_DUP;
  EXPECT_CALL(harel_transport_publish_many_delivery(t, batch, 2, NULL, NULL, seqs, outcomes, &e),
              &e, HAREL_OK);
  EXPECT(outcomes[0] == 0 && outcomes[1] == 0 && seqs[0] > seqs[4] && seqs[1] > seqs[0]);
  EXPECT(seqs[2] == NOT_SET_SEQ && outcomes[2] == NOT_SET_DUP);
  EXPECT_CALL(harel_transport_publish_many_delivery(t, batch, 1, NULL, deliveries, NULL, NULL, &e),
              &e, HAREL_OK);
  /* an empty batch writes nothing */
  EXPECT_CALL(harel_transport_publish_many_delivery(t, NULL, 0, NULL, NULL, NULL, NULL, &e), &e,
              HAREL_OK);
  EXPECT_CALL(harel_transport_publish_many_delivery(t, batch, 0, each, deliveries, seqs, outcomes,
                                                    &e),
              &e, HAREL_OK);
  EXPECT(messages_in(t) == 7);
  harel_transport_close(t);
}

/* harel_tx_publish_delivery: checked at once (a refusal queues nothing, the transaction goes
 * on); harel_tx_commit's `duplicates` carry each harel_published: a pending message's key
 * replaced (2, its seq), a new key (0), the same key again in the transaction (1), none (0).
 * A rollback replaces nothing. */
static void tx_commit_says_what_became_of_each(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_delivery replace = unique_of("k1", HAREL_UNIQUE_REPLACE);
  harel_delivery fresh = unique_of("k2", HAREL_UNIQUE_KEEP), bad = unique_of("k3", 7);
  harel_tx *tx;
  harel_error *e = NULL;
  int64_t s0, seqs[5];
  int dups[5], i;
  size_t n = NOT_SET_COUNT;
  if (t == NULL) return;
  s0 = PUBLISH_D(t, "p", "\"old\"", NULL, 0, &replace, HAREL_PUBLISHED_STORED);
  for (i = 0; i < 5; i++) seqs[i] = NOT_SET_SEQ, dups[i] = NOT_SET_DUP;
  if ((tx = BEGIN(t)) != NULL) {
    EXPECT_CALL(harel_tx_publish_delivery(tx, "p", "\"new\"", 0, NULL, SECOND, 2, &replace, &e), &e,
                HAREL_OK);
    EXPECT_CALL(harel_tx_publish_delivery(tx, "q", "\"k2\"", 0, NULL, NULL, 0, &fresh, &e), &e,
                HAREL_OK);
    EXPECT_CALL_NAMING(harel_tx_publish_delivery(tx, "q", "\"bad\"", 0, NULL, NULL, 0, &bad, &e),
                       &e, HAREL_ERR_ARGUMENT, "delivery.unique_mode");
    EXPECT_CALL(harel_tx_publish_delivery(tx, "q", "\"k2 again\"", 0, NULL, NULL, 0, &fresh, &e),
                &e, HAREL_OK);
    EXPECT_CALL(harel_tx_publish_delivery(tx, "q", "\"plain\"", 0, NULL, NULL, 0, NULL, &e), &e,
                HAREL_OK);
    EXPECT_CALL(harel_tx_commit(tx, seqs, dups, 5, &n, &e), &e, HAREL_OK);
    EXPECT(n == 4);
    EXPECT(dups[0] == HAREL_PUBLISHED_REPLACED && seqs[0] == s0);
    EXPECT(dups[1] == HAREL_PUBLISHED_STORED && seqs[1] > s0);
    EXPECT(dups[2] == HAREL_PUBLISHED_DUPLICATE && seqs[2] == seqs[1]);
    EXPECT(dups[3] == HAREL_PUBLISHED_STORED && seqs[3] > seqs[1]);
    EXPECT(seqs[4] == NOT_SET_SEQ && dups[4] == NOT_SET_DUP);
    harel_tx_free(tx);
  }
  HOLDS(t, "p", s0, "\"new\"", SECOND, 2);
  EXPECT(messages_in(t) == 3);
  /* rolled back: nothing replaced */
  if ((tx = BEGIN(t)) != NULL) {
    EXPECT_CALL(harel_tx_publish_delivery(tx, "p", "\"gone\"", 0, NULL, NULL, 0, &replace, &e), &e,
                HAREL_OK);
    EXPECT_CALL(harel_tx_rollback(tx, &e), &e, HAREL_OK);
    harel_tx_free(tx);
  }
  HOLDS(t, "p", s0, "\"new\"", SECOND, 2);
  /* the old calls' duplicates never say 2: a key seen is 1 */
  if ((tx = BEGIN(t)) != NULL) {
    EXPECT_CALL(harel_tx_publish(tx, "x", "1", 0, NULL, "idem", 0.0, -1.0, &e), &e, HAREL_OK);
    EXPECT_CALL(harel_tx_publish(tx, "x", "2", 0, NULL, "idem", 0.0, -1.0, &e), &e, HAREL_OK);
    EXPECT_CALL(harel_tx_commit(tx, seqs, dups, 2, &n, &e), &e, HAREL_OK);
    EXPECT(n == 2 && dups[0] == 0 && dups[1] == 1 && seqs[1] == seqs[0]);
    harel_tx_free(tx);
  }
  harel_transport_close(t);
}

/* ---- a set err, and a queue without the column ------------------------------------------ */

/* A `*err` already set: each form refused, nothing written, the outputs untouched. */
static void a_set_err_is_refused(void) {
  const harel_message batch[1] = {{"g", "\"stale\"", 0, NULL}};
  double now = T0;
  char was_text[512];
  harel_transport *t = open_at(":memory:", &now);
  harel_delivery d = unique_of("u", HAREL_UNIQUE_REPLACE);
  const harel_delivery *deliveries[1];
  harel_error *stale = NULL;
  const harel_error *was;
  harel_tx *tx;
  int64_t seq = NOT_SET_SEQ;
  int outcome = NOT_SET_DUP;
  size_t n = NOT_SET_COUNT;
  if (t == NULL) return;
  deliveries[0] = &d;
  EXPECT(harel_transport_publish_delivery(NULL, "g", "1", 0, NULL, NULL, 0, NULL, NULL, NULL,
                                          &stale) == HAREL_ERR_ARGUMENT);
  if (!EXPECT(stale != NULL)) {
    harel_transport_close(t);
    return;
  }
  was = stale;
  snprintf(was_text, sizeof was_text, "%s", harel_error_message(stale));
  REFUSED(harel_transport_publish_delivery(t, "g", "\"stale\"", 0, NULL, NULL, 0, &d, &seq,
                                           &outcome, &stale));
  EXPECT(seq == NOT_SET_SEQ && outcome == NOT_SET_DUP);
  outputs_reset();
  REFUSED(harel_transport_publish_many_delivery(t, batch, 1, NULL, deliveries, seqs_out, dups_out,
                                                &stale));
  EXPECT(outputs_untouched());
  if ((tx = BEGIN(t)) != NULL) {
    REFUSED(harel_tx_publish_delivery(tx, "g", "\"stale\"", 0, NULL, NULL, 0, &d, &stale));
    EXPECT_STATUS(harel_tx_commit(tx, NULL, NULL, 0, &n, NULL), HAREL_OK);
    EXPECT(n == 0);
    harel_tx_free(tx);
  }
  EXPECT(messages_in(t) == 0);
  harel_transport_close(t);
  harel_error_free(stale);
}

static const char DROP_UNIQUE_COLUMN[] =
    "import sqlite3, sys\n"
    "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "for (name,) in c.execute(\"SELECT name FROM sqlite_master WHERE type = 'index' \"\n"
    "                         \"AND sql LIKE '%unique_key%'\").fetchall():\n"
    "    c.execute('DROP INDEX \"%s\"' % name)\n"
    "c.execute('ALTER TABLE harel_transport_messages DROP COLUMN unique_key')\n"
    "print('dropped', flush=True)\n";

/* A queue whose column unique_key went away under an open handle (opened with
 * create_schema off, a file without it is refused at the open): a unique key's publish is
 * HAREL_ERR_DATABASE naming the column, in each form, nothing written; a delivery without
 * one still publishes. */
static void a_queue_without_the_column(void) {
  const harel_message batch[1] = {{"g", "\"b\"", 0, NULL}};
  double now = T0;
  char path[300], line[32];
  harel_transport *t = open_at(new_path(path, sizeof path), &now);
  harel_delivery d = unique_of("u", HAREL_UNIQUE_KEEP), plain = unique_of(NULL, 0);
  const harel_delivery *deliveries[1];
  harel_tx *tx;
  harel_error *e = NULL;
  if (t == NULL) return;
  deliveries[0] = &d;
  PUBLISH_D(t, "g", "\"before\"", NULL, 0, &d, HAREL_PUBLISHED_STORED);
  ACK(t, CLAIM(t, "w", "\"before\""));
  if (!EXPECT(python_run(DROP_UNIQUE_COLUMN, path, line, sizeof line) &&
              strcmp(line, "dropped\n") == 0)) {
    harel_transport_close(t);
    return;
  }
  EXPECT_FAILS(HAREL_ERR_DATABASE, "unique_key",
               harel_transport_publish_delivery(t, "g", "\"a\"", 0, NULL, NULL, 0, &d, NULL, NULL,
                                                ERR));
  EXPECT_FAILS(HAREL_ERR_DATABASE, "unique_key",
               harel_transport_publish_many_delivery(t, batch, 1, NULL, deliveries, NULL, NULL,
                                                     ERR));
  if ((tx = BEGIN(t)) != NULL) {
    EXPECT_STATUS(harel_tx_publish_delivery(tx, "g", "\"c\"", 0, NULL, NULL, 0, &d, NULL),
                  HAREL_OK);
    EXPECT_CALL_NAMING(harel_tx_commit(tx, NULL, NULL, 0, NULL, &e), &e, HAREL_ERR_DATABASE,
                       "unique_key");
    harel_tx_free(tx);
  }
  EXPECT(messages_in(t) == 0);
  PUBLISH_D(t, "g", "\"plain\"", NULL, 0, &plain, HAREL_PUBLISHED_STORED);
  PUBLISH_D(t, "g", "\"none\"", NULL, 0, NULL, HAREL_PUBLISHED_STORED);
  EXPECT(messages_in(t) == 2);
  harel_transport_close(t);
}

const test_case unique_tests[] = {
    TEST(no_delivery_is_a_plain_publish),
    TEST(keep_stores_nothing_while_pending),
    TEST(replace_gives_the_pending_message_the_new_event),
    TEST(debounce_moves_the_due_time_within_its_cap),
    TEST(dead_letters_and_purges_free_the_key),
    TEST(a_smaller_size_reads_the_rest_as_defaults),
    TEST(bad_deliveries_are_refused_by_every_form),
    TEST(a_refused_delivery_takes_no_key),
    TEST(publish_many_delivery_hands_out_each_outcome),
    TEST(tx_commit_says_what_became_of_each),
    TEST(a_set_err_is_refused),
    TEST(a_queue_without_the_column),
    {NULL, NULL}};
