/*
 * test_retry.c: retry policies through C (docs/queue.md, "Retries"): harel_options_set_retry,
 * harel_delivery's retry_base, retry_factor, retry_cap and retry_jitter (a message's own
 * policy), and harel_message_page's retry_delays. What a policy does is the Rust contract's
 * (tests/common/contract_retry.rs); here, the mapping, on the test clock: each status of the
 * option (HAREL_OK for a policy, its defaults (factor 0: 2, cap 0: an hour or the base) and
 * base 0, which removes it; HAREL_ERR_ARGUMENT for a NULL o, each bad value with its message
 * naming the field, an unknown jitter; a set `*err` refused), a refused value leaving the
 * policy set; a nack with delay 0 parking the message for the backoff its claim drew (stats
 * count it as parked; the backoff grows to its cap, a worker's own delay wins; without a
 * policy it is free at once); a lease that lapses waiting the backoff after its end (stats
 * count its group in `retrying`, not `ready`, until the backoff's end); each jitter's number
 * reaching its spread; peek's retry_delays, -1 for a message never claimed or without a
 * policy, the drawn value after a claim, page by page; a message's own policy winning over
 * the queue's (publish_delivery, publish_many_delivery, harel_tx_publish_delivery), its 0s
 * read as the defaults; a caller's older, shorter harel_delivery without the fields (in a
 * block exactly that long) read as no policy; and each bad delivery refused by every form,
 * the batch's naming its message.
 */
#include "harel_test.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#define NONE HAREL_JITTER_NONE
#define FULL HAREL_JITTER_FULL
#define EQUAL HAREL_JITTER_EQUAL

/* ---- helpers ---------------------------------------------------------------------------- */

/* Opens ":memory:" with the clock reading *now and the queue's policy (base 0: none). */
static harel_transport *open_retrying(double *now, double base, double factor, double cap,
                                      int32_t jitter) {
  harel_options *o = harel_options_new();
  harel_transport *t = NULL;
  harel_error *e = NULL;
  if (!EXPECT(o != NULL)) return NULL;
  EXPECT_CALL(harel_options_set_clock(o, test_clock, now, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_synchronous_full(o, false, &e), &e, HAREL_OK);
  if (base != 0.0) EXPECT_CALL(harel_options_set_retry(o, base, factor, cap, jitter, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_open(":memory:", o, &t, &e), &e, HAREL_OK);
  harel_options_free(o);
  return t;
}

/* A delivery with a policy of its own (base 0: none), the rest zeroed. */
static harel_delivery retrying(double base, double factor, double cap, int32_t jitter) {
  harel_delivery d = {0};
  d.size = sizeof d;
  d.retry_base = base;
  d.retry_factor = factor;
  d.retry_cap = cap;
  d.retry_jitter = jitter;
  return d;
}

/* The backoff peek shows for message `i` of `group`'s first page (-1: none); -2 (and a
 * failure) when the page has no such message. */
#define SHOWN(t, group, i) shown_at((t), (group), (i), __FILE__, __LINE__)
static double shown_at(harel_transport *t, const char *group, size_t i, const char *file,
                       int line) {
  harel_message_page *page = NOT_SET_MESSAGES;
  harel_error *e = NULL;
  double shown = -2.0;
  if (!expect_call(harel_transport_peek(t, group, NULL, 100, &page, &e), &e, HAREL_OK, NULL,
                   "harel_transport_peek", file, line))
    return shown;
  if (page == NULL || page == NOT_SET_MESSAGES) {
    test_fail(file, line, "peek returned HAREL_OK with no page");
    return shown;
  }
  if (i >= page->n_messages || page->retry_delays == NULL)
    test_fail(file, line, "%s's page: %zu messages, retry_delays %s; want message %zu", group,
              page->n_messages, page->retry_delays == NULL ? "NULL" : "set", i);
  else
    shown = page->retry_delays[i];
  harel_message_page_free(page);
  return shown;
}

/* The head of `group` shows the backoff `want` (-1: none). */
#define SHOWS(t, group, want) shows_at((t), (group), (want), __FILE__, __LINE__)
static void shows_at(harel_transport *t, const char *group, double want, const char *file,
                     int line) {
  double got = shown_at(t, group, 0, file, line);
  if (got != want && got != -2.0)
    test_fail(file, line, "%s's head shows a backoff of %g, want %g", group, got, want);
}

/* Nothing is claimable until `backoff` seconds from *now: a claim just before finds nothing,
 * one just after the message `event`, its `attempts`-th claim. The lease, or NULL. */
#define WAITS(t, now, backoff, event, attempts) \
  waits_at((t), (now), (backoff), (event), (attempts), __FILE__, __LINE__)
static harel_lease *waits_at(harel_transport *t, double *now, double backoff, const char *event,
                             int64_t attempts, const char *file, int line) {
  harel_lease *l = NOT_SET_LEASE;
  *now += backoff - 0.01;
  if (harel_transport_claim(t, "w", VIS, 0, NULL, 0, &l, NULL) != HAREL_EMPTY || l != NULL) {
    test_fail(file, line, "claimable before its backoff of %g s passed", backoff);
    if (l != NOT_SET_LEASE) harel_lease_free(l);
  }
  *now += 0.02;
  l = claim_at(t, "w", event, file, line);
  if (l != NULL && l->attempts != attempts)
    test_fail(file, line, "claim number %lld, want %lld", (long long)l->attempts,
              (long long)attempts);
  return l;
}

/* The queue's counts: `ready` and `parked` groups. */
#define READY_PARKED(t, ready, parked) ready_parked_at((t), (ready), (parked), __FILE__, __LINE__)
static void ready_parked_at(harel_transport *t, uint64_t ready, uint64_t parked,
                            const char *file, int line) {
  harel_stats *s = stats_at(t, file, line);
  if (s != NULL && (s->ready != ready || s->parked != parked))
    test_fail(file, line, "ready %llu, parked %llu; want %llu, %llu",
              (unsigned long long)s->ready, (unsigned long long)s->parked,
              (unsigned long long)ready, (unsigned long long)parked);
  harel_stats_free(s);
}

/* The queue's group counts: `ready`, `leased`, `parked` and `retrying`, the others none. */
#define COUNTS(t, ready, leased, parked, retrying) \
  STATES((t), (ready), (leased), (parked), 0, 0, 0, (retrying))

#define NACK(t, lease, delay)                                                         \
  do {                                                                                \
    harel_lease *n_ = (lease);                                                        \
    if (n_ != NULL) EXPECT_STATUS(harel_transport_nack((t), n_, (delay), NULL), HAREL_OK); \
    harel_lease_free(n_);                                                             \
  } while (0)

/* The message of `status` (the call made with its own error) is `text` (how 0), or holds it
 * (how 1). Frees the error. */
#define SAYS(call, e, text) says_at((call), &(e), (text), 0, #call, __FILE__, __LINE__)
#define SAYS_WITHIN(call, e, text) says_at((call), &(e), (text), 1, #call, __FILE__, __LINE__)
static void says_at(harel_status status, harel_error **e, const char *text, int how,
                    const char *expr, const char *file, int line) {
  const char *got = *e != NULL ? harel_error_message(*e) : NULL;
  if (status != HAREL_ERR_ARGUMENT || got == NULL) {
    test_fail(file, line, "%s returned %s with message \"%s\", want HAREL_ERR_ARGUMENT", expr,
              harel_status_name(status), or_null(got));
  } else if (how == 0 ? strcmp(got, text) != 0 : strstr(got, text) == NULL) {
    test_fail(file, line, "%s: the message is \"%s\", want \"%s\"%s", expr, got, text,
              how == 0 ? "" : " in it");
  }
  harel_error_free(*e);
  *e = NULL;
}

/* ---- the option ------------------------------------------------------------------------- */

/* Bad policies and their messages, the field each names. */
static const struct {
  double base, factor, cap;
  const char *field, *says;
} BAD_POLICIES[] = {
    {-1.0, 2.0, 60.0, "retry.base",
     "retry.base is -1; it must be finite seconds, 0.001..315360000 (ten years)"},
    {NAN, 2.0, 60.0, "retry.base", "retry.base is NaN; it must be finite seconds"},
    {INFINITY, 2.0, 0.0, "retry.base", "retry.base is inf; it must be finite seconds"},
    {-INFINITY, 2.0, 60.0, "retry.base", "retry.base is -inf; it must be finite seconds"},
    {0.0005, 2.0, 60.0, "retry.base", "retry.base is 0.0005; it must be finite seconds"},
    {MAX_DELAY + 1.0, 2.0, 0.0, "retry.base", "retry.base is 315360001; it must be finite seconds"},
    {1.0, 0.5, 60.0, "retry.factor", "retry.factor is 0.5; it must be finite, 1..16"},
    {1.0, 17.0, 60.0, "retry.factor", "retry.factor is 17; it must be finite, 1..16"},
    {1.0, -2.0, 60.0, "retry.factor", "retry.factor is -2; it must be finite, 1..16"},
    {1.0, NAN, 60.0, "retry.factor", "retry.factor is NaN; it must be finite, 1..16"},
    {1.0, INFINITY, 60.0, "retry.factor", "retry.factor is inf; it must be finite, 1..16"},
    {1.0, 2.0, 0.5, "retry.cap",
     "retry.cap is 0.5; it must be finite seconds, from base (1) to 315360000 (ten years)"},
    {1.0, 2.0, -1.0, "retry.cap", "retry.cap is -1; it must be finite seconds, from base (1)"},
    {1.0, 2.0, NAN, "retry.cap", "retry.cap is NaN; it must be finite seconds"},
    {1.0, 2.0, INFINITY, "retry.cap", "retry.cap is inf; it must be finite seconds"},
    {1.0, 2.0, MAX_DELAY + 1.0, "retry.cap", "retry.cap is 315360001; it must be finite seconds"},
    {5000.0, 2.0, 4000.0, "retry.cap", "retry.cap is 4000; it must be finite seconds, from base (5000)"},
};
static const int32_t BAD_JITTERS[] = {3, 7, -1, INT32_MAX, INT32_MIN};

/* harel_options_set_retry: HAREL_OK for a policy in range (the bounds, factor 0 and cap 0 as
 * their defaults, every jitter), and for base 0 (none), whatever the rest; HAREL_ERR_ARGUMENT
 * for a NULL o, each bad value with its message naming the field, an unknown jitter (before
 * the values are looked at); a set `*err` refused. */
static void set_retry_takes_a_policy_and_refuses_the_rest(void) {
  char was_text[512], jitter_says[160];
  harel_options *o = harel_options_new();
  harel_error *e = NULL, *stale = NULL;
  const harel_error *was;
  size_t i;
  if (!EXPECT(o != NULL)) return;
  EXPECT_CALL(harel_options_set_retry(o, 1.0, 2.0, 60.0, FULL, &e), &e, HAREL_OK);
  EXPECT_STATUS(harel_options_set_retry(o, 1.0, 2.0, 60.0, EQUAL, NULL), HAREL_OK);
  EXPECT_STATUS(harel_options_set_retry(o, 1.0, 2.0, 60.0, NONE, NULL), HAREL_OK);
  EXPECT_STATUS(harel_options_set_retry(o, HAREL_MIN_RETRY_BASE, 1.0, HAREL_MIN_RETRY_BASE, NONE, NULL),
                HAREL_OK);
  EXPECT_STATUS(harel_options_set_retry(o, MAX_DELAY, HAREL_MAX_RETRY_FACTOR, MAX_DELAY, FULL, NULL),
                HAREL_OK);
  EXPECT_STATUS(harel_options_set_retry(o, 2.0, 0.0, 0.0, FULL, NULL), HAREL_OK); /* 2, an hour */
  EXPECT_STATUS(harel_options_set_retry(o, 5000.0, 0.0, 0.0, FULL, NULL), HAREL_OK); /* cap 5000 */
  EXPECT_STATUS(harel_options_set_retry(o, MAX_DELAY, -0.0, -0.0, FULL, NULL), HAREL_OK);
  /* base 0 removes the policy: the rest is not looked at */
  EXPECT_CALL(harel_options_set_retry(o, 0.0, 0.0, 0.0, FULL, &e), &e, HAREL_OK);
  EXPECT_STATUS(harel_options_set_retry(o, 0.0, 99.0, -5.0, 42, NULL), HAREL_OK);
  EXPECT_STATUS(harel_options_set_retry(o, -0.0, NAN, NAN, -1, NULL), HAREL_OK);
  /* a NULL o */
  EXPECT_BAD("o", harel_options_set_retry(NULL, 1.0, 2.0, 60.0, FULL, ERR));
  SAYS(harel_options_set_retry(NULL, 1.0, 2.0, 60.0, FULL, &e), e, "o is NULL");
  EXPECT_BAD("o", harel_options_set_retry(NULL, 0.0, 0.0, 0.0, FULL, ERR));
  /* each bad value, naming its field */
  for (i = 0; i < N_OF(BAD_POLICIES); i++) {
    EXPECT_BAD(BAD_POLICIES[i].field,
               harel_options_set_retry(o, BAD_POLICIES[i].base, BAD_POLICIES[i].factor,
                                       BAD_POLICIES[i].cap, NONE, ERR));
    SAYS_WITHIN(harel_options_set_retry(o, BAD_POLICIES[i].base, BAD_POLICIES[i].factor,
                                        BAD_POLICIES[i].cap, FULL, &e),
                e, BAD_POLICIES[i].says);
  }
  SAYS(harel_options_set_retry(o, 1.0, 17.0, 60.0, FULL, &e), e,
       "retry.factor is 17; it must be finite, 1..16");
  SAYS(harel_options_set_retry(o, -1.0, 2.0, 60.0, FULL, &e), e,
       "retry.base is -1; it must be finite seconds, 0.001..315360000 (ten years)");
  SAYS(harel_options_set_retry(o, 1.0, 2.0, 0.5, FULL, &e), e,
       "retry.cap is 0.5; it must be finite seconds, from base (1) to 315360000 (ten years)");
  /* an unknown jitter, named before the values */
  for (i = 0; i < N_OF(BAD_JITTERS); i++) {
    EXPECT_BAD("retry.jitter", harel_options_set_retry(o, 1.0, 2.0, 60.0, BAD_JITTERS[i], ERR));
    snprintf(jitter_says, sizeof jitter_says,
             "retry.jitter is %ld; it must be HAREL_JITTER_FULL (0), _EQUAL (1) or _NONE (2)",
             (long)BAD_JITTERS[i]);
    SAYS(harel_options_set_retry(o, 1.0, 2.0, 60.0, BAD_JITTERS[i], &e), e, jitter_says);
  }
  EXPECT_BAD("retry.jitter", harel_options_set_retry(o, -1.0, 17.0, 0.5, 7, ERR));
  /* a `*err` already set: refused, the error as it was */
  EXPECT(harel_options_set_retry(o, 1.0, 17.0, 60.0, FULL, &stale) == HAREL_ERR_ARGUMENT);
  if (EXPECT(stale != NULL)) {
    was = stale;
    snprintf(was_text, sizeof was_text, "%s", harel_error_message(stale));
    REFUSED(harel_options_set_retry(o, 1.0, 2.0, 60.0, FULL, &stale));
    REFUSED(harel_options_set_retry(o, 0.0, 0.0, 0.0, FULL, &stale));
    REFUSED(harel_options_set_retry(NULL, 1.0, 2.0, 60.0, FULL, &stale));
  }
  harel_error_free(stale);
  harel_options_free(o);
}

/* A refused value leaves the policy set before it; base 0 removes it, and the transports
 * opened after that have none. */
static void a_refused_policy_leaves_the_one_set_and_base_0_removes_it(void) {
  double now = T0;
  harel_options *o = harel_options_new();
  harel_transport *t = NULL;
  harel_error *e = NULL;
  if (!EXPECT(o != NULL)) return;
  EXPECT_CALL(harel_options_set_clock(o, test_clock, &now, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_retry(o, 4.0, 1.0, 4.0, NONE, &e), &e, HAREL_OK);
  EXPECT_BAD("retry.factor", harel_options_set_retry(o, 1.0, 17.0, 60.0, NONE, ERR));
  EXPECT_BAD("retry.jitter", harel_options_set_retry(o, 1.0, 2.0, 60.0, 9, ERR));
  EXPECT_CALL(harel_transport_open(":memory:", o, &t, &e), &e, HAREL_OK);
  if (t != NULL) {
    PUBLISH(t, "g", "\"m\"");
    NACK(t, CLAIM(t, "w", "\"m\""), 0.0);
    READY_PARKED(t, 0, 1); /* the policy of 4 s */
    ACK(t, WAITS(t, &now, 4.0, "\"m\"", 2));
    harel_transport_close(t);
    t = NULL;
  }
  /* removed: a nack without a delay frees at once */
  EXPECT_CALL(harel_options_set_retry(o, 0.0, 0.0, 0.0, FULL, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_open(":memory:", o, &t, &e), &e, HAREL_OK);
  if (t != NULL) {
    PUBLISH(t, "g", "\"m\"");
    NACK(t, CLAIM(t, "w", "\"m\""), 0.0);
    READY_PARKED(t, 1, 0);
    SHOWS(t, "g", -1.0);
    ACK(t, CLAIM(t, "w", "\"m\""));
    harel_transport_close(t);
  }
  harel_options_free(o);
}

/* ---- the queue's policy on the test clock ----------------------------------------------- */

/* A nack with delay 0 parks the message for the backoff its claim drew (stats: parked, not
 * ready), which grows by the factor up to the cap, peek showing each; a worker's delay wins
 * over it. */
static void a_nack_without_a_delay_parks_for_the_backoff(void) {
  static const double backoffs[] = {2.0, 6.0, 18.0, 20.0, 20.0};
  double now = T0;
  harel_transport *t = open_retrying(&now, 2.0, 3.0, 20.0, NONE);
  harel_lease *l;
  size_t i;
  if (t == NULL) return;
  PUBLISH(t, "g", "\"m\"");
  SHOWS(t, "g", -1.0); /* not claimed yet: nothing drawn */
  READY_PARKED(t, 1, 0);
  l = CLAIM(t, "w", "\"m\"");
  for (i = 0; i < N_OF(backoffs) && l != NULL; i++) {
    EXPECT(l->attempts == (int64_t)i + 1);
    SHOWS(t, "g", backoffs[i]);
    NACK(t, l, 0.0);
    READY_PARKED(t, 0, 1);
    SHOWS(t, "g", backoffs[i]); /* kept while it waits */
    l = WAITS(t, &now, backoffs[i], "\"m\"", (int64_t)i + 2);
  }
  NACK(t, l, 1.0); /* the worker's own delay */
  READY_PARKED(t, 0, 1);
  ACK(t, WAITS(t, &now, 1.0, "\"m\"", 7));
  CLAIM_EMPTY(t);
  harel_transport_close(t);
}

/* A lease that lapses (a visibility of 2 s) waits the backoff its claim drew (10 s, factor 1)
 * after its end: leased until the end, then retrying (not ready: no oldest ready message, no
 * release due) until the end + 10, while a claim passes over it to another group; then ready,
 * and claimed again. A nack of 0 parks instead: parked, not retrying. */
static void a_lapsed_lease_waits_its_backoff_counted_as_retrying(void) {
  double now = T0;
  harel_transport *t = open_retrying(&now, 10.0, 1.0, 0.0, NONE);
  harel_lease *l = NOT_SET_LEASE, *other;
  harel_stats *s;
  if (t == NULL) return;
  PUBLISH(t, "g", "\"m\"");
  EXPECT_STATUS(harel_transport_claim(t, "w", 2.0, 0, NULL, 0, &l, NULL), HAREL_OK);
  if (!EXPECT(l != NULL && l != NOT_SET_LEASE)) {
    harel_transport_close(t);
    return;
  }
  SHOWS(t, "g", 10.0);
  COUNTS(t, 0, 1, 0, 0);
  now = T0 + 1.99;
  COUNTS(t, 0, 1, 0, 0); /* within the lease */
  now = T0 + 2.5;        /* lapsed: its backoff runs until T0 + 12 */
  COUNTS(t, 0, 0, 0, 1);
  if ((s = STATS(t)) != NULL)
    EXPECT(s->groups == 1 && s->oldest_ready_seq == -1 && s->oldest_ready_age == -1.0 &&
           s->next_release_at == -1.0);
  harel_stats_free(s);
  PUBLISH(t, "other", "\"o\"");
  COUNTS(t, 1, 0, 0, 1); /* another group is ready beside it */
  now = T0 + 11.99;
  COUNTS(t, 1, 0, 0, 1); /* until the backoff's end */
  other = CLAIM(t, "w", "\"o\""); /* a claim passes over it */
  COUNTS(t, 0, 1, 0, 1);
  ACK(t, other);
  now = T0 + 12.01;
  COUNTS(t, 1, 0, 0, 0); /* the backoff passed: ready again */
  harel_lease_free(l);
  l = CLAIM(t, "w", "\"m\"");
  if (l != NULL) EXPECT(l->attempts == 2);
  COUNTS(t, 0, 1, 0, 0);
  NACK(t, l, 0.0);
  COUNTS(t, 0, 0, 1, 0); /* a nack of 0 parks for the backoff: parked, not retrying */
  harel_transport_close(t);
}

/* Factor 0 reads as 2 and cap 0 as an hour (or the base, if longer). */
static void factor_0_and_cap_0_read_as_their_defaults(void) {
  static const double doubling[] = {1000.0, 2000.0, 3600.0, 3600.0};
  double now = T0;
  harel_transport *t = open_retrying(&now, 1000.0, 0.0, 0.0, NONE);
  harel_lease *l;
  size_t i;
  if (t == NULL) return;
  PUBLISH(t, "g", "\"m\"");
  l = CLAIM(t, "w", "\"m\"");
  for (i = 0; i < N_OF(doubling) && l != NULL; i++) {
    SHOWS(t, "g", doubling[i]);
    NACK(t, l, 0.0);
    l = WAITS(t, &now, doubling[i], "\"m\"", (int64_t)i + 2);
  }
  ACK(t, l);
  harel_transport_close(t);
  t = open_retrying(&now, 5000.0, 0.0, 0.0, NONE);
  if (t == NULL) return;
  PUBLISH(t, "g", "\"m\"");
  l = CLAIM(t, "w", "\"m\"");
  SHOWS(t, "g", 5000.0);
  NACK(t, l, 0.0);
  l = WAITS(t, &now, 5000.0, "\"m\"", 2);
  SHOWS(t, "g", 5000.0); /* capped at the base */
  ACK(t, l);
  harel_transport_close(t);
}

/* Without a policy (the default), a nack without a delay frees the message at once and peek
 * shows no backoff, claimed or not. */
static void without_a_policy_a_nack_frees_at_once(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *l;
  if (t == NULL) return;
  PUBLISH(t, "g", "\"m\"");
  SHOWS(t, "g", -1.0);
  l = CLAIM(t, "w", "\"m\"");
  SHOWS(t, "g", -1.0);
  NACK(t, l, 0.0);
  READY_PARKED(t, 1, 0);
  l = CLAIM(t, "w", "\"m\"");
  if (l != NULL) EXPECT(l->attempts == 2);
  ACK(t, l);
  harel_transport_close(t);
}

/* Each jitter's number reaches its spread: FULL in [0, d), EQUAL in [d/2, d), drawn anew at
 * each claim; NONE d exactly. */
static void each_jitter_spreads_as_its_number_says(void) {
  static const struct {
    int32_t jitter;
    double low, high;
  } spreads[] = {{FULL, 0.0, 10.0}, {EQUAL, 5.0, 10.0}, {NONE, 10.0, 10.0}};
  char groups[20][16];
  harel_lease *leases[20];
  double now = T0, drawn[20];
  harel_transport *t;
  size_t s, i, n;
  int differ;
  for (s = 0; s < N_OF(spreads); s++) {
    t = open_retrying(&now, 10.0, 1.0, 10.0, spreads[s].jitter);
    if (t == NULL) return;
    for (i = 0; i < N_OF(groups); i++) {
      snprintf(groups[i], sizeof groups[i], "g%zu", i);
      PUBLISH(t, groups[i], "\"m\"");
    }
    for (n = 0; n < N_OF(leases); n++)
      if ((leases[n] = CLAIM(t, "w", "\"m\"")) == NULL) break;
    differ = 0;
    for (i = 0; i < N_OF(groups); i++) {
      drawn[i] = SHOWN(t, groups[i], 0);
      if (spreads[s].jitter == NONE ? drawn[i] != 10.0
                                    : !(drawn[i] >= spreads[s].low && drawn[i] < spreads[s].high))
        test_fail(__FILE__, __LINE__, "jitter %d drew %g for %s, want [%g, %g%c", spreads[s].jitter,
                  drawn[i], groups[i], spreads[s].low, spreads[s].high,
                  spreads[s].jitter == NONE ? ']' : ')');
      if (i > 0 && drawn[i] != drawn[0]) differ = 1;
    }
    EXPECT(spreads[s].jitter == NONE ? !differ : differ);
    for (i = 0; i < n; i++) ACK(t, leases[i]);
    harel_transport_close(t);
  }
}

/* ---- peek's retry_delays ---------------------------------------------------------------- */

/* retry_delays[i] is messages[i]'s: the head's drawn value once claimed, -1 for the messages
 * behind it, and for a group never claimed; page by page (a cursor's page has its own). */
static void peek_shows_each_message_s_backoff_or_minus_one(void) {
  double now = T0;
  harel_transport *t = open_retrying(&now, 3.0, 2.0, 60.0, NONE);
  harel_message_page *page = NOT_SET_MESSAGES, *rest = NOT_SET_MESSAGES;
  harel_error *e = NULL;
  harel_lease *l, *other;
  if (t == NULL) return;
  PUBLISH(t, "g", "\"a\"");
  PUBLISH(t, "g", "\"b\"");
  PUBLISH(t, "g", "\"c\"");
  l = CLAIM(t, "w", "\"a\"");
  NACK(t, l, 0.0);
  l = WAITS(t, &now, 3.0, "\"a\"", 2);
  EXPECT_CALL(harel_transport_peek(t, "g", NULL, 100, &page, &e), &e, HAREL_OK);
  if (page != NULL && page != NOT_SET_MESSAGES && EXPECT(page->n_messages == 3) &&
      EXPECT(page->retry_delays != NULL)) {
    EXPECT(page->retry_delays[0] == 6.0); /* claim 2: 3 * 2 */
    EXPECT(page->retry_delays[1] == -1.0 && page->retry_delays[2] == -1.0);
    EXPECT(page->messages[0].attempts == 2 && page->messages[1].attempts == 0);
  }
  harel_message_page_free(page);
  PUBLISH(t, "other", "\"o\"");
  SHOWS(t, "other", -1.0);
  /* a page of one, then the rest by its cursor */
  page = NOT_SET_MESSAGES;
  EXPECT_CALL(harel_transport_peek(t, "g", NULL, 1, &page, &e), &e, HAREL_OK);
  if (page != NULL && page != NOT_SET_MESSAGES && EXPECT(page->n_messages == 1) &&
      EXPECT(page->next_cursor != NULL)) {
    EXPECT(page->retry_delays != NULL && page->retry_delays[0] == 6.0);
    EXPECT_CALL(harel_transport_peek(t, "g", page->next_cursor, 10, &rest, &e), &e, HAREL_OK);
    if (rest != NULL && rest != NOT_SET_MESSAGES && EXPECT(rest->n_messages == 2))
      EXPECT(rest->retry_delays != NULL && rest->retry_delays[0] == -1.0 &&
             rest->retry_delays[1] == -1.0);
    harel_message_page_free(rest);
  }
  harel_message_page_free(page);
  /* acked: the next head shows its own once claimed (claim 1), as the other group's head */
  ACK(t, l);
  SHOWS(t, "g", -1.0);
  l = CLAIM(t, "w", NULL);
  other = CLAIM(t, "w", NULL);
  SHOWS(t, "g", 3.0);
  SHOWS(t, "other", 3.0);
  ACK(t, l);
  ACK(t, other);
  harel_transport_close(t);
}

/* ---- a message's own policy ------------------------------------------------------------- */

/* A message published with a policy follows it, whatever the queue's: publish_delivery,
 * publish_many_delivery (a NULL delivery: the queue's) and a transaction's; its factor 0 and
 * cap 0 read as the defaults; one without follows the queue's; with neither, none. */
static void a_message_s_own_policy_wins_over_the_queue_s(void) {
  const harel_message batch[2] = {{"b1", "\"own\"", 0, NULL}, {"b2", "\"queue's\"", 0, NULL}};
  const harel_delivery *deliveries[2];
  double now = T0;
  harel_transport *t = open_retrying(&now, 50.0, 1.0, 50.0, NONE);
  harel_delivery own = retrying(5.0, 1.0, 5.0, NONE), defaults = retrying(10.0, 0.0, 0.0, NONE);
  harel_error *e = NULL;
  harel_lease *l, *second;
  harel_tx *tx;
  size_t n = NOT_SET_COUNT;
  if (t == NULL) return;
  PUBLISH_DELIVERY(t, "own", "\"own\"", &own);
  l = CLAIM(t, "w", "\"own\"");
  SHOWS(t, "own", 5.0);
  NACK(t, l, 0.0);
  ACK(t, WAITS(t, &now, 5.0, "\"own\"", 2));
  PUBLISH(t, "queue", "\"queue's\"");
  l = CLAIM(t, "w", "\"queue's\"");
  SHOWS(t, "queue", 50.0);
  ACK(t, l);
  /* a batch: its own for the first, a NULL delivery the queue's for the second */
  deliveries[0] = &own;
  deliveries[1] = NULL;
  EXPECT_CALL(harel_transport_publish_many_delivery(t, batch, 2, NULL, deliveries, NULL, NULL, &e),
              &e, HAREL_OK);
  l = CLAIM(t, "w", NULL);
  second = CLAIM(t, "w", NULL);
  SHOWS(t, "b1", 5.0);
  SHOWS(t, "b2", 50.0);
  ACK(t, l);
  ACK(t, second);
  /* a transaction's */
  if ((tx = BEGIN(t)) != NULL) {
    EXPECT_CALL(harel_tx_publish_delivery(tx, "tx", "\"tx\"", 0, NULL, NULL, 0, &own, &e), &e,
                HAREL_OK);
    EXPECT_CALL(harel_tx_commit(tx, NULL, NULL, 0, &n, &e), &e, HAREL_OK);
    EXPECT(n == 1);
    harel_tx_free(tx);
  }
  l = CLAIM(t, "w", "\"tx\"");
  SHOWS(t, "tx", 5.0);
  NACK(t, l, 0.0);
  ACK(t, WAITS(t, &now, 5.0, "\"tx\"", 2));
  /* factor 0: 2; cap 0: an hour */
  PUBLISH_DELIVERY(t, "d", "\"d\"", &defaults);
  l = CLAIM(t, "w", "\"d\"");
  SHOWS(t, "d", 10.0);
  NACK(t, l, 0.0);
  l = WAITS(t, &now, 10.0, "\"d\"", 2);
  SHOWS(t, "d", 20.0);
  ACK(t, l);
  harel_transport_close(t);
  /* no queue policy: the message's own applies; base 0 is none */
  t = open_at(":memory:", &now);
  if (t == NULL) return;
  PUBLISH_DELIVERY(t, "own", "\"own\"", &own);
  NACK(t, CLAIM(t, "w", "\"own\""), 0.0);
  READY_PARKED(t, 0, 1);
  ACK(t, WAITS(t, &now, 5.0, "\"own\"", 2));
  own = retrying(0.0, 17.0, -1.0, 9); /* none: the rest is not read */
  PUBLISH_DELIVERY(t, "none", "\"none\"", &own);
  NACK(t, CLAIM(t, "w", "\"none\""), 0.0);
  SHOWS(t, "none", -1.0);
  READY_PARKED(t, 1, 0);
  ACK(t, CLAIM(t, "w", "\"none\""));
  harel_transport_close(t);
}

/* Each jitter of a message's own reaches its spread too. */
static void a_message_s_own_jitter(void) {
  double now = T0, d;
  harel_transport *t = open_at(":memory:", &now);
  harel_delivery full = retrying(10.0, 1.0, 10.0, FULL), equal = retrying(10.0, 1.0, 10.0, EQUAL);
  harel_lease *a, *b;
  if (t == NULL) return;
  PUBLISH_DELIVERY(t, "full", "\"full\"", &full);
  PUBLISH_DELIVERY(t, "equal", "\"equal\"", &equal);
  a = CLAIM(t, "w", NULL);
  b = CLAIM(t, "w", NULL);
  d = SHOWN(t, "full", 0);
  EXPECT(d >= 0.0 && d < 10.0);
  d = SHOWN(t, "equal", 0);
  EXPECT(d >= 5.0 && d < 10.0);
  ACK(t, a);
  ACK(t, b);
  harel_transport_close(t);
}

/* ---- a caller built against an older harel_delivery ------------------------------------ */

/* A `size` without the retry fields (the harel_delivery of the release before them) reads
 * no policy of its own, whatever lies past it (here values that would be refused): the
 * queue's applies, or none; a size holding retry_base alone reads the rest as 0 (factor 2,
 * an hour, FULL), one without retry_jitter reads it as 0 (FULL). */
static void a_smaller_size_reads_no_policy_of_its_own(void) {
  double now = T0, d;
  harel_transport *t = open_at(":memory:", &now);
  harel_delivery bad = retrying(-1.0, 17.0, -5.0, 9), *s;
  harel_lease *l;
  if (t == NULL) return;
  if ((s = short_delivery(&bad, offsetof(harel_delivery, retry_base))) != NULL) {
    PUBLISH_DELIVERY(t, "old", "\"old\"", s);
    free(s);
  }
  l = CLAIM(t, "w", "\"old\"");
  SHOWS(t, "old", -1.0);
  NACK(t, l, 0.0);
  READY_PARKED(t, 1, 0); /* no policy: free at once */
  ACK(t, CLAIM(t, "w", "\"old\""));
  /* the same cut in a whole struct: what lies past the size is not read */
  bad.size = offsetof(harel_delivery, retry_base);
  PUBLISH_DELIVERY(t, "old2", "\"old2\"", &bad);
  ACK(t, CLAIM(t, "w", "\"old2\""));
  /* retry_base within the size, the rest past it */
  bad = retrying(4.0, 17.0, -5.0, 9);
  if ((s = short_delivery(&bad, offsetof(harel_delivery, retry_factor))) != NULL) {
    PUBLISH_DELIVERY(t, "base", "\"base\"", s);
    free(s);
  }
  l = CLAIM(t, "w", "\"base\"");
  d = SHOWN(t, "base", 0);
  EXPECT(d >= 0.0 && d < 4.0); /* FULL */
  ACK(t, l);
  /* all but retry_jitter */
  bad = retrying(4.0, 1.0, 4.0, 9);
  if ((s = short_delivery(&bad, offsetof(harel_delivery, retry_jitter))) != NULL) {
    PUBLISH_DELIVERY(t, "cap", "\"cap\"", s);
    free(s);
  }
  l = CLAIM(t, "w", "\"cap\"");
  d = SHOWN(t, "cap", 0);
  EXPECT(d >= 0.0 && d < 4.0);
  ACK(t, l);
  harel_transport_close(t);
  /* the queue's policy applies to an older caller's message */
  t = open_retrying(&now, 7.0, 1.0, 7.0, NONE);
  if (t == NULL) return;
  bad = retrying(-1.0, 17.0, -5.0, 9);
  if ((s = short_delivery(&bad, offsetof(harel_delivery, retry_base))) != NULL) {
    PUBLISH_DELIVERY(t, "old", "\"old\"", s);
    free(s);
  }
  NACK(t, CLAIM(t, "w", "\"old\""), 0.0);
  ACK(t, WAITS(t, &now, 7.0, "\"old\"", 2));
  harel_transport_close(t);
}

/* ---- bad policies in a delivery ----------------------------------------------------------- */

/* `bad` refused by publish_delivery, publish_many_delivery (as message 1, message 0 good) and
 * a transaction's publish with HAREL_ERR_ARGUMENT naming `field` (the batch's
 * "messages[1]." `field`), the outputs untouched, nothing written (the fixture checks), the
 * transaction going on to commit nothing. */
static void refused_everywhere(fixture *fx, const harel_delivery *bad, const char *field) {
  const harel_message batch[2] = {{"new", "\"ok\"", 0, NULL}, {"new", "\"bad\"", 0, NULL}};
  const harel_delivery *deliveries[2];
  harel_delivery good = retrying(1.0, 2.0, 60.0, NONE);
  char batched[128];
  int64_t seq = NOT_SET_SEQ;
  int outcome = NOT_SET_DUP, kept = 0;
  size_t n = NOT_SET_COUNT;
  harel_tx *tx;
  harel_status s;
  deliveries[0] = &good;
  deliveries[1] = bad;
  snprintf(batched, sizeof batched, "messages[1].%s", field);
  EXPECT_FAILS(HAREL_ERR_ARGUMENT, field,
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
  EXPECT_FAILS(HAREL_ERR_ARGUMENT, field,
               harel_tx_publish_delivery(tx, "new", "\"bad\"", 0, NULL, NULL, 0, bad, ERR));
  EXPECT_STATUS(harel_tx_commit(tx, NULL, NULL, 0, &n, NULL), HAREL_OK);
  EXPECT(n == 0);
  harel_tx_free(tx);
}

/* The message of publish_delivery given `bad` holds `want`; publish_many_delivery's, with it
 * as message 1, holds "messages[1]." `want`. */
#define MESSAGE_IS(fx, bad, want) message_is_at((fx), (bad), (want), __FILE__, __LINE__)
static void message_is_at(fixture *fx, const harel_delivery *bad, const char *want,
                          const char *file, int line) {
  const harel_message batch[2] = {{"new", "\"ok\"", 0, NULL}, {"new", "\"bad\"", 0, NULL}};
  const harel_delivery *deliveries[2];
  char batched[256];
  harel_error *e = NULL;
  const char *got;
  deliveries[0] = NULL;
  deliveries[1] = bad;
  if (harel_transport_publish_delivery(fx->t, "new", "1", 0, NULL, NULL, 0, bad, NULL, NULL, &e) !=
      HAREL_ERR_ARGUMENT)
    test_fail(file, line, "not refused with HAREL_ERR_ARGUMENT: want \"%s\"", want);
  else if ((got = harel_error_message(e)) == NULL || strstr(got, want) == NULL)
    test_fail(file, line, "the message \"%s\" does not say \"%s\"", or_null(got), want);
  harel_error_free(e);
  e = NULL;
  snprintf(batched, sizeof batched, "messages[1].%s", want);
  if (harel_transport_publish_many_delivery(fx->t, batch, 2, NULL, deliveries, NULL, NULL, &e) !=
      HAREL_ERR_ARGUMENT)
    test_fail(file, line, "the batch was not refused with HAREL_ERR_ARGUMENT: want \"%s\"", batched);
  else if ((got = harel_error_message(e)) == NULL || strstr(got, batched) == NULL)
    test_fail(file, line, "the batch's message \"%s\" does not say \"%s\"", or_null(got), batched);
  harel_error_free(e);
}

/* Every bad policy of a delivery and every unknown jitter, refused by every form, the queue
 * unchanged; their messages' words. */
static void bad_policies_in_a_delivery_are_refused_by_every_form(void) {
  char jitter_says[160];
  harel_delivery d;
  fixture fx;
  size_t i;
  if (!fixture_open(&fx)) return;
  for (i = 0; i < N_OF(BAD_POLICIES); i++) {
    d = retrying(BAD_POLICIES[i].base, BAD_POLICIES[i].factor, BAD_POLICIES[i].cap, NONE);
    refused_everywhere(&fx, &d, BAD_POLICIES[i].field);
    MESSAGE_IS(&fx, &d, BAD_POLICIES[i].says);
  }
  for (i = 0; i < N_OF(BAD_JITTERS); i++) {
    d = retrying(1.0, 2.0, 60.0, BAD_JITTERS[i]);
    refused_everywhere(&fx, &d, "retry.jitter");
    snprintf(jitter_says, sizeof jitter_says,
             "retry.jitter is %ld; it must be HAREL_JITTER_FULL (0), _EQUAL (1) or _NONE (2)",
             (long)BAD_JITTERS[i]);
    MESSAGE_IS(&fx, &d, jitter_says);
  }
  d = retrying(1.0, 17.0, 60.0, NONE);
  MESSAGE_IS(&fx, &d, "retry.factor is 17; it must be finite, 1..16");
  d = retrying(-1.0, 2.0, 60.0, NONE);
  MESSAGE_IS(&fx, &d, "retry.base is -1; it must be finite seconds, 0.001..315360000 (ten years)");
  /* -0.0 is 0: no policy, as a zeroed field */
  d = retrying(-0.0, 17.0, -1.0, 9);
  EXPECT(harel_transport_publish_delivery(fx.t, "none", "1", 0, NULL, NULL, 0, &d, NULL, NULL,
                                          NULL) == HAREL_OK);
  EXPECT_STATUS(harel_transport_purge_group(fx.t, "none", NULL, NULL), HAREL_OK);
  FIXTURE_CLOSE(&fx);
}

const test_case retry_tests[] = {
    TEST(set_retry_takes_a_policy_and_refuses_the_rest),
    TEST(a_refused_policy_leaves_the_one_set_and_base_0_removes_it),
    TEST(a_nack_without_a_delay_parks_for_the_backoff),
    TEST(a_lapsed_lease_waits_its_backoff_counted_as_retrying),
    TEST(factor_0_and_cap_0_read_as_their_defaults),
    TEST(without_a_policy_a_nack_frees_at_once),
    TEST(each_jitter_spreads_as_its_number_says),
    TEST(peek_shows_each_message_s_backoff_or_minus_one),
    TEST(a_message_s_own_policy_wins_over_the_queue_s),
    TEST(a_message_s_own_jitter),
    TEST(a_smaller_size_reads_no_policy_of_its_own),
    TEST(bad_policies_in_a_delivery_are_refused_by_every_form),
    {NULL, NULL}};
