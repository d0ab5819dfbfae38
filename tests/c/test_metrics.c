/*
 * test_metrics.c: harel_transport_metrics, the counters and latencies a handle keeps.
 */
#include "harel_test.h"

/* Where harel_transport_metrics' *out starts, so a test sees the call set it to NULL. */
static harel_metrics sentinel_metrics;
#define NOT_SET_METRICS (&sentinel_metrics)

/* The handle's metrics (the caller frees them); NULL if the call failed. */
#define METRICS(t) metrics_at((t), __FILE__, __LINE__)
static harel_metrics *metrics_at(harel_transport *t, const char *file, int line) {
  harel_metrics *m = NULL;
  harel_error *e = NULL;
  if (!expect_call(harel_transport_metrics(t, &m, &e), &e, HAREL_OK, NULL,
                   "harel_transport_metrics", file, line))
    return NULL;
  if (m == NULL) test_fail(file, line, "metrics returned HAREL_OK with no metrics");
  return m;
}

/* Cumulative buckets, none above the count, and the count `calls`. */
#define HISTOGRAM(h, calls) histogram_at(&(h), (calls), #h, __FILE__, __LINE__)
static void histogram_at(const harel_histogram *h, uint64_t calls, const char *name,
                         const char *file, int line) {
  size_t i;
  if (h->count != calls)
    test_fail(file, line, "%s.count is %llu, want %llu", name, (unsigned long long)h->count,
              (unsigned long long)calls);
  for (i = 0; i < HAREL_LATENCY_BUCKETS; i++)
    if ((i > 0 && h->buckets[i] < h->buckets[i - 1]) || h->buckets[i] > h->count)
      test_fail(file, line, "%s.buckets[%u] is %llu: not cumulative", name, (unsigned)i,
                (unsigned long long)h->buckets[i]);
  if ((calls == 0) != (h->sum == 0.0)) test_fail(file, line, "%s.sum is %g", name, h->sum);
}

/* What a handle counted, field by field, after known calls; the bounds as
 * HAREL_LATENCY_BOUNDS says; a second handle counts apart. */
static void metrics_count_what_the_handle_did(void) {
  static const double bounds[HAREL_LATENCY_BUCKETS] = HAREL_LATENCY_BOUNDS;
  double now = T0;
  harel_transport *t = open_at(":memory:", &now), *other;
  harel_metrics *m;
  harel_lease *a, *b, *c, *none = NOT_SET_LEASE;
  if (t == NULL) return;
  m = METRICS(t);
  if (m != NULL) {
    EXPECT(m->published == 0 && m->claimed == 0 && m->acked == 0 && m->lost_leases == 0);
    EXPECT(memcmp(m->bounds, bounds, sizeof bounds) == 0);
    EXPECT(m->bounds[0] == 0.0001 && m->bounds[HAREL_LATENCY_BUCKETS - 1] == 10.0);
    HISTOGRAM(m->publish, 0);
  }
  harel_metrics_free(m);
  PUBLISH(t, "a", "1");
  PUBLISH(t, "b", "2");
  PUBLISH(t, "c", "3");
  a = CLAIM(t, "w", "1");
  b = CLAIM(t, "w", "2");
  c = CLAIM(t, "w", "3");
  EXPECT_STATUS(harel_transport_claim(t, "w", VIS, 0, NULL, 0, &none, NULL), HAREL_EMPTY);
  if (a != NULL && b != NULL && c != NULL) {
    EXPECT_STATUS(harel_transport_ack(t, a, NULL), HAREL_OK);
    EXPECT_STATUS(harel_transport_ack(t, a, NULL), HAREL_ERR_LEASE_LOST);
    EXPECT_STATUS(harel_transport_nack(t, b, 0.0, NULL), HAREL_OK);
    EXPECT_STATUS(harel_transport_nack(t, c, 5.0, NULL), HAREL_OK);
    EXPECT_STATUS(harel_transport_extend(t, c, VIS, NULL), HAREL_ERR_LEASE_LOST);
    harel_lease_free(b);
    b = CLAIM(t, "w", "2");
    if (b != NULL) EXPECT_STATUS(harel_transport_dead_letter(t, b, "poison", NULL), HAREL_OK);
  }
  m = METRICS(t);
  if (m != NULL) {
    EXPECT(m->published == 3 && m->claimed == 4 && m->acked == 1);
    EXPECT(m->nacked == 1 && m->parked == 1 && m->dead_lettered == 1);
    EXPECT(m->dead_lettered_by_claim == 0 && m->lost_leases == 2 && m->busy_retries == 0);
    HISTOGRAM(m->publish, 3);
    HISTOGRAM(m->claim, 5);
    HISTOGRAM(m->claim_wait, 0);
    HISTOGRAM(m->ack, 2);
    HISTOGRAM(m->ack_and_claim, 0);
    HISTOGRAM(m->nack, 2);
    HISTOGRAM(m->extend, 1);
    HISTOGRAM(m->dead_letter, 1);
  }
  harel_metrics_free(m);
  other = open_at(":memory:", &now);
  m = METRICS(other);
  if (m != NULL) EXPECT(m->published == 0 && m->claim.count == 0);
  harel_metrics_free(m);
  harel_transport_close(other);
  harel_lease_free(a);
  harel_lease_free(b);
  harel_lease_free(c);
  harel_transport_close(t);
}

/* metrics refuses a NULL t or out, and a `*err` already set: *out NULL. */
static void bad_arguments_of_metrics(void) {
  double now = T0;
  char was_text[512];
  harel_transport *t = open_at(":memory:", &now);
  harel_metrics *m;
  harel_error *stale = NULL;
  const harel_error *was;
  if (t == NULL) return;
  EXPECT_FAILS(HAREL_ERR_ARGUMENT, "t",
               (m = NOT_SET_METRICS, harel_transport_metrics(NULL, &m, ERR)));
  EXPECT(m == NULL);
  EXPECT_BAD("out", harel_transport_metrics(t, NULL, ERR));
  EXPECT_BAD("out", harel_transport_metrics(NULL, NULL, ERR));
  /* a *err already set: refused, untouched, *out NULL */
  EXPECT(harel_transport_metrics(NULL, &m, &stale) == HAREL_ERR_ARGUMENT);
  if (!EXPECT(stale != NULL)) return;
  was = stale;
  snprintf(was_text, sizeof was_text, "%s", harel_error_message(stale));
  m = NOT_SET_METRICS;
  REFUSED(harel_transport_metrics(t, &m, &stale));
  EXPECT(m == NULL);
  harel_error_free(stale);
  harel_transport_close(t);
}

const test_case metrics_tests[] = {
    TEST(metrics_count_what_the_handle_did),
    TEST(bad_arguments_of_metrics),
    {NULL, NULL}};
