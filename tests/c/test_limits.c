/*
 * test_limits.c: limits per routing key (docs/queue.md, "Limits"): harel_transport_set_limit
 * and _remove_limit (admin), harel_transport_limits and harel_limit_list_free (looks). What a
 * limit does is the Rust contract's (tests/common/contract_limits.rs); here, the mapping, on
 * the test clock: a concurrency limit of 1 lets one claim of its key through and the others
 * pass over it, an ack or a nack lets the next through; a rate limit's numbers and tokens
 * reach the list; a set replaces the key's limits (0: that kind off); remove serves the held
 * groups at once; the list field by field (routing_key by its length, concurrency 0 and
 * rate, burst 0 for none, in_use, tokens -1 without a rate, held), in key order, who frees
 * it and NULL freed; every refusal the header names with its message (err NULL and err
 * given) and the queue unchanged; a set `*err`; a busy database; a sharded queue (set and
 * remove on every shard, the list summed over them); and one handle shared by threads that
 * claim under a limit. harel_stats counts the held groups in `held` (and `retrying` none), not
 * in `ready`, nor in a level's `ready`; its group counts add up to `groups`. harel_metrics'
 * `limit_holds` (at the struct's end) counts each time a claim of the handle holds a group.
 */
#include "harel_test.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>

static harel_limit_list sentinel_limits;
#define NOT_SET_LIMITS (&sentinel_limits)

/* The messages of the refusals (the library's). */
#define NEITHER "the limit has neither a concurrency nor a rate"
#define CONCURRENCY_MUST_BE "it must be 1..1000000"
#define RATE_MUST_BE "it must be a finite number > 0, at most 1000000"
#define BURST_MUST_BE "it must be a finite number >= 1, at most 1000000"

/* ---- helpers ---------------------------------------------------------------------------- */

/* harel_transport_set_limit, which must succeed. */
#define SET_LIMIT(t, key, concurrency, rate, burst) \
  set_limit_at((t), (key), (concurrency), (rate), (burst), __FILE__, __LINE__)
static void set_limit_at(harel_transport *t, const char *key, uint32_t concurrency, double rate,
                         double burst, const char *file, int line) {
  harel_error *e = NULL;
  expect_call(harel_transport_set_limit(t, key, concurrency, rate, burst, &e), &e, HAREL_OK, NULL,
              "harel_transport_set_limit", file, line);
}

/* harel_transport_remove_limit, which must succeed. */
#define REMOVE_LIMIT(t, key) remove_limit_at((t), (key), __FILE__, __LINE__)
static void remove_limit_at(harel_transport *t, const char *key, const char *file, int line) {
  harel_error *e = NULL;
  expect_call(harel_transport_remove_limit(t, key, &e), &e, HAREL_OK, NULL,
              "harel_transport_remove_limit", file, line);
}

/* The limits in force (the caller frees them); NULL if the call failed. */
#define LIMITS(t) limits_at((t), __FILE__, __LINE__)
static harel_limit_list *limits_at(harel_transport *t, const char *file, int line) {
  harel_limit_list *list = NOT_SET_LIMITS;
  harel_error *e = NULL;
  if (!expect_call(harel_transport_limits(t, &list, &e), &e, HAREL_OK, NULL,
                   "harel_transport_limits", file, line))
    return NULL;
  if (list == NULL || list == NOT_SET_LIMITS) {
    test_fail(file, line, "limits returned HAREL_OK with no list");
    return NULL;
  }
  if (list->n_limits > 0 && list->limits == NULL) {
    test_fail(file, line, "a list of %zu limits without its array", list->n_limits);
    return NULL;
  }
  return list;
}

/* The list's limit i is `key` (its length, its NUL), `concurrency`, `rate` and `burst`, with
 * `in_use` leases, `tokens` and `held` groups now. */
#define IS_LIMIT(list, i, key, concurrency, rate, burst, in_use, tokens, held)                  \
  is_limit_at((list), (i), (key), (concurrency), (rate), (burst), (in_use), (tokens), (held), \
              __FILE__, __LINE__)
static void is_limit_at(const harel_limit_list *list, size_t i, const char *key,
                        uint32_t concurrency, double rate, double burst, uint64_t in_use,
                        double tokens, uint64_t held, const char *file, int line) {
  const harel_limit_info *l;
  if (list == NULL || i >= list->n_limits) {
    test_fail(file, line, "no limit %zu in the list", i);
    return;
  }
  l = &list->limits[i];
  if (l->routing_key == NULL || l->routing_key_len != strlen(key) ||
      memcmp(l->routing_key, key, l->routing_key_len + 1) != 0 || l->concurrency != concurrency ||
      l->rate != rate || l->burst != burst || l->in_use != in_use ||
      fabs(l->tokens - tokens) > 1e-9 || l->held != held)
    test_fail(file, line,
              "limit %zu is \"%s\" (%zu bytes): concurrency %lu, rate %g, burst %g, in_use %llu, "
              "tokens %g, held %llu; want \"%s\": %lu, %g, %g, %llu, %g, %llu",
              i, or_null(l->routing_key), l->routing_key_len, (unsigned long)l->concurrency,
              l->rate, l->burst, (unsigned long long)l->in_use, l->tokens,
              (unsigned long long)l->held, key, (unsigned long)concurrency, rate, burst,
              (unsigned long long)in_use, tokens, (unsigned long long)held);
}

/* The list holds exactly one limit, which IS_LIMIT checks; the list freed. */
#define ONLY_LIMIT(t, key, concurrency, rate, burst, in_use, tokens, held)                   \
  do {                                                                                       \
    harel_limit_list *one_ = LIMITS(t);                                                      \
    if (one_ != NULL && EXPECT(one_->n_limits == 1))                                         \
      IS_LIMIT(one_, 0, (key), (concurrency), (rate), (burst), (in_use), (tokens), (held)); \
    harel_limit_list_free(one_);                                                             \
  } while (0)

/* How many limits are in force (-1 if the call failed). */
static long n_limits(harel_transport *t) {
  harel_limit_list *list = LIMITS(t);
  long n = list != NULL ? (long)list->n_limits : -1;
  harel_limit_list_free(list);
  return n;
}

/* A claim of any group, which must hand out the head of `group`; the lease (the caller
 * finishes and frees it), NULL if none. */
#define CLAIMS(t, group) claims_at((t), (group), __FILE__, __LINE__)
static harel_lease *claims_at(harel_transport *t, const char *group, const char *file,
                              int line) {
  harel_lease *l = claim_at(t, "w", NULL, file, line);
  if (l != NULL && strcmp(l->group_id, group) != 0)
    test_fail(file, line, "claimed from %s, want %s", l->group_id, group);
  return l;
}

/* The queue's group counts: `ready`, `leased` and `held`, the others none. */
#define COUNTS(t, ready, leased, held) STATES((t), (ready), (leased), 0, 0, 0, (held), 0)

/* harel_metrics' limit_holds: the handle's claims held groups `holds` times. */
#define LIMIT_HOLDS(t, holds) limit_holds_at((t), (holds), __FILE__, __LINE__)
static void limit_holds_at(harel_transport *t, uint64_t holds, const char *file, int line) {
  harel_metrics *m = NULL;
  harel_error *e = NULL;
  if (!expect_call(harel_transport_metrics(t, &m, &e), &e, HAREL_OK, NULL,
                   "harel_transport_metrics", file, line))
    return;
  if (m == NULL)
    test_fail(file, line, "metrics returned HAREL_OK with no metrics");
  else if (m->limit_holds != holds)
    test_fail(file, line, "limit_holds is %llu, want %llu", (unsigned long long)m->limit_holds,
              (unsigned long long)holds);
  harel_metrics_free(m);
}

/* Publishes one message to each of `groups` (NULL-terminated) with the routing key `key`. */
static void publish_keyed(harel_transport *t, const char *const *groups, const char *key) {
  for (; *groups != NULL; groups++)
    EXPECT_STATUS(harel_transport_publish(t, *groups, "1", 0, key, NULL), HAREL_OK);
}

/* ---- each function, its outputs --------------------------------------------------------- */

/* A concurrency limit of 1 on a key with three groups: one claim of it goes through, the
 * others pass over the key's groups (served: a group without a key, and none for a claim
 * of the key alone) and hold them; the list says 1 in use, 2 held, and so do the stats (held
 * 2, ready 0) and the metrics (limit_holds 2, not counted again by the claims that pass over
 * a group already held); an ack lets the next through; a nack too, the held group served
 * before the nacked one, which the next claim holds (limit_holds 3). */
static void a_concurrency_limit_lets_one_through(void) {
  static const char *const groups[] = {"a", "b", "c", NULL};
  const char *key = "k";
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *a, *b, *c, *none = NOT_SET_LEASE;
  /* limit_holds was added at harel_metrics' end, after the histograms */
  EXPECT(offsetof(harel_metrics, limit_holds) > offsetof(harel_metrics, dead_letter) &&
         offsetof(harel_metrics, limit_holds) + sizeof(uint64_t) == sizeof(harel_metrics));
  if (t == NULL) return;
  SET_LIMIT(t, "k", 1, 0.0, 0.0);
  ONLY_LIMIT(t, "k", 1, 0.0, 0.0, 0, -1.0, 0);
  publish_keyed(t, groups, "k");
  PUBLISH(t, "free", "\"free\"");
  COUNTS(t, 4, 0, 0);                          /* none held before a claim meets them */
  LIMIT_HOLDS(t, 0);
  a = CLAIMS(t, "a");
  COUNTS(t, 3, 1, 0);
  LIMIT_HOLDS(t, 0);
  ACK(t, CLAIMS(t, "free"));                      /* b and c are passed over */
  COUNTS(t, 0, 1, 2);
  LIMIT_HOLDS(t, 2);                              /* one lease of k, two groups held */
  CLAIM_EMPTY(t);
  EXPECT_STATUS(harel_transport_claim(t, "w", VIS, 0, &key, 1, &none, NULL), HAREL_EMPTY);
  EXPECT(none == NULL);
  ONLY_LIMIT(t, "k", 1, 0.0, 0.0, 1, -1.0, 2);
  COUNTS(t, 0, 1, 2);
  LIMIT_HOLDS(t, 2);                              /* held already: not counted again */
  PUBLISH(t, "other", "\"other\"");               /* a group of no key: ready beside them */
  COUNTS(t, 1, 1, 2);
  ACK(t, CLAIMS(t, "other"));
  ACK(t, a);                                      /* room for one: b */
  ONLY_LIMIT(t, "k", 1, 0.0, 0.0, 0, -1.0, 2);
  COUNTS(t, 0, 0, 2);                          /* held until a claim gives one back */
  b = CLAIMS(t, "b");
  CLAIM_EMPTY(t);
  ONLY_LIMIT(t, "k", 1, 0.0, 0.0, 1, -1.0, 1);
  COUNTS(t, 0, 1, 1);
  if (b != NULL) EXPECT_STATUS(harel_transport_nack(t, b, 0.0, NULL), HAREL_OK);
  harel_lease_free(b);
  c = CLAIMS(t, "c");                             /* the held one before the nacked one */
  CLAIM_EMPTY(t);
  LIMIT_HOLDS(t, 3);                              /* b, back after the nack, held */
  ACK(t, c);
  ACK(t, CLAIMS(t, "b"));
  CLAIM_EMPTY(t);
  ONLY_LIMIT(t, "k", 1, 0.0, 0.0, 0, -1.0, 0);
  COUNTS(t, 0, 0, 0);
  LIMIT_HOLDS(t, 3);
  harel_transport_close(t);
}

/* A rate limit (2 a second, a burst of 3): its numbers and a full bucket in the list; the
 * burst's three claims, then the key's groups held and no token left; half a second on, one
 * token and one claim. A set replaces the key's limits: both kinds (the bucket kept), then
 * the concurrency alone (rate and burst 0, tokens -1), which serves the held group. */
static void a_rate_limit_in_the_list(void) {
  static const char *const groups[] = {"r0", "r1", "r2", "r3", "r4", NULL};
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *r4;
  if (t == NULL) return;
  SET_LIMIT(t, "r", 0, 2.0, 3.0);
  ONLY_LIMIT(t, "r", 0, 2.0, 3.0, 0, 3.0, 0);
  publish_keyed(t, groups, "r");
  ACK(t, CLAIMS(t, "r0"));
  ACK(t, CLAIMS(t, "r1"));
  ACK(t, CLAIMS(t, "r2"));
  CLAIM_EMPTY(t);
  ONLY_LIMIT(t, "r", 0, 2.0, 3.0, 0, 0.0, 2); /* in_use 0: no concurrency limit to count */
  now = T0 + 0.25;
  ONLY_LIMIT(t, "r", 0, 2.0, 3.0, 0, 0.5, 2);
  CLAIM_EMPTY(t);
  now = T0 + 0.5;
  ONLY_LIMIT(t, "r", 0, 2.0, 3.0, 0, 1.0, 2);
  ACK(t, CLAIMS(t, "r3"));
  CLAIM_EMPTY(t);
  ONLY_LIMIT(t, "r", 0, 2.0, 3.0, 0, 0.0, 1);
  /* both kinds: the bucket as it was, refilled at the new rate from now on */
  SET_LIMIT(t, "r", 1, 4.0, 10.0);
  ONLY_LIMIT(t, "r", 1, 4.0, 10.0, 0, 0.0, 1);
  now = T0 + 0.75;
  ONLY_LIMIT(t, "r", 1, 4.0, 10.0, 0, 1.0, 1);
  /* the concurrency alone: the rate off, and the held group served */
  SET_LIMIT(t, "r", 1, 0.0, 0.0);
  ONLY_LIMIT(t, "r", 1, 0.0, 0.0, 0, -1.0, 1);
  r4 = CLAIMS(t, "r4");
  ONLY_LIMIT(t, "r", 1, 0.0, 0.0, 1, -1.0, 0);
  ACK(t, r4);
  /* the rate alone again: a new bucket is full */
  SET_LIMIT(t, "r", 0, 1.0, 5.0);
  ONLY_LIMIT(t, "r", 0, 1.0, 5.0, 0, 5.0, 0);
  CLAIM_EMPTY(t);
  harel_transport_close(t);
}

/* remove_limit serves the key's held groups at once (the stats count them ready again), a
 * lease taken before it finishes, and the list is empty; a second remove is refused naming
 * the key. */
static void remove_serves_the_held_groups(void) {
  static const char *const groups[] = {"a", "b", "c", NULL};
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *a, *b, *c;
  harel_error *e = NULL;
  if (t == NULL) return;
  SET_LIMIT(t, "k", 1, 0.0, 0.0);
  publish_keyed(t, groups, "k");
  a = CLAIMS(t, "a");
  CLAIM_EMPTY(t);
  ONLY_LIMIT(t, "k", 1, 0.0, 0.0, 1, -1.0, 2);
  COUNTS(t, 0, 1, 2);
  REMOVE_LIMIT(t, "k");
  EXPECT(n_limits(t) == 0);
  COUNTS(t, 2, 1, 0);
  b = CLAIMS(t, "b");
  c = CLAIMS(t, "c");
  CLAIM_EMPTY(t);
  ACK(t, a);
  ACK(t, b);
  ACK(t, c);
  EXPECT(harel_transport_remove_limit(t, "k", &e) == HAREL_ERR_ARGUMENT && e != NULL);
  EXPECT_STR(harel_error_message(e), "routing key \"k\" has no limit to remove");
  harel_error_free(e);
  harel_transport_close(t);
}

/* ---- the list --------------------------------------------------------------------------- */

/* harel_transport_limits: empty, then each limit by routing key in byte order (a multi-byte
 * key last, its length in bytes), with the largest numbers and a small rate; a set of a key
 * already limited replaces it in its place; the list is the caller's, alive past the
 * handle's close; NULL frees nothing. */
static void limits_lists_each_limit_in_order(void) {
  static const char ETE[] = "\xc3\xa9t\xc3\xa9";
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_limit_list *list;
  if (t == NULL) return;
  harel_limit_list_free(NULL);
  list = LIMITS(t);
  if (list != NULL) EXPECT(list->n_limits == 0);
  harel_limit_list_free(list);
  SET_LIMIT(t, "us", 2, 0.0, 0.0);
  SET_LIMIT(t, ETE, 3, 0.5, 1.0);
  SET_LIMIT(t, "eu", 0, 0.001, 1.0);
  SET_LIMIT(t, "a", 1000000, 1000000.0, 1000000.0);
  SET_LIMIT(t, "us", 7, 0.0, 0.0); /* replaces */
  list = LIMITS(t);
  if (list != NULL && EXPECT(list->n_limits == 4)) {
    IS_LIMIT(list, 0, "a", 1000000, 1000000.0, 1000000.0, 0, 1000000.0, 0);
    IS_LIMIT(list, 1, "eu", 0, 0.001, 1.0, 0, 1.0, 0);
    IS_LIMIT(list, 2, "us", 7, 0.0, 0.0, 0, -1.0, 0);
    IS_LIMIT(list, 3, ETE, 3, 0.5, 1.0, 0, 1.0, 0);
    EXPECT(list->limits[3].routing_key_len == 5 && list->limits[3].routing_key[5] == '\0');
  }
  REMOVE_LIMIT(t, "eu");
  harel_transport_close(t);
  if (list != NULL && list->n_limits == 4) { /* the list outlives the handle and the remove */
    EXPECT(strcmp(list->limits[1].routing_key, "eu") == 0 && list->limits[1].rate == 0.001);
    EXPECT(strcmp(list->limits[2].routing_key, "us") == 0 && list->limits[2].concurrency == 7);
  }
  harel_limit_list_free(list);
}

/* ---- refusals ----------------------------------------------------------------------------- */

static int says(const char *message, const char *text, int prefix) {
  return message != NULL &&
         (prefix ? strncmp(message, text, strlen(text)) == 0 : strcmp(message, text) == 0);
}

/* set_limit of `key`, `concurrency`, `rate`, `burst` refused with HAREL_ERR_ARGUMENT, the
 * message naming `parameter` (NULL: none) and being `text` (or, prefix set, starting with
 * it), with err NULL and with err given. */
#define SET_REFUSED(t, key, concurrency, rate, burst, parameter, text)                      \
  set_refused_at((t), (key), (concurrency), (rate), (burst), (parameter), (text), 0, __FILE__, \
                 __LINE__)
#define SET_REFUSED_STARTING(t, key, concurrency, rate, burst, parameter, text)             \
  set_refused_at((t), (key), (concurrency), (rate), (burst), (parameter), (text), 1, __FILE__, \
                 __LINE__)
static void set_refused_at(harel_transport *t, const char *key, uint32_t concurrency, double rate,
                           double burst, const char *parameter, const char *text, int prefix,
                           const char *file, int line) {
  harel_error *e = NULL;
  harel_status s;
  const char *message;
  char expr[200];
  snprintf(expr, sizeof expr, "set_limit(%s, %s, %lu, %g, %g)", t ? "t" : "NULL",
           key ? "key" : "NULL", (unsigned long)concurrency, rate, burst);
  s = harel_transport_set_limit(t, key, concurrency, rate, burst, NULL);
  message = harel_last_error();
  if (expect_error(s, HAREL_ERR_ARGUMENT, parameter, expr, file, line) &&
      !says(message, text, prefix))
    test_fail(file, line, "%s: the message is \"%s\", want \"%s\"%s", expr, message, text,
              prefix ? "..." : "");
  s = harel_transport_set_limit(t, key, concurrency, rate, burst, &e);
  message = e != NULL ? harel_error_message(e) : NULL;
  if (message != NULL && !says(message, text, prefix))
    test_fail(file, line, "%s: the error's message is \"%s\", want \"%s\"", expr, message, text);
  expect_call(s, &e, HAREL_ERR_ARGUMENT, parameter, expr, file, line);
}

/* The same for remove_limit of `key`. */
#define REMOVE_REFUSED(t, key, parameter, text) \
  remove_refused_at((t), (key), (parameter), (text), 0, __FILE__, __LINE__)
#define REMOVE_REFUSED_STARTING(t, key, parameter, text) \
  remove_refused_at((t), (key), (parameter), (text), 1, __FILE__, __LINE__)
static void remove_refused_at(harel_transport *t, const char *key, const char *parameter,
                              const char *text, int prefix, const char *file, int line) {
  harel_error *e = NULL;
  harel_status s;
  const char *message;
  char expr[200];
  snprintf(expr, sizeof expr, "remove_limit(%s, %s)", t ? "t" : "NULL", key ? "key" : "NULL");
  s = harel_transport_remove_limit(t, key, NULL);
  message = harel_last_error();
  if (expect_error(s, HAREL_ERR_ARGUMENT, parameter, expr, file, line) &&
      !says(message, text, prefix))
    test_fail(file, line, "%s: the message is \"%s\", want \"%s\"%s", expr, message, text,
              prefix ? "..." : "");
  s = harel_transport_remove_limit(t, key, &e);
  message = e != NULL ? harel_error_message(e) : NULL;
  if (message != NULL && !says(message, text, prefix))
    test_fail(file, line, "%s: the error's message is \"%s\", want \"%s\"", expr, message, text);
  expect_call(s, &e, HAREL_ERR_ARGUMENT, parameter, expr, file, line);
}

/* A number out of range and what the library says of it. */
typedef struct {
  double value;
  const char *says;
} bad_number;

/* Every bad argument of set_limit, each refused with its message, k's limit (set before)
 * and the rest of the queue unchanged: no limit added, none replaced. */
static void bad_arguments_of_set_limit(void) {
  static const bad_number bad_rate[] = {
      {0.0, "rate is 0; " RATE_MUST_BE},     {-1.0, "rate is -1; " RATE_MUST_BE},
      {NAN, "rate is NaN; " RATE_MUST_BE},   {INFINITY, "rate is inf; " RATE_MUST_BE},
      {-INFINITY, "rate is -inf; " RATE_MUST_BE}, {2000000.0, "rate is 2000000; " RATE_MUST_BE},
      {1000000.5, "rate is 1000000.5; " RATE_MUST_BE}};
  static const bad_number bad_burst[] = {
      {0.0, "burst is 0; " BURST_MUST_BE},   {0.5, "burst is 0.5; " BURST_MUST_BE},
      {-1.0, "burst is -1; " BURST_MUST_BE}, {NAN, "burst is NaN; " BURST_MUST_BE},
      {INFINITY, "burst is inf; " BURST_MUST_BE}, {2000000.0, "burst is 2000000; " BURST_MUST_BE}};
  static const uint32_t bad_concurrency[] = {1000001, UINT32_MAX};
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *held;
  char text[200];
  size_t i, u;
  if (t == NULL) return;
  SET_LIMIT(t, "k", 2, 0.0, 0.0);
  EXPECT_STATUS(harel_transport_publish(t, "g", "\"g\"", 0, "k", NULL), HAREL_OK);
  held = CLAIMS(t, "g");
  /* t, routing_key */
  SET_REFUSED(NULL, "k", 1, 0.0, 0.0, "t", "t is NULL");
  SET_REFUSED(NULL, NULL, 0, 0.0, 0.0, "t", "t is NULL");
  SET_REFUSED(t, NULL, 1, 0.0, 0.0, "routing_key", "routing_key is NULL");
  SET_REFUSED(t, "", 1, 0.0, 0.0, "routing_key", "routing_key is empty");
  SET_REFUSED(t, "", 0, 0.0, 0.0, "routing_key", "routing_key is empty"); /* the key first */
  for (u = 0; u < N_BAD_UTF8; u++)
    SET_REFUSED_STARTING(t, BAD_UTF8[u], 1, 0.0, 0.0, "routing_key",
                         "routing_key is not valid UTF-8");
  /* neither limit: concurrency 0, rate and burst 0 */
  SET_REFUSED(t, "k", 0, 0.0, 0.0, NULL, NEITHER);
  SET_REFUSED(t, "new", 0, 0.0, 0.0, NULL, NEITHER);
  /* the concurrency */
  for (i = 0; i < N_OF(bad_concurrency); i++) {
    snprintf(text, sizeof text, "concurrency is %lu; " CONCURRENCY_MUST_BE,
             (unsigned long)bad_concurrency[i]);
    SET_REFUSED(t, "k", bad_concurrency[i], 0.0, 0.0, "concurrency", text);
    SET_REFUSED(t, "k", bad_concurrency[i], 1.0, 1.0, "concurrency", text);
    SET_REFUSED(t, "k", bad_concurrency[i], NAN, 1.0, "concurrency", text); /* checked first */
  }
  /* the rate (a burst beside it: a rate limit), alone and beside a concurrency */
  for (i = 0; i < N_OF(bad_rate); i++) {
    SET_REFUSED(t, "k", 0, bad_rate[i].value, 1.0, "rate", bad_rate[i].says);
    SET_REFUSED(t, "k", 3, bad_rate[i].value, 1.0, "rate", bad_rate[i].says);
    SET_REFUSED(t, "new", 0, bad_rate[i].value, 0.5, "rate", bad_rate[i].says); /* rate first */
  }
  /* the burst */
  for (i = 0; i < N_OF(bad_burst); i++) {
    SET_REFUSED(t, "k", 0, 1.0, bad_burst[i].value, "burst", bad_burst[i].says);
    SET_REFUSED(t, "k", 3, 1.0, bad_burst[i].value, "burst", bad_burst[i].says);
  }
  /* nothing changed: k's limit as it was, with its lease; no other limit */
  ONLY_LIMIT(t, "k", 2, 0.0, 0.0, 1, -1.0, 0);
  ACK(t, held);
  harel_transport_close(t);
}

/* Every bad argument of remove_limit, each refused with its message (a key without a limit
 * named as Rust quotes it), the limits in force unchanged. */
static void bad_arguments_of_remove_limit(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  size_t u;
  if (t == NULL) return;
  SET_LIMIT(t, "k", 1, 0.0, 0.0);
  SET_LIMIT(t, "r", 0, 1.0, 1.0);
  REMOVE_REFUSED(NULL, "k", "t", "t is NULL");
  REMOVE_REFUSED(NULL, NULL, "t", "t is NULL");
  REMOVE_REFUSED(t, NULL, "routing_key", "routing_key is NULL");
  REMOVE_REFUSED(t, "", "routing_key", "routing_key is empty");
  for (u = 0; u < N_BAD_UTF8; u++)
    REMOVE_REFUSED_STARTING(t, BAD_UTF8[u], "routing_key", "routing_key is not valid UTF-8");
  REMOVE_REFUSED(t, "none", NULL, "routing key \"none\" has no limit to remove");
  REMOVE_REFUSED(t, "K", NULL, "routing key \"K\" has no limit to remove"); /* keys are exact */
  REMOVE_REFUSED(t, "\xc3\xa9t\xc3\xa9", NULL,
                 "routing key \"\xc3\xa9t\xc3\xa9\" has no limit to remove");
  EXPECT(n_limits(t) == 2);
  REMOVE_LIMIT(t, "k");
  REMOVE_REFUSED(t, "k", NULL, "routing key \"k\" has no limit to remove");
  ONLY_LIMIT(t, "r", 0, 1.0, 1.0, 0, 1.0, 0);
  harel_transport_close(t);
}

/* harel_transport_limits refuses a NULL t or out, *out NULL after it. */
#define LIMITS_FAILS(parameter, t, text)                                               \
  do {                                                                                 \
    harel_limit_list *out_ = NOT_SET_LIMITS;                                           \
    harel_error *e_ = NULL;                                                            \
    EXPECT_BAD((parameter), (out_ = NOT_SET_LIMITS, harel_transport_limits((t), &out_, ERR))); \
    EXPECT(out_ == NULL);                                                              \
    out_ = NOT_SET_LIMITS;                                                             \
    EXPECT(harel_transport_limits((t), &out_, &e_) == HAREL_ERR_ARGUMENT && e_ != NULL); \
    EXPECT(out_ == NULL);                                                              \
    EXPECT_STR(harel_error_message(e_), (text));                                       \
    harel_error_free(e_);                                                              \
  } while (0)

static void bad_arguments_of_limits(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_error *e = NULL;
  if (t == NULL) return;
  SET_LIMIT(t, "k", 1, 0.0, 0.0);
  LIMITS_FAILS("t", NULL, "t is NULL");
  EXPECT_BAD("out", harel_transport_limits(t, NULL, ERR));
  EXPECT_BAD("out", harel_transport_limits(NULL, NULL, ERR)); /* out is checked first */
  EXPECT(harel_transport_limits(t, NULL, &e) == HAREL_ERR_ARGUMENT && e != NULL);
  EXPECT_STR(harel_error_message(e), "out is NULL");
  harel_error_free(e);
  EXPECT(n_limits(t) == 1);
  harel_transport_close(t);
}

/* A `*err` already set: each call refused, nothing done, limits' *out set NULL. */
static void a_set_err_is_refused_by_set_remove_and_limits(void) {
  double now = T0;
  char was_text[512];
  harel_transport *t = open_at(":memory:", &now);
  harel_error *stale = NULL;
  const harel_error *was;
  harel_limit_list *list = NOT_SET_LIMITS;
  if (t == NULL) return;
  EXPECT(harel_transport_set_limit(NULL, "k", 1, 0.0, 0.0, &stale) == HAREL_ERR_ARGUMENT);
  if (!EXPECT(stale != NULL)) {
    harel_transport_close(t);
    return;
  }
  was = stale;
  snprintf(was_text, sizeof was_text, "%s", harel_error_message(stale));
  REFUSED(harel_transport_set_limit(t, "k", 1, 0.0, 0.0, &stale));
  REFUSED(harel_transport_set_limit(t, "r", 0, 1.0, 1.0, &stale));
  EXPECT(n_limits(t) == 0);
  SET_LIMIT(t, "k", 2, 0.0, 0.0);
  REFUSED(harel_transport_remove_limit(t, "k", &stale));
  REFUSED(harel_transport_limits(t, &list, &stale));
  EXPECT(list == NULL);
  ONLY_LIMIT(t, "k", 2, 0.0, 0.0, 0, -1.0, 0); /* the refused set made none, the remove left it */
  harel_transport_close(t);
  harel_error_free(stale);
}

/* ---- a busy database, a sharded queue ----------------------------------------------------- */

/* Another process holds the write lock, and the busy timeout is 0: set_limit and
 * remove_limit are HAREL_ERR_BUSY and changed nothing once the lock is free again; limits
 * takes no write lock and answers. */
static void status_busy(void) {
  double now = T0;
  char path[300], release[300];
  harel_options *o = harel_options_new();
  harel_transport *t = NULL;
  harel_error *e = NULL;
  FILE *holder;
  if (!EXPECT(o != NULL)) return;
  snprintf(release, sizeof release, "%s/release", temp_dir);
  EXPECT_CALL(harel_options_set_busy_timeout(o, 0.0, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_clock(o, test_clock, &now, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_open(new_path(path, sizeof path), o, &t, &e), &e, HAREL_OK);
  harel_options_free(o);
  if (t == NULL) return;
  SET_LIMIT(t, "k", 1, 0.0, 0.0);
  holder = hold_write_lock(path, release);
  if (EXPECT(holder != NULL)) {
    EXPECT_FAILS(HAREL_ERR_BUSY, NULL, harel_transport_set_limit(t, "k", 5, 0.0, 0.0, ERR));
    EXPECT_FAILS(HAREL_ERR_BUSY, NULL, harel_transport_set_limit(t, "r", 0, 1.0, 2.0, ERR));
    EXPECT_FAILS(HAREL_ERR_BUSY, NULL, harel_transport_remove_limit(t, "k", ERR));
    ONLY_LIMIT(t, "k", 1, 0.0, 0.0, 0, -1.0, 0);
    EXPECT(release_write_lock(holder, release));
  }
  ONLY_LIMIT(t, "k", 1, 0.0, 0.0, 0, -1.0, 0); /* as it was */
  REMOVE_LIMIT(t, "k");
  EXPECT(n_limits(t) == 0);
  harel_transport_close(t);
}

#define N_SHARDS 3
#define SHARD_GROUPS 12

/* On a queue sharded over three files, all groups with the key "k": set_limit holds on every
 * shard (a concurrency of 1 lets one lease through on each shard that has a group of k), the
 * list gives k once with in_use, tokens and held summed over the shards; remove ends it on
 * every shard. */
static void a_sharded_queue_sums_the_list(void) {
  char paths[N_SHARDS][300], group[16];
  const char *dbs[N_SHARDS];
  double now = T0;
  harel_options *o = harel_options_new();
  harel_transport *t = NULL;
  harel_lease *leases[SHARD_GROUPS], *l;
  harel_error *e = NULL;
  size_t on[N_SHARDS] = {0}, shard, n = 0, busy_shards = 0, i;
  if (!EXPECT(o != NULL)) return;
  for (i = 0; i < N_SHARDS; i++) dbs[i] = new_path(paths[i], sizeof paths[i]);
  EXPECT_CALL(harel_options_set_clock(o, test_clock, &now, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_synchronous_full(o, false, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_open_shards(dbs, N_SHARDS, o, &t, &e), &e, HAREL_OK);
  harel_options_free(o);
  if (t == NULL) return;
  SET_LIMIT(t, "k", 1, 0.0, 0.0);
  for (i = 0; i < SHARD_GROUPS; i++) {
    snprintf(group, sizeof group, "g%d", (int)i);
    EXPECT_STATUS(harel_transport_publish(t, group, "1", 0, "k", NULL), HAREL_OK);
    if (EXPECT(harel_shard_of(group, N_SHARDS, &shard, NULL) == HAREL_OK) && shard < N_SHARDS)
      on[shard]++;
  }
  for (i = 0; i < N_SHARDS; i++) { /* these ids put at least two groups on each shard */
    EXPECT(on[i] >= 2);
    busy_shards += on[i] > 0;
  }
  /* one lease a shard (that has a group of k), the others held */
  while (n < SHARD_GROUPS && (l = NULL, harel_transport_claim(t, "w", VIS, 0, NULL, 0, &l,
                                                              NULL)) == HAREL_OK)
    leases[n++] = l;
  EXPECT(n == busy_shards);
  ONLY_LIMIT(t, "k", 1, 0.0, 0.0, n, -1.0, SHARD_GROUPS - n);
  COUNTS(t, 0, n, SHARD_GROUPS - n); /* the shards' held groups, summed */
  /* a rate beside it, on every shard: a full bucket of 2 each, listed as their sum */
  SET_LIMIT(t, "k", 1, 1.0, 2.0);
  ONLY_LIMIT(t, "k", 1, 1.0, 2.0, n, 2.0 * N_SHARDS, SHARD_GROUPS - n);
  CLAIM_EMPTY(t);
  if (n > 0) { /* an ack makes room on its shard: the next claim takes one of its tokens */
    ACK(t, leases[0]);
    leases[0] = CLAIM(t, "w", NULL);
    ONLY_LIMIT(t, "k", 1, 1.0, 2.0, n, 2.0 * N_SHARDS - 1.0, SHARD_GROUPS - n - 1);
  }
  /* removed on every shard: every held group served at once */
  REMOVE_LIMIT(t, "k");
  EXPECT(n_limits(t) == 0);
  for (i = 0; i < n; i++) ACK(t, leases[i]);
  EXPECT(drain_now(t, NULL, NULL) == (int)(SHARD_GROUPS - n - (n > 0)));
  EXPECT(harel_transport_remove_limit(t, "k", &e) == HAREL_ERR_ARGUMENT && e != NULL);
  EXPECT_STR(harel_error_message(e), "routing key \"k\" has no limit to remove");
  harel_error_free(e);
  harel_transport_close(t);
}

/* ---- threads ------------------------------------------------------------------------------ */

#define CLAIMERS 4
#define LIMIT_N 2
#define T_GROUPS 8
#define T_EACH 3
#define T_MESSAGES (T_GROUPS * T_EACH)

typedef struct {
  harel_transport *t;
  pthread_mutex_t lock;
  int leased_now, most, acked;
} shared_state;

typedef struct {
  shared_state *shared;
  int failures;
} claimer;

/* Claims and acks until every message is acked: between its claim and its ack a lease is
 * counted (so the count is never above the leases the library holds); an EMPTY waits a
 * little. */
static void *claim_under_the_limit(void *arg) {
  claimer *c = arg;
  shared_state *s = c->shared;
  int tries, done = 0;
  for (tries = 0; !done && tries < 20000; tries++) {
    harel_lease *l = NULL;
    harel_status status = harel_transport_claim(s->t, "w", VIS, 0, NULL, 0, &l, NULL);
    if (status == HAREL_OK && l != NULL) {
      pthread_mutex_lock(&s->lock);
      if (++s->leased_now > s->most) s->most = s->leased_now;
      pthread_mutex_unlock(&s->lock);
      pause_for(0.001);
      pthread_mutex_lock(&s->lock);
      s->leased_now--;
      pthread_mutex_unlock(&s->lock);
      c->failures += harel_transport_ack(s->t, l, NULL) != HAREL_OK;
      harel_lease_free(l);
      pthread_mutex_lock(&s->lock);
      s->acked++;
      pthread_mutex_unlock(&s->lock);
    } else {
      c->failures += status != HAREL_EMPTY;
      pause_for(0.0005);
    }
    pthread_mutex_lock(&s->lock);
    done = s->acked >= T_MESSAGES;
    pthread_mutex_unlock(&s->lock);
  }
  return NULL;
}

/* Lists the limits while the claimers run: k alone, never more than LIMIT_N in use. */
static void *list_the_limits(void *arg) {
  claimer *c = arg;
  shared_state *s = c->shared;
  int i, done = 0;
  for (i = 0; !done && i < 2000; i++) {
    harel_limit_list *list = NULL;
    c->failures += harel_transport_limits(s->t, &list, NULL) != HAREL_OK || list == NULL ||
                   list->n_limits != 1 || strcmp(list->limits[0].routing_key, "k") != 0 ||
                   list->limits[0].in_use > LIMIT_N;
    harel_limit_list_free(list);
    pause_for(0.001);
    pthread_mutex_lock(&s->lock);
    done = s->acked >= T_MESSAGES;
    pthread_mutex_unlock(&s->lock);
  }
  return NULL;
}

/* Threads sharing one handle claim groups of a key limited to 2 leases at once, and list the
 * limits: never more than 2 leased at once, each message acked once, nothing left held. */
static void threads_claim_under_a_limit_on_one_handle(void) {
  double now = T0;
  shared_state shared;
  pthread_t threads[CLAIMERS + 1];
  claimer me[CLAIMERS + 1];
  char group[16];
  int i, k, started[CLAIMERS + 1];
  shared.t = open_at(":memory:", &now);
  if (shared.t == NULL) return;
  pthread_mutex_init(&shared.lock, NULL);
  shared.leased_now = shared.most = shared.acked = 0;
  SET_LIMIT(shared.t, "k", LIMIT_N, 0.0, 0.0);
  for (k = 0; k < T_EACH; k++)
    for (i = 0; i < T_GROUPS; i++) {
      snprintf(group, sizeof group, "g%d", i);
      EXPECT_STATUS(harel_transport_publish(shared.t, group, "1", 0, "k", NULL), HAREL_OK);
    }
  for (i = 0; i <= CLAIMERS; i++) {
    me[i].shared = &shared;
    me[i].failures = 0;
    started[i] = EXPECT(pthread_create(&threads[i], NULL,
                                       i < CLAIMERS ? claim_under_the_limit : list_the_limits,
                                       &me[i]) == 0);
  }
  for (i = 0; i <= CLAIMERS; i++)
    if (started[i]) pthread_join(threads[i], NULL);
  for (i = 0; i <= CLAIMERS; i++)
    if (me[i].failures != 0)
      test_fail(__FILE__, __LINE__, "thread %d: %d calls answered wrong", i, me[i].failures);
  if (shared.acked != T_MESSAGES || shared.most > LIMIT_N || shared.most < 1)
    test_fail(__FILE__, __LINE__, "%d of %d messages acked, at most %d leased at once (limit %d)",
              shared.acked, T_MESSAGES, shared.most, LIMIT_N);
  ONLY_LIMIT(shared.t, "k", LIMIT_N, 0.0, 0.0, 0, -1.0, 0);
  CLAIM_EMPTY(shared.t);
  harel_transport_close(shared.t);
  pthread_mutex_destroy(&shared.lock);
}

const test_case limits_tests[] = {
    TEST(a_concurrency_limit_lets_one_through),
    TEST(a_rate_limit_in_the_list),
    TEST(remove_serves_the_held_groups),
    TEST(limits_lists_each_limit_in_order),
    TEST(bad_arguments_of_set_limit),
    TEST(bad_arguments_of_remove_limit),
    TEST(bad_arguments_of_limits),
    TEST(a_set_err_is_refused_by_set_remove_and_limits),
    TEST(status_busy),
    TEST(a_sharded_queue_sums_the_list),
    TEST(threads_claim_under_a_limit_on_one_handle),
    {NULL, NULL}};
