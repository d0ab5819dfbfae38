/*
 * test_abi.c: the C ABI of libharel_transport as a C program sees it (ABI.md): the queue's
 * contract under a clock the test moves, every argument rule, every status, ownership of
 * what the library hands out (run under valgrind by `make test-c`).
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harel_test.h"

#define VIS 30.0   /* the visibility of every claim that doesn't test visibility */
#define T0 1000.0  /* where the test clock starts */

static char temp_dir[256];

static const char *const BAD_UTF8[] = {
    "\xff",           /* never valid */
    "ab\xc3",         /* truncated two-byte sequence */
    "\xc0\xaf",       /* overlong '/' */
    "\xed\xa0\x80",   /* a UTF-16 surrogate */
};
#define N_BAD_UTF8 (sizeof BAD_UTF8 / sizeof BAD_UTF8[0])

/* ---------------------------------------------------------------------------------------
 * Helpers: a clock the test moves, opening, claiming.
 */

/* The clock every test transport uses: "now" is the double ctx points to. */
static double test_clock(void *ctx) { return *(const double *)ctx; }

/* A path for a new database file in the test's temp dir. */
static const char *new_path(char *buf, size_t size) {
  static int n;
  snprintf(buf, size, "%s/q%d.db", temp_dir, ++n);
  return buf;
}

/* Opens `database` with the clock reading *now (and `prefix` unless NULL). */
static harel_transport *open_at(const char *database, double *now, const char *prefix) {
  harel_options *o = harel_options_new();
  harel_transport *t = NULL;
  if (!EXPECT(o != NULL)) return NULL;
  EXPECT_STATUS(harel_options_set_clock(o, test_clock, now), HAREL_OK);
  EXPECT_STATUS(harel_options_set_synchronous_full(o, false), HAREL_OK);
  if (prefix != NULL) EXPECT_STATUS(harel_options_set_prefix(o, prefix), HAREL_OK);
  EXPECT_STATUS(harel_transport_open(database, o, &t), HAREL_OK);
  harel_options_free(o);
  return t;
}

static void close_ok(harel_transport *t) { EXPECT_STATUS(harel_transport_close(t), HAREL_OK); }

#define PUBLISH(t, group, event, priority, key) \
  EXPECT_STATUS(harel_transport_publish((t), (group), (event), (priority), (key)), HAREL_OK)

/* Claims and expects the head of `group` with `event` (either NULL: any). */
#define CLAIM(t, worker, group, event) CLAIM_WITH(t, worker, 0, NULL, 0, group, event)
#define CLAIM_WITH(t, worker, min_priority, keys, n, group, event) \
  claim_at((t), (worker), (min_priority), (keys), (n), (group), (event), __FILE__, __LINE__)
static harel_lease *claim_at(harel_transport *t, const char *worker, int32_t min_priority,
                             const char *const *keys, size_t n, const char *group,
                             const char *event, const char *file, int line) {
  harel_lease *lease = NULL;
  if (!expect_status(harel_transport_claim(t, worker, VIS, min_priority, keys, n, &lease),
                     HAREL_OK, "harel_transport_claim", file, line))
    return NULL;
  if (lease == NULL) {
    test_fail(file, line, "claim returned HAREL_OK with no lease");
    return NULL;
  }
  if ((group != NULL && strcmp(lease->group_id, group) != 0) ||
      (event != NULL && strcmp(lease->event, event) != 0))
    test_fail(file, line, "claimed %s %s, want %s %s", lease->group_id, lease->event,
              or_null(group), or_null(event));
  return lease;
}

/* Expects nothing deliverable now (and *out NULL). */
#define CLAIM_EMPTY(t, worker) CLAIM_EMPTY_WITH(t, worker, 0, NULL, 0)
#define CLAIM_EMPTY_WITH(t, worker, min_priority, keys, n)                                 \
  do {                                                                                     \
    harel_lease *out_ = (harel_lease *)&out_;                                              \
    EXPECT_STATUS(harel_transport_claim((t), (worker), VIS, (min_priority), (keys), (n),   \
                                        &out_), HAREL_EMPTY);                              \
    EXPECT(out_ == NULL);                                                                  \
  } while (0)

/* Acks a lease from claim (if the claim worked) and frees it. */
#define ACK(t, lease)                                                                      \
  do {                                                                                     \
    harel_lease *l_ = (lease);                                                             \
    if (l_ != NULL) EXPECT_STATUS(harel_transport_ack((t), l_), HAREL_OK);                 \
    harel_lease_free(l_);                                                                  \
  } while (0)

/* A copy of `from` with other group/worker strings (KEEP keeps the field). */
static char keep_[1];
#define KEEP keep_
static const harel_lease *relabel(harel_lease *built, const harel_lease *from, const char *group,
                                  const char *worker) {
  *built = *from;
  if (group != KEEP) built->group_id = (char *)group;
  if (worker != KEEP) built->worker_id = (char *)worker;
  return built;
}

/* ---------------------------------------------------------------------------------------
 * The fixture for rejected calls: a queue with something of every kind in it, checked
 * afterwards to be exactly as it was. g1 has two messages, the first leased to "w1"
 * (`held`); g2's one message is parked for 100 s; g3 (priority 3, routing key "k") waits.
 */
typedef struct {
  harel_transport *t;
  double now;
  harel_lease *held;
  int64_t parked_seq;
} fixture;

static int fixture_open(fixture *f) {
  harel_lease *parked;
  f->now = T0;
  f->t = open_at(":memory:", &f->now, NULL);
  if (f->t == NULL) return 0;
  PUBLISH(f->t, "g1", "{\"n\":1}", 0, NULL);
  PUBLISH(f->t, "g1", "{\"n\":2}", 0, NULL);
  PUBLISH(f->t, "g2", "{\"n\":3}", 0, NULL);
  PUBLISH(f->t, "g3", "{\"n\":4}", 3, "k");
  f->held = CLAIM(f->t, "w1", "g1", "{\"n\":1}");
  parked = CLAIM(f->t, "w2", "g2", "{\"n\":3}");
  if (f->held == NULL || parked == NULL) {
    harel_lease_free(f->held);
    harel_lease_free(parked);
    close_ok(f->t);
    return 0;
  }
  f->parked_seq = parked->seq;
  EXPECT_STATUS(harel_transport_nack(f->t, parked, 100.0), HAREL_OK);
  harel_lease_free(parked);
  return 1;
}

/* The queue still holds exactly what fixture_open put there; closes it. */
static void fixture_check(fixture *f, const char *call, const char *file, int line) {
  harel_lease *l = NULL;
  int ok = 1;
  f->now = T0;
  ok &= harel_transport_ack(f->t, f->held) == HAREL_OK;  /* the lease survived */
  harel_lease_free(f->held);
  /* g3 was never claimed, so it comes before g1 */
  ok &= harel_transport_claim(f->t, "w", VIS, 0, NULL, 0, &l) == HAREL_OK && l &&
        strcmp(l->event, "{\"n\":4}") == 0 && harel_transport_ack(f->t, l) == HAREL_OK;
  harel_lease_free(l), l = NULL;
  ok &= harel_transport_claim(f->t, "w", VIS, 0, NULL, 0, &l) == HAREL_OK && l &&
        strcmp(l->event, "{\"n\":2}") == 0 && harel_transport_ack(f->t, l) == HAREL_OK;
  harel_lease_free(l), l = NULL;
  ok &= harel_transport_claim(f->t, "w", VIS, 0, NULL, 0, &l) == HAREL_EMPTY;  /* g2 parked */
  f->now = T0 + 101.0;
  ok &= harel_transport_claim(f->t, "w", VIS, 0, NULL, 0, &l) == HAREL_OK && l &&
        l->seq == f->parked_seq && harel_transport_ack(f->t, l) == HAREL_OK;
  harel_lease_free(l), l = NULL;
  ok &= harel_transport_claim(f->t, "w", VIS, 0, NULL, 0, &l) == HAREL_EMPTY;
  if (!ok) test_fail(file, line, "the queue changed after the rejected %s", call);
  close_ok(f->t);
}

/* `call` fails with `want`, its message naming `parameter` (NULL: any message), and the
 * queue is unchanged. The call may use fx.t, fx.held, fx.parked_seq, a harel_lease `built`
 * to fill and a harel_lease *`claimed` for claim's out. */
#define REJECTS(call, want, parameter)                                                     \
  do {                                                                                     \
    fixture fx;                                                                            \
    harel_lease built, *claimed = NULL;                                                    \
    (void)built;                                                                           \
    if (fixture_open(&fx)) {                                                               \
      EXPECT_ERROR(call, want, parameter);                                                 \
      harel_lease_free(claimed);                                                           \
      fixture_check(&fx, #call, __FILE__, __LINE__);                                       \
    }                                                                                      \
  } while (0)
#define REJECTS_ARG(call, parameter) REJECTS(call, HAREL_ERR_ARGUMENT, parameter)

/* ---------------------------------------------------------------------------------------
 * The transport's contract, with the test's clock.
 */

static void fifo_within_a_group(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now, NULL);
  harel_lease *l;
  int64_t last = 0;
  int i;
  char event[32];
  for (i = 1; i <= 5; i++) {
    snprintf(event, sizeof event, "{\"i\":%d}", i);
    PUBLISH(t, "g", event, 0, NULL);
  }
  for (i = 1; i <= 5; i++) {
    snprintf(event, sizeof event, "{\"i\":%d}", i);
    l = CLAIM(t, "w", "g", event);
    if (l != NULL) EXPECT(l->seq > last), last = l->seq;
    ACK(t, l);
    now += 1.0;
  }
  CLAIM_EMPTY(t, "w");
  close_ok(t);
}

static void one_message_in_flight_per_group(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now, NULL);
  harel_lease *a1, *b1;
  PUBLISH(t, "a", "\"a1\"", 0, NULL);
  PUBLISH(t, "a", "\"a2\"", 0, NULL);
  PUBLISH(t, "b", "\"b1\"", 0, NULL);
  a1 = CLAIM(t, "w1", "a", "\"a1\"");
  b1 = CLAIM(t, "w2", "b", "\"b1\"");  /* a is in flight: another worker gets b */
  CLAIM_EMPTY(t, "w3");                /* a2 waits behind a1 */
  ACK(t, b1);
  CLAIM_EMPTY(t, "w3");
  ACK(t, a1);
  ACK(t, CLAIM(t, "w3", "a", "\"a2\""));
  CLAIM_EMPTY(t, "w3");
  close_ok(t);
}

static void lease_fields(void) {
  double now = 1234.5;
  harel_transport *t = open_at(":memory:", &now, NULL);
  const char *event =
      " { \"kind\" : \"x\", \"id\": \"\xc3\xa9\xe6\x97\xa5\", \"data\": [1, 2.50] } ";
  char group[] = "group-\xc3\xa9";
  char worker[] = "worker-7";
  harel_lease *l = NULL;
  PUBLISH(t, group, event, 2, "key");
  EXPECT_STATUS(harel_transport_claim(t, worker, 12.25, 0, NULL, 0, &l), HAREL_OK);
  if (EXPECT(l != NULL)) {
    EXPECT(l->seq >= 1);
    EXPECT_STR(l->group_id, group);
    EXPECT_STR(l->event, event);  /* byte for byte, whitespace and all */
    EXPECT_STR(l->worker_id, worker);
    EXPECT(l->lock_expiry == 1234.5 + 12.25);
    /* the lease's strings are the library's copies, not the caller's buffers */
    EXPECT(l->group_id != group && l->worker_id != worker && l->event != event);
    ACK(t, l);
  }
  close_ok(t);
}

static void ack_removes_the_message_and_ends_the_lease(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now, NULL);
  harel_lease *l;
  PUBLISH(t, "g", "1", 0, NULL);
  l = CLAIM(t, "w", "g", "1");
  if (l != NULL) {
    EXPECT_STATUS(harel_transport_ack(t, l), HAREL_OK);
    EXPECT_STATUS(harel_transport_ack(t, l), HAREL_ERR_LEASE_LOST);
    EXPECT_STATUS(harel_transport_nack(t, l, 0.0), HAREL_ERR_LEASE_LOST);
    harel_lease_free(l);
  }
  CLAIM_EMPTY(t, "w");
  /* the group row went with its last message: a new publish sets a new priority */
  PUBLISH(t, "g", "2", 4, NULL);
  ACK(t, CLAIM_WITH(t, "w", 4, NULL, 0, "g", "2"));
  close_ok(t);
}

static void nack_now_makes_the_message_claimable_at_once(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now, NULL);
  harel_lease *first, *again;
  PUBLISH(t, "g", "\"m1\"", 0, NULL);
  PUBLISH(t, "g", "\"m2\"", 0, NULL);
  first = CLAIM(t, "w1", "g", "\"m1\"");
  if (first != NULL) {
    EXPECT_STATUS(harel_transport_nack(t, first, 0.0), HAREL_OK);
    again = CLAIM(t, "w2", "g", "\"m1\"");  /* the same message, still the group's head */
    if (again != NULL) EXPECT(again->seq == first->seq);
    /* the nacked lease is over */
    EXPECT_STATUS(harel_transport_ack(t, first), HAREL_ERR_LEASE_LOST);
    EXPECT_STATUS(harel_transport_nack(t, first, 0.0), HAREL_ERR_LEASE_LOST);
    ACK(t, again);
    harel_lease_free(first);
  }
  ACK(t, CLAIM(t, "w1", "g", "\"m2\""));
  close_ok(t);
}

static void nack_with_delay_parks_and_blocks_the_group(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now, NULL);
  harel_lease *m1, *again;
  PUBLISH(t, "g", "\"m1\"", 0, NULL);
  PUBLISH(t, "g", "\"m2\"", 0, NULL);
  PUBLISH(t, "other", "\"o1\"", 0, NULL);
  m1 = CLAIM(t, "w", "g", "\"m1\"");
  if (m1 == NULL) return;
  EXPECT_STATUS(harel_transport_nack(t, m1, 10.0), HAREL_OK);
  ACK(t, CLAIM(t, "w", "other", "\"o1\""));  /* other groups go on */
  CLAIM_EMPTY(t, "w");                        /* g is parked: neither m1 nor m2 */
  EXPECT_STATUS(harel_transport_ack(t, m1), HAREL_ERR_LEASE_LOST);
  EXPECT_STATUS(harel_transport_nack(t, m1, 0.0), HAREL_ERR_LEASE_LOST);
  now = T0 + 10.0;  /* the park lasts through its last instant */
  CLAIM_EMPTY(t, "w");
  now = T0 + 10.5;
  again = CLAIM(t, "w2", "g", "\"m1\"");
  if (again != NULL) EXPECT(again->seq == m1->seq);
  ACK(t, again);
  ACK(t, CLAIM(t, "w2", "g", "\"m2\""));
  harel_lease_free(m1);
  close_ok(t);
}

static void a_lapsed_lease_is_claimable_again_and_the_old_one_is_lost(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now, NULL);
  harel_lease *w1, *w2;
  PUBLISH(t, "g", "\"m\"", 0, NULL);
  w1 = CLAIM(t, "w1", "g", "\"m\"");
  now = T0 + VIS;  /* still leased at its last instant */
  CLAIM_EMPTY(t, "w2");
  now = T0 + VIS + 0.5;
  w2 = CLAIM(t, "w2", "g", "\"m\"");
  if (w1 != NULL && w2 != NULL) {
    EXPECT(w2->seq == w1->seq);
    EXPECT(w2->lock_expiry == now + VIS);
    /* w1's lease is lost: ack and nack change nothing */
    EXPECT_STATUS(harel_transport_ack(t, w1), HAREL_ERR_LEASE_LOST);
    EXPECT_STATUS(harel_transport_nack(t, w1, 0.0), HAREL_ERR_LEASE_LOST);
    EXPECT_STATUS(harel_transport_nack(t, w1, 5.0), HAREL_ERR_LEASE_LOST);
    CLAIM_EMPTY(t, "w3");  /* still w2's */
  }
  ACK(t, w2);
  CLAIM_EMPTY(t, "w3");
  harel_lease_free(w1);
  close_ok(t);
}

static void a_lapsed_lease_nobody_took_can_still_be_acked(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now, NULL);
  harel_lease *l;
  PUBLISH(t, "g", "\"m\"", 0, NULL);
  l = CLAIM(t, "w1", "g", "\"m\"");
  now = T0 + 10 * VIS;
  ACK(t, l);  /* still locked_by w1: the message is not gone nor someone else's */
  CLAIM_EMPTY(t, "w2");
  close_ok(t);
}

static void round_robin_across_groups(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now, NULL);
  const char *const order[] = {"a", "b", "c", "a", "b", "c", "a", "b", "c"};
  char event[16];
  int i;
  for (i = 0; i < 3; i++) {  /* a's messages all come first */
    snprintf(event, sizeof event, "\"a%d\"", i);
    PUBLISH(t, "a", event, 0, NULL);
  }
  for (i = 0; i < 3; i++) {
    snprintf(event, sizeof event, "\"b%d\"", i);
    PUBLISH(t, "b", event, 0, NULL);
    snprintf(event, sizeof event, "\"c%d\"", i);
    PUBLISH(t, "c", event, 0, NULL);
  }
  for (i = 0; i < 9; i++) {
    snprintf(event, sizeof event, "\"%s%d\"", order[i], i / 3);
    ACK(t, CLAIM(t, "w", order[i], event));
    now += 1.0;
  }
  /* a group never claimed goes before one just served */
  PUBLISH(t, "old", "1", 0, NULL);
  PUBLISH(t, "old", "2", 0, NULL);
  ACK(t, CLAIM(t, "w", "old", "1"));
  now += 1.0;
  PUBLISH(t, "new", "1", 0, NULL);
  ACK(t, CLAIM(t, "w", "new", "1"));
  ACK(t, CLAIM(t, "w", "old", "2"));
  close_ok(t);
}

static void priority_floor(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now, NULL);
  harel_lease *high;
  PUBLISH(t, "p0", "0", 0, NULL);
  PUBLISH(t, "p2", "2", 2, NULL);
  PUBLISH(t, "p4", "4", 4, NULL);
  PUBLISH(t, "p4", "44", 4, NULL);
  high = CLAIM_WITH(t, "w", 3, NULL, 0, "p4", "4");
  CLAIM_EMPTY_WITH(t, "w", 3, NULL, 0);  /* p4 in flight, nothing else is >= 3 */
  ACK(t, CLAIM_WITH(t, "w", 2, NULL, 0, "p2", "2"));
  ACK(t, high);
  ACK(t, CLAIM_WITH(t, "w", 4, NULL, 0, "p4", "44"));
  CLAIM_EMPTY_WITH(t, "w", 1, NULL, 0);
  ACK(t, CLAIM_WITH(t, "w", 0, NULL, 0, "p0", "0"));
  close_ok(t);
}

/* Priority is a floor, not an order: above it, groups take turns by arrival and service. */
static void priority_does_not_order_claims(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now, NULL);
  PUBLISH(t, "low", "\"l1\"", 0, NULL);
  PUBLISH(t, "high", "\"h1\"", 4, NULL);
  PUBLISH(t, "high", "\"h2\"", 4, NULL);
  PUBLISH(t, "low", "\"l2\"", 0, NULL);
  ACK(t, CLAIM(t, "w", "low", "\"l1\""));
  now += 1.0;
  ACK(t, CLAIM(t, "w", "high", "\"h1\""));
  now += 1.0;
  ACK(t, CLAIM(t, "w", "low", "\"l2\""));
  ACK(t, CLAIM(t, "w", "high", "\"h2\""));
  close_ok(t);
}

static void the_first_publish_fixes_priority_and_routing_key(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now, NULL);
  const char *const cpu[] = {"cpu"};
  const char *const gpu[] = {"gpu"};
  PUBLISH(t, "g", "1", 1, "gpu");
  PUBLISH(t, "g", "2", 4, "cpu");  /* neither changes */
  CLAIM_EMPTY_WITH(t, "w", 2, NULL, 0);
  CLAIM_EMPTY_WITH(t, "w", 0, cpu, 1);
  ACK(t, CLAIM_WITH(t, "w", 1, gpu, 1, "g", "1"));
  ACK(t, CLAIM_WITH(t, "w", 1, gpu, 1, "g", "2"));
  close_ok(t);
}

static void routing_keys(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now, NULL);
  const char *const gpu[] = {"gpu"};
  const char *const tpu[] = {"tpu"};
  const char *const cpu_gpu[] = {"cpu", "gpu"};
  harel_lease *g;
  PUBLISH(t, "gpu-job", "\"g\"", 0, "gpu");
  PUBLISH(t, "cpu-job", "\"c\"", 0, "cpu");
  PUBLISH(t, "free-job", "\"f\"", 0, NULL);
  CLAIM_EMPTY_WITH(t, "w", 0, tpu, 1);
  g = CLAIM_WITH(t, "w", 0, gpu, 1, "gpu-job", "\"g\"");
  ACK(t, CLAIM_WITH(t, "w", 0, cpu_gpu, 2, "cpu-job", "\"c\""));
  CLAIM_EMPTY_WITH(t, "w", 0, cpu_gpu, 2);  /* a group without a key is never routed */
  ACK(t, g);
  CLAIM_EMPTY_WITH(t, "w", 0, gpu, 1);
  ACK(t, CLAIM_WITH(t, "w", 0, gpu, 0, "free-job", "\"f\""));  /* an array with n 0: any */
  PUBLISH(t, "free-job", "\"f2\"", 0, NULL);
  PUBLISH(t, "gpu-job", "\"g2\"", 3, "gpu");
  CLAIM_EMPTY_WITH(t, "w", 4, gpu, 1);                          /* key and floor together */
  ACK(t, CLAIM_WITH(t, "w", 0, NULL, 0, "free-job", "\"f2\""));  /* NULL, 0: any */
  ACK(t, CLAIM_WITH(t, "w", 0, NULL, 0, "gpu-job", "\"g2\""));
  close_ok(t);
}

static void many_routing_keys(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now, NULL);
  char names[40][24];
  const char *keys[40];
  int i;
  for (i = 0; i < 40; i++) {
    snprintf(names[i], sizeof names[i], "key \"%d\" \xc3\xa9", i);
    keys[i] = names[i];
  }
  PUBLISH(t, "other", "0", 0, "unlisted");
  PUBLISH(t, "g", "1", 0, names[39]);
  ACK(t, CLAIM_WITH(t, "w", 0, keys, 40, "g", "1"));
  CLAIM_EMPTY_WITH(t, "w", 0, keys, 40);
  close_ok(t);
}

static void a_caller_built_lease_is_accepted(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now, NULL);
  harel_lease *claimed;
  char group[16], worker[16];
  harel_lease mine;
  PUBLISH(t, "g", "\"m1\"", 0, NULL);
  PUBLISH(t, "g", "\"m2\"", 0, NULL);
  claimed = CLAIM(t, "w1", "g", "\"m1\"");
  if (claimed == NULL) return;
  /* what a binding does: copy the fields out, free the library's lease, build its own */
  strcpy(group, claimed->group_id);
  strcpy(worker, claimed->worker_id);
  mine.seq = claimed->seq;
  mine.group_id = group;
  mine.event = NULL;  /* ack and nack read only seq, group_id, worker_id */
  mine.worker_id = worker;
  mine.lock_expiry = 0.0;
  harel_lease_free(claimed);
  EXPECT_STATUS(harel_transport_nack(t, &mine, 0.0), HAREL_OK);
  claimed = CLAIM(t, "w1", "g", "\"m1\"");
  if (claimed != NULL) {
    EXPECT(claimed->seq == mine.seq);
    /* a lease naming the wrong worker, group or seq is lost and changes nothing */
    strcpy(worker, "w2");
    EXPECT_STATUS(harel_transport_ack(t, &mine), HAREL_ERR_LEASE_LOST);
    EXPECT_STATUS(harel_transport_nack(t, &mine, 0.0), HAREL_ERR_LEASE_LOST);
    strcpy(worker, "w1");
    strcpy(group, "h");
    EXPECT_STATUS(harel_transport_ack(t, &mine), HAREL_ERR_LEASE_LOST);
    strcpy(group, "g");
    mine.seq = claimed->seq + 1000;
    EXPECT_STATUS(harel_transport_ack(t, &mine), HAREL_ERR_LEASE_LOST);
    mine.seq = claimed->seq;
    EXPECT_STATUS(harel_transport_ack(t, &mine), HAREL_OK);
    EXPECT_STATUS(harel_transport_ack(t, claimed), HAREL_ERR_LEASE_LOST);
    harel_lease_free(claimed);
  }
  ACK(t, CLAIM(t, "w1", "g", "\"m2\""));
  close_ok(t);
}

static void any_json_text_is_an_event_byte_for_byte(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now, NULL);
  static char deep[2 * 600 + 1];
  const char *events[] = {
      "{\"kind\":\"k\",\"id\":\"1\",\"data\":{}}",
      "  [1, 2.50, -3e+2, true, false, null, \"x\"]\n\t",
      "\"just a string \\\"quoted\\\" \\u00e9\"",
      "42",
      "null",
      "{\"text\":\"h\xc3\xa9llo \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x8e\x89\"}",
      "{\"a\":{\"a\":{\"a\":[[],{}]}}}",
      deep,
  };
  size_t i;
  memset(deep, '[', 600);
  memset(deep + 600, ']', 600);
  for (i = 0; i < sizeof events / sizeof events[0]; i++) {
    char group[16];
    snprintf(group, sizeof group, "g%u", (unsigned)i);
    if (EXPECT_STATUS(harel_transport_publish(t, group, events[i], 0, NULL), HAREL_OK))
      ACK(t, CLAIM(t, "w", group, events[i]));
  }
  close_ok(t);
}

/* What is in the file stays there when the handle closes; a lease handed out stays the
 * caller's memory. */
static void messages_and_leases_outlive_the_handle(void) {
  double now = T0;
  char path[300];
  harel_transport *t = open_at(new_path(path, sizeof path), &now, NULL);
  harel_lease *l;
  PUBLISH(t, "g", "\"m1\"", 0, NULL);
  PUBLISH(t, "g", "\"m2\"", 0, NULL);
  l = CLAIM(t, "w", "g", "\"m1\"");
  close_ok(t);
  if (l != NULL) EXPECT_STR(l->event, "\"m1\"");
  t = open_at(path, &now, NULL);
  CLAIM_EMPTY(t, "w2");  /* still leased */
  if (l != NULL) EXPECT_STATUS(harel_transport_nack(t, l, 0.0), HAREL_OK);
  harel_lease_free(l);
  close_ok(t);
  t = open_at(path, &now, NULL);
  ACK(t, CLAIM(t, "w2", "g", "\"m1\""));
  ACK(t, CLAIM(t, "w2", "g", "\"m2\""));
  CLAIM_EMPTY(t, "w2");
  close_ok(t);
}

static void huge_visibility_and_delay_are_finite_and_fine(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now, NULL);
  harel_lease *l = NULL;
  PUBLISH(t, "g", "1", 0, NULL);
  EXPECT_STATUS(harel_transport_claim(t, "w", 1e300, 0, NULL, 0, &l), HAREL_OK);
  if (l != NULL) {
    EXPECT(l->lock_expiry == T0 + 1e300);
    EXPECT_STATUS(harel_transport_nack(t, l, 1e300), HAREL_OK);
    harel_lease_free(l);
  }
  now = 1e299;
  CLAIM_EMPTY(t, "w");
  close_ok(t);
}

/* Another process holds the write lock: HAREL_ERR_BUSY past the busy timeout (nothing
 * changed), and a call within it waits and succeeds. The other process is Python's sqlite3
 * on the same file, holding BEGIN IMMEDIATE for 2 s. */
static void busy_when_another_process_holds_the_write_lock(void) {
  double now = T0;
  char path[300], command[600], line[32] = "";
  harel_options *o = harel_options_new();
  harel_transport *waits, *impatient = NULL;
  FILE *holder;
  new_path(path, sizeof path);
  waits = open_at(path, &now, NULL);
  EXPECT_STATUS(harel_options_set_busy_timeout(o, 0.0), HAREL_OK);
  EXPECT_STATUS(harel_options_set_clock(o, test_clock, &now), HAREL_OK);
  EXPECT_STATUS(harel_transport_open(path, o, &impatient), HAREL_OK);
  harel_options_free(o);
  PUBLISH(waits, "g", "\"before\"", 0, NULL);
  snprintf(command, sizeof command,
           "python3 -c 'import sqlite3, sys, time\n"
           "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
           "c.execute(\"BEGIN IMMEDIATE\")\n"
           "print(\"locked\", flush=True)\n"
           "time.sleep(2)\n"
           "c.execute(\"ROLLBACK\")' '%s'", path);
  holder = popen(command, "r");
  if (!EXPECT(holder != NULL)) return;
  if (EXPECT(fgets(line, sizeof line, holder) != NULL && strcmp(line, "locked\n") == 0)) {
    harel_lease *l = (harel_lease *)&l;
    EXPECT_ERROR(harel_transport_publish(impatient, "g", "\"lost\"", 0, NULL), HAREL_ERR_BUSY,
                 NULL);
    EXPECT_ERROR(harel_transport_claim(impatient, "w", VIS, 0, NULL, 0, &l), HAREL_ERR_BUSY,
                 NULL);
    EXPECT(l == NULL);
    PUBLISH(waits, "g", "\"after\"", 0, NULL);  /* waits for the lock (busy timeout 5 s) */
  }
  EXPECT(pclose(holder) == 0);
  ACK(waits, CLAIM(impatient, "w", "g", "\"before\""));
  ACK(waits, CLAIM(impatient, "w", "g", "\"after\""));
  CLAIM_EMPTY(waits, "w");
  close_ok(waits);
  close_ok(impatient);
}

/* ---------------------------------------------------------------------------------------
 * Options, open, the schema.
 */

static void null_options_mean_the_defaults(void) {
  char path[300];
  harel_transport *t = NULL;
  harel_lease *l;
  double before = (double)time(NULL);
  EXPECT_STATUS(harel_transport_open(new_path(path, sizeof path), NULL, &t), HAREL_OK);
  if (!EXPECT(t != NULL)) return;
  PUBLISH(t, "g", "{}", 0, NULL);
  l = CLAIM(t, "w", "g", "{}");
  if (l != NULL)  /* the system clock */
    EXPECT(l->lock_expiry >= before + VIS - 1 && l->lock_expiry <= (double)time(NULL) + VIS + 1);
  ACK(t, l);
  close_ok(t);
}

static double fixed_clock_or_ctx(void *ctx) { return ctx ? *(const double *)ctx : 5000.0; }

static void set_clock_null_restores_the_system_clock(void) {
  double now = 7.0;
  harel_options *o = harel_options_new();
  harel_transport *t = NULL;
  harel_lease *l;
  /* a NULL ctx is passed to the clock as is */
  EXPECT_STATUS(harel_options_set_clock(o, fixed_clock_or_ctx, NULL), HAREL_OK);
  EXPECT_STATUS(harel_transport_open(":memory:", o, &t), HAREL_OK);
  PUBLISH(t, "g", "1", 0, NULL);
  l = CLAIM(t, "w", "g", "1");
  if (l != NULL) EXPECT(l->lock_expiry == 5000.0 + VIS);
  ACK(t, l);
  close_ok(t);

  EXPECT_STATUS(harel_options_set_clock(o, test_clock, &now), HAREL_OK);
  EXPECT_STATUS(harel_options_set_clock(o, NULL, &now), HAREL_OK);
  EXPECT_STATUS(harel_transport_open(":memory:", o, &t), HAREL_OK);
  harel_options_free(o);
  PUBLISH(t, "g", "1", 0, NULL);
  l = CLAIM(t, "w", "g", "1");
  if (l != NULL) EXPECT(fabs(l->lock_expiry - ((double)time(NULL) + VIS)) < 5.0);
  ACK(t, l);
  close_ok(t);
}

static void options_may_be_freed_after_open_and_reused(void) {
  double now = T0;
  char path1[300], path2[300];
  harel_options *o = harel_options_new();
  harel_transport *t1 = NULL, *t2 = NULL;
  EXPECT_STATUS(harel_options_set_clock(o, test_clock, &now), HAREL_OK);
  EXPECT_STATUS(harel_options_set_prefix(o, "reused"), HAREL_OK);
  EXPECT_STATUS(harel_transport_open(new_path(path1, sizeof path1), o, &t1), HAREL_OK);
  EXPECT_STATUS(harel_transport_open(new_path(path2, sizeof path2), o, &t2), HAREL_OK);
  harel_options_free(o);
  PUBLISH(t1, "g", "1", 0, NULL);
  PUBLISH(t2, "g", "2", 0, NULL);
  ACK(t1, CLAIM(t1, "w", "g", "1"));
  ACK(t2, CLAIM(t2, "w", "g", "2"));
  close_ok(t1);
  close_ok(t2);
}

static void prefixes_keep_queues_apart(void) {
  double now = T0;
  char path[300];
  harel_transport *a, *b;
  char prefix30[31];
  memset(prefix30, 'p', 30);
  prefix30[30] = '\0';
  new_path(path, sizeof path);
  a = open_at(path, &now, "_queue_A1");
  b = open_at(path, &now, prefix30);
  PUBLISH(a, "g", "\"a\"", 0, NULL);
  PUBLISH(b, "g", "\"b\"", 0, NULL);
  ACK(b, CLAIM(b, "w", "g", "\"b\""));
  CLAIM_EMPTY(b, "w");
  ACK(a, CLAIM(a, "w", "g", "\"a\""));
  close_ok(a);
  close_ok(b);
}

static void bad_prefixes(void) {
  const char *const bad[] = {"", "1abc", "a-b", "a b", "a.b", "\xc3\xa9t\xc3\xa9",
                             "ppppppppppppppppppppppppppppppp" /* 31 */};
  harel_options *o = harel_options_new();
  char *out;
  size_t i;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    EXPECT_ARG(harel_options_set_prefix(o, bad[i]), "prefix");
    out = (char *)o;
    EXPECT_ARG(harel_schema_sql(bad[i], &out), "prefix");
    EXPECT(out == NULL);
    out = (char *)o;
    EXPECT_ARG(harel_schema_upgrade_sql(bad[i], &out), "prefix");
    EXPECT(out == NULL);
  }
  harel_options_free(o);
}

/* A rejected setter leaves the option as it was. */
static void a_rejected_setter_changes_nothing(void) {
  double now = T0;
  char path[300];
  harel_options *o = harel_options_new();
  harel_transport *t = NULL;
  new_path(path, sizeof path);
  close_ok(open_at(path, &now, "kept"));  /* creates kept_transport_* */
  EXPECT_STATUS(harel_options_set_prefix(o, "kept"), HAREL_OK);
  EXPECT_ARG(harel_options_set_prefix(o, "not ok"), "prefix");
  EXPECT_STATUS(harel_options_set_sync_url(o, NULL), HAREL_OK);
  EXPECT_ARG(harel_options_set_sync_url(o, ""), "url");
  EXPECT_STATUS(harel_options_set_create_schema(o, false), HAREL_OK);
  /* still prefix "kept", still a local file (no sync_url): the tables are found */
  EXPECT_STATUS(harel_transport_open(path, o, &t), HAREL_OK);
  close_ok(t);
  harel_options_free(o);
}

static void setter_values(void) {
  harel_options *o = harel_options_new();
  const double non_finite[] = {NAN, INFINITY, -INFINITY};
  size_t i;
  EXPECT_STATUS(harel_options_set_busy_timeout(o, 0.0), HAREL_OK);
  EXPECT_STATUS(harel_options_set_busy_timeout(o, 2.5), HAREL_OK);
  EXPECT_ARG(harel_options_set_busy_timeout(o, -1.0), "busy_timeout");
  EXPECT_STATUS(harel_options_set_sync_interval(o, 0.5), HAREL_OK);
  EXPECT_ARG(harel_options_set_sync_interval(o, 0.0), "sync_interval");
  EXPECT_ARG(harel_options_set_sync_interval(o, -1.0), "sync_interval");
  for (i = 0; i < 3; i++) {
    EXPECT_ARG(harel_options_set_busy_timeout(o, non_finite[i]), "busy_timeout");
    EXPECT_ARG(harel_options_set_sync_interval(o, non_finite[i]), "sync_interval");
  }
  EXPECT_STATUS(harel_options_set_sync_url(o, "http://127.0.0.1:1"), HAREL_OK);
  EXPECT_STATUS(harel_options_set_sync_url(o, NULL), HAREL_OK);  /* unsets */
  EXPECT_STATUS(harel_options_set_auth_token(o, "secret"), HAREL_OK);
  EXPECT_STATUS(harel_options_set_auth_token(o, ""), HAREL_OK);
  EXPECT_STATUS(harel_options_set_auth_token(o, NULL), HAREL_OK);  /* unsets */
  EXPECT_STATUS(harel_options_set_create_schema(o, true), HAREL_OK);
  EXPECT_STATUS(harel_options_set_synchronous_full(o, true), HAREL_OK);
  harel_options_free(o);
}

static void create_schema_off(void) {
  double now = T0;
  char path[300];
  harel_options *o = harel_options_new();
  harel_transport *t = (harel_transport *)o;
  EXPECT_STATUS(harel_options_set_create_schema(o, false), HAREL_OK);
  /* an empty file: fails at open, not at the first publish */
  EXPECT_ERROR(harel_transport_open(new_path(path, sizeof path), o, &t), HAREL_ERR_DATABASE,
               NULL);
  EXPECT(t == NULL);
  EXPECT_ERROR(harel_transport_open(":memory:", o, &t), HAREL_ERR_DATABASE, NULL);
  EXPECT(t == NULL);
  /* the tables under another prefix don't count */
  close_ok(open_at(path, &now, "other"));
  EXPECT_ERROR(harel_transport_open(path, o, &t), HAREL_ERR_DATABASE, NULL);
  /* once they exist it opens and works */
  close_ok(open_at(path, &now, NULL));
  EXPECT_STATUS(harel_options_set_clock(o, test_clock, &now), HAREL_OK);
  if (EXPECT_STATUS(harel_transport_open(path, o, &t), HAREL_OK)) {
    PUBLISH(t, "g", "1", 0, NULL);
    ACK(t, CLAIM(t, "w", "g", "1"));
    close_ok(t);
  }
  harel_options_free(o);
}

static void not_a_database(void) {
  char path[300];
  harel_transport *t = (harel_transport *)path;
  FILE *f = fopen(new_path(path, sizeof path), "wb");
  int i;
  if (!EXPECT(f != NULL)) return;
  for (i = 0; i < 200; i++) fputs("this is not a database, just text. ", f);
  fclose(f);
  EXPECT_ERROR(harel_transport_open(path, NULL, &t), HAREL_ERR_DATABASE, NULL);
  EXPECT(t == NULL);
  snprintf(path, sizeof path, "%s/no/such/dir/q.db", temp_dir);
  EXPECT_ERROR(harel_transport_open(path, NULL, &t), HAREL_ERR_DATABASE, NULL);
  EXPECT(t == NULL);
}

static double seconds_since(const struct timespec *start) {
  struct timespec end;
  clock_gettime(CLOCK_MONOTONIC, &end);
  return (double)(end.tv_sec - start->tv_sec) + (double)(end.tv_nsec - start->tv_nsec) / 1e9;
}

static void an_unreachable_server_fails_open_quickly(void) {
  char path[300];
  harel_options *o = harel_options_new();
  harel_transport *t = (harel_transport *)o;
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  EXPECT_STATUS(harel_options_set_sync_url(o, "http://127.0.0.1:1"), HAREL_OK);
  EXPECT_ERROR(harel_transport_open(new_path(path, sizeof path), o, &t), HAREL_ERR_CONNECT,
               NULL);
  EXPECT(t == NULL);
  t = (harel_transport *)o;
  EXPECT_ERROR(harel_transport_open("http://127.0.0.1:1", NULL, &t), HAREL_ERR_CONNECT, NULL);
  EXPECT(t == NULL);
  EXPECT(seconds_since(&start) < 30.0);
  harel_options_free(o);
}

/* Every line of `sql` ends in ';' and `needle` is in it; `absent` (if any) is not. */
static void check_script(const char *sql, const char *needle, const char *absent) {
  const char *line = sql;
  int lines = 0;
  if (!EXPECT(sql != NULL && sql[0] != '\0')) return;
  while (*line != '\0') {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    if (!EXPECT(len > 0 && line[len - 1] == ';')) break;
    lines++;
    line += len + (end != NULL);
  }
  EXPECT(lines >= 1);
  if (!EXPECT(strstr(sql, needle) != NULL)) fprintf(stderr, "  %s not in:\n%s\n", needle, sql);
  if (absent != NULL) EXPECT(strstr(sql, absent) == NULL);
}

static void schema_sql(void) {
  char *sql = NULL;
  const char *line;
  if (EXPECT_STATUS(harel_schema_sql("myq", &sql), HAREL_OK)) {
    check_script(sql, "CREATE TABLE IF NOT EXISTS myq_transport_messages", "harel_");
    check_script(sql, "CREATE TABLE IF NOT EXISTS myq_transport_groups", "ALTER");
    check_script(sql, "routing_key", NULL);
    /* idempotent: every CREATE is IF NOT EXISTS */
    for (line = strstr(sql, "CREATE"); line != NULL; line = strstr(line + 1, "CREATE"))
      EXPECT(strncmp(line, "CREATE TABLE IF NOT EXISTS", 26) == 0 ||
             strncmp(line, "CREATE INDEX IF NOT EXISTS", 26) == 0);
    harel_string_free(sql);
  }
  if (EXPECT_STATUS(harel_schema_sql("harel", &sql), HAREL_OK)) {
    check_script(sql, "harel_transport_groups_by_last_claimed", NULL);
    harel_string_free(sql);
  }
  if (EXPECT_STATUS(harel_schema_upgrade_sql("myq", &sql), HAREL_OK)) {
    check_script(sql, "ALTER TABLE myq_transport_groups ADD COLUMN routing_key", "CREATE TABLE");
    harel_string_free(sql);
  }
}

/* ---------------------------------------------------------------------------------------
 * Static things: version, status names, last error.
 */

static void version(void) {
  const char *v = harel_version();
  unsigned major, minor, patch;
  char rest;
  if (!EXPECT(v != NULL)) return;
  EXPECT(sscanf(v, "%u.%u.%u%c", &major, &minor, &patch, &rest) == 3);
#ifdef EXPECTED_VERSION
  EXPECT_STR(v, EXPECTED_VERSION);
#endif
  EXPECT(harel_version() == v);  /* static */
}

static void status_names(void) {
  EXPECT_STR(harel_status_name(HAREL_OK), "HAREL_OK");
  EXPECT_STR(harel_status_name(HAREL_EMPTY), "HAREL_EMPTY");
  EXPECT_STR(harel_status_name(HAREL_ERR_ARGUMENT), "HAREL_ERR_ARGUMENT");
  EXPECT_STR(harel_status_name(HAREL_ERR_DATABASE), "HAREL_ERR_DATABASE");
  EXPECT_STR(harel_status_name(HAREL_ERR_BUSY), "HAREL_ERR_BUSY");
  EXPECT_STR(harel_status_name(HAREL_ERR_LEASE_LOST), "HAREL_ERR_LEASE_LOST");
  EXPECT_STR(harel_status_name(HAREL_ERR_CONNECT), "HAREL_ERR_CONNECT");
  EXPECT_STR(harel_status_name(HAREL_ERR_PANIC), "HAREL_ERR_PANIC");
  EXPECT_STR(harel_status_name(2), "HAREL_UNKNOWN");
  EXPECT_STR(harel_status_name(-6), "HAREL_UNKNOWN");
  EXPECT_STR(harel_status_name(-98), "HAREL_UNKNOWN");
  EXPECT_STR(harel_status_name(INT32_MIN), "HAREL_UNKNOWN");
  EXPECT_STR(harel_status_name(INT32_MAX), "HAREL_UNKNOWN");
  /* the values ABI.md fixes */
  EXPECT(HAREL_OK == 0 && HAREL_EMPTY == 1 && HAREL_ERR_ARGUMENT == -1 &&
         HAREL_ERR_DATABASE == -2 && HAREL_ERR_BUSY == -3 && HAREL_ERR_LEASE_LOST == -4 &&
         HAREL_ERR_CONNECT == -5 && HAREL_ERR_PANIC == -99);
}

static void last_error_is_null_after_ok_and_empty(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now, NULL);
  harel_lease *l = NULL;
  EXPECT(harel_last_error() == NULL);
  EXPECT_ARG(harel_transport_publish(t, "", "1", 0, NULL), "group_id");
  EXPECT_STATUS(harel_transport_publish(t, "g", "1", 0, NULL), HAREL_OK);  /* NULL after OK */
  EXPECT_ARG(harel_transport_publish(t, "", "1", 0, NULL), "group_id");
  EXPECT_STATUS(harel_transport_claim(t, "w", VIS, 4, NULL, 0, &l), HAREL_EMPTY);
  EXPECT_ARG(harel_options_set_prefix(NULL, "x"), "o");
  EXPECT_STATUS(harel_transport_close(NULL), HAREL_OK);
  EXPECT_ARG(harel_schema_sql(NULL, NULL), NULL);
  EXPECT_STATUS(harel_transport_claim(t, "w", VIS, 0, NULL, 0, &l), HAREL_OK);
  harel_lease_free(l);
  close_ok(t);
}

static void the_handle_keeps_its_last_error(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now, NULL);
  const char *message;
  EXPECT(harel_transport_last_error(NULL) == NULL);
  EXPECT(harel_transport_last_error(t) == NULL);
  EXPECT_ARG(harel_transport_publish(t, "g", "not json", 0, NULL), "event_json");
  message = harel_transport_last_error(t);
  if (EXPECT(message != NULL)) EXPECT(names_parameter(message, "event_json"));
  EXPECT_STATUS(harel_transport_publish(t, "g", "1", 0, NULL), HAREL_OK);
  EXPECT(harel_transport_last_error(t) == NULL);
  close_ok(t);
}

static void *error_on_another_thread(void *arg) {
  const char *message;
  (void)arg;
  if (harel_last_error() != NULL) return "a new thread starts with an error";
  if (harel_transport_publish(NULL, "g", "1", 0, NULL) != HAREL_ERR_ARGUMENT)
    return "publish(NULL) on the thread";
  message = harel_last_error();
  if (message == NULL || !names_parameter(message, "t")) return "the thread's own message";
  return NULL;
}

static void last_error_is_per_thread(void) {
  pthread_t thread;
  void *problem = "not run";
  char mine[256];
  const char *after;
  EXPECT_ARG(harel_options_set_busy_timeout(NULL, 1.0), "o");
  snprintf(mine, sizeof mine, "%s", or_null(harel_last_error()));
  if (!EXPECT(pthread_create(&thread, NULL, error_on_another_thread, NULL) == 0)) return;
  pthread_join(thread, &problem);
  if (problem != NULL) test_fail(__FILE__, __LINE__, "%s", (const char *)problem);
  after = harel_last_error();
  EXPECT(after != NULL && strcmp(after, mine) == 0);
}

/* ---------------------------------------------------------------------------------------
 * NULL, invalid UTF-8, empty strings, numbers out of range: rejected, queue unchanged.
 */

static void null_arguments_of_options(void) {
  harel_options *o = harel_options_new();
  double now = 0;
  if (!EXPECT(o != NULL)) return;
  EXPECT_ARG(harel_options_set_prefix(NULL, "p"), "o");
  EXPECT_ARG(harel_options_set_prefix(o, NULL), "prefix");
  EXPECT_ARG(harel_options_set_create_schema(NULL, true), "o");
  EXPECT_ARG(harel_options_set_sync_url(NULL, "http://127.0.0.1:1"), "o");
  EXPECT_ARG(harel_options_set_sync_url(NULL, NULL), "o");
  EXPECT_ARG(harel_options_set_auth_token(NULL, "t"), "o");
  EXPECT_ARG(harel_options_set_auth_token(NULL, NULL), "o");
  EXPECT_ARG(harel_options_set_sync_interval(NULL, 1.0), "o");
  EXPECT_ARG(harel_options_set_busy_timeout(NULL, 1.0), "o");
  EXPECT_ARG(harel_options_set_synchronous_full(NULL, true), "o");
  EXPECT_ARG(harel_options_set_clock(NULL, test_clock, &now), "o");
  EXPECT_ARG(harel_options_set_clock(NULL, NULL, NULL), "o");
  /* the NULLs that mean something */
  EXPECT_STATUS(harel_options_set_sync_url(o, NULL), HAREL_OK);
  EXPECT_STATUS(harel_options_set_auth_token(o, NULL), HAREL_OK);
  EXPECT_STATUS(harel_options_set_clock(o, NULL, NULL), HAREL_OK);
  EXPECT_STATUS(harel_options_set_clock(o, test_clock, NULL), HAREL_OK);
  harel_options_free(o);
}

static void null_arguments_of_open_close_free_schema(void) {
  char path[300];
  harel_options *o = harel_options_new();
  harel_transport *t = (harel_transport *)o;
  char *sql = (char *)o;
  EXPECT_ARG(harel_transport_open(NULL, o, &t), "database");
  EXPECT(t == NULL);
  EXPECT_ARG(harel_transport_open(NULL, NULL, &t), "database");
  EXPECT_ARG(harel_transport_open(new_path(path, sizeof path), o, NULL), "out");
  EXPECT_ARG(harel_transport_open(":memory:", NULL, NULL), "out");
  EXPECT(access(path, F_OK) != 0);  /* rejected before anything was created */
  EXPECT_STATUS(harel_transport_close(NULL), HAREL_OK);
  harel_lease_free(NULL);
  harel_options_free(NULL);
  harel_string_free(NULL);
  EXPECT_ARG(harel_schema_sql(NULL, &sql), "prefix");
  EXPECT(sql == NULL);
  EXPECT_ARG(harel_schema_sql("harel", NULL), "out");
  sql = (char *)o;
  EXPECT_ARG(harel_schema_upgrade_sql(NULL, &sql), "prefix");
  EXPECT(sql == NULL);
  EXPECT_ARG(harel_schema_upgrade_sql("harel", NULL), "out");
  harel_options_free(o);
}

static void null_arguments_of_the_queue(void) {
  const char *const with_null[] = {"k", NULL};
  REJECTS_ARG(harel_transport_publish(NULL, "g1", "1", 0, NULL), "t");
  REJECTS_ARG(harel_transport_publish(fx.t, NULL, "1", 0, NULL), "group_id");
  REJECTS_ARG(harel_transport_publish(fx.t, "g1", NULL, 0, NULL), "event_json");
  REJECTS_ARG(harel_transport_claim(NULL, "w", VIS, 0, NULL, 0, &claimed), "t");
  REJECTS_ARG(harel_transport_claim(fx.t, NULL, VIS, 0, NULL, 0, &claimed),
              "worker_id");
  REJECTS_ARG(harel_transport_claim(fx.t, "w", VIS, 0, NULL, 0, NULL), "out");
  REJECTS_ARG(harel_transport_claim(fx.t, "w", VIS, 0, NULL, 1, &claimed),
              "routing_keys");
  REJECTS_ARG(harel_transport_claim(fx.t, "w", VIS, 0, with_null, 2,
                                    &claimed), "routing_keys");
  REJECTS_ARG(harel_transport_ack(NULL, fx.held), "t");
  REJECTS_ARG(harel_transport_ack(fx.t, NULL), "lease");
  REJECTS_ARG(harel_transport_ack(fx.t, relabel(&built, fx.held, NULL, KEEP)), "group_id");
  REJECTS_ARG(harel_transport_ack(fx.t, relabel(&built, fx.held, KEEP, NULL)), "worker_id");
  REJECTS_ARG(harel_transport_nack(NULL, fx.held, 0.0), "t");
  REJECTS_ARG(harel_transport_nack(fx.t, NULL, 0.0), "lease");
  REJECTS_ARG(harel_transport_nack(fx.t, relabel(&built, fx.held, NULL, KEEP), 0.0), "group_id");
  REJECTS_ARG(harel_transport_nack(fx.t, relabel(&built, fx.held, KEEP, NULL), 0.0), "worker_id");
}

/* claim's *out is NULL after every error and after HAREL_EMPTY. */
static void claim_out_is_null_unless_ok(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now, NULL);
  harel_lease *out;
  out = (harel_lease *)&out;
  EXPECT_ARG(harel_transport_claim(NULL, "w", VIS, 0, NULL, 0, &out), "t");
  EXPECT(out == NULL);
  out = (harel_lease *)&out;
  EXPECT_ARG(harel_transport_claim(t, NULL, VIS, 0, NULL, 0, &out), "worker_id");
  EXPECT(out == NULL);
  out = (harel_lease *)&out;
  EXPECT_ARG(harel_transport_claim(t, "w", 0.0, 0, NULL, 0, &out), "visibility");
  EXPECT(out == NULL);
  out = (harel_lease *)&out;
  EXPECT_STATUS(harel_transport_claim(t, "w", VIS, 0, NULL, 0, &out), HAREL_EMPTY);
  EXPECT(out == NULL);
  close_ok(t);
}

static void invalid_utf8_in_every_string(void) {
  harel_options *o = harel_options_new();
  harel_transport *t = (harel_transport *)o;
  char *sql;
  size_t i;
  for (i = 0; i < N_BAD_UTF8; i++) {
    const char *bad = BAD_UTF8[i];
    const char *const keys[] = {"k", bad};
    EXPECT_ARG(harel_options_set_prefix(o, bad), "prefix");
    EXPECT_ARG(harel_options_set_sync_url(o, bad), "url");
    EXPECT_ARG(harel_options_set_auth_token(o, bad), "token");
    EXPECT_ARG(harel_transport_open(bad, NULL, &t), "database");
    EXPECT(t == NULL);
    sql = (char *)o;
    EXPECT_ARG(harel_schema_sql(bad, &sql), "prefix");
    EXPECT(sql == NULL);
    EXPECT_ARG(harel_schema_upgrade_sql(bad, &sql), "prefix");
    REJECTS_ARG(harel_transport_publish(fx.t, bad, "1", 0, NULL), "group_id");
    REJECTS_ARG(harel_transport_publish(fx.t, "g1", bad, 0, NULL), "event_json");
    REJECTS_ARG(harel_transport_publish(fx.t, "new", "1", 0, bad), "routing_key");
    REJECTS_ARG(harel_transport_claim(fx.t, bad, VIS, 0, NULL, 0, &claimed),
                "worker_id");
    REJECTS_ARG(harel_transport_claim(fx.t, "w", VIS, 0, keys, 2, &claimed),
                "routing_keys");
    REJECTS_ARG(harel_transport_ack(fx.t, relabel(&built, fx.held, bad, KEEP)), "group_id");
    REJECTS_ARG(harel_transport_ack(fx.t, relabel(&built, fx.held, KEEP, bad)), "worker_id");
    REJECTS_ARG(harel_transport_nack(fx.t, relabel(&built, fx.held, bad, KEEP), 0.0), "group_id");
    REJECTS_ARG(harel_transport_nack(fx.t, relabel(&built, fx.held, KEEP, bad), 0.0), "worker_id");
  }
  harel_options_free(o);
}

static void empty_strings(void) {
  const char *const keys[] = {"k", ""};
  harel_transport *t = NULL;
  EXPECT_ARG(harel_transport_open("", NULL, &t), "database");
  REJECTS_ARG(harel_transport_publish(fx.t, "", "1", 0, NULL), "group_id");
  REJECTS_ARG(harel_transport_publish(fx.t, "new", "1", 0, ""), "routing_key");
  REJECTS_ARG(harel_transport_claim(fx.t, "", VIS, 0, NULL, 0, &claimed),
              "worker_id");
  REJECTS_ARG(harel_transport_claim(fx.t, "w", VIS, 0, keys, 2, &claimed),
              "routing_keys");
  REJECTS_ARG(harel_transport_ack(fx.t, relabel(&built, fx.held, "", KEEP)), "group_id");
  REJECTS_ARG(harel_transport_ack(fx.t, relabel(&built, fx.held, KEEP, "")), "worker_id");
  REJECTS_ARG(harel_transport_nack(fx.t, relabel(&built, fx.held, "", KEEP), 0.0), "group_id");
  REJECTS_ARG(harel_transport_nack(fx.t, relabel(&built, fx.held, KEEP, ""), 0.0), "worker_id");
}

static void events_that_are_not_json(void) {
  const char *const bad[] = {"", " ", "{", "nope", "{'a':1}", "{} x", "[1,]", "{\"a\":}",
                             "NaN", "{\"a\":1,}", "\"unterminated", "01"};
  size_t i;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
    REJECTS_ARG(harel_transport_publish(fx.t, "g1", bad[i], 0, NULL), "event_json");
}

static void priorities_out_of_range(void) {
  const int32_t bad[] = {-1, 5, INT32_MIN, INT32_MAX};
  size_t i;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    REJECTS_ARG(harel_transport_publish(fx.t, "new", "1", bad[i], NULL), "priority");
    REJECTS_ARG(harel_transport_claim(fx.t, "w", VIS, bad[i], NULL, 0,
                                      &claimed), "min_priority");
  }
}

static void visibility_and_delay_out_of_range(void) {
  const double bad_visibility[] = {0.0, -0.0, -1.0, NAN, INFINITY, -INFINITY};
  const double bad_delay[] = {-1.0, -1e-9, NAN, INFINITY, -INFINITY};
  size_t i;
  for (i = 0; i < sizeof bad_visibility / sizeof bad_visibility[0]; i++)
    REJECTS_ARG(harel_transport_claim(fx.t, "w", bad_visibility[i], 0, NULL, 0,
                                      &claimed), "visibility");
  for (i = 0; i < sizeof bad_delay / sizeof bad_delay[0]; i++)
    REJECTS_ARG(harel_transport_nack(fx.t, fx.held, bad_delay[i]), "delay");
}

/* A lease for the parked message as its locked_by says: worker "__parked__". */
static const harel_lease *as_parked(harel_lease *built, const fixture *f) {
  built->seq = f->parked_seq;
  built->group_id = (char *)"g2";
  built->event = NULL;
  built->worker_id = (char *)"__parked__";
  built->lock_expiry = 0.0;
  return built;
}

/* The worker id "__parked__" marks parked messages; nobody may claim or act as it. */
static void the_reserved_worker_id(void) {
  REJECTS_ARG(harel_transport_claim(fx.t, "__parked__", VIS, 0, NULL, 0, &claimed), "worker_id");
  REJECTS_ARG(harel_transport_ack(fx.t, relabel(&built, fx.held, KEEP, "__parked__")),
              "worker_id");
  REJECTS_ARG(harel_transport_nack(fx.t, relabel(&built, fx.held, KEEP, "__parked__"), 0.0),
              "worker_id");
  /* not even for the message that really is parked */
  REJECTS_ARG(harel_transport_ack(fx.t, as_parked(&built, &fx)), "worker_id");
  REJECTS_ARG(harel_transport_nack(fx.t, as_parked(&built, &fx), 0.0), "worker_id");
}

/* Leases that are not the holder's are lost, and change nothing. */
static void lost_leases_change_nothing(void) {
  REJECTS(harel_transport_ack(fx.t, relabel(&built, fx.held, KEEP, "w2")),
          HAREL_ERR_LEASE_LOST, NULL);
  REJECTS(harel_transport_nack(fx.t, relabel(&built, fx.held, KEEP, "w2"), 5.0),
          HAREL_ERR_LEASE_LOST, NULL);
  REJECTS(harel_transport_ack(fx.t, relabel(&built, fx.held, "g2", KEEP)),
          HAREL_ERR_LEASE_LOST, NULL);
  REJECTS(harel_transport_ack(fx.t, (built = *fx.held, built.seq = fx.parked_seq, &built)),
          HAREL_ERR_LEASE_LOST, NULL);
  REJECTS(harel_transport_nack(fx.t, (built = *fx.held, built.seq = 999999, &built), 0.0),
          HAREL_ERR_LEASE_LOST, NULL);
}

/* ack_and_claim: the ack and the next claim in one call. */
static void ack_and_claim_in_one_transaction(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now, NULL);
  harel_lease *first, *next = NULL, *last = NULL, *none;
  PUBLISH(t, "a", "1", 0, NULL);
  PUBLISH(t, "a", "2", 0, NULL);
  PUBLISH(t, "b", "3", 0, NULL);
  first = CLAIM(t, "w", "a", "1");
  EXPECT_STATUS(harel_transport_ack_and_claim(t, first, "w", VIS, 0, NULL, 0, &next), HAREL_OK);
  EXPECT(next != NULL && strcmp(next->group_id, "b") == 0); /* a was just served */
  if (next != NULL) {
    EXPECT_STATUS(harel_transport_ack_and_claim(t, next, "w", VIS, 0, NULL, 0, &last), HAREL_OK);
    EXPECT(last != NULL && strcmp(last->event, "2") == 0);
  }
  if (last != NULL) {
    none = (harel_lease *)&none;
    EXPECT_STATUS(harel_transport_ack_and_claim(t, last, "w", VIS, 0, NULL, 0, &none), HAREL_EMPTY);
    EXPECT(none == NULL);
  }
  CLAIM_EMPTY(t, "w");
  harel_lease_free(first);
  harel_lease_free(next);
  harel_lease_free(last);
  close_ok(t);
}

/* A failed ack_and_claim acks nothing and claims nothing. */
static void ack_and_claim_rejected_changes_nothing(void) {
  REJECTS(harel_transport_ack_and_claim(fx.t, relabel(&built, fx.held, KEEP, "w2"), "w", VIS, 0,
                                        NULL, 0, &claimed),
          HAREL_ERR_LEASE_LOST, NULL);
  REJECTS_ARG(harel_transport_ack_and_claim(NULL, fx.held, "w", VIS, 0, NULL, 0, &claimed), "t");
  REJECTS_ARG(harel_transport_ack_and_claim(fx.t, NULL, "w", VIS, 0, NULL, 0, &claimed), "lease");
  REJECTS_ARG(harel_transport_ack_and_claim(fx.t, fx.held, NULL, VIS, 0, NULL, 0, &claimed),
              "worker_id");
  REJECTS_ARG(harel_transport_ack_and_claim(fx.t, fx.held, "w", 0.0, 0, NULL, 0, &claimed),
              "visibility");
  REJECTS_ARG(harel_transport_ack_and_claim(fx.t, fx.held, "w", VIS, 5, NULL, 0, &claimed),
              "min_priority");
  REJECTS_ARG(harel_transport_ack_and_claim(fx.t, fx.held, "w", VIS, 0, NULL, 1, &claimed),
              "routing_keys");
  REJECTS_ARG(harel_transport_ack_and_claim(fx.t, fx.held, "w", VIS, 0, NULL, 0, NULL), "out");
}

/* ---------------------------------------------------------------------------------------
 * publish_many: a batch in one transaction, all or nothing.
 */

static void publish_many_in_batch_order_across_groups(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now, NULL);
  const harel_message batch[] = {
      {"a", "\"a1\"", 0, NULL}, {"b", "\"b1\"", 0, NULL}, {"a", "\"a2\"", 0, NULL},
      {"c", "\"c1\"", 0, NULL}, {"b", "\"b2\"", 0, NULL}, {"a", "\"a3\"", 0, NULL},
  };
  /* new groups by arrival, then round robin; within each group the batch's order */
  const char *const order[][2] = {{"a", "\"a1\""}, {"b", "\"b1\""}, {"c", "\"c1\""},
                                  {"a", "\"a2\""}, {"b", "\"b2\""}, {"a", "\"a3\""}};
  size_t i;
  EXPECT_STATUS(harel_transport_publish_many(t, batch, 6), HAREL_OK);
  for (i = 0; i < 6; i++) {
    ACK(t, CLAIM(t, "w", order[i][0], order[i][1]));
    now += 1.0;
  }
  CLAIM_EMPTY(t, "w");
  close_ok(t);
}

static void publish_many_first_message_fixes_the_group(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now, NULL);
  const char *const cpu[] = {"cpu"};
  const char *const gpu[] = {"gpu"};
  const harel_message batch[] = {{"g", "1", 1, "gpu"}, {"g", "2", 4, "cpu"}, {"h", "3", 3, NULL}};
  EXPECT_STATUS(harel_transport_publish_many(t, batch, 3), HAREL_OK);
  CLAIM_EMPTY_WITH(t, "w", 0, cpu, 1);                    /* g's key stayed gpu */
  ACK(t, CLAIM_WITH(t, "w", 2, NULL, 0, "h", "3"));        /* g's priority stayed 1 */
  CLAIM_EMPTY_WITH(t, "w", 2, NULL, 0);
  ACK(t, CLAIM_WITH(t, "w", 1, gpu, 1, "g", "1"));
  ACK(t, CLAIM_WITH(t, "w", 1, gpu, 1, "g", "2"));
  close_ok(t);
}

static void publish_many_empty_batch(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now, NULL);
  const harel_message unused = {"g", "1", 0, NULL};
  EXPECT_STATUS(harel_transport_publish_many(t, NULL, 0), HAREL_OK);
  EXPECT_STATUS(harel_transport_publish_many(t, &unused, 0), HAREL_OK);  /* n 0: not read */
  CLAIM_EMPTY(t, "w");
  close_ok(t);
}

/* batch[i] is `good` but for one field; the batch of 3 is rejected naming `parameter`
 * ("messages[1].group_id"), and the fixture shows nothing of it was stored. */
#define REJECTS_BATCH_WITH(i, field, value, parameter)                                     \
  do {                                                                                     \
    batch[0] = batch[1] = batch[2] = good;                                                 \
    batch[i].field = (value);                                                              \
    REJECTS_ARG(harel_transport_publish_many(fx.t, batch, 3), parameter);                   \
  } while (0)

/* One bad message rejects the whole batch: nothing of it is stored, and the error names
 * the bad one by its index. */
static void publish_many_rejects_the_whole_batch(void) {
  const harel_message good = {"g1", "\"x\"", 2, "k"};
  harel_message batch[3];
  size_t i;
  batch[0] = batch[1] = batch[2] = good;
  batch[1].group_id = "new";
  REJECTS_ARG(harel_transport_publish_many(NULL, batch, 3), "t");
  REJECTS_ARG(harel_transport_publish_many(fx.t, NULL, 3), "messages");
  REJECTS_BATCH_WITH(1, group_id, NULL, "messages[1].group_id");
  REJECTS_BATCH_WITH(1, group_id, "", "messages[1].group_id");
  REJECTS_BATCH_WITH(1, event_json, NULL, "messages[1].event_json");
  REJECTS_BATCH_WITH(1, event_json, "{\"a\":", "messages[1].event_json");
  REJECTS_BATCH_WITH(2, event_json, "nope", "messages[2].event_json");
  REJECTS_BATCH_WITH(1, priority, -1, "messages[1].priority");
  REJECTS_BATCH_WITH(1, priority, 5, "messages[1].priority");
  REJECTS_BATCH_WITH(1, routing_key, "", "messages[1].routing_key");
  REJECTS_BATCH_WITH(0, routing_key, "", "messages[0].routing_key");
  for (i = 0; i < N_BAD_UTF8; i++) {
    REJECTS_BATCH_WITH(1, group_id, BAD_UTF8[i], "messages[1].group_id");
    REJECTS_BATCH_WITH(1, event_json, BAD_UTF8[i], "messages[1].event_json");
    REJECTS_BATCH_WITH(1, routing_key, BAD_UTF8[i], "messages[1].routing_key");
  }
}

/* A clock that returns no time makes claim, ack and nack fail; nothing changes. */
static harel_status at(fixture *f, double when, harel_status (*call)(fixture *)) {
  harel_status s;
  double was = f->now;
  f->now = when;
  s = call(f);
  f->now = was;
  return s;
}
static harel_status do_claim(fixture *f) {
  harel_lease *l = NULL;
  harel_status s = harel_transport_claim(f->t, "w", VIS, 0, NULL, 0, &l);
  harel_lease_free(l);
  return s;
}
static harel_status do_ack(fixture *f) { return harel_transport_ack(f->t, f->held); }
static harel_status do_nack(fixture *f) { return harel_transport_nack(f->t, f->held, 1.0); }

static void a_clock_that_is_not_a_time(void) {
  const double bad[] = {NAN, INFINITY, -INFINITY, -1.0};
  size_t i;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    REJECTS_ARG(at(&fx, bad[i], do_claim), "clock");
    REJECTS_ARG(at(&fx, bad[i], do_ack), "clock");
    REJECTS_ARG(at(&fx, bad[i], do_nack), "clock");
  }
}

/* ---------------------------------------------------------------------------------------
 * Threads: one handle shared, and one handle per thread on one file; publishers sharing
 * one handle.
 */

#define GROUPS 8
#define PER_GROUP 12

typedef struct {
  const char *path;        /* per-thread handles on this file, or */
  harel_transport *shared; /* one handle for all */
  double *now;
  pthread_mutex_t lock;
  int next_step[GROUPS];   /* what each group must deliver next (FIFO) */
  int done;
  int errors;
} workload;

static void *work(void *arg) {
  workload *w = arg;
  harel_transport *t = w->shared ? w->shared : open_at(w->path, w->now, NULL);
  char worker[32];
  snprintf(worker, sizeof worker, "w-%p", (void *)worker);
  while (t != NULL) {
    harel_lease *l = NULL;
    int group, step, finished;
    harel_status s = harel_transport_claim(t, worker, 600.0, 0, NULL, 0, &l);
    pthread_mutex_lock(&w->lock);
    finished = w->done == GROUPS * PER_GROUP;
    if (s == HAREL_OK && sscanf(l->event, "{\"group\":%d,\"step\":%d}", &group, &step) == 2 &&
        group >= 0 && group < GROUPS && w->next_step[group] == step) {
      w->next_step[group]++;
    } else if (s != HAREL_EMPTY) {
      w->errors++;
      fprintf(stderr, "  thread claim: %s %s\n", harel_status_name(s),
              s == HAREL_OK ? l->event : or_null(harel_last_error()));
    }
    pthread_mutex_unlock(&w->lock);
    if (s == HAREL_OK) {
      s = harel_transport_ack(t, l);
      pthread_mutex_lock(&w->lock);
      if (s == HAREL_OK) w->done++; else w->errors++;
      pthread_mutex_unlock(&w->lock);
      harel_lease_free(l);
    } else if (s == HAREL_EMPTY) {
      if (finished) break;
      sched_yield();
    } else {
      break;
    }
  }
  if (!w->shared && t != NULL) harel_transport_close(t);
  return NULL;
}

/* Drains the GROUPS x PER_GROUP messages with 4 threads (on `shared`, or each on a handle
 * of its own on `path`): every message once, each group in step order. */
static void drain_in_threads(const char *path, harel_transport *shared, double *now) {
  workload w;
  pthread_t threads[4];
  int g, i;
  memset(&w, 0, sizeof w);
  pthread_mutex_init(&w.lock, NULL);
  w.path = path;
  w.now = now;
  w.shared = shared;
  for (i = 0; i < 4; i++) EXPECT(pthread_create(&threads[i], NULL, work, &w) == 0);
  for (i = 0; i < 4; i++) pthread_join(threads[i], NULL);
  EXPECT(w.errors == 0);
  EXPECT(w.done == GROUPS * PER_GROUP);
  for (g = 0; g < GROUPS; g++) EXPECT(w.next_step[g] == PER_GROUP);
  pthread_mutex_destroy(&w.lock);
}

static void run_workload(const char *path, int shared) {
  double now = T0;
  harel_transport *t = open_at(path, &now, NULL);
  char event[64], group[16];
  int g, s;
  for (s = 0; s < PER_GROUP; s++)
    for (g = 0; g < GROUPS; g++) {
      snprintf(event, sizeof event, "{\"group\":%d,\"step\":%d}", g, s);
      snprintf(group, sizeof group, "g%d", g);
      PUBLISH(t, group, event, g % 5, NULL);
    }
  drain_in_threads(path, shared ? t : NULL, &now);
  CLAIM_EMPTY(t, "w");
  close_ok(t);
}

static void threads_share_one_handle(void) {
  char path[300];
  run_workload(new_path(path, sizeof path), 1);
}

static void threads_each_with_a_handle_on_one_file(void) {
  char path[300];
  run_workload(new_path(path, sizeof path), 0);
}

/* Publishers sharing one handle: publishes that meet share a commit (group commit). Each
 * thread publishes its own two groups in order, one message per call and in batches of
 * two; thread 0 also sends a bad batch, which must fail alone, with its own message. */
typedef struct {
  harel_transport *t;
  int first_group; /* this thread's groups: first_group and first_group + 4 */
  const char *problem;
} publisher;

static void *publish_steps(void *arg) {
  publisher *p = arg;
  char events[2][64], groups[2][16];
  harel_message batch[2];
  const char *message;
  int s, k;
  for (s = 0; s < PER_GROUP && p->problem == NULL; s++) {
    for (k = 0; k < 2; k++) {
      snprintf(groups[k], sizeof groups[k], "g%d", p->first_group + 4 * k);
      snprintf(events[k], sizeof events[k], "{\"group\":%d,\"step\":%d}", p->first_group + 4 * k, s);
      batch[k].group_id = groups[k];
      batch[k].event_json = events[k];
      batch[k].priority = 0;
      batch[k].routing_key = NULL;
    }
    if (s % 2 == 0) {
      for (k = 0; k < 2; k++)
        if (harel_transport_publish(p->t, groups[k], events[k], 0, NULL) != HAREL_OK) p->problem = "publish";
    } else if (harel_transport_publish_many(p->t, batch, 2) != HAREL_OK) {
      p->problem = "publish_many";
    }
    if (p->first_group == 0 && s == 5) {
      batch[1].event_json = "{not json";
      message = harel_transport_publish_many(p->t, batch, 2) == HAREL_ERR_ARGUMENT ? harel_last_error() : NULL;
      if (message == NULL || !names_parameter(message, "messages[1].event_json"))
        p->problem = "the bad batch did not fail alone with its own message";
    }
  }
  return NULL;
}

static void threads_publish_through_one_handle(void) {
  char path[300];
  double now = T0;
  harel_transport *t = open_at(new_path(path, sizeof path), &now, NULL);
  publisher p[4];
  pthread_t threads[4];
  int i;
  for (i = 0; i < 4; i++) {
    p[i].t = t;
    p[i].first_group = i;
    p[i].problem = NULL;
    EXPECT(pthread_create(&threads[i], NULL, publish_steps, &p[i]) == 0);
  }
  for (i = 0; i < 4; i++) {
    pthread_join(threads[i], NULL);
    if (p[i].problem != NULL) fprintf(stderr, "  publisher %d: %s\n", i, p[i].problem);
    EXPECT(p[i].problem == NULL);
  }
  drain_in_threads(path, t, &now);
  CLAIM_EMPTY(t, "w");
  close_ok(t);
}

/* ---------------------------------------------------------------------------------------
 */

static void remove_temp_dir(void) {
  DIR *dir = opendir(temp_dir);
  struct dirent *entry;
  char path[600];
  if (dir == NULL) return;
  while ((entry = readdir(dir)) != NULL) {
    if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
    snprintf(path, sizeof path, "%s/%s", temp_dir, entry->d_name);
    if (unlink(path) != 0) fprintf(stderr, "could not remove %s\n", path);
  }
  closedir(dir);
  rmdir(temp_dir);
}

int main(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(temp_dir, sizeof temp_dir, "%s/harel-c-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (mkdtemp(temp_dir) == NULL) {
    perror("mkdtemp");
    return 2;
  }

  RUN(version);
  RUN(status_names);
  RUN(schema_sql);
  RUN(fifo_within_a_group);
  RUN(one_message_in_flight_per_group);
  RUN(lease_fields);
  RUN(ack_and_claim_in_one_transaction);
  RUN(ack_and_claim_rejected_changes_nothing);
  RUN(publish_many_in_batch_order_across_groups);
  RUN(publish_many_first_message_fixes_the_group);
  RUN(publish_many_empty_batch);
  RUN(publish_many_rejects_the_whole_batch);
  RUN(ack_removes_the_message_and_ends_the_lease);
  RUN(nack_now_makes_the_message_claimable_at_once);
  RUN(nack_with_delay_parks_and_blocks_the_group);
  RUN(a_lapsed_lease_is_claimable_again_and_the_old_one_is_lost);
  RUN(a_lapsed_lease_nobody_took_can_still_be_acked);
  RUN(round_robin_across_groups);
  RUN(priority_floor);
  RUN(priority_does_not_order_claims);
  RUN(the_first_publish_fixes_priority_and_routing_key);
  RUN(routing_keys);
  RUN(many_routing_keys);
  RUN(a_caller_built_lease_is_accepted);
  RUN(any_json_text_is_an_event_byte_for_byte);
  RUN(messages_and_leases_outlive_the_handle);
  RUN(huge_visibility_and_delay_are_finite_and_fine);
  RUN(busy_when_another_process_holds_the_write_lock);
  RUN(null_options_mean_the_defaults);
  RUN(set_clock_null_restores_the_system_clock);
  RUN(options_may_be_freed_after_open_and_reused);
  RUN(prefixes_keep_queues_apart);
  RUN(bad_prefixes);
  RUN(a_rejected_setter_changes_nothing);
  RUN(setter_values);
  RUN(create_schema_off);
  RUN(not_a_database);
  RUN(an_unreachable_server_fails_open_quickly);
  RUN(last_error_is_null_after_ok_and_empty);
  RUN(the_handle_keeps_its_last_error);
  RUN(last_error_is_per_thread);
  RUN(null_arguments_of_options);
  RUN(null_arguments_of_open_close_free_schema);
  RUN(null_arguments_of_the_queue);
  RUN(claim_out_is_null_unless_ok);
  RUN(invalid_utf8_in_every_string);
  RUN(empty_strings);
  RUN(events_that_are_not_json);
  RUN(priorities_out_of_range);
  RUN(visibility_and_delay_out_of_range);
  RUN(the_reserved_worker_id);
  RUN(lost_leases_change_nothing);
  RUN(a_clock_that_is_not_a_time);
  RUN(threads_share_one_handle);
  RUN(threads_each_with_a_handle_on_one_file);
  RUN(threads_publish_through_one_handle);

  remove_temp_dir();
  return SUMMARY();
}
