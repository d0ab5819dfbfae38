/*
 * test_expiry.c: a publish's expiry through C: harel_delivery's `ttl` and `expires_at`
 * (harel_transport_publish_delivery, _publish_many_delivery, harel_tx_publish_delivery),
 * the dead letter's reason "expired" and harel_stats.expired. The rules are the Rust
 * contract's (tests/common/contract_expiry.rs); here, the mapping, on the test clock: each
 * field reaches the library (a message no worker holds is moved to the dead letters by the
 * next claim, its group going on; with both, the earlier), the dead letter's fields, the
 * count (within `dead`; a redrive and a purge take it back); a held message finished by its
 * worker, a lapsed one expiring; a unique key freed; a caller's `size` without the two
 * fields reading them as 0 (never), in a block exactly that long (valgrind sees a read past
 * it); each refusal with its message, by every form (HAREL_ERR_ARGUMENT, the batch's naming
 * its message, the queue and the outputs untouched, a transaction going on), and an expiry
 * not after now refused at the latest by the commit, which then keeps nothing.
 */
#include "harel_test.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

/* ---- helpers ---------------------------------------------------------------------------- */

/* A delivery that expires after `ttl` seconds or at `expires_at` (0: never), the rest zeroed. */
static harel_delivery expiring(double ttl, double expires_at) {
  harel_delivery d = {0};
  d.size = sizeof d;
  d.ttl = ttl;
  d.expires_at = expires_at;
  return d;
}

/* The queue's messages, dead letters and expired dead letters are `messages`, `dead`,
 * `expired`. */
#define COUNTS(t, messages, dead, expired) \
  counts_at((t), (messages), (dead), (expired), __FILE__, __LINE__)
static int counts_at(harel_transport *t, uint64_t messages, uint64_t dead, uint64_t expired,
                     const char *file, int line) {
  harel_stats *s = stats_at(t, file, line);
  int ok = s != NULL && s->messages == messages && s->dead == dead && s->expired == expired;
  if (s != NULL && !ok)
    test_fail(file, line, "messages %llu, dead %llu, expired %llu; want %llu, %llu, %llu",
              (unsigned long long)s->messages, (unsigned long long)s->dead,
              (unsigned long long)s->expired, (unsigned long long)messages,
              (unsigned long long)dead, (unsigned long long)expired);
  harel_stats_free(s);
  return ok;
}

/* A claim that takes nothing (no group has its routing key): it sweeps the expired. */
static void sweep(harel_transport *t) {
  const char *const none[] = {"no-such-routing-key"};
  harel_lease *l = NOT_SET_LEASE;
  EXPECT_STATUS(harel_transport_claim(t, "w", VIS, 0, none, 1, &l, NULL), HAREL_EMPTY);
  EXPECT(l == NULL);
}

/* The dead letter of `event` (the only one in `group`) has the reason "expired", was never
 * claimed (or by `worker`, `attempts` times) and was moved at `dead_at`. */
#define EXPIRED(t, group, event, attempts, worker, dead_at) \
  expired_at((t), (group), (event), (attempts), (worker), (dead_at), __FILE__, __LINE__)
static void expired_at(harel_transport *t, const char *group, const char *event,
                       int64_t attempts, const char *worker, double dead_at, const char *file,
                       int line) {
  harel_dead_page *page = dead_page_at(t, group, NULL, 10, file, line);
  const harel_dead_letter *d;
  if (page == NULL) return;
  if (page->n_letters != 1) {
    test_fail(file, line, "%zu dead letters in %s, want 1", page->n_letters, group);
  } else {
    d = &page->letters[0];
    if (strcmp(d->event, event) != 0 || strcmp(d->reason, "expired") != 0 ||
        d->attempts != attempts || d->dead_at != dead_at ||
        (worker == NULL ? d->last_worker != NULL
                        : d->last_worker == NULL || strcmp(d->last_worker, worker) != 0))
      test_fail(file, line,
                "%s's dead letter: %s, reason \"%s\", attempts %lld, last worker %s, dead at %f; "
                "want %s, \"expired\", %lld, %s, %f",
                group, d->event, d->reason, (long long)d->attempts, or_null(d->last_worker),
                d->dead_at, event, (long long)attempts, or_null(worker), dead_at);
  }
  harel_dead_page_free(page);
}

/* ---- each field reaches the library ----------------------------------------------------- */

/* ttl: seconds from the publish. Nothing happens before a claim (stats shows it), nor before
 * the expiry; the claim after it buries the head and serves the group's next message; the
 * dead letter's reason is "expired", its count in `expired` and in `dead`. */
static void a_ttl_expires_the_message_into_the_dead_letters(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_delivery d = expiring(10.0, 0.0);
  harel_lease *l;
  int64_t s1, s2;
  if (t == NULL) return;
  s1 = PUBLISH_DELIVERY(t, "g", "\"e1\"", &d);
  s2 = PUBLISH_DELIVERY(t, "g", "\"e2\"", NULL);
  EXPECT(s1 > 0 && s2 > s1);
  COUNTS(t, 2, 0, 0);
  now = T0 + 9.5;
  sweep(t);
  COUNTS(t, 2, 0, 0); /* not yet */
  now = T0 + 10.5;
  COUNTS(t, 2, 0, 0); /* a look moves nothing */
  l = CLAIM(t, "w", "\"e2\"");
  if (l != NULL) EXPECT(l->seq == s2);
  ACK(t, l);
  EXPIRED(t, "g", "\"e1\"", 0, NULL, T0 + 10.5);
  COUNTS(t, 0, 1, 1);
  harel_transport_close(t);
}

/* expires_at: an instant by the transport's clock; with ttl too, the earlier of the two. */
static void expires_at_and_the_earlier_of_the_two(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_delivery at = expiring(0.0, T0 + 20.0), ttl_first = expiring(15.0, T0 + 100.0);
  harel_delivery at_first = expiring(100.0, T0 + 16.0), later = expiring(40.0, 0.0);
  if (t == NULL) return;
  PUBLISH_DELIVERY(t, "at", "\"at\"", &at);
  PUBLISH_DELIVERY(t, "ttl-first", "\"ttl first\"", &ttl_first);
  PUBLISH_DELIVERY(t, "at-first", "\"at first\"", &at_first);
  PUBLISH_DELIVERY(t, "later", "\"later\"", &later);
  now = T0 + 17.0;
  sweep(t);
  COUNTS(t, 2, 2, 2);
  EXPIRED(t, "ttl-first", "\"ttl first\"", 0, NULL, T0 + 17.0);
  EXPIRED(t, "at-first", "\"at first\"", 0, NULL, T0 + 17.0);
  now = T0 + 21.0;
  sweep(t);
  EXPIRED(t, "at", "\"at\"", 0, NULL, T0 + 21.0);
  COUNTS(t, 1, 3, 3);
  ACK(t, CLAIM(t, "w", "\"later\""));
  harel_transport_close(t);
}

/* A worker that holds it finishes it (its ack past the expiry is an ack); one whose lease
 * lapsed loses it (the claim after buries it, its last worker named; the late ack finds its
 * lease lost). */
static void a_held_message_is_its_workers_and_a_lapsed_one_expires(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_delivery d = expiring(5.0, 0.0);
  harel_lease *held, *lapsed = NULL;
  if (t == NULL) return;
  PUBLISH_DELIVERY(t, "held", "\"held\"", &d);
  held = CLAIM(t, "w", "\"held\"");
  now = T0 + 20.0;
  sweep(t);
  if (held != NULL) EXPECT_STATUS(harel_transport_ack(t, held, NULL), HAREL_OK);
  harel_lease_free(held);
  COUNTS(t, 0, 0, 0);
  /* a lapsed lease */
  d.ttl = 20.0;
  PUBLISH_DELIVERY(t, "lapsed", "\"lapsed\"", &d);
  EXPECT(harel_transport_claim(t, "w", 5.0, 0, NULL, 0, &lapsed, NULL) == HAREL_OK &&
         lapsed != NULL && strcmp(lapsed->event, "\"lapsed\"") == 0);
  now = T0 + 41.0;
  CLAIM_EMPTY(t);
  EXPIRED(t, "lapsed", "\"lapsed\"", 1, "w", T0 + 41.0);
  COUNTS(t, 0, 1, 1);
  if (lapsed != NULL) EXPECT_ERROR(harel_transport_ack(t, lapsed, NULL), HAREL_ERR_LEASE_LOST, NULL);
  harel_lease_free(lapsed);
  harel_transport_close(t);
}

/* A delayed message expires too, and a parked one: no worker held them, so their dead
 * letters name none (harel_dead_letter.last_worker NULL, not the library's markers). */
static void delayed_and_parked_messages_expire_without_a_worker(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_delivery delayed = expiring(15.0, 0.0), parked = expiring(20.0, 0.0);
  harel_lease *l;
  if (t == NULL) return;
  delayed.delay = 10.0;
  PUBLISH_DELIVERY(t, "delayed", "\"delayed\"", &delayed);
  PUBLISH_DELIVERY(t, "parked", "\"parked\"", &parked);
  l = CLAIM(t, "w", "\"parked\"");
  if (l != NULL) EXPECT_STATUS(harel_transport_nack(t, l, 100.0, NULL), HAREL_OK);
  harel_lease_free(l);
  now = T0 + 21.0;
  CLAIM_EMPTY(t);
  EXPIRED(t, "delayed", "\"delayed\"", 0, NULL, T0 + 21.0);
  EXPIRED(t, "parked", "\"parked\"", 1, NULL, T0 + 21.0);
  COUNTS(t, 0, 2, 2);
  harel_transport_close(t);
}

/* Its expiry frees its unique key; redriven, it comes back without an expiry, and
 * `expired` no longer counts it; purged, neither. */
static void a_unique_key_freed_a_redrive_and_a_purge(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_delivery d = expiring(5.0, 0.0);
  harel_lease *l;
  harel_error *e = NULL;
  uint64_t n = NOT_SET_COUNT;
  int64_t s1 = -1, s2;
  int64_t seq = NOT_SET_SEQ;
  int outcome = NOT_SET_DUP;
  if (t == NULL) return;
  d.unique_key = "job-1";
  s1 = PUBLISH_DELIVERY(t, "a", "\"first\"", &d);
  EXPECT_CALL(harel_transport_publish_delivery(t, "a", "\"again\"", 0, NULL, NULL, 0, &d, &seq,
                                               &outcome, &e),
              &e, HAREL_OK);
  EXPECT(seq == s1 && outcome == HAREL_PUBLISHED_DUPLICATE);
  now = T0 + 6.0;
  CLAIM_EMPTY(t);
  d.ttl = 0.0;
  s2 = PUBLISH_DELIVERY(t, "a", "\"second\"", &d); /* the key is free */
  EXPECT(s2 > s1);
  COUNTS(t, 1, 1, 1);
  EXPECT_CALL(harel_transport_redrive(t, true, NULL, NULL, 0, &n, &e), &e, HAREL_OK);
  EXPECT(n == 1);
  COUNTS(t, 2, 0, 0);
  now = T0 + 1000.0;
  l = CLAIM(t, "w", "\"second\"");
  ACK(t, l);
  ACK(t, CLAIM(t, "w", "\"first\"")); /* no expiry now */
  /* purged: no longer counted */
  d.unique_key = NULL;
  d.ttl = 1.0;
  PUBLISH_DELIVERY(t, "b", "\"gone\"", &d);
  now += 2.0;
  CLAIM_EMPTY(t);
  COUNTS(t, 0, 1, 1);
  n = NOT_SET_COUNT;
  EXPECT_CALL(harel_transport_purge_dead(t, true, NULL, NULL, 0, &n, &e), &e, HAREL_OK);
  EXPECT(n == 1);
  COUNTS(t, 0, 0, 0);
  harel_transport_close(t);
}

/* ---- batches and transactions ----------------------------------------------------------- */

/* Each message of a batch its own expiry (a NULL delivery: none); a transaction's publish
 * too, its ttl counted from the commit's clock reading. */
static void batches_and_transactions_carry_it(void) {
  const harel_message batch[3] = {{"a", "\"a\"", 0, NULL}, {"b", "\"b\"", 0, NULL},
                                  {"c", "\"c\"", 0, NULL}};
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_delivery ttl = expiring(10.0, 0.0), at = expiring(0.0, T0 + 14.0);
  const harel_delivery *deliveries[3];
  harel_error *e = NULL;
  harel_tx *tx;
  int64_t seqs[3];
  int outcomes[3];
  size_t n = NOT_SET_COUNT;
  if (t == NULL) return;
  deliveries[0] = &ttl;
  deliveries[1] = NULL;
  deliveries[2] = &at;
  EXPECT_CALL(harel_transport_publish_many_delivery(t, batch, 3, NULL, deliveries, seqs, outcomes,
                                                    &e),
              &e, HAREL_OK);
  EXPECT(outcomes[0] == 0 && outcomes[1] == 0 && outcomes[2] == 0 && seqs[2] > seqs[0]);
  if ((tx = BEGIN(t)) != NULL) {
    EXPECT_CALL(harel_tx_publish_delivery(tx, "d", "\"d\"", 0, NULL, NULL, 0, &ttl, &e), &e,
                HAREL_OK);
    EXPECT_CALL(harel_tx_publish_delivery(tx, "e", "\"e\"", 0, NULL, NULL, 0, NULL, &e), &e,
                HAREL_OK);
    now = T0 + 5.0; /* the commit's clock: d expires at T0 + 15 */
    EXPECT_CALL(harel_tx_commit(tx, NULL, NULL, 0, &n, &e), &e, HAREL_OK);
    EXPECT(n == 2);
    harel_tx_free(tx);
  }
  now = T0 + 12.0;
  sweep(t);
  EXPIRED(t, "a", "\"a\"", 0, NULL, T0 + 12.0);
  COUNTS(t, 4, 1, 1);
  now = T0 + 14.5;
  sweep(t);
  EXPIRED(t, "c", "\"c\"", 0, NULL, T0 + 14.5);
  COUNTS(t, 3, 2, 2); /* not d yet */
  now = T0 + 15.5;
  sweep(t);
  EXPIRED(t, "d", "\"d\"", 0, NULL, T0 + 15.5);
  COUNTS(t, 2, 3, 3);
  EXPECT(drain_now(t, NULL, NULL) == 2); /* b and e */
  COUNTS(t, 0, 3, 3);
  harel_transport_close(t);
}

/* ---- a caller built against an older harel_delivery ------------------------------------ */

/* A `size` without the two fields (the harel_delivery of the release before them): they
 * read as 0, never, whatever lies past it (here values that would be refused); a size
 * holding ttl but not expires_at reads the ttl only. */
static void a_smaller_size_reads_them_as_never(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_delivery full = expiring(NAN, -1.0), *d;
  if (t == NULL) return;
  full.delay = 1.0;
  if ((d = short_delivery(&full, offsetof(harel_delivery, ttl))) != NULL) {
    PUBLISH_DELIVERY(t, "old", "\"old\"", d);
    free(d);
  }
  /* the same cut in a whole struct: what lies past the size is not read */
  full.size = offsetof(harel_delivery, ttl);
  PUBLISH_DELIVERY(t, "old2", "\"old2\"", &full);
  /* ttl within the size, expires_at past it */
  full = expiring(10.0, -1.0);
  if ((d = short_delivery(&full, offsetof(harel_delivery, expires_at))) != NULL) {
    PUBLISH_DELIVERY(t, "ttl", "\"ttl\"", d);
    free(d);
  }
  now = T0 + 1e6;
  EXPECT(drain_now(t, NULL, NULL) == 2); /* old and old2; ttl expired */
  EXPIRED(t, "ttl", "\"ttl\"", 0, NULL, now);
  COUNTS(t, 0, 1, 1);
  harel_transport_close(t);
}

/* ---- bad expiries ----------------------------------------------------------------------- */

/* `bad` refused by publish_delivery and publish_many_delivery (as message 1, message 0 good)
 * with HAREL_ERR_ARGUMENT naming `single` or "messages[1]." `single`, the outputs untouched,
 * nothing written (the fixture checks). The transaction's publish refuses it too (nothing
 * queued, the transaction goes on to commit nothing), or, for what is checked against the
 * commit's "now" (`at_commit`), queues it for the commit to refuse, keeping nothing. */
static void refused_everywhere(fixture *fx, const harel_delivery *bad, const char *single,
                               int at_commit) {
  const harel_message batch[2] = {{"new", "\"ok\"", 0, NULL}, {"new", "\"bad\"", 0, NULL}};
  const harel_delivery *deliveries[2];
  harel_delivery good = expiring(60.0, 0.0);
  char batched[128];
  int64_t seq = NOT_SET_SEQ;
  int outcome = NOT_SET_DUP, kept = 0;
  size_t n = NOT_SET_COUNT;
  harel_tx *tx;
  harel_error *e = NULL;
  harel_status s;
  deliveries[0] = &good;
  deliveries[1] = bad;
  snprintf(batched, sizeof batched, "messages[1].%s", single);
  EXPECT_FAILS(HAREL_ERR_ARGUMENT, single,
               (seq = NOT_SET_SEQ, outcome = NOT_SET_DUP,
                s = harel_transport_publish_delivery(fx->t, "new", "\"bad\"", 0, NULL, NULL, 0,
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
  if ((tx = BEGIN(fx->t)) == NULL) return;
  if (!at_commit) {
    EXPECT_FAILS(HAREL_ERR_ARGUMENT, single,
                 harel_tx_publish_delivery(tx, "new", "\"bad\"", 0, NULL, NULL, 0, bad, ERR));
    EXPECT_STATUS(harel_tx_commit(tx, NULL, NULL, 0, &n, NULL), HAREL_OK);
    EXPECT(n == 0);
  } else {
    /* checked now, or by the commit: either way nothing is kept */
    s = harel_tx_publish_delivery(tx, "new", "\"bad\"", 0, NULL, NULL, 0, bad, &e);
    if (s == HAREL_OK) {
      EXPECT_CALL_NAMING(harel_tx_commit(tx, NULL, NULL, 0, &n, &e), &e, HAREL_ERR_ARGUMENT,
                         single);
    } else {
      EXPECT_CALL_NAMING(s, &e, HAREL_ERR_ARGUMENT, single);
      EXPECT_STATUS(harel_tx_commit(tx, NULL, NULL, 0, &n, NULL), HAREL_OK);
      EXPECT(n == 0);
    }
  }
  harel_tx_free(tx);
}

/* The message of `bad`, given to publish_delivery on the fixture (its clock at T0), is
 * `want` (prefixed "publish: " or not). */
#define MESSAGE_IS(fx, bad, want) message_is_at((fx), (bad), (want), __FILE__, __LINE__)
static void message_is_at(fixture *fx, const harel_delivery *bad, const char *want,
                          const char *file, int line) {
  harel_error *e = NULL;
  const char *got;
  if (harel_transport_publish_delivery(fx->t, "new", "1", 0, NULL, NULL, 0, bad, NULL, NULL, &e) !=
      HAREL_ERR_ARGUMENT) {
    test_fail(file, line, "not refused with HAREL_ERR_ARGUMENT: want \"%s\"", want);
  } else if ((got = harel_error_message(e)) == NULL || strstr(got, want) == NULL) {
    test_fail(file, line, "the message \"%s\" does not say \"%s\"", or_null(got), want);
  }
  harel_error_free(e);
}

/* Every bad expiry: a ttl NaN, infinite, negative or over ten years; an expires_at NaN,
 * infinite or negative; an expiry not after now (by ttl or expires_at), or not after the
 * message is due (delay, not_before). Each refused by every form, the queue unchanged;
 * their messages' words. */
static void bad_expiries_are_refused_by_every_form(void) {
  const double bad_ttls[] = {NAN, INFINITY, -INFINITY, -1.0, -1e-9, MAX_DELAY + 1.0};
  const double bad_instants[] = {NAN, INFINITY, -INFINITY, -1.0, -1e-9};
  harel_delivery d;
  harel_stats *s;
  fixture fx;
  size_t i;
  if (!fixture_open(&fx)) return;
  for (i = 0; i < N_OF(bad_ttls); i++) {
    d = expiring(bad_ttls[i], 0.0);
    refused_everywhere(&fx, &d, "ttl", 0);
    d = expiring(bad_ttls[i], T0 + 60.0); /* a good instant beside it */
    refused_everywhere(&fx, &d, "ttl", 0);
  }
  for (i = 0; i < N_OF(bad_instants); i++) {
    d = expiring(0.0, bad_instants[i]);
    refused_everywhere(&fx, &d, "expires_at", 0);
    d = expiring(60.0, bad_instants[i]);
    refused_everywhere(&fx, &d, "expires_at", 0);
  }
  /* not after now, not after the due time: checked against the clock */
  d = expiring(0.0, T0);
  refused_everywhere(&fx, &d, "expires_at", 1);
  d = expiring(0.0, T0 - 0.5);
  refused_everywhere(&fx, &d, "expires_at", 1);
  d = expiring(30.0, 0.0);
  d.delay = 60.0;
  refused_everywhere(&fx, &d, "expires_at", 1);
  d = expiring(0.0, T0 + 30.0);
  d.not_before = T0 + 60.0;
  refused_everywhere(&fx, &d, "expires_at", 1);
  d = expiring(100.0, T0 + 60.0);
  d.delay = 60.0; /* due at the instant it expires */
  refused_everywhere(&fx, &d, "expires_at", 1);
  /* the words */
  d = expiring(-1.0, 0.0);
  MESSAGE_IS(&fx, &d, "ttl is -1; it must be a finite number of seconds > 0, at most 315360000 "
                      "(ten years)");
  d = expiring(NAN, 0.0);
  MESSAGE_IS(&fx, &d, "ttl is NaN; it must be a finite number of seconds > 0");
  d = expiring(MAX_DELAY + 1.0, 0.0);
  MESSAGE_IS(&fx, &d, "ttl is 315360001; it must be");
  d = expiring(0.0, NAN);
  MESSAGE_IS(&fx, &d, "expires_at is NaN; it must be finite epoch seconds >= 0");
  d = expiring(0.0, -INFINITY);
  MESSAGE_IS(&fx, &d, "expires_at is -inf; it must be finite epoch seconds >= 0");
  d = expiring(0.0, T0);
  MESSAGE_IS(&fx, &d, "expires_at is 1000: not after now (1000)");
  d = expiring(30.0, 0.0);
  d.delay = 60.0;
  MESSAGE_IS(&fx, &d, "expires_at is 1030: not after the message is due (1060), so it could never "
                      "be delivered");
  {
    const harel_message batch[2] = {{"new", "\"ok\"", 0, NULL}, {"new", "\"bad\"", 0, NULL}};
    const harel_delivery *deliveries[2];
    harel_delivery good = expiring(60.0, 0.0);
    harel_error *e = NULL;
    deliveries[0] = &good;
    deliveries[1] = &d;
    d = expiring(NAN, 0.0);
    EXPECT(harel_transport_publish_many_delivery(fx.t, batch, 2, NULL, deliveries, NULL, NULL,
                                                 &e) == HAREL_ERR_ARGUMENT);
    EXPECT(e != NULL && strstr(harel_error_message(e), "messages[1].ttl is NaN") != NULL);
    harel_error_free(e);
    e = NULL;
    d = expiring(0.0, T0 - 1.0);
    EXPECT(harel_transport_publish_many_delivery(fx.t, batch, 2, NULL, deliveries, NULL, NULL,
                                                 &e) == HAREL_ERR_ARGUMENT);
    EXPECT(e != NULL &&
           strstr(harel_error_message(e), "messages[1].expires_at is 999: not after now (1000)") !=
               NULL);
    harel_error_free(e);
  }
  /* -0.0 is 0: never, as a zeroed field */
  d = expiring(-0.0, -0.0);
  EXPECT(harel_transport_publish_delivery(fx.t, "never", "1", 0, NULL, NULL, 0, &d, NULL, NULL,
                                          NULL) == HAREL_OK);
  EXPECT_STATUS(harel_transport_purge_group(fx.t, "never", NULL, NULL), HAREL_OK);
  s = STATS(fx.t);
  if (s != NULL) EXPECT(s->expired == 0);
  harel_stats_free(s);
  FIXTURE_CLOSE(&fx);
}

const test_case expiry_tests[] = {
    TEST(a_ttl_expires_the_message_into_the_dead_letters),
    TEST(expires_at_and_the_earlier_of_the_two),
    TEST(a_held_message_is_its_workers_and_a_lapsed_one_expires),
    TEST(delayed_and_parked_messages_expire_without_a_worker),
    TEST(a_unique_key_freed_a_redrive_and_a_purge),
    TEST(batches_and_transactions_carry_it),
    TEST(a_smaller_size_reads_them_as_never),
    TEST(bad_expiries_are_refused_by_every_form),
    {NULL, NULL}};
