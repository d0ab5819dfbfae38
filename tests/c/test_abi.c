/*
 * test_abi.c: the mapping of the C ABI (docs/abi.md, include/harel_transport.h). What the
 * queue does is tested once, in Rust (tests/contract.rs); this suite checks what C adds
 * on top: every exported function called; every status the C API returns produced; for
 * every fallible function, NULL in each pointer, invalid UTF-8 in each string and numbers
 * out of range, each with `err` NULL and with `err` given (the status, a message naming
 * the parameter, harel_last_error() equal to it) and the rule that a `*err` already set is
 * refused with nothing done; the lease's lengths (NUL bytes a foreign writer stored
 * included); one handle used from several threads, each call with its own error; errors
 * read on another thread; and, run under valgrind and ASan + LSan (`make test-c`,
 * `make test-reliability`), that nothing leaks. One end-to-end smoke test runs the queue.
 * The calls of issue #14 (max_attempts and lease.attempts, dead_letter, redrive, purge_dead,
 * purge_group, purge, release, and the looks: stats, groups, peek, dead_letters) have the
 * same: each one's outputs field by field, pages followed by their next_cursor, pages of
 * many strings freed, and their bad arguments (cursors of another listing or made up, a
 * selection that is not exactly one) refused with the fixture unchanged.
 * The worker loop's calls (issue #15: claim_wait, claim_many, ack_many, ack_and_claim_many,
 * extend, harel_cancel, interrupt) have the same, and their waits ended from elsewhere: a
 * cancel or an interrupt from another thread, a commit by another handle, by another process
 * (this program run again as a child, `--publish`), a lease's or a park's end, and one message
 * among eight waiting threads.
 * harel_transport_metrics (issue 25): every field after known calls, and its bad arguments.
 * The readiness descriptor (issue 26: harel_transport_watch, harel_watch_fd, _rearm, _free):
 * readable when new, cleared by a rearm that finds nothing, readable again after a commit
 * by another transport of this process or by another process (a few ms), at a lease's or a
 * park's end (not before), for good once its transport is closed; its filter; one watch
 * polled by several threads; rearm under another process's write lock and on dropped
 * tables; a watch with no descriptor left to the process; every bad argument, a watch of
 * another transport, a freed one. Spurious wakes are allowed: no test counts on their
 * absence.
 * The producers' calls (issue 24: publish_with, publish_many_with, set_key_retention, the state
 * HAREL_GROUP_DELAYED, stats' delayed and next_due_at): seq and duplicate handed out (each
 * output may be NULL), duplicates single, within a batch and after an ack; every bad argument
 * named ("messages[i]." in a batch) with nothing written, no key taken and the outputs
 * untouched; a delayed message counted, listed and peeked as such, not claimed before its
 * time, claimed after it, the group's later messages behind it; a waiting claim woken at its
 * time; a key forgotten after the retention; a keyed publish on a queue without the keys
 * table; busy, a set `*err`.
 * Publishing inside the application's transaction (issue 24: harel_transport_begin, harel_tx_*,
 * harel_rows_free): rows and messages committed together and read back by a query and a claim;
 * rollback, a free before the commit and a closed transport keeping nothing; every value type
 * in and out of rows; the commit's outcomes for an array shorter than the publishes; a failing
 * statement ending the transaction; every call refused once it ended but rollback; every bad
 * argument, a freed handle, a second free; a second transaction of the transport busy; busy
 * under another process's lock; a keyed publish without the keys table; threads committing on
 * one file.
 * A queue sharded over several databases (issue 28: harel_transport_open_shards,
 * harel_transport_shard_count, harel_shard_of, the pages' `shards`): shard_of's known values;
 * three files made a set and reopened; messages of groups on every shard claimed and acked
 * (one by one and in batches) exactly once through the one handle; each listed group's and
 * dead letter's shard; redrive and purge_dead by seqs refused, by group and all working; a
 * transaction refused at its first call; every bad argument and every list that does not
 * match the set (missing, extra, reordered, another queue's database, one holding messages
 * with no record; a member opened alone) refused with *out NULL; a set `*err`.
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harel_test.h"

#define VIS 30.0  /* the visibility of every claim */
#define T0 1000.0 /* where the test clock starts */

static char temp_dir[256];
static const char *self_path; /* argv[0]: run again as a child that publishes (--publish) */
extern char **environ;

static const char *const BAD_UTF8[] = {
    "\xff",         /* never valid */
    "ab\xc3",       /* a truncated two-byte sequence */
    "\xc0\xaf",     /* an overlong '/' */
    "\xed\xa0\x80", /* a UTF-16 surrogate */
};
#define N_BAD_UTF8 (sizeof BAD_UTF8 / sizeof BAD_UTF8[0])
#define N_OF(a) (sizeof a / sizeof a[0])
#define PREFIX_31 "ppppppppppppppppppppppppppppppp" /* one character too long */

/* Where an out-pointer starts, so a test sees the call set it to NULL. */
static harel_lease sentinel_lease;
static char sentinel_string[1];
static int sentinel_handle;
#define NOT_SET_LEASE (&sentinel_lease)
#define NOT_SET_STRING (sentinel_string)
#define NOT_SET_HANDLE ((harel_transport *)&sentinel_handle)
static harel_stats sentinel_stats;
static harel_group_page sentinel_groups;
static harel_message_page sentinel_messages;
static harel_dead_page sentinel_dead;
static harel_metrics sentinel_metrics;
static int sentinel_watch;
#define NOT_SET_STATS (&sentinel_stats)
#define NOT_SET_GROUPS (&sentinel_groups)
#define NOT_SET_MESSAGES (&sentinel_messages)
#define NOT_SET_DEAD (&sentinel_dead)
#define NOT_SET_METRICS (&sentinel_metrics)
#define NOT_SET_WATCH ((harel_watch *)&sentinel_watch)
static int sentinel_tx;
static harel_rows sentinel_rows;
#define NOT_SET_TX ((harel_tx *)&sentinel_tx)
#define NOT_SET_ROWS (&sentinel_rows)
#define NOT_SET_COUNT 777u /* where a count out-parameter starts */

/* ---------------------------------------------------------------------------------------
 * Helpers: a clock the test sets, files, opening, publishing, claiming, child processes.
 */

/* The clock of every test transport: "now" is the double ctx points to. */
static double test_clock(void *ctx) { return *(const double *)ctx; }

/* A path for a new database file in the test's temp dir. */
static const char *new_path(char *buf, size_t size) {
  static int n;
  snprintf(buf, size, "%s/q%d.db", temp_dir, ++n);
  return buf;
}

/* Opens `database` with the clock reading *now. */
static harel_transport *open_at(const char *database, double *now) {
  harel_options *o = harel_options_new();
  harel_transport *t = NULL;
  harel_error *e = NULL;
  if (!EXPECT(o != NULL)) return NULL;
  EXPECT_CALL(harel_options_set_clock(o, test_clock, now, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_synchronous_full(o, false, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_open(database, o, &t, &e), &e, HAREL_OK);
  harel_options_free(o);
  return t;
}

#define PUBLISH(t, group, event) \
  EXPECT_STATUS(harel_transport_publish((t), (group), (event), 0, NULL, NULL), HAREL_OK)

/* Claims for `worker` and expects a lease of `event` (NULL: any); NULL if none. */
#define CLAIM(t, worker, event) claim_at((t), (worker), (event), __FILE__, __LINE__)
static harel_lease *claim_at(harel_transport *t, const char *worker, const char *event,
                             const char *file, int line) {
  harel_lease *lease = NULL;
  harel_error *e = NULL;
  harel_status s = harel_transport_claim(t, worker, VIS, 0, NULL, 0, &lease, &e);
  if (!expect_call(s, &e, HAREL_OK, NULL, "harel_transport_claim", file, line)) return lease;
  if (lease == NULL) {
    test_fail(file, line, "claim returned HAREL_OK with no lease");
  } else if (event != NULL && strcmp(lease->event, event) != 0) {
    test_fail(file, line, "claimed %s, want %s", lease->event, event);
  }
  return lease;
}

#define CLAIM_EMPTY(t)                                                                      \
  do {                                                                                      \
    harel_lease *none_ = NOT_SET_LEASE;                                                     \
    EXPECT_STATUS(harel_transport_claim((t), "w", VIS, 0, NULL, 0, &none_, NULL), HAREL_EMPTY); \
    EXPECT(none_ == NULL);                                                                  \
  } while (0)

/* open is refused with `want` (naming `parameter`; NULL: any), *out NULL after it. */
#define OPEN_FAILS(want, parameter, database, options)                                \
  do {                                                                                \
    harel_transport *out_ = NOT_SET_HANDLE;                                           \
    EXPECT_FAILS((want), (parameter),                                                 \
                 (out_ = NOT_SET_HANDLE,                                              \
                  harel_transport_open((database), (options), &out_, ERR)));          \
    EXPECT(out_ == NULL);                                                             \
  } while (0)

/* A claim (or ack_and_claim, of `lease`) that fails with `want`, naming `parameter`
 * (NULL: any), with *out NULL after it. */
#define CLAIM_FAILS(want, parameter, t, worker, visibility, min_priority, keys, n)           \
  do {                                                                                   \
    harel_lease *out_ = NOT_SET_LEASE;                                                   \
    EXPECT_FAILS((want), (parameter),                                                    \
                 (out_ = NOT_SET_LEASE,                                                  \
                  harel_transport_claim((t), (worker), (visibility), (min_priority),     \
                                        (keys), (n), &out_, ERR)));                      \
    EXPECT(out_ == NULL);                                                                \
  } while (0)
#define ACK_AND_CLAIM_FAILS(want, parameter, t, lease, worker, visibility, min_priority,   \
                            keys, n)                                                     \
  do {                                                                                   \
    harel_lease *out_ = NOT_SET_LEASE;                                                   \
    EXPECT_FAILS((want), (parameter),                                                    \
                 (out_ = NOT_SET_LEASE,                                                  \
                  harel_transport_ack_and_claim((t), (lease), (worker), (visibility),    \
                                                (min_priority), (keys), (n), &out_, ERR))); \
    EXPECT(out_ == NULL);                                                                \
  } while (0)
#define CLAIM_BAD(parameter, ...) CLAIM_FAILS(HAREL_ERR_ARGUMENT, parameter, __VA_ARGS__)
#define ACK_AND_CLAIM_BAD(parameter, ...) \
  ACK_AND_CLAIM_FAILS(HAREL_ERR_ARGUMENT, parameter, __VA_ARGS__)

/* The looks (stats, groups, peek, dead_letters) fail with `want`, naming `parameter`
 * (NULL: any), with *out NULL after it. */
#define STATS_FAILS(want, parameter, t)                                                    \
  do {                                                                                     \
    harel_stats *out_ = NOT_SET_STATS;                                                     \
    EXPECT_FAILS((want), (parameter),                                                      \
                 (out_ = NOT_SET_STATS, harel_transport_stats((t), &out_, ERR)));          \
    EXPECT(out_ == NULL);                                                                  \
  } while (0)
#define GROUPS_FAILS(want, parameter, t, state, cursor, limit)                             \
  do {                                                                                     \
    harel_group_page *out_ = NOT_SET_GROUPS;                                               \
    EXPECT_FAILS((want), (parameter),                                                      \
                 (out_ = NOT_SET_GROUPS,                                                   \
                  harel_transport_groups((t), (state), (cursor), (limit), &out_, ERR)));   \
    EXPECT(out_ == NULL);                                                                  \
  } while (0)
#define PEEK_FAILS(want, parameter, t, group, cursor, limit)                               \
  do {                                                                                     \
    harel_message_page *out_ = NOT_SET_MESSAGES;                                           \
    EXPECT_FAILS((want), (parameter),                                                      \
                 (out_ = NOT_SET_MESSAGES,                                                 \
                  harel_transport_peek((t), (group), (cursor), (limit), &out_, ERR)));     \
    EXPECT(out_ == NULL);                                                                  \
  } while (0)
#define DEAD_FAILS(want, parameter, t, group, cursor, limit)                               \
  do {                                                                                     \
    harel_dead_page *out_ = NOT_SET_DEAD;                                                  \
    EXPECT_FAILS((want), (parameter),                                                      \
                 (out_ = NOT_SET_DEAD,                                                     \
                  harel_transport_dead_letters((t), (group), (cursor), (limit), &out_, ERR))); \
    EXPECT(out_ == NULL);                                                                  \
  } while (0)

/* The calls with a count out-parameter (redrive, purge_dead, purge_group, purge) refused:
 * the count is left as it was. */
#define REDRIVE_BAD(parameter, t, all, group, seqs, n)                                     \
  do {                                                                                     \
    uint64_t moved_ = NOT_SET_COUNT;                                                       \
    EXPECT_BAD((parameter), harel_transport_redrive((t), (all), (group), (seqs), (n),      \
                                                    &moved_, ERR));                        \
    EXPECT(moved_ == NOT_SET_COUNT);                                                       \
  } while (0)
#define PURGE_DEAD_BAD(parameter, t, all, group, seqs, n)                                  \
  do {                                                                                     \
    uint64_t purged_ = NOT_SET_COUNT;                                                      \
    EXPECT_BAD((parameter), harel_transport_purge_dead((t), (all), (group), (seqs), (n),   \
                                                       &purged_, ERR));                    \
    EXPECT(purged_ == NOT_SET_COUNT);                                                      \
  } while (0)

/* publish_with and publish_many_with (issue 24) refused with `want`, naming `parameter`
 * (NULL: any), their outputs (*seq and *duplicate; seqs and duplicates) left as they were
 * in both runs of the call (err NULL, err given). */
#define NOT_SET_SEQ ((int64_t)-777)
#define NOT_SET_DUP (-777)
#define PUBLISH_WITH_FAILS(want, parameter, t, group, event, priority, routing_key, key, delay, \
                           not_before)                                                         \
  do {                                                                                         \
    int64_t seq_ = NOT_SET_SEQ;                                                                \
    int dup_ = NOT_SET_DUP, kept_ = 0;                                                         \
    harel_status s_;                                                                           \
    EXPECT_FAILS((want), (parameter),                                                          \
                 (seq_ = NOT_SET_SEQ, dup_ = NOT_SET_DUP,                                      \
                  s_ = harel_transport_publish_with((t), (group), (event), (priority),         \
                                                    (routing_key), (key), (delay),             \
                                                    (not_before), &seq_, &dup_, ERR),          \
                  kept_ += seq_ == NOT_SET_SEQ && dup_ == NOT_SET_DUP, s_));                   \
    EXPECT(kept_ == 2);                                                                        \
  } while (0)
#define PUBLISH_WITH_BAD(parameter, ...) PUBLISH_WITH_FAILS(HAREL_ERR_ARGUMENT, parameter, __VA_ARGS__)

#define OUTPUTS_MAX 8 /* the longest batch given to PUBLISH_MANY_WITH_FAILS */
static int64_t seqs_out[OUTPUTS_MAX];
static int dups_out[OUTPUTS_MAX];
static void outputs_reset(void) {
  size_t i;
  for (i = 0; i < OUTPUTS_MAX; i++) seqs_out[i] = NOT_SET_SEQ, dups_out[i] = NOT_SET_DUP;
}
static int outputs_untouched(void) {
  size_t i;
  for (i = 0; i < OUTPUTS_MAX; i++)
    if (seqs_out[i] != NOT_SET_SEQ || dups_out[i] != NOT_SET_DUP) return 0;
  return 1;
}
#define PUBLISH_MANY_WITH_FAILS(want, parameter, t, messages, n, keys, delays, not_before)     \
  do {                                                                                         \
    int kept_ = 0;                                                                             \
    harel_status s_;                                                                           \
    EXPECT_FAILS((want), (parameter),                                                          \
                 (outputs_reset(),                                                             \
                  s_ = harel_transport_publish_many_with((t), (messages), (n), (keys), (delays), \
                                                         (not_before), seqs_out, dups_out, ERR), \
                  kept_ += outputs_untouched(), s_));                                          \
    EXPECT(kept_ == 2);                                                                        \
  } while (0)
#define PUBLISH_MANY_WITH_BAD(parameter, ...) \
  PUBLISH_MANY_WITH_FAILS(HAREL_ERR_ARGUMENT, parameter, __VA_ARGS__)

/* The longest delay, the farthest due time from now and the longest key retention: ten
 * years, in seconds. */
#define MAX_DELAY HAREL_MAX_DELAY
static const double BAD_RETENTION[] = {0.0, -0.0, -1.0, NAN, INFINITY, -INFINITY,
                                       MAX_DELAY + 1.0};

/* publish_with (priority 0, no routing key) that succeeds handing out a seq and
 * `want_duplicate`; the seq, or -1. */
#define PUBLISH_WITH(t, group, event, key, delay, not_before, want_duplicate)                 \
  publish_with_at((t), (group), (event), (key), (delay), (not_before), (want_duplicate),      \
                  __FILE__, __LINE__)
static int64_t publish_with_at(harel_transport *t, const char *group, const char *event,
                               const char *key, double delay, double not_before,
                               int want_duplicate, const char *file, int line) {
  int64_t seq = NOT_SET_SEQ;
  int duplicate = NOT_SET_DUP;
  harel_error *e = NULL;
  harel_status s = harel_transport_publish_with(t, group, event, 0, NULL, key, delay, not_before,
                                                &seq, &duplicate, &e);
  if (!expect_call(s, &e, HAREL_OK, NULL, "harel_transport_publish_with", file, line)) return -1;
  if (seq <= 0 || duplicate != want_duplicate) {
    test_fail(file, line, "publish_with handed out seq %lld, duplicate %d; want a seq and %d",
              (long long)seq, duplicate, want_duplicate);
    return -1;
  }
  return seq;
}

/* The worker loop's calls (issue #15) refused with `want`, naming `parameter` (NULL: any):
 * claim_wait's *out NULL after it; claim_many's and ack_and_claim_many's *n_out 0 and their
 * leases_out not written; extend's lease->lock_expiry as it was. The leases_out of a refused
 * call is `many_out`, as long as the largest max a call may be given. */
static harel_lease *many_out[HAREL_MAX_CLAIM + 1];
static void many_out_reset(void) {
  size_t i;
  for (i = 0; i < N_OF(many_out); i++) many_out[i] = NOT_SET_LEASE;
}
static int many_out_untouched(void) {
  size_t i;
  for (i = 0; i < N_OF(many_out); i++)
    if (many_out[i] != NOT_SET_LEASE) return 0;
  return 1;
}
#define CLAIM_WAIT_FAILS(want, parameter, t, worker, visibility, min_priority, keys, n, wait, \
                         cancel)                                                              \
  do {                                                                                        \
    harel_lease *out_ = NOT_SET_LEASE;                                                        \
    EXPECT_FAILS((want), (parameter),                                                         \
                 (out_ = NOT_SET_LEASE,                                                       \
                  harel_transport_claim_wait((t), (worker), (visibility), (min_priority),     \
                                             (keys), (n), (wait), (cancel), &out_, ERR)));    \
    EXPECT(out_ == NULL);                                                                     \
  } while (0)
/* Both runs of the call (err NULL, err given) are checked: `kept_` counts those that left
 * *n_out 0 and leases_out as it was. */
#define CLAIM_MANY_FAILS(want, parameter, t, worker, visibility, min_priority, keys, n, max,  \
                         wait, cancel)                                                        \
  do {                                                                                        \
    size_t n_out_ = NOT_SET_COUNT;                                                            \
    int kept_ = 0;                                                                            \
    harel_status s_;                                                                          \
    EXPECT_FAILS((want), (parameter),                                                         \
                 (many_out_reset(), n_out_ = NOT_SET_COUNT,                                   \
                  s_ = harel_transport_claim_many((t), (worker), (visibility), (min_priority), \
                                                  (keys), (n), (max), (wait), (cancel),       \
                                                  many_out, &n_out_, ERR),                    \
                  kept_ += n_out_ == 0 && many_out_untouched(), s_));                         \
    EXPECT(kept_ == 2);                                                                       \
  } while (0)
#define ACK_MANY_FAILS(want, parameter, t, leases, n)                                        \
  do {                                                                                        \
    harel_status outcomes_[4];                                                                \
    EXPECT_FAILS((want), (parameter),                                                         \
                 harel_transport_ack_many((t), (leases), (n), outcomes_, ERR));               \
  } while (0)
#define ACK_AND_CLAIM_MANY_FAILS(want, parameter, t, leases, n_leases, worker, visibility,   \
                                 min_priority, keys, n, max)                                  \
  do {                                                                                        \
    harel_status outcomes_[4];                                                                \
    size_t n_out_ = NOT_SET_COUNT;                                                            \
    int kept_ = 0;                                                                            \
    harel_status s_;                                                                          \
    EXPECT_FAILS((want), (parameter),                                                         \
                 (many_out_reset(), n_out_ = NOT_SET_COUNT,                                   \
                  s_ = harel_transport_ack_and_claim_many(                                    \
                      (t), (leases), (n_leases), outcomes_, (worker), (visibility),           \
                      (min_priority), (keys), (n), (max), many_out, &n_out_, ERR),            \
                  kept_ += n_out_ == 0 && many_out_untouched(), s_));                         \
    EXPECT(kept_ == 2);                                                                       \
  } while (0)
#define EXTEND_FAILS(want, parameter, t, lease, visibility)                                  \
  do {                                                                                        \
    harel_lease *l_ = (lease);                                                                \
    double was_ = l_ != NULL ? l_->lock_expiry : 0.0;                                         \
    EXPECT_FAILS((want), (parameter), harel_transport_extend((t), l_, (visibility), ERR));    \
    if (l_ != NULL) EXPECT(l_->lock_expiry == was_);                                          \
  } while (0)
#define CLAIM_WAIT_BAD(parameter, ...) CLAIM_WAIT_FAILS(HAREL_ERR_ARGUMENT, parameter, __VA_ARGS__)
#define CLAIM_MANY_BAD(parameter, ...) CLAIM_MANY_FAILS(HAREL_ERR_ARGUMENT, parameter, __VA_ARGS__)
#define ACK_AND_CLAIM_MANY_BAD(parameter, ...) \
  ACK_AND_CLAIM_MANY_FAILS(HAREL_ERR_ARGUMENT, parameter, __VA_ARGS__)
#define EXTEND_BAD(parameter, ...) EXTEND_FAILS(HAREL_ERR_ARGUMENT, parameter, __VA_ARGS__)

/* Every look answers HAREL_OK with a page or counts (the write lock is not needed). */
static void looks_answer(harel_transport *t, uint64_t groups, const char *file, int line) {
  harel_stats *s = NULL;
  harel_group_page *g = NULL;
  harel_message_page *m = NULL;
  harel_dead_page *d = NULL;
  harel_error *e = NULL;
  if (expect_call(harel_transport_stats(t, &s, &e), &e, HAREL_OK, NULL, "stats", file, line) &&
      (s == NULL || s->groups != groups))
    test_fail(file, line, "stats: %s", s == NULL ? "no stats" : "not the groups there are");
  if (expect_call(harel_transport_groups(t, -1, NULL, 100, &g, &e), &e, HAREL_OK, NULL, "groups",
                  file, line) &&
      (g == NULL || g->n_groups != groups))
    test_fail(file, line, "groups: %s", g == NULL ? "no page" : "not the groups there are");
  if (expect_call(harel_transport_peek(t, "g", NULL, 100, &m, &e), &e, HAREL_OK, NULL, "peek",
                  file, line) &&
      m == NULL)
    test_fail(file, line, "peek: no page");
  if (expect_call(harel_transport_dead_letters(t, NULL, NULL, 100, &d, &e), &e, HAREL_OK, NULL,
                  "dead_letters", file, line) &&
      d == NULL)
    test_fail(file, line, "dead_letters: no page");
  harel_stats_free(s);
  harel_group_page_free(g);
  harel_message_page_free(m);
  harel_dead_page_free(d);
}

/* The queue's counts (the caller frees them); NULL if the call failed. */
#define STATS(t) stats_at((t), __FILE__, __LINE__)
static harel_stats *stats_at(harel_transport *t, const char *file, int line) {
  harel_stats *s = NOT_SET_STATS;
  harel_error *e = NULL;
  harel_status status = harel_transport_stats(t, &s, &e);
  if (!expect_call(status, &e, HAREL_OK, NULL, "harel_transport_stats", file, line)) return NULL;
  if (s == NULL || s == NOT_SET_STATS) {
    test_fail(file, line, "stats returned HAREL_OK with no stats");
    return NULL;
  }
  return s;
}

/* A page of dead letters (the caller frees it); NULL if the call failed. */
#define DEAD_PAGE(t, group, cursor, limit) dead_page_at((t), (group), (cursor), (limit), __FILE__, __LINE__)
static harel_dead_page *dead_page_at(harel_transport *t, const char *group, const char *cursor,
                                     size_t limit, const char *file, int line) {
  harel_dead_page *d = NOT_SET_DEAD;
  harel_error *e = NULL;
  harel_status status = harel_transport_dead_letters(t, group, cursor, limit, &d, &e);
  if (!expect_call(status, &e, HAREL_OK, NULL, "harel_transport_dead_letters", file, line))
    return NULL;
  if (d == NULL || d == NOT_SET_DEAD) {
    test_fail(file, line, "dead_letters returned HAREL_OK with no page");
    return NULL;
  }
  return d;
}

/* Claims for "w" and dead-letters what it got with `reason`, `n` times. */
#define BURY(t, n, reason) bury_at((t), (n), (reason), __FILE__, __LINE__)
static void bury_at(harel_transport *t, int n, const char *reason, const char *file, int line) {
  int i;
  for (i = 0; i < n; i++) {
    harel_lease *l = claim_at(t, "w", NULL, file, line);
    harel_error *e = NULL;
    if (l == NULL) return;
    expect_call(harel_transport_dead_letter(t, l, reason, &e), &e, HAREL_OK, NULL,
                "harel_transport_dead_letter", file, line);
    harel_lease_free(l);
  }
}

/* Acks a lease (if the claim gave one) and frees it. */
#define ACK(t, lease)                                                                       \
  do {                                                                                      \
    harel_lease *l_ = (lease);                                                              \
    if (l_ != NULL) EXPECT_STATUS(harel_transport_ack((t), l_, NULL), HAREL_OK);            \
    harel_lease_free(l_);                                                                   \
  } while (0)

/* A copy of `from` naming another group (its length set to match) or another worker. */
static const harel_lease *with_group(harel_lease *built, const harel_lease *from,
                                     const char *group) {
  *built = *from;
  built->group_id = (char *)group;
  built->group_id_len = group != NULL ? strlen(group) : from->group_id_len;
  return built;
}
static const harel_lease *with_worker(harel_lease *built, const harel_lease *from,
                                      const char *worker) {
  *built = *from;
  built->worker_id = (char *)worker;
  return built;
}

/* A port on the loopback nothing listens on: bound by the kernel's choice, then closed. */
static int closed_port(void) {
  struct sockaddr_in a;
  socklen_t n = sizeof a;
  int port = 1, s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) return port;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(s, (struct sockaddr *)&a, &n) == 0)
    port = ntohs(a.sin_port);
  close(s);
  return port;
}

/* Runs `code` with Python's sqlite3 in a child process (never a second SQLite in this
 * one), with two arguments; its stdout is the returned stream, for pclose. */
static FILE *python_child(const char *name, const char *code, const char *arg1,
                          const char *arg2) {
  char script[400], command[1400];
  FILE *f;
  snprintf(script, sizeof script, "%s/%s.py", temp_dir, name);
  if ((f = fopen(script, "w")) == NULL) return NULL;
  fputs(code, f);
  fclose(f);
  snprintf(command, sizeof command, "python3 '%s' '%s' '%s'", script, arg1, arg2 ? arg2 : "");
  fflush(NULL);
  return popen(command, "r");
}

/* Runs `code` in a child Python to its end; its first line of output, in `line`. */
static int python_run(const char *code, const char *arg, char *line, size_t size) {
  FILE *child = python_child("run", code, arg, NULL);
  int ok;
  line[0] = '\0';
  if (child == NULL) return 0;
  if (fgets(line, (int)size, child) == NULL) line[0] = '\0';
  ok = pclose(child) == 0;
  return ok;
}

/* A child process that holds `database`'s write lock (BEGIN IMMEDIATE) until the file
 * `release` exists; NULL if it could not start or take the lock. */
static const char HOLD_WRITE_LOCK[] =
    "import os, sqlite3, sys, time\n"
    "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "c.execute('PRAGMA journal_mode=WAL')\n"
    "c.execute('BEGIN IMMEDIATE')\n"
    "print('locked', flush=True)\n"
    "deadline = time.time() + 300\n"
    "while not os.path.exists(sys.argv[2]) and time.time() < deadline:\n"
    "    time.sleep(0.01)\n"
    "c.execute('ROLLBACK')\n";

static FILE *hold_write_lock(const char *database, const char *release) {
  char line[32] = "";
  FILE *holder;
  unlink(release);
  holder = python_child("hold", HOLD_WRITE_LOCK, database, release);
  if (holder == NULL) return NULL;
  if (fgets(line, sizeof line, holder) == NULL || strcmp(line, "locked\n") != 0) {
    pclose(holder);
    return NULL;
  }
  return holder;
}

static int release_write_lock(FILE *holder, const char *release) {
  FILE *f = fopen(release, "w");
  int ok = f != NULL;
  if (f != NULL) fclose(f);
  ok &= pclose(holder) == 0;
  unlink(release);
  return ok;
}

/* ---------------------------------------------------------------------------------------
 * The fixture of the bad-argument tests: a queue with g1's first message leased to "w1"
 * (`held`) and its second waiting, and one dead letter (d1's, reason "fixture"). A rejected
 * call must leave it so: fixture_close checks.
 */
typedef struct {
  harel_transport *t;
  double now;
  harel_lease *held;
  int64_t dead_seq;
} fixture;

static int fixture_open(fixture *f) {
  harel_lease *poison;
  f->now = T0;
  f->held = NULL;
  f->dead_seq = -1;
  f->t = open_at(":memory:", &f->now);
  if (f->t == NULL) return 0;
  PUBLISH(f->t, "g1", "\"m1\"");
  PUBLISH(f->t, "g1", "\"m2\"");
  f->held = CLAIM(f->t, "w1", "\"m1\"");
  PUBLISH(f->t, "d1", "\"dead\"");
  poison = CLAIM(f->t, "w0", "\"dead\"");
  if (poison != NULL) {
    if (EXPECT_STATUS(harel_transport_dead_letter(f->t, poison, "fixture", NULL), HAREL_OK))
      f->dead_seq = poison->seq;
    harel_lease_free(poison);
  }
  if (f->held == NULL || f->dead_seq < 0) {
    harel_lease_free(f->held);
    harel_transport_close(f->t);
    return 0;
  }
  return 1;
}

#define FIXTURE_CLOSE(f) fixture_close((f), __FILE__, __LINE__)
static void fixture_close(fixture *f, const char *file, int line) {
  harel_lease *l = NULL;
  harel_stats *s = NULL;
  harel_dead_page *d = NULL;
  int ok;
  f->now = T0;
  /* the counts, and the dead letter as it was */
  ok = harel_transport_stats(f->t, &s, NULL) == HAREL_OK && s != NULL && s->messages == 2 &&
       s->groups == 1 && s->ready == 0 && s->leased == 1 && s->parked == 0 && s->dead == 1;
  harel_stats_free(s);
  ok &= harel_transport_dead_letters(f->t, NULL, NULL, 10, &d, NULL) == HAREL_OK && d != NULL &&
        d->n_letters == 1 && d->letters[0].seq == f->dead_seq &&
        strcmp(d->letters[0].reason, "fixture") == 0;
  harel_dead_page_free(d);
  ok &= harel_transport_ack(f->t, f->held, NULL) == HAREL_OK; /* still w1's */
  ok &= harel_transport_claim(f->t, "w", VIS, 0, NULL, 0, &l, NULL) == HAREL_OK && l != NULL &&
        strcmp(l->event, "\"m2\"") == 0 && harel_transport_ack(f->t, l, NULL) == HAREL_OK;
  harel_lease_free(l);
  l = NULL;
  ok &= harel_transport_claim(f->t, "w", VIS, 0, NULL, 0, &l, NULL) == HAREL_EMPTY;
  harel_lease_free(l);
  if (!ok) test_fail(file, line, "a rejected call changed the queue");
  harel_lease_free(f->held);
  harel_transport_close(f->t);
}

/* ---------------------------------------------------------------------------------------
 * The functions without a status: version, status names, the error's accessors, frees.
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
  EXPECT(harel_version() == v); /* static */
}

static void status_names(void) {
  EXPECT_STR(harel_status_name(HAREL_OK), "HAREL_OK");
  EXPECT_STR(harel_status_name(HAREL_EMPTY), "HAREL_EMPTY");
  EXPECT_STR(harel_status_name(HAREL_ERR_ARGUMENT), "HAREL_ERR_ARGUMENT");
  EXPECT_STR(harel_status_name(HAREL_ERR_DATABASE), "HAREL_ERR_DATABASE");
  EXPECT_STR(harel_status_name(HAREL_ERR_BUSY), "HAREL_ERR_BUSY");
  EXPECT_STR(harel_status_name(HAREL_ERR_LEASE_LOST), "HAREL_ERR_LEASE_LOST");
  EXPECT_STR(harel_status_name(HAREL_ERR_CONNECT), "HAREL_ERR_CONNECT");
  EXPECT_STR(harel_status_name(HAREL_ERR_INTERRUPTED), "HAREL_ERR_INTERRUPTED");
  EXPECT_STR(harel_status_name(HAREL_ERR_PANIC), "HAREL_ERR_PANIC");
  EXPECT_STR(harel_status_name(2), "HAREL_UNKNOWN");
  EXPECT_STR(harel_status_name(-7), "HAREL_UNKNOWN");
  EXPECT_STR(harel_status_name(-98), "HAREL_UNKNOWN");
  EXPECT_STR(harel_status_name(INT32_MIN), "HAREL_UNKNOWN");
  EXPECT_STR(harel_status_name(INT32_MAX), "HAREL_UNKNOWN");
  EXPECT(harel_status_name(HAREL_OK) == harel_status_name(HAREL_OK)); /* static */
  /* the values docs/abi.md fixes */
  EXPECT(HAREL_OK == 0 && HAREL_EMPTY == 1 && HAREL_ERR_ARGUMENT == -1 &&
         HAREL_ERR_DATABASE == -2 && HAREL_ERR_BUSY == -3 && HAREL_ERR_LEASE_LOST == -4 &&
         HAREL_ERR_CONNECT == -5 && HAREL_ERR_INTERRUPTED == -6 && HAREL_ERR_PANIC == -99);
  EXPECT(HAREL_MAX_CLAIM == 1000);
}

/* Every accessor and every free function accepts NULL. */
static void null_is_fine_for_accessors_and_frees(void) {
  EXPECT(harel_error_status(NULL) == HAREL_OK);
  EXPECT(harel_error_message(NULL) == NULL);
  harel_error_free(NULL);
  harel_lease_free(NULL);
  harel_options_free(NULL);
  harel_string_free(NULL);
  harel_transport_close(NULL); /* void: closing cannot fail */
  harel_stats_free(NULL);
  harel_group_page_free(NULL);
  harel_message_page_free(NULL);
  harel_dead_page_free(NULL);
  harel_metrics_free(NULL);
  harel_cancel_fire(NULL);
  harel_cancel_free(NULL);
  harel_transport_interrupt(NULL);
  harel_tx_free(NULL);
  harel_rows_free(NULL);
  EXPECT(harel_last_error() == NULL);
}

/* An error handed out lives until harel_error_free, whatever calls come after it; the
 * thread's last error is replaced by the next call. */
static void an_error_outlives_later_calls(void) {
  harel_error *first = NULL, *e = NULL;
  harel_options *o = harel_options_new();
  const char *message;
  EXPECT(harel_options_set_prefix(o, "not ok", &first) == HAREL_ERR_ARGUMENT); /* kept */
  if (!EXPECT(first != NULL)) {
    harel_options_free(o);
    return;
  }
  EXPECT_CALL(harel_options_set_prefix(o, "fine", &e), &e, HAREL_OK);
  EXPECT(harel_last_error() == NULL);
  EXPECT_CALL_NAMING(harel_options_set_busy_timeout(o, -1.0, &e), &e, HAREL_ERR_ARGUMENT,
                     "busy_timeout");
  message = harel_error_message(first); /* still the first call's */
  EXPECT(harel_error_status(first) == HAREL_ERR_ARGUMENT);
  EXPECT(message != NULL && names_parameter(message, "prefix"));
  EXPECT(harel_error_message(first) == message); /* the error's own string */
  harel_error_free(first);
  harel_options_free(o);
}

/* ---------------------------------------------------------------------------------------
 * The queue end to end, once: the mapping of every queue function's success.
 */

static void smoke_publish_claim_ack_nack(void) {
  double now = T0;
  char path[300];
  const char *const keys[] = {"k"};
  const harel_message batch[] = {{"b", "{\"n\":2}", 0, NULL}, {"b", "{\"n\":3}", 0, NULL}};
  harel_transport *t = open_at(new_path(path, sizeof path), &now);
  harel_lease *l = NULL, *next = NULL;
  harel_error *e = NULL;
  if (t == NULL) return;
  EXPECT_CALL(harel_transport_publish(t, "a", "{\"n\":1}", 1, "k", &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_publish_many(t, batch, 2, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_publish_many(t, NULL, 0, &e), &e, HAREL_OK);  /* empty */
  EXPECT_CALL(harel_transport_publish_many(t, batch, 0, &e), &e, HAREL_OK); /* n 0: unread */
  /* a routing key and a priority floor reach the claim: only "a" qualifies */
  EXPECT_CALL(harel_transport_claim(t, "w1", VIS, 1, keys, 1, &l, &e), &e, HAREL_OK);
  if (EXPECT(l != NULL)) {
    EXPECT_STR(l->event, "{\"n\":1}");
    EXPECT_STR(l->worker_id, "w1");
    EXPECT(l->lock_expiry == T0 + VIS);
    EXPECT_CALL(harel_transport_nack(t, l, 0.0, &e), &e, HAREL_OK); /* back at once */
    harel_lease_free(l);
  }
  l = NULL;
  EXPECT_CALL(harel_transport_claim(t, "w1", VIS, 1, keys, 1, &l, &e), &e, HAREL_OK);
  if (l != NULL) {
    EXPECT_STR(l->event, "{\"n\":1}"); /* the nacked message again */
    EXPECT_CALL(harel_transport_ack(t, l, &e), &e, HAREL_OK);
  }
  harel_lease_free(l);
  l = CLAIM(t, "w1", NULL); /* "a" is gone: b's first */
  if (l != NULL) {
    /* routing_keys non-NULL with n 0: any group */
    EXPECT_STR(l->event, "{\"n\":2}");
    EXPECT_CALL(harel_transport_ack_and_claim(t, l, "w2", VIS, 0, keys, 0, &next, &e), &e,
                HAREL_OK);
    harel_lease_free(l);
  }
  if (EXPECT(next != NULL)) {
    EXPECT_STR(next->event, "{\"n\":3}");
    EXPECT_STR(next->worker_id, "w2");
  }
  /* a lease stays the caller's after the handle closes, and ends on a new handle */
  harel_transport_close(t);
  t = open_at(path, &now);
  CLAIM_EMPTY(t);
  if (next != NULL) {
    l = NOT_SET_LEASE;
    EXPECT_CALL(harel_transport_ack_and_claim(t, next, "w2", VIS, 0, NULL, 0, &l, &e), &e,
                HAREL_EMPTY);
    EXPECT(l == NULL);
  }
  harel_lease_free(next);
  CLAIM_EMPTY(t);
  harel_transport_close(t);
}

/* Success leaves *err NULL and harel_last_error() NULL, even right after an error. */
static void ok_and_empty_leave_err_null(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *l = NOT_SET_LEASE;
  harel_error *e = NULL;
  if (t == NULL) return;
  EXPECT_BAD("group_id", harel_transport_publish(t, "", "1", 0, NULL, ERR));
  EXPECT_CALL(harel_transport_publish(t, "g", "1", 0, NULL, &e), &e, HAREL_OK);
  EXPECT_BAD("group_id", harel_transport_publish(t, "", "1", 0, NULL, ERR));
  EXPECT_CALL(harel_transport_claim(t, "w", VIS, 4, NULL, 0, &l, &e), &e, HAREL_EMPTY);
  EXPECT(l == NULL);
  EXPECT_CALL(harel_transport_claim(t, "w", VIS, 0, NULL, 0, &l, &e), &e, HAREL_OK);
  ACK(t, l);
  harel_transport_close(t);
}

/* ---------------------------------------------------------------------------------------
 * The lease: its lengths, and a lease the caller fills.
 */

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

/* ack and nack read exactly group_id_len bytes of group_id: a caller-filled lease needs no
 * NUL after its group and must set the length; 0 is refused, naming group_id_len. */
static void a_caller_filled_lease_is_read_by_its_length(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *claimed, mine;
  char group[2] = {'g', 'X'}; /* "g", with no NUL after it */
  char worker[] = "w1";
  if (t == NULL) return;
  PUBLISH(t, "g", "1");
  PUBLISH(t, "g", "2");
  claimed = CLAIM(t, "w1", "1");
  if (claimed == NULL) {
    harel_transport_close(t);
    return;
  }
  /* what a binding does: copy the fields out, free the library's lease, fill its own */
  memset(&mine, 0, sizeof mine);
  mine.seq = claimed->seq;
  mine.group_id = group;
  mine.group_id_len = 1;
  mine.event = NULL; /* not read */
  mine.event_len = 0;
  mine.worker_id = worker;
  mine.lock_expiry = 0.0;
  harel_lease_free(claimed);
  mine.group_id_len = 0;
  EXPECT_BAD("group_id_len", harel_transport_ack(t, &mine, ERR));
  EXPECT_BAD("group_id_len", harel_transport_nack(t, &mine, 0.0, ERR));
  mine.group_id_len = 2; /* "gX": another group */
  EXPECT_FAILS(HAREL_ERR_LEASE_LOST, NULL, harel_transport_ack(t, &mine, ERR));
  mine.group_id_len = 1;
  EXPECT_STATUS(harel_transport_nack(t, &mine, 0.0, NULL), HAREL_OK);
  claimed = CLAIM(t, "w1", "1");
  if (claimed != NULL) {
    mine.seq = claimed->seq;
    EXPECT_STATUS(harel_transport_ack(t, &mine, NULL), HAREL_OK);
    harel_lease_free(claimed);
  }
  ACK(t, CLAIM(t, "w1", "2"));
  CLAIM_EMPTY(t);
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

/* ---------------------------------------------------------------------------------------
 * The statuses besides OK and ARGUMENT: EMPTY, LEASE_LOST, DATABASE, BUSY, CONNECT.
 */

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

static void status_lease_lost(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *l, *got[1];
  const harel_lease *lost[1];
  harel_status outcomes[1];
  harel_error *e = NULL;
  size_t n = NOT_SET_COUNT;
  if (t == NULL) return;
  PUBLISH(t, "g", "1");
  l = CLAIM(t, "w", "1");
  if (l != NULL) {
    EXPECT_STATUS(harel_transport_ack(t, l, NULL), HAREL_OK);
    EXPECT_FAILS(HAREL_ERR_LEASE_LOST, NULL, harel_transport_ack(t, l, ERR));
    EXPECT_FAILS(HAREL_ERR_LEASE_LOST, NULL, harel_transport_nack(t, l, 0.0, ERR));
    EXPECT_FAILS(HAREL_ERR_LEASE_LOST, NULL, harel_transport_nack(t, l, 5.0, ERR));
    ACK_AND_CLAIM_FAILS(HAREL_ERR_LEASE_LOST, NULL, t, l, "w", VIS, 0, NULL, 0);
    EXTEND_FAILS(HAREL_ERR_LEASE_LOST, NULL, t, l, VIS);
    /* the batch calls report it per lease, and the call is HAREL_OK */
    lost[0] = l;
    EXPECT_CALL(harel_transport_ack_many(t, lost, 1, outcomes, &e), &e, HAREL_OK);
    EXPECT(outcomes[0] == HAREL_ERR_LEASE_LOST);
    outcomes[0] = HAREL_OK;
    EXPECT_CALL(harel_transport_ack_and_claim_many(t, lost, 1, outcomes, "w", VIS, 0, NULL, 0, 1,
                                                   got, &n, &e),
                &e, HAREL_EMPTY);
    EXPECT(outcomes[0] == HAREL_ERR_LEASE_LOST && n == 0);
  }
  harel_lease_free(l);
  harel_transport_close(t);
}

/* Not a database, a missing directory, tables missing at open (create_schema off) or
 * dropped under an open handle by another process. */
static const char DROP_TABLES[] =
    "import sqlite3, sys\n"
    "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "c.execute('DROP TABLE harel_transport_messages')\n"
    "c.execute('DROP TABLE harel_transport_groups')\n"
    "c.execute('DROP TABLE harel_transport_dead')\n"
    "print('dropped', flush=True)\n";

static void status_database(void) {
  double now = T0;
  char path[300], line[32];
  const harel_message batch[] = {{"g", "1", 0, NULL}};
  const char *const keyed[] = {"k"};
  harel_options *o = harel_options_new();
  harel_transport *held_on;
  harel_lease *held;
  const harel_lease *batch_of_held[1];
  harel_status outcomes[1] = {HAREL_ERR_PANIC};
  FILE *f = fopen(new_path(path, sizeof path), "wb");
  int i;
  if (!EXPECT(f != NULL && o != NULL)) {
    if (f != NULL) fclose(f);
    harel_options_free(o);
    return;
  }
  for (i = 0; i < 200; i++) fputs("this is not a database, just text. ", f);
  fclose(f);
  OPEN_FAILS(HAREL_ERR_DATABASE, NULL, path, NULL);
  snprintf(path, sizeof path, "%s/no/such/dir/q.db", temp_dir);
  OPEN_FAILS(HAREL_ERR_DATABASE, NULL, path, NULL);
  EXPECT_STATUS(harel_options_set_create_schema(o, false, NULL), HAREL_OK);
  OPEN_FAILS(HAREL_ERR_DATABASE, NULL, new_path(path, sizeof path), o);
  harel_options_free(o);

  /* every queue call on a handle whose tables another process dropped */
  held_on = open_at(new_path(path, sizeof path), &now);
  if (held_on == NULL) return;
  PUBLISH(held_on, "g", "1");
  held = CLAIM(held_on, "w", "1");
  if (held != NULL &&
      EXPECT(python_run(DROP_TABLES, path, line, sizeof line) && strcmp(line, "dropped\n") == 0)) {
    EXPECT_FAILS(HAREL_ERR_DATABASE, NULL,
                 harel_transport_publish(held_on, "g", "2", 0, NULL, ERR));
    EXPECT_FAILS(HAREL_ERR_DATABASE, NULL, harel_transport_publish_many(held_on, batch, 1, ERR));
    PUBLISH_WITH_FAILS(HAREL_ERR_DATABASE, NULL, held_on, "g", "2", 0, NULL, NULL, 5.0, -1.0);
    PUBLISH_WITH_FAILS(HAREL_ERR_DATABASE, NULL, held_on, "g", "2", 0, NULL, "k", 0.0, -1.0);
    PUBLISH_MANY_WITH_FAILS(HAREL_ERR_DATABASE, NULL, held_on, batch, 1, keyed, NULL, NULL);
    CLAIM_FAILS(HAREL_ERR_DATABASE, NULL, held_on, "w", VIS, 0, NULL, 0);
    EXPECT_FAILS(HAREL_ERR_DATABASE, NULL, harel_transport_ack(held_on, held, ERR));
    EXPECT_FAILS(HAREL_ERR_DATABASE, NULL, harel_transport_nack(held_on, held, 1.0, ERR));
    ACK_AND_CLAIM_FAILS(HAREL_ERR_DATABASE, NULL, held_on, held, "w", VIS, 0, NULL, 0);
    EXPECT_FAILS(HAREL_ERR_DATABASE, NULL, harel_transport_dead_letter(held_on, held, "r", ERR));
    EXPECT_FAILS(HAREL_ERR_DATABASE, NULL,
                 harel_transport_redrive(held_on, true, NULL, NULL, 0, NULL, ERR));
    EXPECT_FAILS(HAREL_ERR_DATABASE, NULL,
                 harel_transport_purge_dead(held_on, false, "g", NULL, 0, NULL, ERR));
    EXPECT_FAILS(HAREL_ERR_DATABASE, NULL, harel_transport_purge_group(held_on, "g", NULL, ERR));
    EXPECT_FAILS(HAREL_ERR_DATABASE, NULL, harel_transport_purge(held_on, NULL, ERR));
    EXPECT_FAILS(HAREL_ERR_DATABASE, NULL, harel_transport_release(held_on, "g", NULL, ERR));
    STATS_FAILS(HAREL_ERR_DATABASE, NULL, held_on);
    GROUPS_FAILS(HAREL_ERR_DATABASE, NULL, held_on, -1, NULL, 10);
    PEEK_FAILS(HAREL_ERR_DATABASE, NULL, held_on, "g", NULL, 10);
    DEAD_FAILS(HAREL_ERR_DATABASE, NULL, held_on, NULL, NULL, 10);
    /* the worker loop's: a wait does not wait past a failed claim; outcomes not written */
    batch_of_held[0] = held;
    CLAIM_WAIT_FAILS(HAREL_ERR_DATABASE, NULL, held_on, "w", VIS, 0, NULL, 0, 30.0, NULL);
    CLAIM_MANY_FAILS(HAREL_ERR_DATABASE, NULL, held_on, "w", VIS, 0, NULL, 0, 3, 30.0, NULL);
    EXPECT_FAILS(HAREL_ERR_DATABASE, NULL,
                 harel_transport_ack_many(held_on, batch_of_held, 1, outcomes, ERR));
    EXPECT(outcomes[0] == HAREL_ERR_PANIC);
    ACK_AND_CLAIM_MANY_FAILS(HAREL_ERR_DATABASE, NULL, held_on, batch_of_held, 1, "w", VIS, 0,
                             NULL, 0, 3);
    EXTEND_FAILS(HAREL_ERR_DATABASE, NULL, held_on, held, VIS);
  }
  harel_lease_free(held);
  harel_transport_close(held_on);
}

/* Another process holds the write lock, and the busy timeout is 0: every call that writes
 * is HAREL_ERR_BUSY, and changed nothing once the lock is free again; the looks (stats and
 * the listings) take no write lock and answer. */
static void status_busy(void) {
  double now = T0;
  int i;
  char path[300], fresh[300], release[300];
  const harel_message batch[] = {{"g", "\"lost\"", 0, NULL}};
  const char *const lost_key[] = {"lost"};
  harel_options *o = harel_options_new();
  harel_transport *t = NULL;
  harel_lease *held = NULL;
  const harel_lease *batch_of_held[1];
  harel_status outcomes[1] = {HAREL_ERR_PANIC};
  harel_error *e = NULL;
  FILE *holder;
  if (!EXPECT(o != NULL)) return;
  snprintf(release, sizeof release, "%s/release", temp_dir);
  EXPECT_CALL(harel_options_set_busy_timeout(o, 0.0, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_clock(o, test_clock, &now, &e), &e, HAREL_OK);

  /* open, while the schema would be made */
  holder = hold_write_lock(new_path(fresh, sizeof fresh), release);
  if (EXPECT(holder != NULL)) {
    OPEN_FAILS(HAREL_ERR_BUSY, NULL, fresh, o);
    EXPECT(release_write_lock(holder, release));
  }

  /* the queue's calls */
  EXPECT_CALL(harel_transport_open(new_path(path, sizeof path), o, &t, &e), &e, HAREL_OK);
  harel_options_free(o);
  if (t == NULL) return;
  PUBLISH(t, "g", "\"m1\"");
  PUBLISH(t, "h", "\"h1\"");
  held = CLAIM(t, "w1", "\"m1\"");
  holder = hold_write_lock(path, release);
  if (EXPECT(holder != NULL) && held != NULL) {
    EXPECT_FAILS(HAREL_ERR_BUSY, NULL, harel_transport_publish(t, "g", "\"lost\"", 0, NULL, ERR));
    EXPECT_FAILS(HAREL_ERR_BUSY, NULL, harel_transport_publish_many(t, batch, 1, ERR));
    PUBLISH_WITH_FAILS(HAREL_ERR_BUSY, NULL, t, "g", "\"lost\"", 0, NULL, "lost", 0.0, -1.0);
    PUBLISH_WITH_FAILS(HAREL_ERR_BUSY, NULL, t, "g", "\"lost\"", 0, NULL, NULL, 5.0, -1.0);
    PUBLISH_MANY_WITH_FAILS(HAREL_ERR_BUSY, NULL, t, batch, 1, lost_key, NULL, NULL);
    CLAIM_FAILS(HAREL_ERR_BUSY, NULL, t, "w2", VIS, 0, NULL, 0);
    EXPECT_FAILS(HAREL_ERR_BUSY, NULL, harel_transport_ack(t, held, ERR));
    EXPECT_FAILS(HAREL_ERR_BUSY, NULL, harel_transport_nack(t, held, 0.0, ERR));
    ACK_AND_CLAIM_FAILS(HAREL_ERR_BUSY, NULL, t, held, "w1", VIS, 0, NULL, 0);
    EXPECT_FAILS(HAREL_ERR_BUSY, NULL, harel_transport_dead_letter(t, held, "r", ERR));
    EXPECT_FAILS(HAREL_ERR_BUSY, NULL, harel_transport_redrive(t, true, NULL, NULL, 0, NULL, ERR));
    EXPECT_FAILS(HAREL_ERR_BUSY, NULL,
                 harel_transport_purge_dead(t, true, NULL, NULL, 0, NULL, ERR));
    EXPECT_FAILS(HAREL_ERR_BUSY, NULL, harel_transport_purge_group(t, "h", NULL, ERR));
    EXPECT_FAILS(HAREL_ERR_BUSY, NULL, harel_transport_purge(t, NULL, ERR));
    EXPECT_FAILS(HAREL_ERR_BUSY, NULL, harel_transport_release(t, "g", NULL, ERR));
    /* the worker loop's: a wait does not wait past a busy claim; outcomes not written */
    batch_of_held[0] = held;
    CLAIM_WAIT_FAILS(HAREL_ERR_BUSY, NULL, t, "w2", VIS, 0, NULL, 0, 30.0, NULL);
    CLAIM_MANY_FAILS(HAREL_ERR_BUSY, NULL, t, "w2", VIS, 0, NULL, 0, 3, 30.0, NULL);
    EXPECT_FAILS(HAREL_ERR_BUSY, NULL, harel_transport_ack_many(t, batch_of_held, 1, outcomes, ERR));
    EXPECT(outcomes[0] == HAREL_ERR_PANIC);
    ACK_AND_CLAIM_MANY_FAILS(HAREL_ERR_BUSY, NULL, t, batch_of_held, 1, "w1", VIS, 0, NULL, 0, 3);
    EXTEND_FAILS(HAREL_ERR_BUSY, NULL, t, held, VIS);
    /* a transaction, by its commit or its first query: ended, nothing kept */
    for (i = 0; i < 2; i++) {
      harel_tx *tx = NULL;
      harel_rows *rows = NOT_SET_ROWS;
      if (!EXPECT_STATUS(harel_transport_begin(t, &tx, NULL), HAREL_OK)) break;
      EXPECT_STATUS(harel_tx_publish(tx, "g", "\"lost\"", 0, NULL, "lost", 0.0, -1.0, NULL),
                    HAREL_OK);
      if (i == 0)
        EXPECT_CALL(harel_tx_commit(tx, NULL, NULL, 0, NULL, &e), &e, HAREL_ERR_BUSY);
      else
        EXPECT_CALL(harel_tx_query(tx, "SELECT 1", NULL, 0, &rows, &e), &e, HAREL_ERR_BUSY);
      EXPECT(rows == NOT_SET_ROWS || rows == NULL);
      EXPECT_ARG(harel_tx_commit(tx, NULL, NULL, 0, NULL, NULL), "rolled");
      EXPECT_STATUS(harel_tx_rollback(tx, NULL), HAREL_OK);
      harel_tx_free(tx);
    }
    looks_answer(t, 2, __FILE__, __LINE__);
  }
  if (holder != NULL) EXPECT(release_write_lock(holder, release));
  /* as it was: m1 still w1's, h1 waiting, nothing "lost", the key "lost" not taken */
  ACK(t, CLAIM(t, "w2", "\"h1\""));
  CLAIM_EMPTY(t);
  ACK(t, held);
  CLAIM_EMPTY(t);
  PUBLISH_WITH(t, "g", "\"kept\"", "lost", 0.0, -1.0, 0);
  harel_transport_close(t);
}

/* A server that can't be reached: a URL, or an embedded replica's sync_url, on a loopback
 * port nothing listens on. */
static void status_connect(void) {
  char url[64], path[300];
  harel_options *o = harel_options_new();
  harel_error *e = NULL;
  if (!EXPECT(o != NULL)) return;
  snprintf(url, sizeof url, "http://127.0.0.1:%d", closed_port());
  OPEN_FAILS(HAREL_ERR_CONNECT, NULL, url, NULL);
  EXPECT_CALL(harel_options_set_sync_url(o, url, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_auth_token(o, "token", &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_sync_interval(o, 0.5, &e), &e, HAREL_OK);
  OPEN_FAILS(HAREL_ERR_CONNECT, NULL, new_path(path, sizeof path), o);
  harel_options_free(o);
}

/* ---------------------------------------------------------------------------------------
 * Bad arguments, function by function: NULL pointers, invalid UTF-8, numbers out of range.
 */

static void bad_arguments_of_the_setters(void) {
  const double non_finite[] = {NAN, INFINITY, -INFINITY};
  harel_options *o = harel_options_new();
  double now = 0;
  size_t i;
  if (!EXPECT(o != NULL)) return;
  EXPECT_BAD("o", harel_options_set_prefix(NULL, "p", ERR));
  EXPECT_BAD("prefix", harel_options_set_prefix(o, NULL, ERR));
  EXPECT_BAD("prefix", harel_options_set_prefix(o, "", ERR));
  EXPECT_BAD("prefix", harel_options_set_prefix(o, "1abc", ERR));
  EXPECT_BAD("prefix", harel_options_set_prefix(o, PREFIX_31, ERR));
  EXPECT_BAD("o", harel_options_set_create_schema(NULL, true, ERR));
  EXPECT_BAD("o", harel_options_set_sync_url(NULL, "http://127.0.0.1:1", ERR));
  EXPECT_BAD("o", harel_options_set_sync_url(NULL, NULL, ERR));
  EXPECT_BAD("url", harel_options_set_sync_url(o, "", ERR));
  EXPECT_BAD("o", harel_options_set_auth_token(NULL, "t", ERR));
  EXPECT_BAD("o", harel_options_set_auth_token(NULL, NULL, ERR));
  EXPECT_BAD("o", harel_options_set_sync_interval(NULL, 1.0, ERR));
  EXPECT_BAD("sync_interval", harel_options_set_sync_interval(o, 0.0, ERR));
  EXPECT_BAD("sync_interval", harel_options_set_sync_interval(o, -1.0, ERR));
  EXPECT_BAD("sync_interval", harel_options_set_sync_interval(o, 1e30, ERR));
  EXPECT_BAD("o", harel_options_set_busy_timeout(NULL, 1.0, ERR));
  EXPECT_BAD("busy_timeout", harel_options_set_busy_timeout(o, -1.0, ERR));
  EXPECT_BAD("busy_timeout", harel_options_set_busy_timeout(o, 18446744073709551616.0, ERR));
  for (i = 0; i < sizeof non_finite / sizeof non_finite[0]; i++) {
    EXPECT_BAD("sync_interval", harel_options_set_sync_interval(o, non_finite[i], ERR));
    EXPECT_BAD("busy_timeout", harel_options_set_busy_timeout(o, non_finite[i], ERR));
  }
  EXPECT_BAD("o", harel_options_set_synchronous_full(NULL, true, ERR));
  EXPECT_BAD("o", harel_options_set_key_retention(NULL, 60.0, ERR));
  for (i = 0; i < N_OF(BAD_RETENTION); i++)
    EXPECT_BAD("key_retention", harel_options_set_key_retention(o, BAD_RETENTION[i], ERR));
  EXPECT_BAD("o", harel_options_set_clock(NULL, test_clock, &now, ERR));
  EXPECT_BAD("o", harel_options_set_clock(NULL, NULL, NULL, ERR));
  for (i = 0; i < N_BAD_UTF8; i++) {
    EXPECT_BAD("prefix", harel_options_set_prefix(o, BAD_UTF8[i], ERR));
    EXPECT_BAD("url", harel_options_set_sync_url(o, BAD_UTF8[i], ERR));
    EXPECT_BAD("token", harel_options_set_auth_token(o, BAD_UTF8[i], ERR));
  }
  /* the NULLs that mean something, and the edges that are fine */
  EXPECT_STATUS(harel_options_set_sync_url(o, NULL, NULL), HAREL_OK);
  EXPECT_STATUS(harel_options_set_auth_token(o, NULL, NULL), HAREL_OK);
  EXPECT_STATUS(harel_options_set_auth_token(o, "", NULL), HAREL_OK);
  EXPECT_STATUS(harel_options_set_clock(o, NULL, NULL, NULL), HAREL_OK);
  EXPECT_STATUS(harel_options_set_clock(o, test_clock, NULL, NULL), HAREL_OK);
  EXPECT_STATUS(harel_options_set_busy_timeout(o, 0.0, NULL), HAREL_OK);
  EXPECT_STATUS(harel_options_set_synchronous_full(o, true, NULL), HAREL_OK);
  EXPECT_STATUS(harel_options_set_create_schema(o, true, NULL), HAREL_OK);
  EXPECT_STATUS(harel_options_set_prefix(o, PREFIX_31 + 1, NULL), HAREL_OK); /* 30: fine */
  EXPECT_STATUS(harel_options_set_key_retention(o, MAX_DELAY, NULL), HAREL_OK); /* ten years */
  EXPECT_STATUS(harel_options_set_key_retention(o, 1e-3, NULL), HAREL_OK);
  harel_options_free(o);
}

static void bad_arguments_of_schema_sql(void) {
  const char *const bad[] = {"", "1abc", "a-b", "a b", PREFIX_31};
  char *out = NOT_SET_STRING;
  size_t i;
  for (i = 0; i < sizeof bad / sizeof bad[0] + N_BAD_UTF8 + 1; i++) {
    const char *prefix = i < sizeof bad / sizeof bad[0] ? bad[i]
                         : i < sizeof bad / sizeof bad[0] + N_BAD_UTF8
                             ? BAD_UTF8[i - sizeof bad / sizeof bad[0]]
                             : NULL;
    EXPECT_BAD("prefix", (out = NOT_SET_STRING, harel_schema_sql(prefix, &out, ERR)));
    EXPECT(out == NULL);
    EXPECT_BAD("prefix", (out = NOT_SET_STRING, harel_schema_upgrade_sql(prefix, &out, ERR)));
    EXPECT(out == NULL);
  }
  EXPECT_BAD("out", harel_schema_sql("harel", NULL, ERR));
  EXPECT_BAD("out", harel_schema_upgrade_sql("harel", NULL, ERR));
}

static void schema_sql(void) {
  char *sql = NULL;
  harel_error *e = NULL;
  EXPECT_CALL(harel_schema_sql("myq", &sql, &e), &e, HAREL_OK);
  if (EXPECT(sql != NULL)) {
    EXPECT(strstr(sql, "CREATE TABLE IF NOT EXISTS myq_transport_messages") != NULL);
    EXPECT(strstr(sql, "CREATE TABLE IF NOT EXISTS myq_transport_groups") != NULL);
    EXPECT(sql[strlen(sql) - 1] == ';' || sql[strlen(sql) - 1] == '\n');
    harel_string_free(sql);
  }
  sql = NULL;
  EXPECT_CALL(harel_schema_upgrade_sql("myq", &sql, &e), &e, HAREL_OK);
  if (EXPECT(sql != NULL)) {
    EXPECT(strstr(sql, "ALTER TABLE myq_transport_groups ADD COLUMN routing_key") != NULL);
    harel_string_free(sql);
  }
}

static void bad_arguments_of_open(void) {
  char path[300];
  harel_options *o = harel_options_new();
  size_t i;
  OPEN_FAILS(HAREL_ERR_ARGUMENT, "database", NULL, o);
  OPEN_FAILS(HAREL_ERR_ARGUMENT, "database", NULL, NULL);
  OPEN_FAILS(HAREL_ERR_ARGUMENT, "database", "", NULL);
  for (i = 0; i < N_BAD_UTF8; i++) OPEN_FAILS(HAREL_ERR_ARGUMENT, "database", BAD_UTF8[i], o);
  EXPECT_BAD("out", harel_transport_open(new_path(path, sizeof path), o, NULL, ERR));
  EXPECT_BAD("out", harel_transport_open(":memory:", NULL, NULL, ERR));
  EXPECT(access(path, F_OK) != 0); /* rejected before anything was made */
  harel_options_free(o);
}

static void bad_arguments_of_publish(void) {
  const char *const not_json[] = {"", " ", "{", "nope", "{'a':1}", "[1,]", "01"};
  const int32_t bad_priority[] = {-1, 5, INT32_MIN, INT32_MAX};
  fixture fx;
  size_t i;
  if (!fixture_open(&fx)) return;
  EXPECT_BAD("t", harel_transport_publish(NULL, "g1", "1", 0, NULL, ERR));
  EXPECT_BAD("group_id", harel_transport_publish(fx.t, NULL, "1", 0, NULL, ERR));
  EXPECT_BAD("event_json", harel_transport_publish(fx.t, "g1", NULL, 0, NULL, ERR));
  EXPECT_BAD("group_id", harel_transport_publish(fx.t, "", "1", 0, NULL, ERR));
  EXPECT_BAD("routing_key", harel_transport_publish(fx.t, "new", "1", 0, "", ERR));
  for (i = 0; i < sizeof not_json / sizeof not_json[0]; i++)
    EXPECT_BAD("event_json", harel_transport_publish(fx.t, "g1", not_json[i], 0, NULL, ERR));
  for (i = 0; i < sizeof bad_priority / sizeof bad_priority[0]; i++)
    EXPECT_BAD("priority", harel_transport_publish(fx.t, "new", "1", bad_priority[i], NULL, ERR));
  for (i = 0; i < N_BAD_UTF8; i++) {
    EXPECT_BAD("group_id", harel_transport_publish(fx.t, BAD_UTF8[i], "1", 0, NULL, ERR));
    EXPECT_BAD("event_json", harel_transport_publish(fx.t, "g1", BAD_UTF8[i], 0, NULL, ERR));
    EXPECT_BAD("routing_key", harel_transport_publish(fx.t, "new", "1", 0, BAD_UTF8[i], ERR));
  }
  FIXTURE_CLOSE(&fx);
}

/* batch[i] is `good` but for one field; the whole batch is refused, naming the field by
 * its index ("messages[1].group_id"). */
#define BAD_IN_BATCH(i, field, value, parameter)                              \
  do {                                                                        \
    batch[0] = batch[1] = batch[2] = good;                                    \
    batch[i].field = (value);                                                 \
    EXPECT_BAD(parameter, harel_transport_publish_many(fx.t, batch, 3, ERR)); \
  } while (0)

static void bad_arguments_of_publish_many(void) {
  const harel_message good = {"new", "\"x\"", 2, "k"};
  harel_message batch[3];
  fixture fx;
  size_t i;
  if (!fixture_open(&fx)) return;
  batch[0] = batch[1] = batch[2] = good;
  EXPECT_BAD("t", harel_transport_publish_many(NULL, batch, 3, ERR));
  EXPECT_BAD("messages", harel_transport_publish_many(fx.t, NULL, 3, ERR));
  EXPECT_BAD("messages", harel_transport_publish_many(fx.t, NULL, SIZE_MAX, ERR));
  BAD_IN_BATCH(1, group_id, NULL, "messages[1].group_id");
  BAD_IN_BATCH(1, group_id, "", "messages[1].group_id");
  BAD_IN_BATCH(0, event_json, NULL, "messages[0].event_json");
  BAD_IN_BATCH(2, event_json, "{\"a\":", "messages[2].event_json");
  BAD_IN_BATCH(1, priority, -1, "messages[1].priority");
  BAD_IN_BATCH(2, priority, 5, "messages[2].priority");
  BAD_IN_BATCH(1, routing_key, "", "messages[1].routing_key");
  for (i = 0; i < N_BAD_UTF8; i++) {
    BAD_IN_BATCH(1, group_id, BAD_UTF8[i], "messages[1].group_id");
    BAD_IN_BATCH(1, event_json, BAD_UTF8[i], "messages[1].event_json");
    BAD_IN_BATCH(2, routing_key, BAD_UTF8[i], "messages[2].routing_key");
  }
  FIXTURE_CLOSE(&fx);
}

static const double BAD_VISIBILITY[] = {0.0, -0.0, -1.0, NAN, INFINITY, -INFINITY};
static const int32_t BAD_MIN_PRIORITY[] = {-1, 5, INT32_MIN, INT32_MAX};

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

/* The lease's fields, as ack, nack and ack_and_claim read them: `call` uses `bad`. */
#define EACH_BAD_LEASE(fx, call)                                                           \
  do {                                                                                     \
    harel_lease built;                                                                     \
    const harel_lease *bad;                                                                \
    size_t u_;                                                                             \
    bad = NULL;                                                                            \
    call("lease");                                                                         \
    bad = with_group(&built, (fx).held, NULL);                                             \
    call("group_id");                                                                      \
    bad = (built = *(fx).held, built.group_id_len = 0, &built);                            \
    call("group_id_len");                                                                  \
    bad = with_worker(&built, (fx).held, NULL);                                            \
    call("worker_id");                                                                     \
    bad = with_worker(&built, (fx).held, "");                                              \
    call("worker_id");                                                                     \
    bad = with_worker(&built, (fx).held, "__parked__");                                    \
    call("worker_id");                                                                     \
    for (u_ = 0; u_ < N_BAD_UTF8; u_++) {                                                  \
      bad = with_group(&built, (fx).held, BAD_UTF8[u_]);                                   \
      call("group_id");                                                                    \
      bad = with_worker(&built, (fx).held, BAD_UTF8[u_]);                                  \
      call("worker_id");                                                                   \
    }                                                                                      \
  } while (0)

static void bad_arguments_of_ack(void) {
  fixture fx;
  if (!fixture_open(&fx)) return;
  EXPECT_BAD("t", harel_transport_ack(NULL, fx.held, ERR));
#define ACK_BAD(parameter) EXPECT_BAD(parameter, harel_transport_ack(fx.t, bad, ERR))
  EACH_BAD_LEASE(fx, ACK_BAD);
#undef ACK_BAD
  FIXTURE_CLOSE(&fx);
}

static void bad_arguments_of_nack(void) {
  const double bad_delay[] = {-1.0, -1e-9, NAN, INFINITY, -INFINITY};
  fixture fx;
  size_t i;
  if (!fixture_open(&fx)) return;
  EXPECT_BAD("t", harel_transport_nack(NULL, fx.held, 0.0, ERR));
  for (i = 0; i < N_OF(bad_delay); i++)
    EXPECT_BAD("delay", harel_transport_nack(fx.t, fx.held, bad_delay[i], ERR));
#define NACK_BAD(parameter) EXPECT_BAD(parameter, harel_transport_nack(fx.t, bad, 0.0, ERR))
  EACH_BAD_LEASE(fx, NACK_BAD);
#undef NACK_BAD
  FIXTURE_CLOSE(&fx);
}

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

/* The clock callback's result is an argument too: a time that is not one is refused by
 * every call that asks for "now". */
static void a_clock_that_is_not_a_time(void) {
  const double bad[] = {NAN, INFINITY, -INFINITY, -1.0};
  const harel_lease *batch_of_held[1];
  fixture fx;
  size_t i;
  if (!fixture_open(&fx)) return;
  batch_of_held[0] = fx.held;
  for (i = 0; i < N_OF(bad); i++) {
    fx.now = bad[i];
    CLAIM_BAD("clock", fx.t, "w", VIS, 0, NULL, 0);
    EXPECT_BAD("clock", harel_transport_ack(fx.t, fx.held, ERR));
    EXPECT_BAD("clock", harel_transport_nack(fx.t, fx.held, 0.0, ERR));
    ACK_AND_CLAIM_BAD("clock", fx.t, fx.held, "w1", VIS, 0, NULL, 0);
    /* and the new calls that ask for "now" */
    EXPECT_BAD("clock", harel_transport_dead_letter(fx.t, fx.held, "r", ERR));
    EXPECT_BAD("clock", harel_transport_redrive(fx.t, true, NULL, NULL, 0, NULL, ERR));
    EXPECT_BAD("clock", harel_transport_release(fx.t, "g1", NULL, ERR));
    STATS_FAILS(HAREL_ERR_ARGUMENT, "clock", fx.t);
    GROUPS_FAILS(HAREL_ERR_ARGUMENT, "clock", fx.t, -1, NULL, 10);
    /* and the worker loop's (a wait ends at the first bad time) */
    CLAIM_WAIT_BAD("clock", fx.t, "w", VIS, 0, NULL, 0, 30.0, NULL);
    CLAIM_MANY_BAD("clock", fx.t, "w", VIS, 0, NULL, 0, 2, 30.0, NULL);
    ACK_MANY_FAILS(HAREL_ERR_ARGUMENT, "clock", fx.t, batch_of_held, 1);
    ACK_AND_CLAIM_MANY_BAD("clock", fx.t, batch_of_held, 1, "w1", VIS, 0, NULL, 0, 2);
    EXTEND_BAD("clock", fx.t, fx.held, VIS);
  }
  FIXTURE_CLOSE(&fx);
}

/* ---------------------------------------------------------------------------------------
 * Options reach open: the clock and its ctx, the prefix, create_schema, NULL options;
 * options are the caller's to free right after open, or to reuse.
 */

static double fixed_clock_or_ctx(void *ctx) { return ctx ? *(const double *)ctx : 5000.0; }

static void set_clock_passes_ctx_and_null_restores_the_system_clock(void) {
  double now = 7.0;
  harel_options *o = harel_options_new();
  harel_transport *t = NULL;
  harel_lease *l;
  if (!EXPECT(o != NULL)) return;
  /* a NULL ctx is passed to the clock as is */
  EXPECT_STATUS(harel_options_set_clock(o, fixed_clock_or_ctx, NULL, NULL), HAREL_OK);
  EXPECT_STATUS(harel_transport_open(":memory:", o, &t, NULL), HAREL_OK);
  PUBLISH(t, "g", "1");
  l = CLAIM(t, "w", "1");
  if (l != NULL) EXPECT(l->lock_expiry == 5000.0 + VIS);
  ACK(t, l);
  harel_transport_close(t);
  /* the ctx given */
  EXPECT_STATUS(harel_options_set_clock(o, fixed_clock_or_ctx, &now, NULL), HAREL_OK);
  EXPECT_STATUS(harel_transport_open(":memory:", o, &t, NULL), HAREL_OK);
  PUBLISH(t, "g", "1");
  l = CLAIM(t, "w", "1");
  if (l != NULL) EXPECT(l->lock_expiry == 7.0 + VIS);
  ACK(t, l);
  harel_transport_close(t);
  /* NULL: the system clock again */
  EXPECT_STATUS(harel_options_set_clock(o, NULL, &now, NULL), HAREL_OK);
  EXPECT_STATUS(harel_transport_open(":memory:", o, &t, NULL), HAREL_OK);
  harel_options_free(o);
  PUBLISH(t, "g", "1");
  l = CLAIM(t, "w", "1");
  if (l != NULL) EXPECT(l->lock_expiry > 1.5e9); /* epoch seconds of today, not 7 or 5000 */
  ACK(t, l);
  harel_transport_close(t);
}

static void options_reach_open(void) {
  double now = T0;
  char path[300], other[300];
  harel_options *o = harel_options_new(), *strict = harel_options_new();
  harel_transport *t1 = NULL, *t2 = NULL, *t3 = NOT_SET_HANDLE;
  harel_error *e = NULL;
  if (!EXPECT(o != NULL && strict != NULL)) {
    harel_options_free(o);
    harel_options_free(strict);
    return;
  }
  /* a prefix, then options freed right after open */
  EXPECT_CALL(harel_options_set_prefix(o, "pfx", &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_clock(o, test_clock, &now, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_open(new_path(path, sizeof path), o, &t1, &e), &e, HAREL_OK);
  /* reused for a second file */
  EXPECT_CALL(harel_transport_open(new_path(other, sizeof other), o, &t2, &e), &e, HAREL_OK);
  harel_options_free(o);
  if (t1 != NULL) {
    PUBLISH(t1, "g", "1");
    ACK(t1, CLAIM(t1, "w", "1"));
  }
  harel_transport_close(t1);
  harel_transport_close(t2);
  /* create_schema off: the file has pfx_ tables, not harel_ ones */
  EXPECT_CALL(harel_options_set_create_schema(strict, false, &e), &e, HAREL_OK);
  EXPECT_CALL_NAMING(harel_transport_open(path, strict, &t3, &e), &e, HAREL_ERR_DATABASE, NULL);
  EXPECT(t3 == NULL);
  EXPECT_CALL(harel_options_set_prefix(strict, "pfx", &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_open(path, strict, &t3, &e), &e, HAREL_OK);
  harel_transport_close(t3);
  harel_options_free(strict);
  /* NULL options: the defaults */
  t3 = NULL;
  EXPECT_CALL(harel_transport_open(":memory:", NULL, &t3, &e), &e, HAREL_OK);
  if (t3 != NULL) {
    PUBLISH(t3, "g", "1");
    ACK(t3, CLAIM(t3, "w", "1"));
  }
  harel_transport_close(t3);
}

/* ---------------------------------------------------------------------------------------
 * A `*err` already set: refused with HAREL_ERR_ARGUMENT naming err, the error left as it
 * was (pointer, status and message), and nothing done.
 */

static double not_a_clock(void *ctx) {
  (void)ctx;
  return NAN;
}

#define REFUSED(call) expect_refused((call), &stale, was, was_text, #call, __FILE__, __LINE__)
static void expect_refused(harel_status got, harel_error **err, const harel_error *was,
                           const char *was_text, const char *expr, const char *file, int line) {
  const char *last = harel_last_error();
  if (got != HAREL_ERR_ARGUMENT)
    test_fail(file, line, "%s with *err set returned %s", expr, harel_status_name(got));
  if (last == NULL || !names_parameter(last, "err"))
    test_fail(file, line, "%s with *err set: harel_last_error() is \"%s\"", expr, or_null(last));
  if (*err != was) {
    test_fail(file, line, "%s replaced the *err it was given", expr);
    return;
  }
  if (harel_error_status(*err) != HAREL_ERR_ARGUMENT ||
      strcmp(or_null(harel_error_message(*err)), was_text) != 0)
    test_fail(file, line, "%s changed the error *err pointed to", expr);
}

static void a_set_err_is_refused_untouched_and_nothing_done(void) {
  double now = T0;
  char path[300], fresh[300], url[64], was_text[512];
  const harel_message batch[] = {{"g", "\"stale\"", 0, NULL}, {"s", "\"stale\"", 0, NULL}};
  harel_options *o = harel_options_new(), *strict = harel_options_new();
  harel_transport *t = NULL, *t2 = NOT_SET_HANDLE;
  harel_lease *held, *l;
  harel_error *stale = NULL, *e = NULL;
  const harel_error *was;
  char *sql;
  /* an error of an earlier call, not yet freed */
  EXPECT(harel_options_set_prefix(NULL, "p", &stale) == HAREL_ERR_ARGUMENT);
  if (!EXPECT(stale != NULL && o != NULL && strict != NULL)) {
    harel_error_free(stale);
    harel_options_free(o);
    harel_options_free(strict);
    return;
  }
  was = stale;
  snprintf(was_text, sizeof was_text, "%s", harel_error_message(stale));
  snprintf(url, sizeof url, "http://127.0.0.1:%d", closed_port());

  /* setters: none takes effect (seen at the open below) */
  EXPECT_STATUS(harel_options_set_clock(o, test_clock, &now, NULL), HAREL_OK);
  REFUSED(harel_options_set_prefix(o, "stale_prefix", &stale));
  REFUSED(harel_options_set_create_schema(o, false, &stale));
  REFUSED(harel_options_set_sync_url(o, url, &stale));
  REFUSED(harel_options_set_auth_token(o, "token", &stale));
  REFUSED(harel_options_set_sync_interval(o, 1.0, &stale));
  REFUSED(harel_options_set_busy_timeout(o, 0.0, &stale));
  REFUSED(harel_options_set_synchronous_full(o, false, &stale));
  REFUSED(harel_options_set_clock(o, not_a_clock, NULL, &stale));
  /* strings: none handed out */
  sql = NOT_SET_STRING;
  REFUSED(harel_schema_sql("harel", &sql, &stale));
  EXPECT(sql == NOT_SET_STRING || sql == NULL);
  sql = NOT_SET_STRING;
  REFUSED(harel_schema_upgrade_sql("harel", &sql, &stale));
  EXPECT(sql == NOT_SET_STRING || sql == NULL);
  /* open: no handle, no file */
  REFUSED(harel_transport_open(new_path(fresh, sizeof fresh), o, &t2, &stale));
  EXPECT(t2 == NOT_SET_HANDLE || t2 == NULL);
  EXPECT(access(fresh, F_OK) != 0);

  /* the options as they were: a local file (no sync_url), tables made (create_schema on),
   * prefix harel, the test's clock */
  EXPECT_CALL(harel_transport_open(new_path(path, sizeof path), o, &t, &e), &e, HAREL_OK);
  harel_options_free(o);
  if (t == NULL) {
    harel_error_free(stale);
    harel_options_free(strict);
    return;
  }
  EXPECT_STATUS(harel_options_set_create_schema(strict, false, NULL), HAREL_OK);
  t2 = NULL;
  EXPECT_CALL(harel_transport_open(path, strict, &t2, &e), &e, HAREL_OK); /* harel_ tables */
  harel_transport_close(t2);
  harel_options_free(strict);

  /* the queue's calls: none writes, leases, acks or nacks */
  PUBLISH(t, "g", "\"m1\"");
  PUBLISH(t, "h", "\"h1\"");
  held = CLAIM(t, "w1", "\"m1\"");
  if (held != NULL) {
    if (EXPECT(held->lock_expiry == T0 + VIS)) { /* the test's clock, not not_a_clock */
      REFUSED(harel_transport_publish(t, "s", "\"stale\"", 0, NULL, &stale));
      REFUSED(harel_transport_publish_many(t, batch, 2, &stale));
      l = NOT_SET_LEASE;
      REFUSED(harel_transport_claim(t, "w2", VIS, 0, NULL, 0, &l, &stale));
      EXPECT(l == NULL || l == NOT_SET_LEASE);
      REFUSED(harel_transport_ack(t, held, &stale));
      REFUSED(harel_transport_nack(t, held, 0.0, &stale));
      l = NOT_SET_LEASE;
      REFUSED(harel_transport_ack_and_claim(t, held, "w1", VIS, 0, NULL, 0, &l, &stale));
      EXPECT(l == NULL || l == NOT_SET_LEASE);
    }
    ACK(t, CLAIM(t, "w2", "\"h1\"")); /* h1 was not leased */
    CLAIM_EMPTY(t);                   /* g is still in flight; nothing "stale" was written */
    ACK(t, held);                     /* still w1's: not acked, nacked, nor acked and claimed */
    CLAIM_EMPTY(t);
  }
  harel_transport_close(t);
  harel_error_free(stale);
}

/* ---------------------------------------------------------------------------------------
 * When a message keeps failing (issue #14): attempts, max_attempts, dead letters and the
 * operator's calls, and the looks inside the queue. What they do to the queue is the Rust
 * contract's (tests/common/contract.rs); here, each call's mapping: its outputs, field by
 * field, and its bad arguments.
 */

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

static void stats_maps_every_field(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_stats *s;
  harel_lease *leased, *parked, *poison;
  if (t == NULL) return;
  /* empty: zeros, -1 for the numbers that are absent, no levels */
  s = STATS(t);
  if (s != NULL) {
    EXPECT(s->now == T0);
    EXPECT(s->messages == 0 && s->groups == 0 && s->ready == 0 && s->leased == 0 &&
           s->parked == 0 && s->dead == 0);
    EXPECT(s->oldest_ready_age == -1.0 && s->next_release_at == -1.0);
    EXPECT(s->delayed == 0 && s->next_due_at == -1.0 && s->oldest_ready_seq == -1);
    EXPECT(s->n_priorities == 0);
  }
  harel_stats_free(s);
  /* a group in each state, on priorities 0 and 2; and a dead letter of priority 4 */
  PUBLISH(t, "leased", "0");
  now += 1;
  EXPECT_STATUS(harel_transport_publish(t, "parked", "1", 2, NULL, NULL), HAREL_OK);
  EXPECT_STATUS(harel_transport_publish(t, "parked", "2", 2, NULL, NULL), HAREL_OK);
  EXPECT_STATUS(harel_transport_publish(t, "ready", "3", 2, "k", NULL), HAREL_OK);
  EXPECT_STATUS(harel_transport_publish(t, "dead", "4", 4, NULL, NULL), HAREL_OK);
  leased = NULL;
  EXPECT_STATUS(harel_transport_claim(t, "w", 10.0, 0, NULL, 0, &leased, NULL), HAREL_OK);
  parked = NULL;
  EXPECT_STATUS(harel_transport_claim(t, "w", 10.0, 0, NULL, 0, &parked, NULL), HAREL_OK);
  if (parked != NULL) {
    EXPECT_STR(parked->group_id, "parked");
    EXPECT_STATUS(harel_transport_nack(t, parked, 5.0, NULL), HAREL_OK);
  }
  poison = NULL;
  EXPECT_STATUS(harel_transport_claim(t, "w", 10.0, 4, NULL, 0, &poison, NULL), HAREL_OK);
  if (poison != NULL) EXPECT_STATUS(harel_transport_dead_letter(t, poison, "x", NULL), HAREL_OK);
  now += 2;
  s = STATS(t);
  if (s != NULL) {
    EXPECT(s->now == T0 + 3);
    EXPECT(s->messages == 4 && s->groups == 3);
    EXPECT(s->ready == 1 && s->leased == 1 && s->parked == 1 && s->dead == 1);
    EXPECT(s->delayed == 0 && s->next_due_at == -1.0);
    EXPECT(s->oldest_ready_age == 2.0);          /* "ready" was published at T0 + 1 */
    EXPECT(s->next_release_at == T0 + 1 + 5.0); /* the park ends before the lease */
    if (EXPECT(s->n_priorities == 2) && EXPECT(s->by_priority != NULL)) {
      const harel_priority_stats *p0 = &s->by_priority[0], *p2 = &s->by_priority[1];
      EXPECT(p0->priority == 0 && p0->groups == 1 && p0->ready == 0 && p0->leased == 1 &&
             p0->parked == 0);
      EXPECT(p2->priority == 2 && p2->groups == 2 && p2->ready == 1 && p2->leased == 0 &&
             p2->parked == 1);
    }
  }
  harel_stats_free(s);
  harel_lease_free(leased);
  harel_lease_free(parked);
  harel_lease_free(poison);
  harel_transport_close(t);
}

/* Group ids in order, with lengths (a multi-byte id among them), every field, pages
 * followed by their next_cursor to the end, and the state filter. */
static void groups_pages_and_the_state_filter(void) {
  static const char *const order[] = {"a", "b", "c", "d", "e", "\xc3\xa9t\xc3\xa9"};
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_group_page *page = NULL, *prev;
  harel_lease *leased = NULL, *parked = NULL, *a = NULL;
  harel_error *e = NULL;
  size_t i, seen = 0;
  int pages = 0;
  if (t == NULL) return;
  for (i = 5; i-- > 0;) /* e, d, c, b, a: arrival order is not id order */
    EXPECT_STATUS(harel_transport_publish(t, order[i], "{}", 1, "key", NULL), HAREL_OK);
  PUBLISH(t, "a", "2");
  EXPECT_STATUS(harel_transport_publish(t, order[5], "{}", 3, NULL, NULL), HAREL_OK);
  leased = CLAIM(t, "w1", NULL); /* e, first to arrive */
  parked = CLAIM(t, "w2", NULL); /* d */
  if (leased == NULL || parked == NULL) {
    harel_lease_free(leased);
    harel_lease_free(parked);
    harel_transport_close(t);
    return;
  }
  EXPECT_STR(leased->group_id, "e");
  EXPECT_STR(parked->group_id, "d");
  EXPECT_STATUS(harel_transport_nack(t, parked, 60.0, NULL), HAREL_OK);
  now += 4;
  /* every group, two a page */
  EXPECT_CALL(harel_transport_groups(t, -1, NULL, 2, &page, &e), &e, HAREL_OK);
  while (page != NULL) {
    pages++;
    EXPECT(page->n_groups == 2 || (page->n_groups == 0 && seen == 6));
    for (i = 0; i < page->n_groups && seen < 6; i++, seen++) {
      const harel_group_info *g = &page->groups[i];
      if (!EXPECT(g->group_id_len == strlen(order[seen]) &&
                  memcmp(g->group_id, order[seen], g->group_id_len + 1) == 0))
        continue;
      EXPECT(g->head_seq > 0);
      EXPECT(g->head_age == 4.0);
      if (seen == 0) { /* a: ready, two messages, its first publish's priority and key */
        EXPECT(g->state == HAREL_GROUP_READY && g->depth == 2 && g->priority == 1);
        EXPECT(g->holder == NULL && g->lock_expiry == -1.0 && g->head_attempts == 0);
        EXPECT_STR(g->routing_key, "key");
      } else if (seen == 3) { /* d: parked, no holder, the park's end, claimed once */
        EXPECT(g->state == HAREL_GROUP_PARKED && g->depth == 1 && g->holder == NULL);
        EXPECT(g->lock_expiry == T0 + 60.0 && g->head_attempts == 1 && g->head_seq == parked->seq);
      } else if (seen == 4) { /* e: leased to w1 */
        EXPECT(g->state == HAREL_GROUP_LEASED && g->head_seq == leased->seq);
        EXPECT_STR(g->holder, "w1");
        EXPECT(g->lock_expiry == T0 + VIS && g->head_attempts == 1);
      } else if (seen == 5) { /* été: no routing key, priority 3 */
        EXPECT(g->state == HAREL_GROUP_READY && g->priority == 3 && g->routing_key == NULL);
      } else {
        EXPECT(g->state == HAREL_GROUP_READY && g->depth == 1 && g->head_attempts == 0);
      }
    }
    if (page->next_cursor == NULL || pages > 6) break;
    prev = page;
    page = NULL;
    /* the cursor is copied: the page it came from may be freed after the call */
    EXPECT_CALL(harel_transport_groups(t, -1, prev->next_cursor, 2, &page, &e), &e, HAREL_OK);
    harel_group_page_free(prev);
  }
  EXPECT(seen == 6 && pages == 3);
  harel_group_page_free(page);
  /* the state filter */
  page = NULL;
  EXPECT_CALL(harel_transport_groups(t, HAREL_GROUP_LEASED, NULL, 10, &page, &e), &e, HAREL_OK);
  if (EXPECT(page != NULL) && EXPECT(page->n_groups == 1)) {
    EXPECT_STR(page->groups[0].group_id, "e");
    EXPECT(page->next_cursor == NULL);
  }
  harel_group_page_free(page);
  page = NULL;
  EXPECT_CALL(harel_transport_groups(t, HAREL_GROUP_PARKED, NULL, 10, &page, &e), &e, HAREL_OK);
  if (EXPECT(page != NULL) && EXPECT(page->n_groups == 1)) EXPECT_STR(page->groups[0].group_id, "d");
  harel_group_page_free(page);
  page = NULL;
  EXPECT_CALL(harel_transport_groups(t, HAREL_GROUP_READY, NULL, 3, &page, &e), &e, HAREL_OK);
  if (EXPECT(page != NULL) && EXPECT(page->n_groups == 3) && EXPECT(page->next_cursor != NULL)) {
    EXPECT_STR(page->groups[2].group_id, "c");
    prev = page;
    page = NULL;
    EXPECT_CALL(harel_transport_groups(t, HAREL_GROUP_READY, prev->next_cursor, 3, &page, &e), &e,
                HAREL_OK);
    harel_group_page_free(prev);
    if (EXPECT(page != NULL) && EXPECT(page->n_groups == 1)) {
      EXPECT_STR(page->groups[0].group_id, order[5]);
      EXPECT(page->next_cursor == NULL);
    }
  }
  harel_group_page_free(page);
  /* the edges of limit are fine */
  page = NULL;
  EXPECT_CALL(harel_transport_groups(t, -1, NULL, 1, &page, &e), &e, HAREL_OK);
  if (EXPECT(page != NULL)) EXPECT(page->n_groups == 1 && page->next_cursor != NULL);
  harel_group_page_free(page);
  page = NULL;
  EXPECT_CALL(harel_transport_groups(t, -1, NULL, HAREL_MAX_PAGE, &page, &e), &e, HAREL_OK);
  if (EXPECT(page != NULL)) EXPECT(page->n_groups == 6 && page->next_cursor == NULL);
  harel_group_page_free(page);
  /* nothing was claimed: e still w1's, d parked, c (next to arrive) served */
  now = T0 + 5;
  a = CLAIM(t, "w", NULL);
  if (a != NULL) EXPECT_STR(a->group_id, "c");
  harel_lease_free(a);
  ACK(t, leased);
  harel_lease_free(parked);
  harel_transport_close(t);
}

/* A group's messages, oldest first, with their locks and times; a page and the next; an
 * unknown group's empty page. */
static void peek_maps_every_field(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_message_page *page = NULL, *rest = NULL;
  harel_lease *l;
  harel_error *e = NULL;
  if (t == NULL) return;
  PUBLISH(t, "g", "\"p0\"");
  now += 1;
  PUBLISH(t, "g", "{\"p\": 1}");
  now += 1;
  PUBLISH(t, "g", "\"p2\"");
  l = CLAIM(t, "w", "\"p0\"");
  if (l == NULL) {
    harel_transport_close(t);
    return;
  }
  EXPECT_CALL(harel_transport_peek(t, "g", NULL, 2, &page, &e), &e, HAREL_OK);
  if (EXPECT(page != NULL) && EXPECT(page->n_messages == 2)) {
    const harel_message_info *head = &page->messages[0], *second = &page->messages[1];
    EXPECT(head->seq == l->seq && head->event_len == 4 && strcmp(head->event, "\"p0\"") == 0);
    EXPECT(head->attempts == 1 && head->lock_expiry == T0 + 2 + VIS && head->published_at == T0);
    EXPECT_STR(head->locked_by, "w");
    EXPECT(second->seq > head->seq && second->event_len == 8);
    EXPECT_STR(second->event, "{\"p\": 1}");
    EXPECT(second->attempts == 0 && second->locked_by == NULL && second->lock_expiry == -1.0);
    EXPECT(second->published_at == T0 + 1);
    if (EXPECT(page->next_cursor != NULL)) {
      EXPECT_CALL(harel_transport_peek(t, "g", page->next_cursor, 2, &rest, &e), &e, HAREL_OK);
      if (EXPECT(rest != NULL) && EXPECT(rest->n_messages == 1)) {
        EXPECT_STR(rest->messages[0].event, "\"p2\"");
        EXPECT(rest->messages[0].published_at == T0 + 2 && rest->next_cursor == NULL);
      }
      harel_message_page_free(rest);
    }
  }
  harel_message_page_free(page);
  /* parked: locked by "__parked__" until the park's end */
  EXPECT_STATUS(harel_transport_nack(t, l, 60.0, NULL), HAREL_OK);
  page = NULL;
  EXPECT_CALL(harel_transport_peek(t, "g", NULL, 1, &page, &e), &e, HAREL_OK);
  if (EXPECT(page != NULL) && EXPECT(page->n_messages == 1)) {
    EXPECT_STR(page->messages[0].locked_by, "__parked__");
    EXPECT(page->messages[0].lock_expiry == T0 + 2 + 60.0);
  }
  harel_message_page_free(page);
  page = NOT_SET_MESSAGES;
  EXPECT_CALL(harel_transport_peek(t, "none", NULL, 10, &page, &e), &e, HAREL_OK);
  if (EXPECT(page != NULL && page != NOT_SET_MESSAGES))
    EXPECT(page->n_messages == 0 && page->next_cursor == NULL);
  harel_message_page_free(page);
  CLAIM_EMPTY(t); /* peek claimed nothing: g is still parked */
  harel_lease_free(l);
  harel_transport_close(t);
}

/* A worker's dead_letter, then the dead letters listed (all, by group, in pages),
 * redriven and purged by each selection, with their counts. */
static void dead_letters_listed_redriven_and_purged(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_dead_page *page, *rest;
  harel_lease *l;
  harel_stats *s;
  int64_t seqs[2];
  uint64_t n;
  harel_error *e = NULL;
  if (t == NULL) return;
  PUBLISH(t, "a", "\"a0\"");
  PUBLISH(t, "a", "\"a1\"");
  EXPECT_STATUS(harel_transport_publish(t, "b", "\"b0\"", 2, "k", NULL), HAREL_OK);
  now += 1;
  /* dead_letter: the worker's verdict; the lease is over, the group goes on at once */
  l = CLAIM(t, "w", "\"a0\"");
  if (l != NULL) {
    EXPECT_CALL(harel_transport_dead_letter(t, l, "cannot parse", &e), &e, HAREL_OK);
    EXPECT_FAILS(HAREL_ERR_LEASE_LOST, NULL, harel_transport_dead_letter(t, l, "again", ERR));
    EXPECT_FAILS(HAREL_ERR_LEASE_LOST, NULL, harel_transport_ack(t, l, ERR));
    harel_lease_free(l);
  }
  BURY(t, 2, "poison"); /* b0, then a1 */
  CLAIM_EMPTY(t);
  /* all, a page of 2 and the rest, in queue order: a0, a1, b0 */
  page = DEAD_PAGE(t, NULL, NULL, 2);
  if (page != NULL && EXPECT(page->n_letters == 2) && EXPECT(page->next_cursor != NULL)) {
    const harel_dead_letter *a0 = &page->letters[0], *a1 = &page->letters[1];
    EXPECT(a0->seq < a1->seq);
    EXPECT(a0->group_id_len == 1 && strcmp(a0->group_id, "a") == 0);
    EXPECT(a0->event_len == 4 && strcmp(a0->event, "\"a0\"") == 0);
    EXPECT(a0->attempts == 1 && a0->dead_at == T0 + 1);
    EXPECT_STR(a0->last_worker, "w");
    EXPECT_STR(a0->reason, "cannot parse");
    EXPECT_STR(a1->event, "\"a1\"");
    EXPECT_STR(a1->reason, "poison");
    rest = DEAD_PAGE(t, NULL, page->next_cursor, 2);
    if (rest != NULL && EXPECT(rest->n_letters == 1)) {
      EXPECT(rest->letters[0].seq > a1->seq && rest->next_cursor == NULL);
      EXPECT_STR(rest->letters[0].group_id, "b");
      seqs[0] = rest->letters[0].seq;
    }
    harel_dead_page_free(rest);
  }
  harel_dead_page_free(page);
  page = DEAD_PAGE(t, "b", NULL, 10);
  if (page != NULL) EXPECT(page->n_letters == 1 && strcmp(page->letters[0].event, "\"b0\"") == 0);
  harel_dead_page_free(page);
  page = DEAD_PAGE(t, "none", NULL, 10);
  if (page != NULL) EXPECT(page->n_letters == 0 && page->next_cursor == NULL);
  harel_dead_page_free(page);

  /* redrive: by seqs (an unknown one passed over), by group, all; counts and NULL */
  seqs[1] = 999999;
  n = NOT_SET_COUNT;
  EXPECT_CALL(harel_transport_redrive(t, false, NULL, seqs, 2, &n, &e), &e, HAREL_OK);
  EXPECT(n == 1);
  n = NOT_SET_COUNT;
  EXPECT_CALL(harel_transport_redrive(t, false, "a", NULL, 0, &n, &e), &e, HAREL_OK);
  EXPECT(n == 2);
  n = NOT_SET_COUNT;
  EXPECT_CALL(harel_transport_redrive(t, true, NULL, NULL, 0, &n, &e), &e, HAREL_OK);
  EXPECT(n == 0);
  EXPECT_CALL(harel_transport_redrive(t, true, NULL, NULL, 0, NULL, &e), &e, HAREL_OK);
  s = STATS(t);
  if (s != NULL) EXPECT(s->messages == 3 && s->groups == 2 && s->dead == 0);
  harel_stats_free(s);
  /* back with b's priority and routing key, counted anew */
  l = NULL;
  EXPECT_STATUS(harel_transport_claim(t, "w", VIS, 2, (const char *const[]){"k"}, 1, &l, NULL),
                HAREL_OK);
  if (EXPECT(l != NULL)) {
    EXPECT_STR(l->event, "\"b0\"");
    EXPECT(l->attempts == 1);
    EXPECT_STATUS(harel_transport_dead_letter(t, l, "again", NULL), HAREL_OK);
  }
  harel_lease_free(l);
  BURY(t, 2, "again"); /* a's two */

  /* purge_dead: by seqs (a's first), by group, all */
  page = DEAD_PAGE(t, "a", NULL, 1);
  if (page != NULL && EXPECT(page->n_letters == 1)) {
    seqs[0] = page->letters[0].seq;
    n = NOT_SET_COUNT;
    EXPECT_CALL(harel_transport_purge_dead(t, false, NULL, seqs, 2, &n, &e), &e, HAREL_OK);
    EXPECT(n == 1);
  }
  harel_dead_page_free(page);
  n = NOT_SET_COUNT;
  EXPECT_CALL(harel_transport_purge_dead(t, false, "b", NULL, 0, &n, &e), &e, HAREL_OK);
  EXPECT(n == 1);
  n = NOT_SET_COUNT;
  EXPECT_CALL(harel_transport_purge_dead(t, true, NULL, NULL, 0, &n, &e), &e, HAREL_OK);
  EXPECT(n == 1);
  EXPECT_CALL(harel_transport_purge_dead(t, true, NULL, NULL, 0, NULL, &e), &e, HAREL_OK);
  s = STATS(t);
  if (s != NULL) EXPECT(s->messages == 0 && s->groups == 0 && s->dead == 0);
  harel_stats_free(s);
  harel_transport_close(t);
}

/* dead_letter reads a caller-filled lease by its group_id_len, as ack does. */
static void dead_letter_reads_a_caller_filled_lease(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *claimed, mine;
  char group[2] = {'g', 'X'}; /* "g", with no NUL after it */
  char worker[] = "w1";
  harel_dead_page *dead;
  if (t == NULL) return;
  PUBLISH(t, "g", "1");
  claimed = CLAIM(t, "w1", "1");
  if (claimed == NULL) {
    harel_transport_close(t);
    return;
  }
  memset(&mine, 0, sizeof mine);
  mine.seq = claimed->seq;
  mine.group_id = group;
  mine.group_id_len = 2; /* "gX": another group */
  mine.worker_id = worker;
  harel_lease_free(claimed);
  EXPECT_FAILS(HAREL_ERR_LEASE_LOST, NULL, harel_transport_dead_letter(t, &mine, "r", ERR));
  mine.group_id_len = 1;
  EXPECT_STATUS(harel_transport_dead_letter(t, &mine, "r", NULL), HAREL_OK);
  dead = DEAD_PAGE(t, "g", NULL, 10);
  if (dead != NULL) EXPECT(dead->n_letters == 1 && dead->letters[0].seq == mine.seq);
  harel_dead_page_free(dead);
  CLAIM_EMPTY(t);
  harel_transport_close(t);
}

/* purge_group's and purge's counts; a purged message's lease is lost; dead letters stay. */
static void purge_group_and_purge_count(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *held;
  harel_stats *s;
  uint64_t n;
  harel_error *e = NULL;
  if (t == NULL) return;
  PUBLISH(t, "a", "1");
  PUBLISH(t, "a", "2");
  PUBLISH(t, "b", "3");
  PUBLISH(t, "c", "4");
  PUBLISH(t, "d", "5");
  held = CLAIM(t, "w", "1");
  n = NOT_SET_COUNT;
  EXPECT_CALL(harel_transport_purge_group(t, "a", &n, &e), &e, HAREL_OK);
  EXPECT(n == 2);
  if (held != NULL) EXPECT_FAILS(HAREL_ERR_LEASE_LOST, NULL, harel_transport_ack(t, held, ERR));
  harel_lease_free(held);
  n = NOT_SET_COUNT;
  EXPECT_CALL(harel_transport_purge_group(t, "none", &n, &e), &e, HAREL_OK);
  EXPECT(n == 0);
  EXPECT_CALL(harel_transport_purge_group(t, "b", NULL, &e), &e, HAREL_OK);
  BURY(t, 1, "kept"); /* c */
  n = NOT_SET_COUNT;
  EXPECT_CALL(harel_transport_purge(t, &n, &e), &e, HAREL_OK);
  EXPECT(n == 1); /* d */
  n = NOT_SET_COUNT;
  EXPECT_CALL(harel_transport_purge(t, &n, &e), &e, HAREL_OK);
  EXPECT(n == 0);
  EXPECT_CALL(harel_transport_purge(t, NULL, &e), &e, HAREL_OK);
  s = STATS(t);
  if (s != NULL) EXPECT(s->messages == 0 && s->groups == 0 && s->dead == 1);
  harel_stats_free(s);
  CLAIM_EMPTY(t);
  PUBLISH(t, "a", "6");
  ACK(t, CLAIM(t, "w", "6"));
  harel_transport_close(t);
}

/* release: true for a lease or a park it ended, false when nothing was held. */
static void release_true_and_false(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *stuck, *parked, *again;
  bool released;
  harel_error *e = NULL;
  if (t == NULL) return;
  PUBLISH(t, "g", "1");
  PUBLISH(t, "p", "2");
  stuck = CLAIM(t, "w1", "1");
  parked = CLAIM(t, "w1", "2");
  if (stuck == NULL || parked == NULL) {
    harel_lease_free(stuck);
    harel_lease_free(parked);
    harel_transport_close(t);
    return;
  }
  EXPECT_STATUS(harel_transport_nack(t, parked, 3600.0, NULL), HAREL_OK);
  released = false;
  EXPECT_CALL(harel_transport_release(t, "g", &released, &e), &e, HAREL_OK);
  EXPECT(released);
  released = false;
  EXPECT_CALL(harel_transport_release(t, "p", &released, &e), &e, HAREL_OK);
  EXPECT(released);
  released = true;
  EXPECT_CALL(harel_transport_release(t, "g", &released, &e), &e, HAREL_OK);
  EXPECT(!released);
  released = true;
  EXPECT_CALL(harel_transport_release(t, "none", &released, &e), &e, HAREL_OK);
  EXPECT(!released);
  EXPECT_CALL(harel_transport_release(t, "none", NULL, &e), &e, HAREL_OK);
  EXPECT_FAILS(HAREL_ERR_LEASE_LOST, NULL, harel_transport_ack(t, stuck, ERR));
  again = CLAIM(t, "w2", "1"); /* served at once, counted */
  if (again != NULL) EXPECT(again->attempts == 2);
  ACK(t, again);
  ACK(t, CLAIM(t, "w2", "2"));
  harel_lease_free(stuck);
  harel_lease_free(parked);
  harel_transport_close(t);
}

/* Pages of many items, each with strings, and the stats' levels: every string
 * NUL-terminated at its length, and (under valgrind and ASan) everything freed. */
static void big_pages_are_whole_and_freed(void) {
  enum { GROUPS = 120, PER_GROUP = 3, BIG = 2000 };
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  static char key[BIG + 1], worker[BIG + 1], reason[BIG + 1], event[BIG + 8];
  char group[BIG + 16];
  harel_message batch[GROUPS * PER_GROUP];
  char groups[GROUPS][BIG + 16];
  harel_group_page *gp = NULL;
  harel_message_page *mp = NULL;
  harel_dead_page *dp = NULL;
  harel_stats *s;
  harel_error *e = NULL;
  size_t i;
  int k;
  if (t == NULL) return;
  memset(key, 'k', BIG);
  memset(worker, 'w', BIG);
  memset(reason, 'r', BIG);
  event[0] = '"';
  memset(event + 1, 'e', BIG);
  event[BIG + 1] = '"';
  event[BIG + 2] = '\0';
  memset(group, 'g', BIG);
  for (i = 0; i < GROUPS; i++) snprintf(groups[i], sizeof groups[i], "%.*s-%03u", BIG, group, (unsigned)i);
  for (i = 0; i < GROUPS * PER_GROUP; i++) {
    batch[i].group_id = groups[i % GROUPS];
    batch[i].event_json = event;
    batch[i].priority = (int32_t)(i % GROUPS % 5);
    batch[i].routing_key = key;
  }
  EXPECT_STATUS(harel_transport_publish_many(t, batch, GROUPS * PER_GROUP, NULL), HAREL_OK);
  for (k = 0; k < GROUPS / 2; k++) { /* half the groups: a head dead, the next leased */
    harel_lease *l = NULL;
    EXPECT_STATUS(harel_transport_claim(t, worker, VIS, 0, NULL, 0, &l, NULL), HAREL_OK);
    if (l == NULL) break;
    EXPECT_STATUS(harel_transport_dead_letter(t, l, reason, NULL), HAREL_OK);
    harel_lease_free(l);
  }
  for (k = 0; k < GROUPS / 2; k++) {
    harel_lease *l = NULL;
    EXPECT_STATUS(harel_transport_claim(t, worker, VIS, 0, NULL, 0, &l, NULL), HAREL_OK);
    harel_lease_free(l);
  }
  EXPECT_CALL(harel_transport_groups(t, -1, NULL, HAREL_MAX_PAGE, &gp, &e), &e, HAREL_OK);
  if (EXPECT(gp != NULL) && EXPECT(gp->n_groups == GROUPS)) {
    size_t leased = 0;
    for (i = 0; i < gp->n_groups; i++) {
      const harel_group_info *g = &gp->groups[i];
      EXPECT(g->group_id_len == BIG + 4 && strlen(g->group_id) == g->group_id_len);
      EXPECT(g->routing_key != NULL && strlen(g->routing_key) == BIG);
      if (g->holder != NULL) EXPECT(strcmp(g->holder, worker) == 0), leased++;
    }
    EXPECT(leased == GROUPS / 2);
  }
  harel_group_page_free(gp);
  EXPECT_CALL(harel_transport_peek(t, groups[0], NULL, HAREL_MAX_PAGE, &mp, &e), &e, HAREL_OK);
  if (EXPECT(mp != NULL) && EXPECT(mp->n_messages == PER_GROUP - 1))
    for (i = 0; i < mp->n_messages; i++)
      EXPECT(mp->messages[i].event_len == BIG + 2 && strlen(mp->messages[i].event) == BIG + 2);
  harel_message_page_free(mp);
  EXPECT_CALL(harel_transport_dead_letters(t, NULL, NULL, HAREL_MAX_PAGE, &dp, &e), &e, HAREL_OK);
  if (EXPECT(dp != NULL) && EXPECT(dp->n_letters == GROUPS / 2))
    for (i = 0; i < dp->n_letters; i++) {
      const harel_dead_letter *d = &dp->letters[i];
      EXPECT(d->group_id_len == BIG + 4 && strlen(d->group_id) == d->group_id_len);
      EXPECT(d->event_len == BIG + 2 && strlen(d->event) == d->event_len);
      EXPECT(strcmp(d->reason, reason) == 0 && strcmp(d->last_worker, worker) == 0);
    }
  harel_dead_page_free(dp);
  s = STATS(t);
  if (s != NULL) {
    EXPECT(s->n_priorities == 5 && s->messages == GROUPS * PER_GROUP - GROUPS / 2);
    EXPECT(s->dead == GROUPS / 2 && s->leased == GROUPS / 2);
  }
  harel_stats_free(s);
  harel_transport_close(t);
}

/* Bad arguments of the new functions: NULL pointers, invalid UTF-8, numbers out of range,
 * cursors of another listing or made up, a selection that is not exactly one; each refused
 * with the fixture unchanged (its lease, its waiting message, its dead letter). */
static void bad_arguments_of_set_max_attempts(void) {
  EXPECT_BAD("o", harel_options_set_max_attempts(NULL, 3, ERR));
}

static void bad_arguments_of_dead_letter(void) {
  fixture fx;
  size_t i;
  if (!fixture_open(&fx)) return;
  EXPECT_BAD("t", harel_transport_dead_letter(NULL, fx.held, "r", ERR));
  EXPECT_BAD("reason", harel_transport_dead_letter(fx.t, fx.held, NULL, ERR));
  EXPECT_BAD("reason", harel_transport_dead_letter(fx.t, fx.held, "", ERR));
  for (i = 0; i < N_BAD_UTF8; i++)
    EXPECT_BAD("reason", harel_transport_dead_letter(fx.t, fx.held, BAD_UTF8[i], ERR));
#define DEAD_LETTER_BAD(parameter) \
  EXPECT_BAD(parameter, harel_transport_dead_letter(fx.t, bad, "r", ERR))
  EACH_BAD_LEASE(fx, DEAD_LETTER_BAD);
#undef DEAD_LETTER_BAD
  FIXTURE_CLOSE(&fx);
}

/* redrive and purge_dead take the same selection: exactly one of all, group_id, seqs. */
#define EACH_BAD_SELECTION(BAD, t)                                                          \
  do {                                                                                      \
    const int64_t seqs_[] = {fx.dead_seq};                                                  \
    size_t u_;                                                                              \
    BAD("t", NULL, true, NULL, NULL, 0);                                                    \
    BAD("seqs", (t), false, NULL, NULL, 0);        /* none */                               \
    BAD("seqs", (t), true, "d1", NULL, 0);         /* two */                                \
    BAD("seqs", (t), true, NULL, seqs_, 1);                                                 \
    BAD("seqs", (t), false, "d1", seqs_, 1);                                                \
    BAD("seqs", (t), true, "d1", seqs_, 1);        /* three */                              \
    BAD("seqs", (t), false, NULL, NULL, 1);        /* seqs NULL with n_seqs > 0 */           \
    BAD("seqs", (t), false, NULL, NULL, SIZE_MAX);                                          \
    BAD("group_id", (t), false, "", NULL, 0);                                               \
    for (u_ = 0; u_ < N_BAD_UTF8; u_++) BAD("group_id", (t), false, BAD_UTF8[u_], NULL, 0); \
  } while (0)

static void bad_arguments_of_redrive_and_purge_dead(void) {
  fixture fx;
  if (!fixture_open(&fx)) return;
  EACH_BAD_SELECTION(REDRIVE_BAD, fx.t);
  EACH_BAD_SELECTION(PURGE_DEAD_BAD, fx.t);
  FIXTURE_CLOSE(&fx);
}

static void bad_arguments_of_purge_group_purge_and_release(void) {
  fixture fx;
  uint64_t n = NOT_SET_COUNT;
  bool released = true;
  size_t i;
  if (!fixture_open(&fx)) return;
  EXPECT_BAD("t", harel_transport_purge_group(NULL, "g1", &n, ERR));
  EXPECT_BAD("group_id", harel_transport_purge_group(fx.t, NULL, &n, ERR));
  EXPECT_BAD("group_id", harel_transport_purge_group(fx.t, "", &n, ERR));
  EXPECT_BAD("t", harel_transport_purge(NULL, &n, ERR));
  EXPECT_BAD("t", harel_transport_purge(NULL, NULL, ERR));
  EXPECT_BAD("t", harel_transport_release(NULL, "g1", &released, ERR));
  EXPECT_BAD("group_id", harel_transport_release(fx.t, NULL, &released, ERR));
  EXPECT_BAD("group_id", harel_transport_release(fx.t, "", &released, ERR));
  for (i = 0; i < N_BAD_UTF8; i++) {
    EXPECT_BAD("group_id", harel_transport_purge_group(fx.t, BAD_UTF8[i], &n, ERR));
    EXPECT_BAD("group_id", harel_transport_release(fx.t, BAD_UTF8[i], &released, ERR));
  }
  EXPECT(n == NOT_SET_COUNT && released);
  FIXTURE_CLOSE(&fx);
}

/* Cursors of another queue are as good as this one's: a cursor says where a listing goes
 * on, not which queue. These are of each listing, from a queue of their own. */
typedef struct {
  char groups[64], messages[64], dead[64];
} cursors;

static int cursors_of_each_listing(cursors *c) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_group_page *g = NULL;
  harel_message_page *m = NULL;
  harel_dead_page *d = NULL;
  int ok;
  if (t == NULL) return 0;
  PUBLISH(t, "a", "1");
  PUBLISH(t, "a", "2");
  PUBLISH(t, "a", "3");
  PUBLISH(t, "b", "4");
  PUBLISH(t, "c", "5");
  BURY(t, 2, "x");
  ok = harel_transport_groups(t, -1, NULL, 1, &g, NULL) == HAREL_OK && g->next_cursor != NULL &&
       harel_transport_peek(t, "a", NULL, 1, &m, NULL) == HAREL_OK && m->next_cursor != NULL &&
       harel_transport_dead_letters(t, NULL, NULL, 1, &d, NULL) == HAREL_OK &&
       d->next_cursor != NULL;
  if (ok) {
    snprintf(c->groups, sizeof c->groups, "%s", g->next_cursor);
    snprintf(c->messages, sizeof c->messages, "%s", m->next_cursor);
    snprintf(c->dead, sizeof c->dead, "%s", d->next_cursor);
  }
  harel_group_page_free(g);
  harel_message_page_free(m);
  harel_dead_page_free(d);
  harel_transport_close(t);
  return EXPECT(ok);
}

static void bad_arguments_of_the_looks(void) {
  static const char *const made_up[] = {"", "x", "g", "g1", "g1.f", "g1.zz", "m1.00",
                                        "d1.0000", "m2.0000000000000001"};
  const int32_t bad_state[] = {HAREL_GROUP_DELAYED + 1, -2, INT32_MIN, INT32_MAX};
  const size_t bad_limit[] = {0, HAREL_MAX_PAGE + 1, SIZE_MAX};
  fixture fx;
  cursors c;
  size_t i;
  if (!cursors_of_each_listing(&c) || !fixture_open(&fx)) return;
  /* stats */
  STATS_FAILS(HAREL_ERR_ARGUMENT, "t", NULL);
  EXPECT_BAD("out", harel_transport_stats(fx.t, NULL, ERR));
  EXPECT_BAD("out", harel_transport_stats(NULL, NULL, ERR));
  /* groups */
  GROUPS_FAILS(HAREL_ERR_ARGUMENT, "t", NULL, -1, NULL, 10);
  EXPECT_BAD("out", harel_transport_groups(fx.t, -1, NULL, 10, NULL, ERR));
  for (i = 0; i < N_OF(bad_state); i++)
    GROUPS_FAILS(HAREL_ERR_ARGUMENT, "state", fx.t, bad_state[i], NULL, 10);
  for (i = 0; i < N_OF(bad_limit); i++)
    GROUPS_FAILS(HAREL_ERR_ARGUMENT, "limit", fx.t, -1, NULL, bad_limit[i]);
  GROUPS_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, -1, c.messages, 10);
  GROUPS_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, HAREL_GROUP_READY, c.dead, 10);
  /* peek */
  PEEK_FAILS(HAREL_ERR_ARGUMENT, "t", NULL, "g1", NULL, 10);
  PEEK_FAILS(HAREL_ERR_ARGUMENT, "group_id", fx.t, NULL, NULL, 10);
  PEEK_FAILS(HAREL_ERR_ARGUMENT, "group_id", fx.t, "", NULL, 10);
  EXPECT_BAD("out", harel_transport_peek(fx.t, "g1", NULL, 10, NULL, ERR));
  for (i = 0; i < N_OF(bad_limit); i++)
    PEEK_FAILS(HAREL_ERR_ARGUMENT, "limit", fx.t, "g1", NULL, bad_limit[i]);
  PEEK_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, "g1", c.groups, 10);
  PEEK_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, "g1", c.dead, 10);
  /* dead_letters (group_id NULL is all of them) */
  DEAD_FAILS(HAREL_ERR_ARGUMENT, "t", NULL, NULL, NULL, 10);
  DEAD_FAILS(HAREL_ERR_ARGUMENT, "group_id", fx.t, "", NULL, 10);
  EXPECT_BAD("out", harel_transport_dead_letters(fx.t, NULL, NULL, 10, NULL, ERR));
  for (i = 0; i < N_OF(bad_limit); i++)
    DEAD_FAILS(HAREL_ERR_ARGUMENT, "limit", fx.t, "d1", NULL, bad_limit[i]);
  DEAD_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, NULL, c.groups, 10);
  DEAD_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, NULL, c.messages, 10);
  /* "after the bytes ff" is a groups cursor (a stored group id need not be UTF-8), and
     no other listing's */
  PEEK_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, "g1", "g1.ff", 10);
  DEAD_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, NULL, "g1.ff", 10);
  /* made-up cursors, and strings that are not UTF-8 */
  for (i = 0; i < N_OF(made_up); i++) {
    GROUPS_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, -1, made_up[i], 10);
    PEEK_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, "g1", made_up[i], 10);
    DEAD_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, NULL, made_up[i], 10);
  }
  for (i = 0; i < N_BAD_UTF8; i++) {
    GROUPS_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, -1, BAD_UTF8[i], 10);
    PEEK_FAILS(HAREL_ERR_ARGUMENT, "group_id", fx.t, BAD_UTF8[i], NULL, 10);
    PEEK_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, "g1", BAD_UTF8[i], 10);
    DEAD_FAILS(HAREL_ERR_ARGUMENT, "group_id", fx.t, BAD_UTF8[i], NULL, 10);
    DEAD_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, NULL, BAD_UTF8[i], 10);
  }
  /* a cursor of the right listing, from the other queue, is taken */
  {
    harel_group_page *g = NULL;
    harel_message_page *m = NULL;
    harel_dead_page *d = NULL;
    EXPECT_STATUS(harel_transport_groups(fx.t, -1, c.groups, 10, &g, NULL), HAREL_OK);
    EXPECT_STATUS(harel_transport_peek(fx.t, "g1", c.messages, 10, &m, NULL), HAREL_OK);
    EXPECT_STATUS(harel_transport_dead_letters(fx.t, NULL, c.dead, 10, &d, NULL), HAREL_OK);
    harel_group_page_free(g);
    harel_message_page_free(m);
    harel_dead_page_free(d);
  }
  FIXTURE_CLOSE(&fx);
}

/* A `*err` already set, given to each new function: refused, the error untouched, *out
 * NULL (never a page), counts untouched, and nothing done. */
static void a_set_err_is_refused_by_the_new_functions(void) {
  double now = T0;
  char was_text[512];
  harel_options *o = harel_options_new();
  harel_transport *t = NULL;
  harel_error *stale = NULL, *e = NULL;
  const harel_error *was;
  harel_lease *held = NULL, *l;
  harel_stats *s;
  harel_group_page *g;
  harel_message_page *m;
  harel_dead_page *d;
  uint64_t n = NOT_SET_COUNT;
  bool released = true;
  int64_t seq = 0;
  int i;
  EXPECT(harel_options_set_prefix(NULL, "p", &stale) == HAREL_ERR_ARGUMENT);
  if (!EXPECT(stale != NULL && o != NULL)) {
    harel_error_free(stale);
    harel_options_free(o);
    return;
  }
  was = stale;
  snprintf(was_text, sizeof was_text, "%s", harel_error_message(stale));
  EXPECT_STATUS(harel_options_set_clock(o, test_clock, &now, NULL), HAREL_OK);
  EXPECT_STATUS(harel_options_set_max_attempts(o, 5, NULL), HAREL_OK);
  REFUSED(harel_options_set_max_attempts(o, 1, &stale)); /* not taken: 5 stays */
  EXPECT_CALL(harel_transport_open(":memory:", o, &t, &e), &e, HAREL_OK);
  harel_options_free(o);
  if (t == NULL) {
    harel_error_free(stale);
    return;
  }
  PUBLISH(t, "d", "\"dead\"");
  PUBLISH(t, "g", "\"m1\"");
  for (i = 1; i <= 2; i++) { /* two claims of d's: max_attempts 1 would have moved it */
    l = CLAIM(t, "w", "\"dead\"");
    if (l != NULL && i == 1) EXPECT_STATUS(harel_transport_nack(t, l, 0.0, NULL), HAREL_OK);
    if (l != NULL && i == 2) {
      seq = l->seq;
      EXPECT_STATUS(harel_transport_dead_letter(t, l, "fixture", NULL), HAREL_OK);
    }
    harel_lease_free(l);
    if (i == 1) held = CLAIM(t, "w1", "\"m1\"");
  }
  if (held == NULL || seq == 0) {
    harel_lease_free(held);
    harel_transport_close(t);
    harel_error_free(stale);
    return;
  }
  REFUSED(harel_transport_dead_letter(t, held, "stale", &stale));
  REFUSED(harel_transport_redrive(t, true, NULL, NULL, 0, &n, &stale));
  REFUSED(harel_transport_redrive(t, false, NULL, &seq, 1, &n, &stale));
  REFUSED(harel_transport_purge_dead(t, true, NULL, NULL, 0, &n, &stale));
  REFUSED(harel_transport_purge_group(t, "g", &n, &stale));
  REFUSED(harel_transport_purge(t, &n, &stale));
  REFUSED(harel_transport_release(t, "g", &released, &stale));
  EXPECT(n == NOT_SET_COUNT && released);
  s = NOT_SET_STATS;
  REFUSED(harel_transport_stats(t, &s, &stale));
  EXPECT(s == NULL);
  g = NOT_SET_GROUPS;
  REFUSED(harel_transport_groups(t, -1, NULL, 10, &g, &stale));
  EXPECT(g == NULL);
  m = NOT_SET_MESSAGES;
  REFUSED(harel_transport_peek(t, "g", NULL, 10, &m, &stale));
  EXPECT(m == NULL);
  d = NOT_SET_DEAD;
  REFUSED(harel_transport_dead_letters(t, NULL, NULL, 10, &d, &stale));
  EXPECT(d == NULL);
  /* nothing done: the dead letter there, m1 still w1's */
  d = DEAD_PAGE(t, NULL, NULL, 10);
  if (d != NULL) EXPECT(d->n_letters == 1 && d->letters[0].seq == seq);
  harel_dead_page_free(d);
  CLAIM_EMPTY(t);
  ACK(t, held);
  CLAIM_EMPTY(t);
  harel_transport_close(t);
  harel_error_free(stale);
}

/* ---------------------------------------------------------------------------------------
 * The worker loop (issue #15): claims that wait (claim_wait, claim_many with a wait) and
 * what ends a wait (a commit in this process or another, a lease's or park's end, a cancel,
 * an interrupt); the batches (claim_many, ack_many, ack_and_claim_many); extend. What they
 * do to the queue is the Rust contract's; here, each call's mapping: its outputs, who owns
 * what, its statuses and bad arguments, and waits ended from other threads and processes.
 */

/* Seconds on a clock that only goes forward, to time the calls that wait. */
static double monotonic(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

static void pause_for(double seconds) {
  struct timespec left;
  left.tv_sec = (time_t)seconds;
  left.tv_nsec = (long)((seconds - (double)left.tv_sec) * 1e9);
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
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

/* One outcome per lease: HAREL_OK, or HAREL_ERR_LEASE_LOST for one acked already (before,
 * or earlier in the same call) or lapsed and claimed by another worker, while the others
 * are acked all the same; a caller-filled lease is read by its lengths. */
static void ack_many_reports_each_outcome(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *got[3] = {NULL, NULL, NULL}, *by_group[3] = {NULL, NULL, NULL}, *lapsed, *again;
  harel_lease mine;
  const harel_lease *leases[4];
  harel_status outcomes[4];
  harel_error *e = NULL;
  harel_stats *s;
  char group[2] = {'a', 'X'}; /* "a" with no NUL after it */
  size_t n = 0, i;
  if (t == NULL) return;
  PUBLISH(t, "a", "\"a1\"");
  PUBLISH(t, "b", "\"b1\"");
  PUBLISH(t, "c", "\"c1\"");
  PUBLISH(t, "a", "\"a2\"");
  EXPECT_CALL(harel_transport_claim_many(t, "w", VIS, 0, NULL, 0, 3, 0.0, NULL, got, &n, &e), &e,
              HAREL_OK);
  for (i = 0; i < n && i < 3; i++)
    if (got[i] != NULL && got[i]->group_id[0] >= 'a' && got[i]->group_id[0] <= 'c')
      by_group[got[i]->group_id[0] - 'a'] = got[i];
  if (!EXPECT(n == 3 && by_group[0] && by_group[1] && by_group[2])) {
    for (i = 0; i < n && i < 3; i++) harel_lease_free(got[i]);
    harel_transport_close(t);
    return;
  }
  EXPECT_STATUS(harel_transport_ack(t, by_group[1], NULL), HAREL_OK); /* b's, before */
  leases[0] = by_group[0];
  leases[1] = by_group[1];
  leases[2] = by_group[2];
  leases[3] = by_group[0]; /* a's again, in the same call */
  for (i = 0; i < 4; i++) outcomes[i] = HAREL_ERR_PANIC;
  EXPECT_CALL(harel_transport_ack_many(t, leases, 4, outcomes, &e), &e, HAREL_OK);
  EXPECT(outcomes[0] == HAREL_OK && outcomes[1] == HAREL_ERR_LEASE_LOST &&
         outcomes[2] == HAREL_OK && outcomes[3] == HAREL_ERR_LEASE_LOST);
  for (i = 0; i < 3; i++) harel_lease_free(got[i]);
  /* a2: its lease lapses and another worker has it; that worker's, copied by a binding */
  lapsed = CLAIM(t, "w", "\"a2\"");
  now += VIS + 1;
  again = CLAIM(t, "w2", "\"a2\"");
  if (lapsed != NULL && again != NULL) {
    mine = *again;
    mine.group_id = group;
    mine.group_id_len = 1;
    mine.event = NULL; /* not read */
    leases[0] = lapsed;
    leases[1] = &mine;
    outcomes[0] = outcomes[1] = HAREL_ERR_PANIC;
    EXPECT_CALL(harel_transport_ack_many(t, leases, 2, outcomes, &e), &e, HAREL_OK);
    EXPECT(outcomes[0] == HAREL_ERR_LEASE_LOST && outcomes[1] == HAREL_OK);
  }
  harel_lease_free(lapsed);
  harel_lease_free(again);
  s = STATS(t);
  if (s != NULL) EXPECT(s->messages == 0 && s->groups == 0);
  harel_stats_free(s);
  /* none: nothing read, nothing written */
  EXPECT_CALL(harel_transport_ack_many(t, NULL, 0, NULL, &e), &e, HAREL_OK);
  outcomes[0] = HAREL_ERR_PANIC;
  EXPECT_CALL(harel_transport_ack_many(t, leases, 0, outcomes, &e), &e, HAREL_OK);
  EXPECT(outcomes[0] == HAREL_ERR_PANIC);
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

/* extend: the lease runs to now + visibility, and lease->lock_expiry says so; the group
 * stays out of claims until then; a lapsed lease nobody claimed since is still the worker's
 * and is extended; HAREL_ERR_LEASE_LOST (nothing written) once another worker claimed it,
 * after an ack, and for a parked message; a caller-filled lease is read by its lengths. */
static void extend_moves_the_end_of_the_lease(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *l, *other, mine;
  harel_error *e = NULL;
  char group[2] = {'g', 'X'}; /* "g" with no NUL after it */
  if (t == NULL) return;
  PUBLISH(t, "g", "1");
  PUBLISH(t, "g", "2");
  l = CLAIM(t, "w1", "1");
  if (l == NULL) {
    harel_transport_close(t);
    return;
  }
  now = T0 + 10;
  EXPECT_CALL(harel_transport_extend(t, l, 60.0, &e), &e, HAREL_OK);
  EXPECT(l->lock_expiry == T0 + 70 && l->seq == 1 && l->attempts == 1);
  EXPECT_STR(l->worker_id, "w1");
  now = T0 + 69; /* past the first end, before the new one */
  CLAIM_EMPTY(t);
  now = T0 + 71; /* lapsed, and no one claimed it since: still w1's */
  EXPECT_CALL(harel_transport_extend(t, l, VIS, &e), &e, HAREL_OK);
  EXPECT(l->lock_expiry == T0 + 71 + VIS);
  now = T0 + 71 + VIS + 1; /* lapsed again, and claimed by w2 */
  other = CLAIM(t, "w2", "1");
  EXTEND_FAILS(HAREL_ERR_LEASE_LOST, NULL, t, l, VIS);
  EXPECT_FAILS(HAREL_ERR_LEASE_LOST, NULL, harel_transport_ack(t, l, ERR));
  if (other != NULL) {
    EXPECT(other->attempts == 2);
    /* w2's lease as a binding copies it: extended in the copy */
    mine = *other;
    mine.group_id = group;
    mine.group_id_len = 1;
    mine.event = NULL;
    now += 5;
    EXPECT_CALL(harel_transport_extend(t, &mine, 45.0, &e), &e, HAREL_OK);
    EXPECT(mine.lock_expiry == now + 45.0 && other->lock_expiry == now - 5 + VIS);
    EXPECT_STATUS(harel_transport_ack(t, other, NULL), HAREL_OK);
    EXTEND_FAILS(HAREL_ERR_LEASE_LOST, NULL, t, other, VIS); /* acked */
  }
  harel_lease_free(other);
  harel_lease_free(l);
  /* parked by its nack: no lease to extend */
  l = CLAIM(t, "w1", "2");
  if (l != NULL) {
    EXPECT_STATUS(harel_transport_nack(t, l, 100.0, NULL), HAREL_OK);
    EXTEND_FAILS(HAREL_ERR_LEASE_LOST, NULL, t, l, VIS);
    now += 101;
    ACK(t, CLAIM(t, "w1", "2"));
  }
  harel_lease_free(l);
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

static const double BAD_WAIT[] = {-1.0, -1e-9, NAN, INFINITY, -INFINITY, 1e30};
static const size_t BAD_MAX[] = {0, HAREL_MAX_CLAIM + 1, SIZE_MAX};

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

/* A bad element of a batch is named by its index ("leases[1].group_id_len"); the good one
 * beside it is not acked either (the fixture's lease is still w1's at the end). */
static const char *element(char *buf, size_t size, int i, const char *parameter) {
  if (strcmp(parameter, "lease") == 0) snprintf(buf, size, "leases[%d]", i);
  else snprintf(buf, size, "leases[%d].%s", i, parameter);
  return buf;
}

static void bad_arguments_of_ack_many(void) {
  harel_status outcomes[2];
  const harel_lease *leases[2];
  char name[64];
  fixture fx;
  if (!fixture_open(&fx)) return;
  leases[0] = fx.held;
  leases[1] = NULL;
  EXPECT_BAD("t", harel_transport_ack_many(NULL, leases, 1, outcomes, ERR));
  EXPECT_BAD("leases", harel_transport_ack_many(fx.t, NULL, 1, outcomes, ERR));
  EXPECT_BAD("leases", harel_transport_ack_many(fx.t, NULL, SIZE_MAX, outcomes, ERR));
  EXPECT_BAD("outcomes", harel_transport_ack_many(fx.t, leases, 1, NULL, ERR));
  EXPECT_BAD("leases[1]", harel_transport_ack_many(fx.t, leases, 2, outcomes, ERR));
  leases[0] = NULL;
  leases[1] = fx.held;
  EXPECT_BAD("leases[0]", harel_transport_ack_many(fx.t, leases, 2, outcomes, ERR));
  leases[0] = fx.held;
#define ACK_MANY_LEASE_BAD(parameter)                                                      \
  do {                                                                                     \
    leases[1] = bad;                                                                       \
    EXPECT_BAD(element(name, sizeof name, 1, parameter),                                   \
               harel_transport_ack_many(fx.t, leases, 2, outcomes, ERR));                  \
  } while (0)
  EACH_BAD_LEASE(fx, ACK_MANY_LEASE_BAD);
#undef ACK_MANY_LEASE_BAD
  FIXTURE_CLOSE(&fx);
}

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

static void bad_arguments_of_extend(void) {
  fixture fx;
  size_t i;
  if (!fixture_open(&fx)) return;
  EXTEND_BAD("t", NULL, fx.held, VIS);
  /* the lease is the caller's, not the library's: a built one is written only on success */
#define EXTEND_LEASE_BAD(parameter) EXTEND_BAD(parameter, fx.t, (harel_lease *)bad, VIS)
  EACH_BAD_LEASE(fx, EXTEND_LEASE_BAD);
#undef EXTEND_LEASE_BAD
  for (i = 0; i < N_OF(BAD_VISIBILITY); i++)
    EXTEND_BAD("visibility", fx.t, fx.held, BAD_VISIBILITY[i]);
  EXPECT(fx.held->lock_expiry == T0 + VIS);
  FIXTURE_CLOSE(&fx);
}

/* A `*err` already set: refused, the error untouched, *out NULL, *n_out 0, leases_out and
 * outcomes not written, the lease not extended, a fired cancel not looked at, and nothing
 * claimed or acked. */
static void a_set_err_is_refused_by_the_worker_loop_calls(void) {
  double now = T0, expiry;
  char was_text[512];
  harel_transport *t = open_at(":memory:", &now);
  harel_cancel *cancel = harel_cancel_new();
  harel_error *stale = NULL;
  const harel_error *was;
  harel_lease *held, *l, *got[2];
  const harel_lease *batch[1];
  harel_status outcomes[1] = {HAREL_ERR_PANIC};
  size_t n;
  EXPECT(harel_options_set_prefix(NULL, "p", &stale) == HAREL_ERR_ARGUMENT);
  if (!EXPECT(stale != NULL && t != NULL && cancel != NULL)) {
    harel_error_free(stale);
    harel_cancel_free(cancel);
    harel_transport_close(t);
    return;
  }
  was = stale;
  snprintf(was_text, sizeof was_text, "%s", harel_error_message(stale));
  PUBLISH(t, "g", "\"m1\"");
  PUBLISH(t, "h", "\"h1\"");
  held = CLAIM(t, "w1", "\"m1\"");
  if (held != NULL) {
    batch[0] = held;
    l = NOT_SET_LEASE;
    REFUSED(harel_transport_claim_wait(t, "w2", VIS, 0, NULL, 0, 0.0, NULL, &l, &stale));
    EXPECT(l == NULL);
    harel_cancel_fire(cancel);
    l = NOT_SET_LEASE;
    REFUSED(harel_transport_claim_wait(t, "w2", VIS, 0, NULL, 0, 0.0, cancel, &l, &stale));
    EXPECT(l == NULL);
    n = NOT_SET_COUNT;
    got[0] = got[1] = NOT_SET_LEASE;
    REFUSED(harel_transport_claim_many(t, "w2", VIS, 0, NULL, 0, 2, 0.0, NULL, got, &n, &stale));
    EXPECT(n == 0 && got[0] == NOT_SET_LEASE);
    REFUSED(harel_transport_ack_many(t, batch, 1, outcomes, &stale));
    EXPECT(outcomes[0] == HAREL_ERR_PANIC);
    n = NOT_SET_COUNT;
    REFUSED(harel_transport_ack_and_claim_many(t, batch, 1, outcomes, "w2", VIS, 0, NULL, 0, 2,
                                               got, &n, &stale));
    EXPECT(n == 0 && got[0] == NOT_SET_LEASE && outcomes[0] == HAREL_ERR_PANIC);
    expiry = held->lock_expiry;
    now = T0 + 5;
    REFUSED(harel_transport_extend(t, held, 60.0, &stale));
    EXPECT(held->lock_expiry == expiry);
    /* h1 was not claimed; m1 is still w1's, until its first end (not extended) */
    ACK(t, CLAIM(t, "w2", "\"h1\""));
    CLAIM_EMPTY(t);
    now = T0 + VIS + 1;
    ACK(t, CLAIM(t, "w3", "\"m1\""));
    EXPECT_STATUS(harel_transport_ack(t, held, NULL), HAREL_ERR_LEASE_LOST);
    CLAIM_EMPTY(t);
  }
  harel_lease_free(held);
  harel_cancel_free(cancel);
  harel_transport_close(t);
  harel_error_free(stale);
}

/* ---------------------------------------------------------------------------------------
 * Threads.
 */

static void *error_on_another_thread(void *arg) {
  const char *message;
  (void)arg;
  if (harel_last_error() != NULL) return "a new thread starts with an error";
  if (harel_transport_publish(NULL, "g", "1", 0, NULL, NULL) != HAREL_ERR_ARGUMENT)
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
  EXPECT_ARG(harel_options_set_busy_timeout(NULL, 1.0, NULL), "o");
  snprintf(mine, sizeof mine, "%s", or_null(harel_last_error()));
  if (!EXPECT(pthread_create(&thread, NULL, error_on_another_thread, NULL) == 0)) return;
  pthread_join(thread, &problem);
  if (problem != NULL) test_fail(__FILE__, __LINE__, "%s", (const char *)problem);
  after = harel_last_error();
  EXPECT(after != NULL && strcmp(after, mine) == 0);
}

/* A harel_error made on one thread, read and freed on another. */
typedef struct {
  harel_error *error;  /* in: to read and free; out: one made here */
  char message[512];   /* out: what was read */
  harel_status status; /* out */
  int saw_last_error;  /* out: harel_last_error() was not NULL here */
} handover;

static void *read_error_here(void *arg) {
  handover *h = arg;
  h->saw_last_error = harel_last_error() != NULL;
  h->status = harel_error_status(h->error);
  snprintf(h->message, sizeof h->message, "%s", or_null(harel_error_message(h->error)));
  harel_error_free(h->error);
  h->error = NULL;
  return NULL;
}

static void *fail_here(void *arg) {
  handover *h = arg;
  harel_lease *out = NULL; /* only t is bad: a NULL out would be named first */
  harel_transport_claim(NULL, "w", VIS, 0, NULL, 0, &out, &h->error);
  return NULL;
}

static void errors_are_read_on_another_thread(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  handover h;
  pthread_t thread;
  char mine[512];
  if (t == NULL) return;
  /* made here, read there */
  memset(&h, 0, sizeof h);
  EXPECT(harel_transport_publish(t, "", "1", 0, NULL, &h.error) == HAREL_ERR_ARGUMENT);
  snprintf(mine, sizeof mine, "%s", or_null(harel_last_error()));
  if (EXPECT(h.error != NULL) &&
      EXPECT(pthread_create(&thread, NULL, read_error_here, &h) == 0)) {
    pthread_join(thread, NULL);
    EXPECT(h.status == HAREL_ERR_ARGUMENT);
    EXPECT(names_parameter(h.message, "group_id"));
    EXPECT_STR(h.message, mine);
    EXPECT(!h.saw_last_error); /* that thread made no call: its last error is its own */
    EXPECT_STR(harel_last_error(), mine);
  }
  /* made there, read here */
  memset(&h, 0, sizeof h);
  if (EXPECT(pthread_create(&thread, NULL, fail_here, &h) == 0)) {
    pthread_join(thread, NULL);
    if (EXPECT(h.error != NULL)) {
      EXPECT(harel_error_status(h.error) == HAREL_ERR_ARGUMENT);
      EXPECT(harel_error_message(h.error) != NULL &&
             names_parameter(harel_error_message(h.error), "t"));
      EXPECT_STR(harel_last_error(), mine); /* this thread's own, untouched */
    }
    harel_error_free(h.error);
  }
  harel_transport_close(t);
}

/* Publishers sharing one handle: publishes that meet share a commit. Each thread publishes
 * its own group, one message per call and in batches of two, and also makes a bad call of
 * its own each round, which must fail alone with its own error (named parameter,
 * harel_last_error() of its thread equal to it), writing nothing. */
#define PUBLISHERS 4
#define ROUNDS 8

typedef struct {
  harel_transport *t;
  int id;
  char problem[600];
} publisher;

static void *publish_rounds(void *arg) {
  static const char *const expected[PUBLISHERS] = {"messages[1].event_json", "priority",
                                                   "messages[0].group_id", "routing_key"};
  publisher *p = arg;
  char group[16], events[2][64], bad_event[32];
  harel_message batch[2];
  int r, k;
  snprintf(group, sizeof group, "p%d", p->id);
  snprintf(bad_event, sizeof bad_event, "{\"bad\":%d}", p->id);
  for (r = 0; r < ROUNDS && p->problem[0] == '\0'; r++) {
    harel_error *e = NULL;
    harel_status s = HAREL_OK;
    const char *last, *message;
    for (k = 0; k < 2; k++) {
      snprintf(events[k], sizeof events[k], "{\"p\":%d,\"i\":%d}", p->id, 2 * r + k);
      batch[k].group_id = group;
      batch[k].event_json = events[k];
      batch[k].priority = 0;
      batch[k].routing_key = NULL;
    }
    if (r % 2 == 0) {
      for (k = 0; k < 2 && s == HAREL_OK; k++)
        s = harel_transport_publish(p->t, group, events[k], 0, NULL, &e);
    } else {
      s = harel_transport_publish_many(p->t, batch, 2, &e);
    }
    if (s != HAREL_OK || e != NULL || harel_last_error() != NULL) {
      snprintf(p->problem, sizeof p->problem, "publish: %s %s", harel_status_name(s),
               or_null(harel_error_message(e)));
      harel_error_free(e);
      break;
    }
    /* this thread's bad call: a valid message beside the bad one must not be written */
    batch[0].event_json = batch[1].event_json = bad_event;
    switch (p->id) {
      case 0:
        batch[1].event_json = "{not json";
        s = harel_transport_publish_many(p->t, batch, 2, &e);
        break;
      case 1:
        s = harel_transport_publish(p->t, group, bad_event, 9, NULL, &e);
        break;
      case 2:
        batch[0].group_id = "";
        s = harel_transport_publish_many(p->t, batch, 2, &e);
        break;
      default:
        s = harel_transport_publish(p->t, group, bad_event, 0, "", &e);
        break;
    }
    last = harel_last_error();
    message = harel_error_message(e);
    if (s != HAREL_ERR_ARGUMENT || harel_error_status(e) != HAREL_ERR_ARGUMENT ||
        message == NULL || !names_parameter(message, expected[p->id]) || last == NULL ||
        strcmp(last, message) != 0)
      snprintf(p->problem, sizeof p->problem,
               "the bad call: %s, its error \"%s\", the thread's last error \"%s\" (want %s)",
               harel_status_name(s), or_null(message), or_null(last), expected[p->id]);
    harel_error_free(e);
  }
  return NULL;
}

static void threads_publish_through_one_handle(void) {
  double now = T0;
  char path[300];
  harel_error *e = NULL;
  harel_transport *t = NULL;
  publisher p[PUBLISHERS];
  pthread_t threads[PUBLISHERS];
  int seen[PUBLISHERS][2 * ROUNDS];
  int i, j, strays = 0;
  harel_options *o = harel_options_new();
  if (!EXPECT(o != NULL)) return;
  /* synchronous FULL (the default): commits take long enough for publishes to meet */
  EXPECT_CALL(harel_options_set_clock(o, test_clock, &now, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_open(new_path(path, sizeof path), o, &t, &e), &e, HAREL_OK);
  harel_options_free(o);
  if (t == NULL) return;
  memset(seen, 0, sizeof seen);
  for (i = 0; i < PUBLISHERS; i++) {
    p[i].t = t;
    p[i].id = i;
    p[i].problem[0] = '\0';
    EXPECT(pthread_create(&threads[i], NULL, publish_rounds, &p[i]) == 0);
  }
  for (i = 0; i < PUBLISHERS; i++) {
    pthread_join(threads[i], NULL);
    if (p[i].problem[0] != '\0') test_fail(__FILE__, __LINE__, "publisher %d: %s", i, p[i].problem);
  }
  /* every good message once, none of the bad calls' */
  for (;;) {
    harel_lease *l = NULL;
    int pid, k;
    if (harel_transport_claim(t, "w", VIS, 0, NULL, 0, &l, NULL) != HAREL_OK) break;
    if (sscanf(l->event, "{\"p\":%d,\"i\":%d}", &pid, &k) == 2 && pid >= 0 &&
        pid < PUBLISHERS && k >= 0 && k < 2 * ROUNDS)
      seen[pid][k]++;
    else
      strays++, fprintf(stderr, "  unexpected event %s\n", l->event);
    ACK(t, l);
  }
  EXPECT(strays == 0);
  for (i = 0; i < PUBLISHERS; i++)
    for (j = 0; j < 2 * ROUNDS; j++)
      if (seen[i][j] != 1)
        test_fail(__FILE__, __LINE__, "p%d's %d arrived %d times", i, j, seen[i][j]);
  CLAIM_EMPTY(t);
  harel_transport_close(t);
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

/* ---------------------------------------------------------------------------------------
 * Waits ended from elsewhere: a cancel or an interrupt from another thread, a commit by
 * another handle or another process, the end of a lease or a park; eight waiters and one
 * message. Timings are loose (a wait of 30 s ends "well under" it), for valgrind's sake.
 */

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

/* A commit by another process: this program, run again as a child, publishes. */
static int publish_from_a_child(const char *database, const char *group, const char *event) {
  char *argv[6];
  pid_t pid;
  int status;
  argv[0] = (char *)self_path;
  argv[1] = "--publish";
  argv[2] = (char *)database;
  argv[3] = (char *)group;
  argv[4] = (char *)event;
  argv[5] = NULL;
  fflush(NULL);
  if (posix_spawn(&pid, self_path, NULL, NULL, argv, environ) != 0) return 0;
  if (waitpid(pid, &status, 0) != pid) return 0;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

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

/* `test_abi --publish DATABASE GROUP EVENT`: the child of
 * a_commit_of_another_process_wakes_a_waiter, one publish from another process. */
static int publish_as_the_child(const char *database, const char *group, const char *event) {
  harel_transport *t = NULL;
  harel_error *e = NULL;
  harel_status s = harel_transport_open(database, NULL, &t, &e);
  if (s == HAREL_OK) s = harel_transport_publish(t, group, event, 0, NULL, &e);
  if (s != HAREL_OK) fprintf(stderr, "the child's publish: %s\n", or_null(harel_error_message(e)));
  harel_error_free(e);
  harel_transport_close(t);
  return s == HAREL_OK ? 0 : 1;
}

/* harel_transport_metrics (issue 25): what a handle counted, field by field, after known
 * calls; the bounds as HAREL_LATENCY_BOUNDS says; a second handle counts apart. */
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

/* ---------------------------------------------------------------------------------------
 * The readiness descriptor (issue 26): harel_transport_watch, harel_watch_fd,
 * harel_watch_rearm, harel_watch_free. What the watch promises is the protocol of the
 * header: readable from its making until a rearm returns HAREL_EMPTY, then readable again
 * once a claim with its filter may find work (a commit in this process or another, a
 * lease's or a park's end). A wake means "may": spurious ones are allowed, so no test
 * counts on their absence; each decides by rearm (HAREL_EMPTY: nothing yet), and a
 * descriptor found readable after a rearm's HAREL_EMPTY is rearmed again (settle).
 * Timings are loose, for valgrind's sake, except where the protocol names an instant.
 */

/* Whether `fd` polls readable within `seconds` (0: now, without waiting). */
static int readable_within(int fd, double seconds) {
  double deadline = monotonic() + seconds;
  for (;;) {
    struct pollfd p;
    double left = deadline - monotonic();
    int n;
    p.fd = fd;
    p.events = POLLIN;
    p.revents = 0;
    n = poll(&p, 1, left > 0.0 ? (int)(left * 1000.0) + 1 : 0);
    if (n > 0) return (p.revents & POLLIN) != 0;
    if (n == 0 && monotonic() >= deadline) return 0;
    if (n < 0 && errno != EINTR) return 0;
  }
}
#define READABLE(fd) readable_within((fd), 0.0)

/* A watch of `t` with the filter, checked made, and its descriptor in *fd (-1 if none). */
#define WATCH(t, min_priority, keys, n, fd) \
  watch_at((t), (min_priority), (keys), (n), (fd), __FILE__, __LINE__)
static harel_watch *watch_at(harel_transport *t, int32_t min_priority, const char *const *keys,
                             size_t n, int *fd, const char *file, int line) {
  harel_watch *w = NULL;
  harel_error *e = NULL;
  *fd = -1;
  if (!expect_call(harel_transport_watch(t, min_priority, keys, n, &w, &e), &e, HAREL_OK, NULL,
                   "harel_transport_watch", file, line))
    return w;
  if (w == NULL) {
    test_fail(file, line, "harel_transport_watch returned HAREL_OK with no watch");
    return NULL;
  }
  expect_call(harel_watch_fd(w, fd, &e), &e, HAREL_OK, NULL, "harel_watch_fd", file, line);
  if (*fd < 0) test_fail(file, line, "harel_watch_fd gave the descriptor %d", *fd);
  return w;
}

/* harel_watch_rearm returns `want`, with err given (and NULL after HAREL_OK/HAREL_EMPTY). */
#define REARM(t, w, want) rearm_at((t), (w), (want), __FILE__, __LINE__)
static int rearm_at(harel_transport *t, harel_watch *w, harel_status want, const char *file,
                    int line) {
  harel_error *e = NULL;
  return expect_call(harel_watch_rearm(t, w, &e), &e, want, NULL, "harel_watch_rearm", file,
                     line);
}

/* Nothing to claim: rearm returns HAREL_EMPTY and the descriptor is then not readable. A
 * spurious ring between the rearm and the look is allowed: rearm again (each time EMPTY),
 * up to 100 times. */
#define SETTLE(t, w, fd) EXPECT(settle((t), (w), (fd), __FILE__, __LINE__))
static int settle(harel_transport *t, harel_watch *w, int fd, const char *file, int line) {
  int i;
  for (i = 0; i < 100; i++) {
    if (!rearm_at(t, w, HAREL_EMPTY, file, line)) return 0;
    if (!READABLE(fd)) return 1;
    pause_for(0.01);
  }
  test_fail(file, line, "the descriptor stays readable after rearm's HAREL_EMPTY");
  return 0;
}

/* Work has come: the descriptor becomes readable within `seconds`, rearm returns HAREL_OK,
 * and the descriptor stays readable. How long it took to become readable; -1 if it did not. */
#define RINGS(t, w, fd, seconds) rings_at((t), (w), (fd), (seconds), __FILE__, __LINE__)
static double rings_at(harel_transport *t, harel_watch *w, int fd, double seconds,
                       const char *file, int line) {
  double started = monotonic(), took;
  if (!readable_within(fd, seconds)) {
    test_fail(file, line, "the descriptor was not readable within %.1f s", seconds);
    return -1.0;
  }
  took = monotonic() - started;
  if (rearm_at(t, w, HAREL_OK, file, line) && !READABLE(fd))
    test_fail(file, line, "the descriptor is not readable after rearm's HAREL_OK");
  return took;
}

/* Something becomes claimable `after` seconds past a call made between `from` and `until`
 * (monotonic seconds): a lease's or a park's end. Rings before it are allowed, each rearm
 * then HAREL_EMPTY; the rearm that returns HAREL_OK comes at the end, not before, and
 * within `slack` seconds of it; no rearm after the end returns HAREL_EMPTY. */
#define RINGS_AT_THE_END(t, w, fd, from, until, after, slack) \
  rings_at_the_end((t), (w), (fd), (from), (until), (after), (slack), __FILE__, __LINE__)
static void rings_at_the_end(harel_transport *t, harel_watch *w, int fd, double from,
                             double until, double after, double slack, const char *file,
                             int line) {
  double deadline = until + after + slack, at;
  harel_error *e = NULL;
  harel_status s;
  for (;;) {
    if (!readable_within(fd, deadline - monotonic())) {
      test_fail(file, line, "no ring by %.1f s after the start (the end: %.1f s)",
                deadline - from, after);
      return;
    }
    at = monotonic();
    s = harel_watch_rearm(t, w, &e);
    if (s == HAREL_EMPTY) {
      expect_call(s, &e, HAREL_EMPTY, NULL, "harel_watch_rearm", file, line);
      if (at > until + after + 0.05) /* the end passed: rearm must see it */
        test_fail(file, line, "rearm found nothing %.3f s after the start (the end: %.3f s)",
                  at - from, after);
      continue;
    }
    if (!expect_call(s, &e, HAREL_OK, NULL, "harel_watch_rearm", file, line)) return;
    if (at - from < after - 0.005)
      test_fail(file, line, "work %.3f s after the start, before the end (%.3f s)", at - from,
                after);
    return;
  }
}

/* A new watch is readable; rearm on an empty queue clears it; a commit by another
 * transport of this process on the same queue, or by the watch's own, makes it readable
 * again (at once: well under a second); rearm's HAREL_OK leaves it readable while the
 * claims (non-waiting) take the work, and the next rearm, the work taken, clears it. The
 * descriptor: stable, close-on-exec, one per watch. */
static void a_watch_rings_for_commits_in_this_process(void) {
  double now = T0;
  char path[300];
  harel_transport *t, *other;
  harel_watch *w, *w2;
  harel_lease *l;
  harel_error *e = NULL;
  int fd, fd2, again = -1, flags;
  t = open_at(new_path(path, sizeof path), &now);
  other = open_at(path, &now);
  if (t == NULL || other == NULL) {
    harel_transport_close(t);
    harel_transport_close(other);
    return;
  }
  w = WATCH(t, 0, NULL, 0, &fd);
  w2 = WATCH(t, 0, NULL, 0, &fd2);
  if (w != NULL && w2 != NULL && fd >= 0) {
    EXPECT(fd2 >= 0 && fd2 != fd);
    EXPECT_CALL(harel_watch_fd(w, &again, &e), &e, HAREL_OK);
    EXPECT(again == fd);
    flags = fcntl(fd, F_GETFD);
    EXPECT(flags >= 0 && (flags & FD_CLOEXEC) != 0);
    /* new: readable, and stays so until a rearm */
    EXPECT(READABLE(fd));
    EXPECT(READABLE(fd));
    /* an empty queue: rearm clears it, and again */
    SETTLE(t, w, fd);
    SETTLE(t, w, fd);
    EXPECT(READABLE(fd2)); /* the other watch: not rearmed yet */
    SETTLE(t, w2, fd2);
    /* another transport's publish rings both */
    PUBLISH(other, "g", "\"from other\"");
    EXPECT(RINGS(t, w, fd, 10.0) < 1.0);
    EXPECT(RINGS(t, w2, fd2, 10.0) < 1.0);
    REARM(t, w, HAREL_OK); /* it looks again: still work */
    EXPECT(READABLE(fd));
    l = CLAIM(t, "w1", "\"from other\"");
    CLAIM_EMPTY(t);
    SETTLE(t, w, fd); /* g in flight: nothing to claim */
    ACK(t, l);
    SETTLE(t, w, fd); /* the ack's commit may ring; still nothing */
    /* the watch's own transport's publish rings it too */
    PUBLISH(t, "h", "\"from t\"");
    EXPECT(RINGS(t, w, fd, 10.0) < 1.0);
    ACK(t, CLAIM(t, "w1", "\"from t\""));
    CLAIM_EMPTY(t);
    SETTLE(t, w, fd);
  }
  harel_watch_free(w);
  harel_watch_free(w2);
  harel_transport_close(t);
  harel_transport_close(other);
}

/* A watch looks for what a claim with its filter would take: a floor of 2 and the key
 * "eu" (the keys copied: the caller's array and strings are gone by the rearm) let rearm
 * find nothing in groups below 2 or of another key; a group of both makes it HAREL_OK, and
 * the claim with the same filter takes it. A watch without a filter, of the same
 * transport, sees every group. */
static void a_watch_looks_with_its_filter(void) {
  double now = T0;
  char path[300];
  harel_transport *t = open_at(new_path(path, sizeof path), &now);
  harel_watch *filtered = NULL, *any;
  harel_lease *l = NOT_SET_LEASE;
  harel_error *e = NULL;
  char *key = malloc(3);
  const char **keys = malloc(sizeof *keys);
  const char *const eu[] = {"eu"};
  int fd = -1, fd_any;
  if (t == NULL || !EXPECT(key != NULL && keys != NULL)) {
    free(key);
    free(keys);
    harel_transport_close(t);
    return;
  }
  memcpy(key, "eu", 3);
  keys[0] = key;
  filtered = WATCH(t, 2, keys, 1, &fd);
  free(key);
  free(keys);
  any = WATCH(t, 0, NULL, 0, &fd_any);
  if (filtered != NULL && any != NULL) {
    SETTLE(t, filtered, fd);
    SETTLE(t, any, fd_any);
    EXPECT_STATUS(harel_transport_publish(t, "low", "\"low\"", 1, "eu", NULL), HAREL_OK);
    EXPECT_STATUS(harel_transport_publish(t, "us", "\"us\"", 4, "us", NULL), HAREL_OK);
    EXPECT_STATUS(harel_transport_publish(t, "none", "\"none\"", 4, NULL, NULL), HAREL_OK);
    SETTLE(t, filtered, fd); /* the commits may ring it; nothing of its filter */
    EXPECT(RINGS(t, any, fd_any, 10.0) >= 0.0);
    EXPECT_STATUS(harel_transport_publish(t, "hit", "\"hit\"", 2, "eu", NULL), HAREL_OK);
    EXPECT(RINGS(t, filtered, fd, 10.0) < 1.0);
    EXPECT_CALL(harel_transport_claim(t, "w", VIS, 2, eu, 1, &l, &e), &e, HAREL_OK);
    if (l != NULL) EXPECT_STR(l->event, "\"hit\"");
    ACK(t, l);
    SETTLE(t, filtered, fd);
    REARM(t, any, HAREL_OK); /* low, us, none: still there */
  }
  harel_watch_free(filtered);
  harel_watch_free(any);
  harel_transport_close(t);
}

/* A commit by another process (this program run again as a child, `--publish`) to the
 * file makes the watch readable within a few ms: here, within a second of the child's
 * exit (valgrind included). */
static void a_watch_rings_for_another_process(void) {
  double now = T0, took;
  char path[300];
  harel_transport *t = open_at(new_path(path, sizeof path), &now);
  harel_watch *w;
  int fd;
  if (t == NULL) return;
  w = WATCH(t, 0, NULL, 0, &fd);
  if (w != NULL) {
    SETTLE(t, w, fd);
    if (EXPECT(publish_from_a_child(path, "g", "\"from a child\""))) {
      took = RINGS(t, w, fd, 10.0);
      EXPECT(took >= 0.0 && took < 1.0);
      ACK(t, CLAIM(t, "w1", "\"from a child\""));
      CLAIM_EMPTY(t);
      SETTLE(t, w, fd);
    }
  }
  harel_watch_free(w);
  harel_transport_close(t);
}

/* The system clock: a lease of 0.3 s, then a park of 0.3 s (a nack with that delay). Once
 * rearm took in the lease (or the park), the watch rings at its end, not before: a rearm
 * before the end returns HAREL_EMPTY; the first after it, HAREL_OK; then the claim gets
 * the message again. */
static void a_watch_rings_at_a_lease_or_a_park_end(void) {
  char path[300];
  harel_transport *t = NULL;
  harel_lease *first = NULL, *next = NULL;
  harel_watch *w;
  harel_error *e = NULL;
  double from, until;
  int fd;
  EXPECT_CALL(harel_transport_open(new_path(path, sizeof path), NULL, &t, &e), &e, HAREL_OK);
  if (t == NULL) return;
  w = WATCH(t, 0, NULL, 0, &fd);
  if (w != NULL) {
    SETTLE(t, w, fd);
    PUBLISH(t, "g", "1");
    EXPECT(RINGS(t, w, fd, 10.0) >= 0.0);
    from = monotonic();
    EXPECT_CALL(harel_transport_claim(t, "w1", 0.3, 0, NULL, 0, &first, &e), &e, HAREL_OK);
    until = monotonic();
    CLAIM_EMPTY(t);
    RINGS_AT_THE_END(t, w, fd, from, until, 0.3, 10.0);
    EXPECT_CALL(harel_transport_claim(t, "w2", VIS, 0, NULL, 0, &next, &e), &e, HAREL_OK);
    if (first != NULL && next != NULL) EXPECT(next->seq == first->seq && next->attempts == 2);
    harel_lease_free(first);
    first = NULL;
    if (next != NULL) {
      from = monotonic();
      EXPECT_STATUS(harel_transport_nack(t, next, 0.3, NULL), HAREL_OK);
      until = monotonic();
      CLAIM_EMPTY(t);
      RINGS_AT_THE_END(t, w, fd, from, until, 0.3, 10.0);
      EXPECT_CALL(harel_transport_claim(t, "w3", VIS, 0, NULL, 0, &first, &e), &e, HAREL_OK);
      if (first != NULL) EXPECT(first->seq == next->seq && first->attempts == 3);
    }
    harel_lease_free(next);
    ACK(t, first);
    CLAIM_EMPTY(t);
    SETTLE(t, w, fd);
  }
  harel_watch_free(w);
  harel_transport_close(t);
}

/* One watch serves several threads: each polls its descriptor, rearms and claims without
 * waiting until HAREL_EMPTY, then polls again; a batch of groups published by another
 * transport is claimed by them, each message once. */
#define POLLERS 4
#define POLLED_GROUPS 12
typedef struct {
  harel_transport *t;
  harel_watch *w;
  int fd;
  pthread_mutex_t lock;
  int claimed[POLLED_GROUPS]; /* per group, under lock */
  int total;                  /* under lock */
  char problem[300];          /* under lock; the first one */
} shared_watch;

static void shared_problem(shared_watch *s, const char *what, harel_status status) {
  pthread_mutex_lock(&s->lock);
  if (s->problem[0] == '\0')
    snprintf(s->problem, sizeof s->problem, "%s: %s", what, harel_status_name(status));
  pthread_mutex_unlock(&s->lock);
}

static void *poll_and_claim(void *arg) {
  shared_watch *s = arg;
  double deadline = monotonic() + 30.0;
  for (;;) {
    harel_status st;
    int done;
    pthread_mutex_lock(&s->lock);
    done = s->total >= POLLED_GROUPS || s->problem[0] != '\0';
    pthread_mutex_unlock(&s->lock);
    if (done) return NULL;
    if (monotonic() > deadline) {
      shared_problem(s, "not every message claimed within 30 s", HAREL_OK);
      return NULL;
    }
    if (!readable_within(s->fd, 0.05)) continue;
    st = harel_watch_rearm(s->t, s->w, NULL);
    if (st == HAREL_EMPTY) continue;
    if (st != HAREL_OK) {
      shared_problem(s, "rearm", st);
      return NULL;
    }
    for (;;) {
      harel_lease *l = NULL;
      int group;
      st = harel_transport_claim(s->t, "poller", VIS, 0, NULL, 0, &l, NULL);
      if (st == HAREL_EMPTY) break;
      if (st != HAREL_OK || l == NULL) {
        shared_problem(s, "claim", st);
        return NULL;
      }
      group = atoi(l->group_id + 1);
      st = harel_transport_ack(s->t, l, NULL);
      harel_lease_free(l);
      if (st != HAREL_OK || group < 0 || group >= POLLED_GROUPS) {
        shared_problem(s, "ack", st);
        return NULL;
      }
      pthread_mutex_lock(&s->lock);
      s->claimed[group]++;
      s->total++;
      pthread_mutex_unlock(&s->lock);
    }
  }
}

static void one_watch_serves_several_threads(void) {
  double now = T0;
  char path[300], groups[POLLED_GROUPS][8];
  harel_message batch[POLLED_GROUPS];
  harel_transport *t = open_at(new_path(path, sizeof path), &now), *other = open_at(path, &now);
  pthread_t threads[POLLERS];
  int started[POLLERS], i;
  shared_watch s;
  memset(&s, 0, sizeof s);
  pthread_mutex_init(&s.lock, NULL);
  s.t = t;
  if (t != NULL && other != NULL) s.w = WATCH(t, 0, NULL, 0, &s.fd);
  if (s.w != NULL) {
    SETTLE(t, s.w, s.fd);
    for (i = 0; i < POLLERS; i++)
      started[i] = EXPECT(pthread_create(&threads[i], NULL, poll_and_claim, &s) == 0);
    pause_for(0.1);
    for (i = 0; i < POLLED_GROUPS; i++) {
      snprintf(groups[i], sizeof groups[i], "g%d", i);
      batch[i].group_id = groups[i];
      batch[i].event_json = "{}";
      batch[i].priority = 0;
      batch[i].routing_key = NULL;
    }
    EXPECT_STATUS(harel_transport_publish_many(other, batch, POLLED_GROUPS, NULL), HAREL_OK);
    for (i = 0; i < POLLERS; i++)
      if (started[i]) pthread_join(threads[i], NULL);
    if (s.problem[0] != '\0') test_fail(__FILE__, __LINE__, "a poller: %s", s.problem);
    EXPECT(s.total == POLLED_GROUPS);
    for (i = 0; i < POLLED_GROUPS; i++) EXPECT(s.claimed[i] == 1);
    CLAIM_EMPTY(other);
  }
  harel_watch_free(s.w);
  harel_transport_close(t);
  harel_transport_close(other);
  pthread_mutex_destroy(&s.lock);
}

/* Closing the transport makes each of its watches readable for good; the watch still
 * gives its descriptor, is refused by another transport's rearm, and is freed (twice:
 * harmless). A watch freed before the close is no trouble to it. */
static void a_closed_transport_leaves_its_watches_readable(void) {
  double now = T0;
  char path[300];
  harel_transport *t = open_at(new_path(path, sizeof path), &now), *u = open_at(path, &now);
  harel_watch *w = NULL, *early = NULL;
  int fd = -1, fd_early, again = -1, i;
  if (t != NULL && u != NULL) {
    w = WATCH(t, 0, NULL, 0, &fd);
    early = WATCH(t, 0, NULL, 0, &fd_early);
  }
  if (w != NULL && early != NULL) {
    SETTLE(t, w, fd);
    harel_watch_free(early);
    harel_transport_close(t);
    t = NULL;
    EXPECT(readable_within(fd, 10.0));
    for (i = 0; i < 3; i++) {
      pause_for(0.05);
      EXPECT(READABLE(fd));
    }
    EXPECT_STATUS(harel_watch_fd(w, &again, NULL), HAREL_OK);
    EXPECT(again == fd);
    EXPECT_BAD(NULL, harel_watch_rearm(u, w, ERR));
    EXPECT(strstr(or_null(harel_last_error()), "another transport") != NULL);
    PUBLISH(u, "g", "\"still\"");
    EXPECT(READABLE(fd));
    ACK(u, CLAIM(u, "w", "\"still\""));
    harel_watch_free(w);
    harel_watch_free(w);
    w = NULL;
  }
  harel_watch_free(w);
  harel_transport_close(t);
  harel_transport_close(u);
}

/* rearm is a read: while another process holds the write lock (busy timeout 0) it still
 * answers; on a handle whose tables another process dropped it fails HAREL_ERR_DATABASE,
 * and the descriptor becomes readable again. */
static void rearm_reads_without_the_write_lock_and_fails_as_a_read(void) {
  double now = T0;
  char path[300], release[300], line[32];
  harel_options *o = harel_options_new();
  harel_transport *t = NULL;
  harel_watch *w = NULL;
  harel_error *e = NULL;
  FILE *holder;
  int fd = -1;
  if (!EXPECT(o != NULL)) return;
  snprintf(release, sizeof release, "%s/release", temp_dir);
  EXPECT_CALL(harel_options_set_busy_timeout(o, 0.0, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_clock(o, test_clock, &now, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_open(new_path(path, sizeof path), o, &t, &e), &e, HAREL_OK);
  harel_options_free(o);
  if (t == NULL) return;
  w = WATCH(t, 0, NULL, 0, &fd);
  if (w != NULL) {
    SETTLE(t, w, fd);
    holder = hold_write_lock(path, release);
    if (EXPECT(holder != NULL)) {
      SETTLE(t, w, fd); /* the lock taken may ring; rearm answers */
      EXPECT(release_write_lock(holder, release));
    }
    PUBLISH(t, "g", "1");
    holder = hold_write_lock(path, release);
    if (EXPECT(holder != NULL)) {
      REARM(t, w, HAREL_OK);
      EXPECT(release_write_lock(holder, release));
    }
    if (EXPECT(python_run(DROP_TABLES, path, line, sizeof line) &&
               strcmp(line, "dropped\n") == 0)) {
      EXPECT_FAILS(HAREL_ERR_DATABASE, NULL, harel_watch_rearm(t, w, ERR));
      /* after an error the descriptor becomes readable again (within a second), so that
       * a loop that polls retries */
      EXPECT(readable_within(fd, 10.0));
    }
  }
  harel_watch_free(w);
  harel_transport_close(t);
}

/* With no descriptor left to the process (its limit of open files lowered and filled),
 * harel_transport_watch fails HAREL_ERR_DATABASE with no watch handed out (and, under
 * valgrind, nothing leaked of what it had made); with descriptors again, it works. */
static void a_watch_without_a_descriptor_left(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_watch *w;
  struct rlimit was, low;
  int fds[512], n = 0, fd = -1, lowered;
  if (t == NULL) return;
  lowered = EXPECT(getrlimit(RLIMIT_NOFILE, &was) == 0);
  if (lowered && was.rlim_cur > 256) {
    low = was;
    low.rlim_cur = 256;
    lowered = setrlimit(RLIMIT_NOFILE, &low) == 0;
  }
  if (lowered) {
    while (n < (int)N_OF(fds) && (fds[n] = dup(2)) >= 0) n++;
    if (EXPECT(n < (int)N_OF(fds) && errno == EMFILE)) {
      EXPECT_FAILS(HAREL_ERR_DATABASE, NULL,
                   (w = NOT_SET_WATCH, harel_transport_watch(t, 0, NULL, 0, &w, ERR)));
      EXPECT(w == NULL);
    }
    while (n > 0) close(fds[--n]);
    EXPECT(setrlimit(RLIMIT_NOFILE, &was) == 0);
  }
  w = WATCH(t, 0, NULL, 0, &fd);
  if (w != NULL) SETTLE(t, w, fd);
  harel_watch_free(w);
  harel_transport_close(t);
}

/* Every bad argument of the four functions: NULL t, out, w, fd; a bad filter; a watch of
 * another transport; a freed watch (fd and rearm refuse it, a second free is harmless);
 * and a *err already set. The fixture's queue is unchanged after all of them. */
static void bad_arguments_of_watch(void) {
  const char *const with_null[] = {"k", NULL};
  const char *const with_empty[] = {"k", ""};
  char was_text[512];
  double now = T0;
  fixture fx;
  harel_transport *u;
  harel_watch *w = NULL, *theirs = NULL, *fresh = NULL, *freed, *out;
  harel_error *stale = NULL;
  const harel_error *was;
  int fd = -1, theirs_fd = -1, fresh_fd = -1, freed_fd = -1, got;
  size_t i;
  if (!fixture_open(&fx)) return;
  u = open_at(":memory:", &now);
  if (u != NULL) {
    w = WATCH(fx.t, 0, NULL, 0, &fd);
    theirs = WATCH(u, 0, NULL, 0, &theirs_fd);
  }
  if (w == NULL || theirs == NULL) {
    harel_watch_free(w);
    harel_watch_free(theirs);
    harel_transport_close(u);
    FIXTURE_CLOSE(&fx);
    return;
  }
#define WATCH_BAD(parameter, t, min_priority, keys, n)                              \
  do {                                                                              \
    EXPECT_BAD((parameter), (out = NOT_SET_WATCH,                 \
                             harel_transport_watch((t), (min_priority), (keys), (n), \
                                                   &out, ERR)));                    \
    EXPECT(out == NULL);                                                            \
  } while (0)
  /* harel_transport_watch */
  WATCH_BAD("t", NULL, 0, NULL, 0);
  EXPECT_BAD("out", harel_transport_watch(fx.t, 0, NULL, 0, NULL, ERR));
  for (i = 0; i < N_OF(BAD_MIN_PRIORITY); i++)
    WATCH_BAD("min_priority", fx.t, BAD_MIN_PRIORITY[i], NULL, 0);
  WATCH_BAD("routing_keys", fx.t, 0, NULL, 1);
  WATCH_BAD("routing_keys", fx.t, 0, NULL, SIZE_MAX);
  WATCH_BAD("routing_keys", fx.t, 0, with_null, 2);
  WATCH_BAD("routing_keys", fx.t, 0, with_empty, 2);
  for (i = 0; i < N_BAD_UTF8; i++) {
    const char *const keys[] = {"k", BAD_UTF8[i]};
    WATCH_BAD("routing_keys", fx.t, 0, keys, 2);
  }
#undef WATCH_BAD
  /* harel_watch_fd */
  EXPECT_BAD("w", harel_watch_fd(NULL, &got, ERR));
  EXPECT_BAD("fd", harel_watch_fd(w, NULL, ERR));
  EXPECT_BAD(NULL, harel_watch_fd(NULL, NULL, ERR));
  /* harel_watch_rearm: NULLs, a watch of another transport (both ways) */
  EXPECT_BAD("t", harel_watch_rearm(NULL, w, ERR));
  EXPECT_BAD("w", harel_watch_rearm(fx.t, NULL, ERR));
  /* (the message says "made by another transport" without naming w) */
  EXPECT_BAD(NULL, harel_watch_rearm(u, w, ERR));
  EXPECT(strstr(or_null(harel_last_error()), "another transport") != NULL);
  EXPECT_BAD(NULL, harel_watch_rearm(fx.t, theirs, ERR));
  EXPECT(strstr(or_null(harel_last_error()), "another transport") != NULL);
  EXPECT(READABLE(fd) && READABLE(theirs_fd)); /* new, and no rearm refused cleared them */
  SETTLE(fx.t, w, fd); /* g1 in flight, d1 dead: nothing; each its own still works */
  SETTLE(u, theirs, theirs_fd);
  /* a freed watch: refused; freed again, harmlessly */
  freed = WATCH(fx.t, 0, NULL, 0, &freed_fd);
  if (freed != NULL) {
    harel_watch_free(freed);
    got = -7;
    EXPECT_BAD("w", harel_watch_fd(freed, &got, ERR));
    EXPECT_BAD("w", harel_watch_rearm(fx.t, freed, ERR));
    harel_watch_free(freed);
    harel_watch_free(freed);
  }
  harel_watch_free(NULL);
  /* a *err already set: refused, untouched, nothing handed out */
  EXPECT(harel_watch_fd(NULL, &got, &stale) == HAREL_ERR_ARGUMENT);
  if (EXPECT(stale != NULL)) {
    was = stale;
    snprintf(was_text, sizeof was_text, "%s", harel_error_message(stale));
    out = NOT_SET_WATCH;
    REFUSED(harel_transport_watch(fx.t, 0, NULL, 0, &out, &stale));
    EXPECT(out == NULL || out == NOT_SET_WATCH);
    got = -7;
    REFUSED(harel_watch_fd(w, &got, &stale));
    EXPECT(got == -7);
    fresh = WATCH(fx.t, 0, NULL, 0, &fresh_fd);
    if (fresh != NULL) {
      REFUSED(harel_watch_rearm(fx.t, fresh, &stale));
      EXPECT(READABLE(fresh_fd)); /* not cleared: the rearm did nothing */
    }
  }
  harel_error_free(stale);
  harel_watch_free(w);
  harel_watch_free(theirs);
  harel_watch_free(fresh);
  harel_transport_close(u);
  FIXTURE_CLOSE(&fx);
}

/* ---------------------------------------------------------------------------------------
 * Producers (issue 24): publish_with and publish_many_with (an idempotency key, a delay or a
 * due instant per message; each message's seq and whether it was a duplicate), the key
 * retention, the delayed state in stats and listings. What they do to the queue is the Rust
 * contract's; here, each call's mapping: its outputs (each may be NULL), its statuses, every
 * bad argument (named, "messages[i]." in a batch; nothing written, keys included; the
 * outputs untouched), and the queue as C sees it on the test's clock.
 */

/* A key of `n` bytes in `buf` (at least n + 1 long). */
static const char *key_of(char *buf, size_t n) {
  memset(buf, 'k', n);
  buf[n] = '\0';
  return buf;
}

/* Claims and acks everything claimable now; how many, and whether `event` was among them. */
static int drain_now(harel_transport *t, const char *event, int *seen) {
  harel_lease *l = NULL;
  int n = 0;
  while (harel_transport_claim(t, "drain", VIS, 0, NULL, 0, &l, NULL) == HAREL_OK && l != NULL) {
    if (event != NULL && strcmp(l->event, event) == 0) *seen = 1;
    EXPECT_STATUS(harel_transport_ack(t, l, NULL), HAREL_OK);
    harel_lease_free(l);
    l = NULL;
    n++;
  }
  return n;
}

/* The one group `group` as a listing shows it (filter -1); 0 if not listed. */
static int group_info(harel_transport *t, const char *group, harel_group_info *out,
                      harel_group_page **page) {
  size_t i;
  *page = NULL;
  if (harel_transport_groups(t, -1, NULL, 100, page, NULL) != HAREL_OK || *page == NULL) return 0;
  for (i = 0; i < (*page)->n_groups; i++)
    if (strcmp((*page)->groups[i].group_id, group) == 0) {
      *out = (*page)->groups[i];
      return 1;
    }
  return 0;
}

/* How many groups a listing with the state filter `state` shows. */
static size_t groups_in(harel_transport *t, int32_t state) {
  harel_group_page *page = NULL;
  size_t n = 0;
  if (EXPECT_STATUS(harel_transport_groups(t, state, NULL, 100, &page, NULL), HAREL_OK) &&
      page != NULL)
    n = page->n_groups;
  harel_group_page_free(page);
  return n;
}

/* seq and duplicate handed out, each output may be NULL; a key seen stores nothing (not
 * even its group) and answers the first message's seq, also after that message was acked;
 * the longest key; priority and routing key reach the group. */
static void publish_with_hands_out_seq_and_duplicate(void) {
  static const char *const eu[] = {"eu"};
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  char longest[257];
  int64_t plain, first, b3, seq = NOT_SET_SEQ;
  int dup = NOT_SET_DUP, seen = 0;
  harel_lease *l = NULL;
  harel_stats *s;
  harel_error *e = NULL;
  if (t == NULL) return;
  /* no key, no delay: a publish that tells its seq */
  plain = PUBLISH_WITH(t, "a", "\"a1\"", NULL, 0.0, -1.0, 0);
  /* every argument */
  EXPECT_CALL(harel_transport_publish_with(t, "b", "\"b1\"", 3, "eu", "key-b", 0.0, -1.0, &seq,
                                           &dup, &e),
              &e, HAREL_OK);
  EXPECT(seq > plain && dup == 0);
  first = seq;
  /* the key again, in another group with another event: nothing stored, the first's seq */
  EXPECT(PUBLISH_WITH(t, "c", "\"c1\"", "key-b", 0.0, -1.0, 1) == first);
  /* seq and duplicate may be NULL, each alone or both, stored or a duplicate */
  EXPECT_CALL(harel_transport_publish_with(t, "b", "\"b2\"", 0, NULL, NULL, 0.0, -1.0, NULL, NULL,
                                           &e),
              &e, HAREL_OK);
  EXPECT_CALL(harel_transport_publish_with(t, "c", "\"c1\"", 0, NULL, "key-b", 0.0, -1.0, NULL,
                                           NULL, &e),
              &e, HAREL_OK);
  seq = NOT_SET_SEQ;
  EXPECT_CALL(harel_transport_publish_with(t, "b", "\"b3\"", 0, NULL, "key-b3", 0.0, -1.0, &seq,
                                           NULL, &e),
              &e, HAREL_OK);
  EXPECT(seq > first);
  b3 = seq;
  dup = NOT_SET_DUP;
  EXPECT_CALL(harel_transport_publish_with(t, "b", "\"b3\"", 0, NULL, "key-b3", 0.0, -1.0, NULL,
                                           &dup, &e),
              &e, HAREL_OK);
  EXPECT(dup == 1);
  EXPECT(PUBLISH_WITH(t, "b", "\"b3\"", "key-b3", 0.0, -1.0, 1) == b3);
  /* the longest key (256 bytes); a key of multi-byte characters; keys are bytes: "K" is not "k" */
  key_of(longest, 256);
  seq = PUBLISH_WITH(t, "d", "\"d1\"", longest, 0.0, -1.0, 0);
  EXPECT(PUBLISH_WITH(t, "d", "\"d1\"", longest, 0.0, -1.0, 1) == seq);
  PUBLISH_WITH(t, "d", "\"d2\"", "cl\xc3\xa9", 0.0, -1.0, 0);
  EXPECT(PUBLISH_WITH(t, "d", "\"d2\"", "cl\xc3\xa9", 0.0, -1.0, 1) > seq);
  PUBLISH_WITH(t, "d", "\"d3\"", "KEY-B", 0.0, -1.0, 0);
  /* stored: a1, b1, b2, b3, d1, d2, d3; no group c */
  s = STATS(t);
  if (s != NULL) EXPECT(s->messages == 7 && s->groups == 3 && s->ready == 3 && s->delayed == 0);
  harel_stats_free(s);
  /* b1 has its seq; b's group its priority and routing key */
  EXPECT_CALL(harel_transport_claim(t, "w", VIS, 3, eu, 1, &l, &e), &e, HAREL_OK);
  if (l != NULL) {
    EXPECT_STR(l->event, "\"b1\"");
    EXPECT(l->seq == first);
  }
  /* acked, its key is still seen: the first message's seq, nothing stored */
  ACK(t, l);
  EXPECT(PUBLISH_WITH(t, "b", "\"b1 again\"", "key-b", 0.0, -1.0, 1) == first);
  l = CLAIM(t, "w", "\"a1\"");
  if (l != NULL) EXPECT(l->seq == plain);
  ACK(t, l);
  EXPECT(drain_now(t, "\"b1 again\"", &seen) == 5 && !seen);
  CLAIM_EMPTY(t);
  harel_transport_close(t);
}

/* Each message's outcome, in order: keys new, repeated within the batch (the earlier one's
 * seq), seen before, none; every option array NULL or given; outputs NULL or given; an
 * empty batch; delays and due instants per message. */
static void publish_many_with_hands_out_each_outcome(void) {
  const harel_message batch[5] = {{"g", "\"m0\"", 0, NULL},
                                  {"g", "\"m1\"", 0, NULL},
                                  {"h", "\"m2\"", 1, "k"},
                                  {"g", "\"m3\"", 0, NULL},
                                  {"i", "\"m4\"", 0, NULL}};
  const char *const keys[5] = {"k-a", NULL, "k-b", "k-a", "k-seen"};
  const char *const again[2] = {"k-b", "k-new"};
  const harel_message timed[4] = {{"p", "\"now\"", 0, NULL},
                                  {"q", "\"in 10 s\"", 0, NULL},
                                  {"r", "\"at T0 + 20\"", 0, NULL},
                                  {"s", "\"was due\"", 0, NULL}};
  const double delays[4] = {0.0, 10.0, 0.0, 0.0};
  const double not_before[4] = {-1.0, -1.0, T0 + 20.0, T0 - 100.0};
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  int64_t seen, seqs[5], more[2];
  int dups[5], more_dups[2];
  harel_stats *s;
  harel_lease *l;
  harel_error *e = NULL;
  size_t i;
  if (t == NULL) return;
  seen = PUBLISH_WITH(t, "z", "\"z\"", "k-seen", 0.0, -1.0, 0);
  for (i = 0; i < 5; i++) seqs[i] = NOT_SET_SEQ, dups[i] = NOT_SET_DUP;
  EXPECT_CALL(harel_transport_publish_many_with(t, batch, 5, keys, NULL, NULL, seqs, dups, &e), &e,
              HAREL_OK);
  EXPECT(dups[0] == 0 && dups[1] == 0 && dups[2] == 0 && dups[3] == 1 && dups[4] == 1);
  EXPECT(seen < seqs[0] && seqs[0] < seqs[1] && seqs[1] < seqs[2]);
  EXPECT(seqs[3] == seqs[0] && seqs[4] == seen);
  s = STATS(t); /* z, m0, m1, m2; no group i */
  if (s != NULL) EXPECT(s->messages == 4 && s->groups == 3);
  harel_stats_free(s);
  /* every array NULL: as publish_many */
  EXPECT_CALL(harel_transport_publish_many_with(t, batch, 2, NULL, NULL, NULL, NULL, NULL, &e), &e,
              HAREL_OK);
  /* seqs alone, duplicates alone */
  more[0] = more[1] = NOT_SET_SEQ;
  EXPECT_CALL(harel_transport_publish_many_with(t, batch, 2, again, NULL, NULL, more, NULL, &e), &e,
              HAREL_OK);
  EXPECT(more[0] == seqs[2] && more[1] > seqs[2]);
  more_dups[0] = more_dups[1] = NOT_SET_DUP;
  EXPECT_CALL(
      harel_transport_publish_many_with(t, batch, 2, again, NULL, NULL, NULL, more_dups, &e), &e,
      HAREL_OK);
  EXPECT(more_dups[0] == 1 && more_dups[1] == 1);
  /* empty: nothing written, nothing handed out, messages may be NULL */
  EXPECT_CALL(harel_transport_publish_many_with(t, NULL, 0, NULL, NULL, NULL, NULL, NULL, &e), &e,
              HAREL_OK);
  outputs_reset();
  EXPECT_CALL(harel_transport_publish_many_with(t, batch, 0, keys, delays, not_before, seqs_out,
                                                dups_out, &e),
              &e, HAREL_OK);
  EXPECT(outputs_untouched());
  s = STATS(t); /* and m0, m1 (no keys), k-new's m1 */
  if (s != NULL) EXPECT(s->messages == 7 && s->groups == 3 && s->delayed == 0);
  harel_stats_free(s);
  EXPECT(drain_now(t, NULL, NULL) == 7);
  /* delays and due instants, per message: q delayed 10 s, r until T0 + 20; s's instant passed */
  for (i = 0; i < 4; i++) seqs[i] = NOT_SET_SEQ, dups[i] = NOT_SET_DUP;
  EXPECT_CALL(harel_transport_publish_many_with(t, timed, 4, NULL, delays, not_before, seqs, dups,
                                                &e),
              &e, HAREL_OK);
  EXPECT(seqs[0] < seqs[1] && seqs[1] < seqs[2] && seqs[2] < seqs[3]);
  EXPECT(dups[0] == 0 && dups[1] == 0 && dups[2] == 0 && dups[3] == 0);
  s = STATS(t);
  if (s != NULL) EXPECT(s->messages == 4 && s->ready == 2 && s->delayed == 2 &&
                        s->next_due_at == T0 + 10.0);
  harel_stats_free(s);
  l = CLAIM(t, "w", "\"now\"");
  ACK(t, l);
  l = CLAIM(t, "w", "\"was due\"");
  ACK(t, l);
  CLAIM_EMPTY(t);
  now = T0 + 10.5;
  l = CLAIM(t, "w", "\"in 10 s\"");
  if (l != NULL) EXPECT(l->seq == seqs[1] && l->attempts == 1);
  ACK(t, l);
  CLAIM_EMPTY(t);
  now = T0 + 20.5;
  l = CLAIM(t, "w", "\"at T0 + 20\"");
  ACK(t, l);
  /* delays alone, not_before alone */
  EXPECT_CALL(harel_transport_publish_many_with(t, timed, 1, NULL, delays + 1, NULL, NULL, NULL, &e),
              &e, HAREL_OK);
  EXPECT_CALL(harel_transport_publish_many_with(t, timed + 1, 1, NULL, NULL, not_before + 2, NULL,
                                                NULL, &e),
              &e, HAREL_OK);
  s = STATS(t);
  if (s != NULL) EXPECT(s->messages == 2 && s->delayed == 1 && s->next_due_at == now + 10.0);
  harel_stats_free(s);
  l = CLAIM(t, "w", "\"in 10 s\""); /* q's: T0 + 20 has passed */
  ACK(t, l);
  CLAIM_EMPTY(t);
  harel_transport_close(t);
}

/* A bad argument of each kind in each position: refused, named, nothing written (the fixture
 * checks), *seq and *duplicate untouched. */
static void bad_arguments_of_publish_with(void) {
  const char *const not_json[] = {"", "{", "nope"};
  const int32_t bad_priority[] = {-1, 5, INT32_MIN, INT32_MAX};
  const double bad_delay[] = {NAN,        INFINITY,  -INFINITY, -1.0, -1e-9,
                              MAX_DELAY + 1.0, 1e300, DBL_MAX};
  const double bad_not_before[] = {NAN, INFINITY, -INFINITY, T0 + MAX_DELAY + 1.0, 1e12, DBL_MAX};
  char longer[258];
  fixture fx;
  size_t i;
  if (!fixture_open(&fx)) return;
  PUBLISH_WITH_BAD("t", NULL, "g1", "1", 0, NULL, "k", 0.0, -1.0);
  PUBLISH_WITH_BAD("group_id", fx.t, NULL, "1", 0, NULL, "k", 0.0, -1.0);
  PUBLISH_WITH_BAD("group_id", fx.t, "", "1", 0, NULL, "k", 0.0, -1.0);
  PUBLISH_WITH_BAD("event_json", fx.t, "g1", NULL, 0, NULL, "k", 0.0, -1.0);
  PUBLISH_WITH_BAD("routing_key", fx.t, "new", "1", 0, "", "k", 0.0, -1.0);
  for (i = 0; i < N_OF(not_json); i++)
    PUBLISH_WITH_BAD("event_json", fx.t, "g1", not_json[i], 0, NULL, "k", 5.0, -1.0);
  for (i = 0; i < N_OF(bad_priority); i++)
    PUBLISH_WITH_BAD("priority", fx.t, "new", "1", bad_priority[i], NULL, "k", 0.0, -1.0);
  /* the key: empty, one byte over 256, not UTF-8 */
  PUBLISH_WITH_BAD("key", fx.t, "g1", "1", 0, NULL, "", 0.0, -1.0);
  PUBLISH_WITH_BAD("key", fx.t, "g1", "1", 0, NULL, key_of(longer, 257), 0.0, -1.0);
  PUBLISH_WITH_BAD("key", fx.t, "g1", "1", 0, NULL, key_of(longer, 257), 5.0, T0 + 10.0);
  /* the delay: not finite, negative, over ten years (with or without a key, a not_before) */
  for (i = 0; i < N_OF(bad_delay); i++) {
    PUBLISH_WITH_BAD("delay", fx.t, "g1", "1", 0, NULL, NULL, bad_delay[i], -1.0);
    PUBLISH_WITH_BAD("delay", fx.t, "new", "1", 0, NULL, "k", bad_delay[i], T0 + 10.0);
  }
  /* not_before: NaN, infinite, more than ten years after now */
  for (i = 0; i < N_OF(bad_not_before); i++) {
    PUBLISH_WITH_BAD("not_before", fx.t, "g1", "1", 0, NULL, NULL, 0.0, bad_not_before[i]);
    PUBLISH_WITH_BAD("not_before", fx.t, "new", "1", 0, NULL, "k", 0.0, bad_not_before[i]);
  }
  for (i = 0; i < N_BAD_UTF8; i++) {
    PUBLISH_WITH_BAD("group_id", fx.t, BAD_UTF8[i], "1", 0, NULL, "k", 0.0, -1.0);
    PUBLISH_WITH_BAD("event_json", fx.t, "g1", BAD_UTF8[i], 0, NULL, "k", 0.0, -1.0);
    PUBLISH_WITH_BAD("routing_key", fx.t, "new", "1", 0, BAD_UTF8[i], "k", 0.0, -1.0);
    PUBLISH_WITH_BAD("key", fx.t, "g1", "1", 0, NULL, BAD_UTF8[i], 0.0, -1.0);
  }
  FIXTURE_CLOSE(&fx);
}

/* A batch of three with delivery options, made good again before each bad field. */
typedef struct {
  harel_message messages[3];
  const char *keys[3];
  double delays[3], not_before[3];
} batch_with;

static void batch_with_init(batch_with *b) {
  static const harel_message good = {"new", "\"x\"", 2, "rk"};
  b->messages[0] = b->messages[1] = b->messages[2] = good;
  b->keys[0] = "bk0", b->keys[1] = NULL, b->keys[2] = "bk2";
  b->delays[0] = 0.0, b->delays[1] = 5.0, b->delays[2] = MAX_DELAY;
  b->not_before[0] = -1.0, b->not_before[1] = T0 + 1.0, b->not_before[2] = -1e300;
}

/* batch `b` made good but for `change`: refused, naming `parameter`, nothing handed out. */
#define BAD_WITH_IN_BATCH(change, parameter)                                                  \
  do {                                                                                        \
    batch_with_init(&b);                                                                      \
    change;                                                                                   \
    PUBLISH_MANY_WITH_BAD((parameter), fx.t, b.messages, 3, b.keys, b.delays, b.not_before); \
  } while (0)

static void bad_arguments_of_publish_many_with(void) {
  const double bad_delay[] = {NAN, INFINITY, -INFINITY, -1.0, MAX_DELAY + 1.0};
  const double bad_not_before[] = {NAN, INFINITY, -INFINITY, T0 + MAX_DELAY + 1.0};
  char longer[258];
  batch_with b;
  fixture fx;
  size_t i;
  if (!fixture_open(&fx)) return;
  batch_with_init(&b);
  PUBLISH_MANY_WITH_BAD("t", NULL, b.messages, 3, b.keys, b.delays, b.not_before);
  PUBLISH_MANY_WITH_BAD("messages", fx.t, NULL, 3, b.keys, b.delays, b.not_before);
  PUBLISH_MANY_WITH_BAD("messages", fx.t, NULL, 3, NULL, NULL, NULL);
  EXPECT_BAD("messages",
             harel_transport_publish_many_with(fx.t, NULL, SIZE_MAX, NULL, NULL, NULL, NULL, NULL, ERR));
  /* the messages' own fields, as publish_many names them */
  BAD_WITH_IN_BATCH(b.messages[1].group_id = NULL, "messages[1].group_id");
  BAD_WITH_IN_BATCH(b.messages[0].group_id = "", "messages[0].group_id");
  BAD_WITH_IN_BATCH(b.messages[2].event_json = "{\"a\":", "messages[2].event_json");
  BAD_WITH_IN_BATCH(b.messages[1].priority = 5, "messages[1].priority");
  BAD_WITH_IN_BATCH(b.messages[2].routing_key = "", "messages[2].routing_key");
  /* the keys */
  BAD_WITH_IN_BATCH(b.keys[1] = "", "messages[1].key");
  BAD_WITH_IN_BATCH(b.keys[2] = key_of(longer, 257), "messages[2].key");
  BAD_WITH_IN_BATCH(b.keys[0] = key_of(longer, 257), "messages[0].key");
  /* the delays and the instants */
  for (i = 0; i < N_OF(bad_delay); i++) {
    BAD_WITH_IN_BATCH(b.delays[1] = bad_delay[i], "messages[1].delay");
    BAD_WITH_IN_BATCH(b.delays[2] = bad_delay[i], "messages[2].delay");
  }
  for (i = 0; i < N_OF(bad_not_before); i++) {
    BAD_WITH_IN_BATCH(b.not_before[0] = bad_not_before[i], "messages[0].not_before");
    BAD_WITH_IN_BATCH(b.not_before[2] = bad_not_before[i], "messages[2].not_before");
  }
  /* the arrays NULL are none, for every message: the bad field is still found */
  batch_with_init(&b);
  b.keys[1] = "";
  PUBLISH_MANY_WITH_BAD("messages[1].key", fx.t, b.messages, 3, b.keys, NULL, NULL);
  batch_with_init(&b);
  b.delays[2] = NAN;
  PUBLISH_MANY_WITH_BAD("messages[2].delay", fx.t, b.messages, 3, NULL, b.delays, NULL);
  batch_with_init(&b);
  b.not_before[1] = NAN;
  PUBLISH_MANY_WITH_BAD("messages[1].not_before", fx.t, b.messages, 3, NULL, NULL, b.not_before);
  for (i = 0; i < N_BAD_UTF8; i++) {
    BAD_WITH_IN_BATCH(b.messages[1].group_id = BAD_UTF8[i], "messages[1].group_id");
    BAD_WITH_IN_BATCH(b.messages[2].event_json = BAD_UTF8[i], "messages[2].event_json");
    BAD_WITH_IN_BATCH(b.keys[2] = BAD_UTF8[i], "messages[2].key");
    BAD_WITH_IN_BATCH(b.keys[0] = BAD_UTF8[i], "messages[0].key");
  }
  /* a batch of one names its message too */
  batch_with_init(&b);
  b.keys[0] = "";
  PUBLISH_MANY_WITH_BAD("messages[0].key", fx.t, b.messages, 1, b.keys, NULL, NULL);
  b.keys[0] = "k";
  b.delays[0] = -1.0;
  PUBLISH_MANY_WITH_BAD("messages[0].delay", fx.t, b.messages, 1, b.keys, b.delays, NULL);
  b.delays[0] = 0.0;
  b.not_before[0] = T0 + MAX_DELAY + 1.0;
  PUBLISH_MANY_WITH_BAD("messages[0].not_before", fx.t, b.messages, 1, b.keys, b.delays, b.not_before);
  FIXTURE_CLOSE(&fx);
}

/* A batch refused for its last message stores none of the others and takes none of their
 * keys, whether the check is made before the transaction (the fields) or in it (the due
 * time, from the clock). */
static void a_refused_batch_takes_no_key(void) {
  const harel_message batch[3] = {{"a", "\"a\"", 0, NULL}, {"b", "\"b\"", 0, NULL},
                                  {"c", "\"c\"", 0, NULL}};
  const char *keys[3] = {"x0", "x1", "x2"};
  double delays[3] = {0.0, 5.0, 0.0}, not_before[3] = {-1.0, T0 + 3.0, -1.0};
  harel_message bad_json[3];
  char longer[258];
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_stats *s;
  harel_error *e = NULL;
  int i;
  if (t == NULL) return;
  memcpy(bad_json, batch, sizeof batch);
  bad_json[2].event_json = "{";
  PUBLISH_MANY_WITH_BAD("messages[2].event_json", t, bad_json, 3, keys, delays, not_before);
  keys[2] = key_of(longer, 257);
  PUBLISH_MANY_WITH_BAD("messages[2].key", t, batch, 3, keys, delays, not_before);
  keys[2] = "x2";
  delays[2] = NAN;
  PUBLISH_MANY_WITH_BAD("messages[2].delay", t, batch, 3, keys, delays, not_before);
  delays[2] = 0.0;
  not_before[2] = now + MAX_DELAY + 1.0;
  PUBLISH_MANY_WITH_BAD("messages[2].not_before", t, batch, 3, keys, delays, not_before);
  s = STATS(t);
  if (s != NULL) EXPECT(s->messages == 0 && s->groups == 0 && s->delayed == 0);
  harel_stats_free(s);
  /* the same batch made good: every key new */
  not_before[2] = now + MAX_DELAY; /* ten years to the second: fine */
  outputs_reset();
  EXPECT_CALL(harel_transport_publish_many_with(t, batch, 3, keys, delays, not_before, seqs_out,
                                                dups_out, &e),
              &e, HAREL_OK);
  for (i = 0; i < 3; i++) EXPECT(seqs_out[i] > 0 && dups_out[i] == 0);
  EXPECT(seqs_out[3] == NOT_SET_SEQ && dups_out[3] == NOT_SET_DUP); /* n written, no more */
  s = STATS(t);
  if (s != NULL) EXPECT(s->messages == 3 && s->ready == 1 && s->delayed == 2 &&
                        s->next_due_at == T0 + 5.0);
  harel_stats_free(s);
  /* a single publish refused for its due time takes no key either */
  PUBLISH_WITH_BAD("not_before", t, "d", "1", 0, NULL, "y", 0.0, now + MAX_DELAY + 1.0);
  PUBLISH_WITH(t, "d", "1", "y", 0.0, -1.0, 0);
  harel_transport_close(t);
}

/* A key is remembered for the retention (set, or a day by default), acked or not; after
 * it, a publish with it is stored again, and its new seq is remembered from then on. */
static void keys_are_forgotten_after_the_retention(void) {
  double now = T0;
  harel_options *o = harel_options_new();
  harel_transport *t = NULL, *by_default;
  harel_lease *l;
  harel_error *e = NULL;
  int64_t first, second;
  if (!EXPECT(o != NULL)) return;
  EXPECT_CALL(harel_options_set_clock(o, test_clock, &now, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_key_retention(o, 60.0, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_open(":memory:", o, &t, &e), &e, HAREL_OK);
  harel_options_free(o);
  if (t == NULL) return;
  first = PUBLISH_WITH(t, "g", "\"1\"", "k", 0.0, -1.0, 0);
  now = T0 + 30;
  EXPECT(PUBLISH_WITH(t, "g", "\"2\"", "k", 0.0, -1.0, 1) == first);
  l = CLAIM(t, "w", "\"1\"");
  ACK(t, l);
  now = T0 + 59;
  EXPECT(PUBLISH_WITH(t, "g", "\"3\"", "k", 0.0, -1.0, 1) == first);
  now = T0 + 61;
  second = PUBLISH_WITH(t, "g", "\"4\"", "k", 0.0, -1.0, 0);
  EXPECT(second > first);
  now = T0 + 61 + 59;
  EXPECT(PUBLISH_WITH(t, "g", "\"5\"", "k", 0.0, -1.0, 1) == second);
  /* in a batch too */
  now = T0 + 61 + 61;
  outputs_reset();
  {
    const harel_message one[1] = {{"g", "\"6\"", 0, NULL}};
    const char *const k[1] = {"k"};
    EXPECT_CALL(harel_transport_publish_many_with(t, one, 1, k, NULL, NULL, seqs_out, dups_out, &e),
                &e, HAREL_OK);
    EXPECT(seqs_out[0] > second && dups_out[0] == 0);
  }
  l = CLAIM(t, "w", "\"4\"");
  ACK(t, l);
  l = CLAIM(t, "w", "\"6\"");
  ACK(t, l);
  CLAIM_EMPTY(t);
  harel_transport_close(t);
  /* the default: a day */
  now = T0;
  by_default = open_at(":memory:", &now);
  if (by_default == NULL) return;
  first = PUBLISH_WITH(by_default, "g", "1", "k", 0.0, -1.0, 0);
  now = T0 + 86400 - 1;
  EXPECT(PUBLISH_WITH(by_default, "g", "1", "k", 0.0, -1.0, 1) == first);
  now = T0 + 86400 + 1;
  EXPECT(PUBLISH_WITH(by_default, "g", "1", "k", 0.0, -1.0, 0) > first);
  harel_transport_close(by_default);
}

/* A delayed message (a delay, an instant, both: the later wins) is counted, listed and
 * peeked as delayed until its time, not claimed before it, and claimed after it. */
static void a_delayed_message_is_claimed_after_its_time(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_group_page *page = NULL;
  harel_message_page *m = NULL;
  harel_group_info g;
  harel_stats *s;
  harel_lease *l;
  harel_error *e = NULL;
  int64_t seq = NOT_SET_SEQ;
  if (t == NULL) return;
  EXPECT_CALL(harel_transport_publish_with(t, "d", "\"d\"", 2, NULL, NULL, 10.0, -1.0, &seq, NULL,
                                           &e),
              &e, HAREL_OK);
  s = STATS(t);
  if (s != NULL) {
    EXPECT(s->messages == 1 && s->groups == 1);
    EXPECT(s->ready == 0 && s->leased == 0 && s->parked == 0 && s->delayed == 1);
    EXPECT(s->next_due_at == T0 + 10.0);
    EXPECT(s->oldest_ready_seq == -1 && s->oldest_ready_age == -1.0);
    /* per level: in groups, in none of ready, leased, parked */
    if (EXPECT(s->n_priorities == 1))
      EXPECT(s->by_priority[0].priority == 2 && s->by_priority[0].groups == 1 &&
             s->by_priority[0].ready == 0 && s->by_priority[0].leased == 0 &&
             s->by_priority[0].parked == 0);
  }
  harel_stats_free(s);
  /* listed as delayed: no holder, its due time as its lock's end, never claimed */
  if (EXPECT(group_info(t, "d", &g, &page))) {
    EXPECT(g.state == HAREL_GROUP_DELAYED && g.depth == 1 && g.head_seq == seq);
    EXPECT(g.holder == NULL && g.lock_expiry == T0 + 10.0 && g.head_attempts == 0);
    EXPECT(g.priority == 2);
  }
  harel_group_page_free(page);
  EXPECT(groups_in(t, HAREL_GROUP_DELAYED) == 1 && groups_in(t, HAREL_GROUP_READY) == 0 &&
         groups_in(t, HAREL_GROUP_LEASED) == 0 && groups_in(t, HAREL_GROUP_PARKED) == 0);
  /* on disk: locked to "__delayed__" until its time */
  EXPECT_CALL(harel_transport_peek(t, "d", NULL, 10, &m, &e), &e, HAREL_OK);
  if (EXPECT(m != NULL) && EXPECT(m->n_messages == 1)) {
    EXPECT_STR(m->messages[0].locked_by, "__delayed__");
    EXPECT(m->messages[0].lock_expiry == T0 + 10.0 && m->messages[0].attempts == 0);
    EXPECT(m->messages[0].published_at == T0);
  }
  harel_message_page_free(m);
  CLAIM_EMPTY(t);
  now = T0 + 9.9;
  CLAIM_EMPTY(t);
  now = T0 + 10.1;
  s = STATS(t); /* due: ready, no longer delayed */
  if (s != NULL)
    EXPECT(s->ready == 1 && s->delayed == 0 && s->next_due_at == -1.0 && s->oldest_ready_seq == seq);
  harel_stats_free(s);
  EXPECT(groups_in(t, HAREL_GROUP_DELAYED) == 0 && groups_in(t, HAREL_GROUP_READY) == 1);
  l = CLAIM(t, "w", "\"d\"");
  if (l != NULL) EXPECT(l->seq == seq && l->attempts == 1 && l->lock_expiry == now + VIS);
  ACK(t, l);
  /* an instant; a delay and an instant (the later of the two) */
  now = T0 + 100;
  PUBLISH_WITH(t, "m", "\"m\"", NULL, 200.0, T0 + 150.0, 0); /* due T0 + 300 */
  PUBLISH_WITH(t, "n", "\"n\"", NULL, 0.0, T0 + 200.0, 0);   /* due T0 + 200 */
  PUBLISH_WITH(t, "o", "\"o\"", NULL, 5.0, T0 + 400.0, 0);   /* due T0 + 400 */
  PUBLISH_WITH(t, "p", "\"p\"", "kp", 0.0, T0 + 50.0, 0);    /* passed: ready */
  PUBLISH_WITH(t, "q", "\"q\"", NULL, 0.0, 0.0, 0);          /* the epoch: ready */
  s = STATS(t);
  if (s != NULL) EXPECT(s->groups == 5 && s->ready == 2 && s->delayed == 3 &&
                        s->next_due_at == T0 + 200.0);
  harel_stats_free(s);
  if (EXPECT(group_info(t, "m", &g, &page))) EXPECT(g.state == HAREL_GROUP_DELAYED && g.lock_expiry == T0 + 300.0);
  harel_group_page_free(page);
  if (EXPECT(group_info(t, "n", &g, &page))) EXPECT(g.state == HAREL_GROUP_DELAYED && g.lock_expiry == T0 + 200.0);
  harel_group_page_free(page);
  if (EXPECT(group_info(t, "o", &g, &page))) EXPECT(g.state == HAREL_GROUP_DELAYED && g.lock_expiry == T0 + 400.0);
  harel_group_page_free(page);
  EXPECT(groups_in(t, HAREL_GROUP_DELAYED) == 3);
  EXPECT(drain_now(t, NULL, NULL) == 2); /* p and q */
  now = T0 + 200.5;
  l = CLAIM(t, "w", "\"n\"");
  ACK(t, l);
  CLAIM_EMPTY(t);
  now = T0 + 300.5;
  l = CLAIM(t, "w", "\"m\"");
  ACK(t, l);
  CLAIM_EMPTY(t);
  now = T0 + 400.5;
  l = CLAIM(t, "w", "\"o\"");
  ACK(t, l);
  CLAIM_EMPTY(t);
  harel_transport_close(t);
}

/* A delayed message keeps its place in its group's FIFO: later messages of the group wait
 * behind it while other groups are served; a delayed message behind a head waits, once it
 * is the head, for its time. */
static void later_messages_wait_behind_a_delayed_one(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_group_page *page = NULL;
  harel_group_info g;
  harel_stats *s;
  harel_lease *l, *other;
  if (t == NULL) return;
  PUBLISH_WITH(t, "g", "\"first\"", NULL, 10.0, -1.0, 0);
  PUBLISH(t, "g", "\"second\"");
  PUBLISH_WITH(t, "g", "\"third\"", "k3", 0.0, -1.0, 0);
  PUBLISH(t, "h", "\"other\"");
  if (EXPECT(group_info(t, "g", &g, &page))) EXPECT(g.state == HAREL_GROUP_DELAYED && g.depth == 3);
  harel_group_page_free(page);
  other = CLAIM(t, "w", "\"other\"");
  CLAIM_EMPTY(t);
  s = STATS(t);
  if (s != NULL) EXPECT(s->messages == 4 && s->ready == 0 && s->leased == 1 && s->delayed == 1);
  harel_stats_free(s);
  ACK(t, other);
  now = T0 + 10.5;
  l = CLAIM(t, "w", "\"first\"");
  CLAIM_EMPTY(t); /* one in flight per group */
  ACK(t, l);
  l = CLAIM(t, "w", "\"second\"");
  ACK(t, l);
  l = CLAIM(t, "w", "\"third\"");
  ACK(t, l);
  CLAIM_EMPTY(t);
  /* behind a head: r2 is due at T0 + 15.5, r1 is claimed at once */
  PUBLISH(t, "r", "\"r1\"");
  PUBLISH_WITH(t, "r", "\"r2\"", NULL, 5.0, -1.0, 0);
  s = STATS(t);
  if (s != NULL) EXPECT(s->ready == 1 && s->delayed == 0);
  harel_stats_free(s);
  l = CLAIM(t, "w", "\"r1\"");
  ACK(t, l);
  s = STATS(t); /* r2 is the head now */
  if (s != NULL) EXPECT(s->ready == 0 && s->delayed == 1 && s->next_due_at == T0 + 15.5);
  harel_stats_free(s);
  EXPECT(groups_in(t, HAREL_GROUP_DELAYED) == 1);
  CLAIM_EMPTY(t);
  now = T0 + 15.6;
  l = CLAIM(t, "w", "\"r2\"");
  ACK(t, l);
  CLAIM_EMPTY(t);
  harel_transport_close(t);
}

/* On the system clock, a waiting claim returns the delayed message at its time. */
static void a_waiting_claim_wakes_at_the_due_time(void) {
  harel_transport *t = NULL;
  harel_lease *l = NULL;
  harel_error *e = NULL;
  double started;
  EXPECT_CALL(harel_transport_open(":memory:", NULL, &t, &e), &e, HAREL_OK);
  if (t == NULL) return;
  started = monotonic();
  PUBLISH_WITH(t, "g", "\"later\"", NULL, 1.0, -1.0, 0);
  EXPECT_CALL(harel_transport_claim_wait(t, "w", VIS, 0, NULL, 0, 20.0, NULL, &l, &e), &e,
              HAREL_OK);
  EXPECT(monotonic() - started >= 0.9 && monotonic() - started < 10.0);
  if (l != NULL) EXPECT_STR(l->event, "\"later\"");
  ACK(t, l);
  harel_transport_close(t);
}

/* A queue without the keys table, opened with create_schema off: a keyed publish is
 * HAREL_ERR_DATABASE naming the table (a batch with one key: none stored; a transaction's
 * publish refused at once); the rest works. */
static const char DROP_KEYS[] =
    "import sqlite3, sys\n"
    "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "c.execute('DROP TABLE harel_transport_keys')\n"
    "print('dropped', flush=True)\n";

static void a_keyed_publish_needs_the_keys_table(void) {
  const harel_message batch[2] = {{"g", "\"a\"", 0, NULL}, {"g", "\"b\"", 0, NULL}};
  const char *const keys[2] = {NULL, "k"};
  double now = T0;
  char path[300], line[32];
  harel_options *o = harel_options_new();
  harel_transport *t = NULL;
  harel_tx *tx = NULL;
  harel_stats *s;
  harel_error *e = NULL;
  if (!EXPECT(o != NULL)) return;
  t = open_at(new_path(path, sizeof path), &now);
  harel_transport_close(t);
  t = NULL;
  if (!EXPECT(python_run(DROP_KEYS, path, line, sizeof line) && strcmp(line, "dropped\n") == 0)) {
    harel_options_free(o);
    return;
  }
  EXPECT_CALL(harel_options_set_create_schema(o, false, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_clock(o, test_clock, &now, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_open(path, o, &t, &e), &e, HAREL_OK);
  harel_options_free(o);
  if (t == NULL) return;
  PUBLISH_WITH_FAILS(HAREL_ERR_DATABASE, "harel_transport_keys", t, "g", "\"k\"", 0, NULL, "k",
                     0.0, -1.0);
  PUBLISH_MANY_WITH_FAILS(HAREL_ERR_DATABASE, "harel_transport_keys", t, batch, 2, keys, NULL,
                          NULL);
  if (EXPECT_STATUS(harel_transport_begin(t, &tx, NULL), HAREL_OK)) {
    EXPECT_FAILS(HAREL_ERR_DATABASE, "harel_transport_keys",
                 harel_tx_publish(tx, "g", "\"k\"", 0, NULL, "k", 0.0, -1.0, ERR));
    harel_tx_free(tx);
  }
  PUBLISH_WITH(t, "g", "\"no key\"", NULL, 0.0, -1.0, 0);
  PUBLISH_WITH(t, "h", "\"no key, later\"", NULL, 5.0, -1.0, 0);
  PUBLISH(t, "g", "\"plain\"");
  EXPECT_CALL(harel_transport_publish_many_with(t, batch, 2, NULL, NULL, NULL, NULL, NULL, &e), &e,
              HAREL_OK);
  s = STATS(t);
  if (s != NULL) EXPECT(s->messages == 5 && s->delayed == 1);
  harel_stats_free(s);
  harel_transport_close(t);
}

/* A `*err` already set: the producer calls and the retention setter refused, the error
 * untouched, nothing written (no key taken), the outputs untouched. */
static void a_set_err_is_refused_by_the_producer_calls(void) {
  const harel_message batch[1] = {{"g", "\"stale\"", 0, NULL}};
  const char *const keys[1] = {"stale-key"};
  const double delays[1] = {5.0};
  double now = T0;
  char was_text[512];
  harel_options *o = harel_options_new();
  harel_transport *t = NULL;
  harel_error *stale = NULL, *e = NULL;
  const harel_error *was;
  harel_stats *s;
  int64_t seq = NOT_SET_SEQ, first;
  int dup = NOT_SET_DUP;
  EXPECT(harel_options_set_prefix(NULL, "p", &stale) == HAREL_ERR_ARGUMENT);
  if (!EXPECT(stale != NULL && o != NULL)) {
    harel_error_free(stale);
    harel_options_free(o);
    return;
  }
  was = stale;
  snprintf(was_text, sizeof was_text, "%s", harel_error_message(stale));
  EXPECT_STATUS(harel_options_set_clock(o, test_clock, &now, NULL), HAREL_OK);
  EXPECT_STATUS(harel_options_set_key_retention(o, 60.0, NULL), HAREL_OK);
  REFUSED(harel_options_set_key_retention(o, 1.0, &stale)); /* not taken: 60 stays */
  EXPECT_CALL(harel_transport_open(":memory:", o, &t, &e), &e, HAREL_OK);
  harel_options_free(o);
  if (t == NULL) {
    harel_error_free(stale);
    return;
  }
  REFUSED(harel_transport_publish_with(t, "g", "\"stale\"", 0, NULL, "stale-key", 0.0, -1.0,
                                       &seq, &dup, &stale));
  EXPECT(seq == NOT_SET_SEQ && dup == NOT_SET_DUP);
  outputs_reset();
  REFUSED(harel_transport_publish_many_with(t, batch, 1, keys, delays, NULL, seqs_out, dups_out,
                                            &stale));
  EXPECT(outputs_untouched());
  s = STATS(t);
  if (s != NULL) EXPECT(s->messages == 0 && s->groups == 0);
  harel_stats_free(s);
  first = PUBLISH_WITH(t, "g", "\"kept\"", "stale-key", 0.0, -1.0, 0); /* the key not taken */
  now = T0 + 30; /* within 60 s, past 1 s */
  EXPECT(PUBLISH_WITH(t, "g", "\"kept\"", "stale-key", 0.0, -1.0, 1) == first);
  harel_transport_close(t);
  harel_error_free(stale);
}

/* ---------------------------------------------------------------------------------------
 * Publishing inside the application's transaction (issue 24): harel_transport_begin,
 * harel_tx_execute, _query, _publish, _commit, _rollback, _free and harel_rows_free. What a
 * transaction does to the queue is the Rust contract's; here, each call's mapping: the rows
 * as C reads them (every value type, row-major, texts NUL-terminated with their sizes), the
 * commit's outputs, every status each call documents, every bad argument (named; nothing
 * queued, the transaction goes on), an ended transaction refusing all but rollback and free,
 * a stale handle, a second transaction of the transport and its other calls busy, a closed
 * transport, and threads committing on one file.
 */

/* The application's table of these tests. */
#define ORDERS "CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT)"
#define INSERT_ORDER "INSERT INTO orders (id, note) VALUES (?1, ?2)"

/* Parameters: only the field of the type is set, the rest zeroed, as the header asks. */
static harel_value null_value(void) {
  harel_value v;
  memset(&v, 0, sizeof v);
  v.type = HAREL_VALUE_NULL;
  return v;
}
static harel_value int_value(int64_t i) {
  harel_value v = null_value();
  v.type = HAREL_VALUE_INTEGER;
  v.integer = i;
  return v;
}
static harel_value real_value(double x) {
  harel_value v = null_value();
  v.type = HAREL_VALUE_REAL;
  v.real = x;
  return v;
}
static harel_value text_value(const char *s) {
  harel_value v = null_value();
  v.type = HAREL_VALUE_TEXT;
  v.text = s;
  return v;
}
static harel_value blob_value(const uint8_t *b, size_t n) {
  harel_value v = null_value();
  v.type = HAREL_VALUE_BLOB;
  v.blob = b;
  v.size = n;
  return v;
}

/* A new transaction of `t`; NULL if begin failed. */
#define BEGIN(t) begin_at((t), __FILE__, __LINE__)
static harel_tx *begin_at(harel_transport *t, const char *file, int line) {
  harel_tx *tx = NOT_SET_TX;
  harel_error *e = NULL;
  if (!expect_call(harel_transport_begin(t, &tx, &e), &e, HAREL_OK, NULL, "harel_transport_begin",
                   file, line))
    return NULL;
  if (tx == NULL || tx == NOT_SET_TX) {
    test_fail(file, line, "begin returned HAREL_OK with no transaction");
    return NULL;
  }
  return tx;
}

/* The rows of a query that succeeds (the caller frees them); NULL if it failed. */
#define QUERY(tx, sql, params, n) query_at((tx), (sql), (params), (n), __FILE__, __LINE__)
static harel_rows *query_at(harel_tx *tx, const char *sql, const harel_value *params, size_t n,
                            const char *file, int line) {
  harel_rows *rows = NOT_SET_ROWS;
  harel_error *e = NULL;
  if (!expect_call(harel_tx_query(tx, sql, params, n, &rows, &e), &e, HAREL_OK, NULL,
                   "harel_tx_query", file, line))
    return NULL;
  if (rows == NULL || rows == NOT_SET_ROWS) {
    test_fail(file, line, "query returned HAREL_OK with no rows");
    return NULL;
  }
  return rows;
}

/* Row r, column c. */
static const harel_value *cell(const harel_rows *rows, size_t r, size_t c) {
  return &rows->values[r * rows->n_columns + c];
}

/* The value is an INTEGER `i`; a TEXT of `size` bytes `s` (NUL-terminated after them). */
static int is_integer(const harel_value *v, int64_t i) {
  return v->type == HAREL_VALUE_INTEGER && v->integer == i;
}
static int is_text(const harel_value *v, const char *s, size_t size) {
  return v->type == HAREL_VALUE_TEXT && v->text != NULL && v->size == size &&
         memcmp(v->text, s, size) == 0 && v->text[size] == '\0';
}

/* A query of one integer, in its own transaction of `t`; -1 if it failed. */
#define SCALAR(t, sql) scalar_at((t), (sql), __FILE__, __LINE__)
static int64_t scalar_at(harel_transport *t, const char *sql, const char *file, int line) {
  harel_tx *tx = begin_at(t, file, line);
  harel_rows *rows = tx != NULL ? query_at(tx, sql, NULL, 0, file, line) : NULL;
  int64_t n = -1;
  if (rows != NULL && rows->n_rows == 1 && rows->n_columns == 1 &&
      rows->values[0].type == HAREL_VALUE_INTEGER)
    n = rows->values[0].integer;
  else if (rows != NULL)
    test_fail(file, line, "%s: not one integer", sql);
  harel_rows_free(rows);
  if (tx != NULL)
    EXPECT_STATUS(harel_tx_commit(tx, NULL, NULL, 0, NULL, NULL), HAREL_OK);
  harel_tx_free(tx);
  return n;
}

/* Runs `sql` (no parameters) in a transaction of its own, committed. */
#define EXECUTE(t, sql) execute_at((t), (sql), __FILE__, __LINE__)
static void execute_at(harel_transport *t, const char *sql, const char *file, int line) {
  harel_tx *tx = begin_at(t, file, line);
  harel_error *e = NULL;
  if (tx == NULL) return;
  expect_call(harel_tx_execute(tx, sql, NULL, 0, &e), &e, HAREL_OK, NULL, "harel_tx_execute", file,
              line);
  expect_call(harel_tx_commit(tx, NULL, NULL, 0, NULL, &e), &e, HAREL_OK, NULL, "harel_tx_commit",
              file, line);
  harel_tx_free(tx);
}

/* Neither the application's rows nor any message were kept. */
#define NOTHING_KEPT(t) nothing_kept_at((t), __FILE__, __LINE__)
static void nothing_kept_at(harel_transport *t, const char *file, int line) {
  harel_stats *s = stats_at(t, file, line);
  if (scalar_at(t, "SELECT count(*) FROM orders", file, line) != 0)
    test_fail(file, line, "an application row was kept");
  if (s != NULL && (s->messages != 0 || s->groups != 0))
    test_fail(file, line, "%llu messages were kept", (unsigned long long)s->messages);
  harel_stats_free(s);
}

/* Every later call of an ended transaction (ended `why`: "committed", "rolled"...) is
 * refused naming why, but rollback (HAREL_OK, any number of times); the rows out NULL. */
#define ENDED(tx, why) ended_at((tx), (why), __FILE__, __LINE__)
static void ended_at(harel_tx *tx, const char *why, const char *file, int line) {
  const harel_value one = int_value(1);
  harel_rows *rows = NOT_SET_ROWS;
  int64_t seq = NOT_SET_SEQ;
  size_t n = NOT_SET_COUNT;
  harel_error *e = NULL;
  expect_call(harel_tx_execute(tx, "SELECT ?1", &one, 1, &e), &e, HAREL_ERR_ARGUMENT, why,
              "harel_tx_execute when ended", file, line);
  expect_call(harel_tx_query(tx, "SELECT 1", NULL, 0, &rows, &e), &e, HAREL_ERR_ARGUMENT, why,
              "harel_tx_query when ended", file, line);
  if (rows != NULL) test_fail(file, line, "a refused query left *out set");
  expect_call(harel_tx_publish(tx, "g", "1", 0, NULL, NULL, 0.0, -1.0, &e), &e,
              HAREL_ERR_ARGUMENT, why, "harel_tx_publish when ended", file, line);
  expect_call(harel_tx_commit(tx, &seq, NULL, 1, &n, &e), &e, HAREL_ERR_ARGUMENT, why,
              "harel_tx_commit when ended", file, line);
  if (seq != NOT_SET_SEQ || n != NOT_SET_COUNT)
    test_fail(file, line, "a refused commit wrote its outputs");
  expect_call(harel_tx_rollback(tx, &e), &e, HAREL_OK, NULL, "harel_tx_rollback when ended", file,
              line);
  expect_call(harel_tx_rollback(tx, &e), &e, HAREL_OK, NULL, "harel_tx_rollback again", file, line);
}

/* The application's row and the messages are committed together: read back by a query (in
 * a transaction) and by claims of this transport and of another one on the file; each
 * publish's seq and duplicate, in order; publishes sent with a query before the commit
 * counted with the others; a transaction of nothing commits nothing; a retried key is a
 * duplicate while the row is new. */
static void a_transaction_commits_its_rows_and_messages_together(void) {
  double now = T0;
  char path[300];
  harel_transport *t = open_at(new_path(path, sizeof path), &now), *other;
  harel_value order[2];
  int64_t seqs[3] = {NOT_SET_SEQ, NOT_SET_SEQ, NOT_SET_SEQ}, retried = NOT_SET_SEQ;
  int dups[3] = {NOT_SET_DUP, NOT_SET_DUP, NOT_SET_DUP};
  size_t n = NOT_SET_COUNT;
  harel_rows *rows;
  harel_lease *l;
  harel_tx *tx;
  harel_error *e = NULL;
  if (t == NULL) return;
  EXECUTE(t, ORDERS);
  /* an order and its "created" message, a second message keyed, one after a query */
  if ((tx = BEGIN(t)) == NULL) return;
  order[0] = int_value(42), order[1] = text_value("first order");
  EXPECT_CALL(harel_tx_execute(tx, INSERT_ORDER, order, 2, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_tx_publish(tx, "order-42", "{\"kind\":\"created\"}", 2, "eu", NULL, 0.0, -1.0,
                               &e),
              &e, HAREL_OK);
  EXPECT_CALL(harel_tx_publish(tx, "order-42", "{\"kind\":\"priced\"}", 0, NULL, "order-42-priced",
                               0.0, -1.0, &e),
              &e, HAREL_OK);
  rows = QUERY(tx, "SELECT note FROM orders WHERE id = 42", NULL, 0); /* its own write */
  if (rows != NULL && EXPECT(rows->n_rows == 1 && rows->n_columns == 1))
    EXPECT(is_text(cell(rows, 0, 0), "first order", 11));
  harel_rows_free(rows);
  EXPECT_CALL(harel_tx_publish(tx, "order-42", "{\"kind\":\"paid\"}", 0, NULL, NULL, 0.0, -1.0, &e),
              &e, HAREL_OK);
  EXPECT_CALL(harel_tx_commit(tx, seqs, dups, 3, &n, &e), &e, HAREL_OK);
  EXPECT(n == 3);
  EXPECT(seqs[0] > 0 && seqs[0] < seqs[1] && seqs[1] < seqs[2]);
  EXPECT(dups[0] == 0 && dups[1] == 0 && dups[2] == 0);
  ENDED(tx, "committed");
  harel_tx_free(tx);
  /* read back: the row, and the messages in order, by another transport on the file */
  EXPECT(SCALAR(t, "SELECT count(*) FROM orders WHERE id = 42 AND note = 'first order'") == 1);
  other = open_at(path, &now);
  if (other != NULL) {
    l = CLAIM(other, "w", "{\"kind\":\"created\"}");
    if (l != NULL) EXPECT(l->seq == seqs[0]);
    ACK(other, l);
    l = CLAIM(other, "w", "{\"kind\":\"priced\"}");
    if (l != NULL) EXPECT(l->seq == seqs[1]);
    ACK(other, l);
    l = CLAIM(other, "w", "{\"kind\":\"paid\"}");
    if (l != NULL) EXPECT(l->seq == seqs[2]);
    ACK(other, l);
    CLAIM_EMPTY(other);
    harel_transport_close(other);
  }
  /* retried with the key seen: a duplicate of the first message's seq; the row is new */
  if ((tx = BEGIN(t)) == NULL) return;
  order[0] = int_value(43), order[1] = null_value();
  EXPECT_CALL(harel_tx_execute(tx, INSERT_ORDER, order, 2, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_tx_publish(tx, "order-42", "{\"kind\":\"priced\"}", 0, NULL, "order-42-priced",
                               0.0, -1.0, &e),
              &e, HAREL_OK);
  dups[0] = NOT_SET_DUP;
  EXPECT_CALL(harel_tx_commit(tx, &retried, dups, 1, NULL, &e), &e, HAREL_OK);
  EXPECT(retried == seqs[1] && dups[0] == 1);
  harel_tx_free(tx);
  EXPECT(SCALAR(t, "SELECT count(*) FROM orders WHERE id = 43 AND note IS NULL") == 1);
  CLAIM_EMPTY(t);
  /* nothing asked: a commit of nothing, every output NULL or 0 */
  if ((tx = BEGIN(t)) == NULL) return;
  n = NOT_SET_COUNT;
  EXPECT_CALL(harel_tx_commit(tx, NULL, NULL, 0, &n, &e), &e, HAREL_OK);
  EXPECT(n == 0);
  harel_tx_free(tx);
  harel_transport_close(t);
}

/* The commit writes min(n, published) outcomes: the arrays' entries past n are not written;
 * n_published counts them all; seqs and duplicates may each be NULL. */
static void commit_hands_out_at_most_n_outcomes(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  int64_t seqs[3], all[3];
  int dups[3];
  size_t n, i, round;
  harel_tx *tx;
  harel_error *e = NULL;
  if (t == NULL) return;
  for (round = 0; round < 4; round++) {
    if ((tx = BEGIN(t)) == NULL) return;
    EXPECT_CALL(harel_tx_publish(tx, "g", "1", 0, NULL, NULL, 0.0, -1.0, &e), &e, HAREL_OK);
    EXPECT_CALL(harel_tx_publish(tx, "g", "2", 0, NULL, "k", 0.0, -1.0, &e), &e, HAREL_OK);
    EXPECT_CALL(harel_tx_publish(tx, "h", "3", 0, NULL, "k", 0.0, -1.0, &e), &e, HAREL_OK);
    for (i = 0; i < 3; i++) seqs[i] = NOT_SET_SEQ, dups[i] = NOT_SET_DUP;
    n = NOT_SET_COUNT;
    switch (round) {
      case 0: /* all three: the third a duplicate of the second, within the transaction */
        EXPECT_CALL(harel_tx_commit(tx, seqs, dups, 3, &n, &e), &e, HAREL_OK);
        EXPECT(n == 3 && seqs[0] < seqs[1] && seqs[2] == seqs[1]);
        EXPECT(dups[0] == 0 && dups[1] == 0 && dups[2] == 1);
        memcpy(all, seqs, sizeof all);
        break;
      case 1: /* two of three: the third entry untouched */
        EXPECT_CALL(harel_tx_commit(tx, seqs, dups, 2, &n, &e), &e, HAREL_OK);
        EXPECT(n == 3 && seqs[0] > all[2] && seqs[1] == all[1]);
        EXPECT(dups[0] == 0 && dups[1] == 1);
        EXPECT(seqs[2] == NOT_SET_SEQ && dups[2] == NOT_SET_DUP);
        break;
      case 2: /* none (n 0, arrays given): nothing written but the count */
        EXPECT_CALL(harel_tx_commit(tx, seqs, dups, 0, &n, &e), &e, HAREL_OK);
        EXPECT(n == 3);
        for (i = 0; i < 3; i++) EXPECT(seqs[i] == NOT_SET_SEQ && dups[i] == NOT_SET_DUP);
        break;
      default: /* seqs alone, and no count */
        EXPECT_CALL(harel_tx_commit(tx, seqs, NULL, 3, NULL, &e), &e, HAREL_OK);
        EXPECT(seqs[0] > all[2] && seqs[1] == all[1] && seqs[2] == all[1]);
        break;
    }
    harel_tx_free(tx);
  }
  /* duplicates alone */
  if ((tx = BEGIN(t)) == NULL) return;
  EXPECT_CALL(harel_tx_publish(tx, "g", "2", 0, NULL, "k", 0.0, -1.0, &e), &e, HAREL_OK);
  dups[0] = NOT_SET_DUP;
  EXPECT_CALL(harel_tx_commit(tx, NULL, dups, 1, NULL, &e), &e, HAREL_OK);
  EXPECT(dups[0] == 1);
  harel_tx_free(tx);
  EXPECT(drain_now(t, NULL, NULL) == 5); /* 1 and 2 of round 0, the 1s of rounds 1 to 3 */
  harel_transport_close(t);
}

/* Rolled back, or freed before its commit (with work queued, or holding the connection after
 * a query): nothing kept, and the transport free at once for its other calls. */
static void rollback_and_free_keep_nothing(void) {
  double now = T0;
  harel_options *o = harel_options_new();
  harel_transport *t = NULL;
  harel_value order[2];
  harel_rows *rows;
  harel_tx *tx;
  harel_error *e = NULL;
  int round;
  if (!EXPECT(o != NULL)) return;
  /* a short busy timeout: a connection still held would fail the publish below */
  EXPECT_CALL(harel_options_set_busy_timeout(o, 0.2, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_clock(o, test_clock, &now, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_open(":memory:", o, &t, &e), &e, HAREL_OK);
  harel_options_free(o);
  if (t == NULL) return;
  EXECUTE(t, ORDERS);
  order[0] = int_value(1), order[1] = text_value("never");
  for (round = 0; round < 4; round++) {
    if ((tx = BEGIN(t)) == NULL) return;
    EXPECT_CALL(harel_tx_execute(tx, INSERT_ORDER, order, 2, &e), &e, HAREL_OK);
    EXPECT_CALL(harel_tx_publish(tx, "g", "\"never\"", 0, NULL, "never", 0.0, -1.0, &e), &e,
                HAREL_OK);
    if (round >= 2) { /* begun by a query: it holds the connection */
      rows = QUERY(tx, "SELECT count(*) FROM orders", NULL, 0);
      if (rows != NULL) EXPECT(rows->n_rows == 1 && is_integer(cell(rows, 0, 0), 1));
      harel_rows_free(rows);
    }
    if (round % 2 == 0) {
      EXPECT_CALL(harel_tx_rollback(tx, &e), &e, HAREL_OK);
      ENDED(tx, "rolled");
    }
    harel_tx_free(tx);
    NOTHING_KEPT(t);
    PUBLISH(t, "after", "1"); /* not busy: the connection was let go */
    EXPECT(drain_now(t, NULL, NULL) == 1);
  }
  /* the key was not taken */
  EXPECT(PUBLISH_WITH(t, "g", "\"kept\"", "never", 0.0, -1.0, 0) > 0);
  harel_transport_close(t);
}

/* Every value type goes in as a parameter and comes back in rows: NULL, integers at their
 * ends, a real, texts (empty, quotes, multi-byte; NUL-terminated, `size` long), blobs (bytes
 * with NULs, empty from a NULL pointer, 64 KiB through a table); rows row-major; no rows;
 * `?` parameters; a write with RETURNING. */
static void values_go_in_and_come_back(void) {
  static uint8_t big[65536];
  const uint8_t bytes[4] = {0, 255, 0, 7};
  const char *odd = "a'\"\xc3\xa9\xf4\x8f\xbf\xbf"; /* quotes, U+00E9, U+10FFFF */
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_value in[9], pair[2];
  harel_rows *rows;
  harel_tx *tx;
  harel_error *e = NULL;
  size_t i;
  if (t == NULL) return;
  EXECUTE(t, "CREATE TABLE blobs (id INTEGER PRIMARY KEY, data BLOB)");
  for (i = 0; i < sizeof big; i++) big[i] = (uint8_t)(i * 7 + 3);
  if ((tx = BEGIN(t)) == NULL) return;
  in[0] = null_value();
  in[1] = int_value(INT64_MIN);
  in[2] = int_value(INT64_MAX);
  in[3] = real_value(0.1 + 0.2);
  in[4] = text_value(odd);
  in[5] = text_value("");
  in[6] = blob_value(bytes, 4);
  in[7] = blob_value(NULL, 0);
  in[8] = real_value(-1e300);
  rows = QUERY(tx, "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9", in, 9);
  if (rows != NULL && EXPECT(rows->n_rows == 1 && rows->n_columns == 9 && rows->values != NULL)) {
    EXPECT(cell(rows, 0, 0)->type == HAREL_VALUE_NULL);
    EXPECT(is_integer(cell(rows, 0, 1), INT64_MIN));
    EXPECT(is_integer(cell(rows, 0, 2), INT64_MAX));
    EXPECT(cell(rows, 0, 3)->type == HAREL_VALUE_REAL && cell(rows, 0, 3)->real == 0.1 + 0.2);
    EXPECT(is_text(cell(rows, 0, 4), odd, strlen(odd)));
    EXPECT(is_text(cell(rows, 0, 5), "", 0));
    EXPECT(cell(rows, 0, 6)->type == HAREL_VALUE_BLOB && cell(rows, 0, 6)->size == 4 &&
           cell(rows, 0, 6)->blob != NULL && memcmp(cell(rows, 0, 6)->blob, bytes, 4) == 0);
    EXPECT(cell(rows, 0, 7)->type == HAREL_VALUE_BLOB && cell(rows, 0, 7)->size == 0);
    EXPECT(cell(rows, 0, 8)->type == HAREL_VALUE_REAL && cell(rows, 0, 8)->real == -1e300);
  }
  harel_rows_free(rows);
  /* several rows, row by row; `?` parameters in order */
  pair[0] = text_value("r"), pair[1] = int_value(10);
  rows = QUERY(tx,
               "SELECT v, v * 2.5, ? || v FROM (SELECT ? AS v UNION ALL SELECT 2 UNION ALL "
               "SELECT 3) ORDER BY v",
               pair, 2);
  if (rows != NULL && EXPECT(rows->n_rows == 3 && rows->n_columns == 3)) {
    EXPECT(is_integer(cell(rows, 0, 0), 2) && is_integer(cell(rows, 1, 0), 3) &&
           is_integer(cell(rows, 2, 0), 10));
    EXPECT(cell(rows, 1, 1)->type == HAREL_VALUE_REAL && cell(rows, 1, 1)->real == 7.5);
    EXPECT(is_text(cell(rows, 0, 2), "r2", 2) && is_text(cell(rows, 2, 2), "r10", 3));
  }
  harel_rows_free(rows);
  /* no rows: 0, 0, NULL */
  rows = QUERY(tx, "SELECT 1, 2 WHERE 0", NULL, 0);
  if (rows != NULL) EXPECT(rows->n_rows == 0 && rows->n_columns == 0 && rows->values == NULL);
  harel_rows_free(rows);
  /* a text holding a NUL: `size` bytes of it, NUL-terminated (a local file cuts it at the NUL) */
  rows = QUERY(tx, "SELECT CAST(x'610062' AS TEXT)", NULL, 0);
  if (rows != NULL && EXPECT(rows->n_rows == 1))
    EXPECT(is_text(cell(rows, 0, 0), "a\0b", 1) || is_text(cell(rows, 0, 0), "a\0b", 3));
  harel_rows_free(rows);
  /* 64 KiB through a table, written by execute and by a query with RETURNING */
  pair[0] = int_value(1), pair[1] = blob_value(big, sizeof big);
  EXPECT_CALL(harel_tx_execute(tx, "INSERT INTO blobs (id, data) VALUES (?1, ?2)", pair, 2, &e), &e,
              HAREL_OK);
  pair[0] = int_value(2);
  rows = QUERY(tx, "INSERT INTO blobs (id, data) VALUES (?1, ?2) RETURNING id, length(data)", pair,
               2);
  if (rows != NULL && EXPECT(rows->n_rows == 1 && rows->n_columns == 2))
    EXPECT(is_integer(cell(rows, 0, 0), 2) && is_integer(cell(rows, 0, 1), (int64_t)sizeof big));
  harel_rows_free(rows);
  EXPECT_CALL(harel_tx_commit(tx, NULL, NULL, 0, NULL, &e), &e, HAREL_OK);
  harel_tx_free(tx);
  if ((tx = BEGIN(t)) == NULL) return;
  rows = QUERY(tx, "SELECT id, data FROM blobs ORDER BY id", NULL, 0);
  if (rows != NULL && EXPECT(rows->n_rows == 2 && rows->n_columns == 2))
    for (i = 0; i < 2; i++)
      EXPECT(is_integer(cell(rows, i, 0), (int64_t)i + 1) &&
             cell(rows, i, 1)->type == HAREL_VALUE_BLOB && cell(rows, i, 1)->size == sizeof big &&
             memcmp(cell(rows, i, 1)->blob, big, sizeof big) == 0);
  harel_rows_free(rows);
  harel_tx_free(tx); /* a read: nothing to keep */
  harel_transport_close(t);
}

/* A statement that fails at the commit, or a query that fails, ends the transaction rolled
 * back (HAREL_ERR_DATABASE, the database's message): what was queued before it is not kept,
 * and every later call is refused but rollback. */
static void a_failing_statement_ends_the_transaction(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_value order[2];
  harel_rows *rows;
  harel_tx *tx;
  harel_error *e = NULL;
  if (t == NULL) return;
  EXECUTE(t, ORDERS);
  order[0] = int_value(1), order[1] = null_value();
  /* a constraint, met at the commit */
  if ((tx = BEGIN(t)) == NULL) return;
  EXPECT_CALL(harel_tx_execute(tx, INSERT_ORDER, order, 2, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_tx_publish(tx, "g", "1", 0, NULL, "k", 0.0, -1.0, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_tx_execute(tx, INSERT_ORDER, order, 2, &e), &e, HAREL_OK); /* queued */
  EXPECT_CALL_NAMING(harel_tx_commit(tx, NULL, NULL, 0, NULL, &e), &e, HAREL_ERR_DATABASE,
                     "UNIQUE");
  ENDED(tx, "rolled");
  harel_tx_free(tx);
  NOTHING_KEPT(t);
  /* a queued statement's error, met at a query: the query fails, the transaction ends */
  if ((tx = BEGIN(t)) == NULL) return;
  EXPECT_CALL(harel_tx_publish(tx, "g", "1", 0, NULL, NULL, 0.0, -1.0, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_tx_execute(tx, "INSERT INTO no_such_table VALUES (1)", NULL, 0, &e), &e,
              HAREL_OK);
  rows = NOT_SET_ROWS;
  EXPECT_CALL_NAMING(harel_tx_query(tx, "SELECT 1", NULL, 0, &rows, &e), &e, HAREL_ERR_DATABASE,
                     "no_such_table");
  EXPECT(rows == NULL);
  ENDED(tx, "rolled");
  harel_tx_free(tx);
  NOTHING_KEPT(t);
  /* the query's own error, after a query that began it */
  if ((tx = BEGIN(t)) == NULL) return;
  EXPECT_CALL(harel_tx_execute(tx, INSERT_ORDER, order, 2, &e), &e, HAREL_OK);
  harel_rows_free(QUERY(tx, "SELECT 1", NULL, 0));
  EXPECT_CALL(harel_tx_publish(tx, "g", "1", 0, NULL, NULL, 0.0, -1.0, &e), &e, HAREL_OK);
  rows = NOT_SET_ROWS;
  EXPECT_CALL_NAMING(harel_tx_query(tx, "SELECT no_such_column FROM orders", NULL, 0, &rows, &e),
                     &e, HAREL_ERR_DATABASE, "no_such_column");
  EXPECT(rows == NULL);
  ENDED(tx, "rolled");
  harel_tx_free(tx);
  NOTHING_KEPT(t);
  PUBLISH(t, "g", "\"usable\""); /* the transport goes on */
  EXPECT(drain_now(t, NULL, NULL) == 1);
  harel_transport_close(t);
}

/* Bad arguments: refused at once (HAREL_ERR_ARGUMENT, named), nothing queued, the
 * transaction going on; *out NULL after a refused begin or query. */
#define BEGIN_BAD(parameter, t)                                                          \
  do {                                                                                   \
    harel_tx *out_ = NOT_SET_TX;                                                         \
    EXPECT_BAD((parameter), (out_ = NOT_SET_TX, harel_transport_begin((t), &out_, ERR))); \
    EXPECT(out_ == NULL);                                                                \
  } while (0)
#define QUERY_BAD(parameter, tx, sql, params, n)                                       \
  do {                                                                                 \
    harel_rows *out_ = NOT_SET_ROWS;                                                   \
    EXPECT_BAD((parameter), (out_ = NOT_SET_ROWS,                                      \
                             harel_tx_query((tx), (sql), (params), (n), &out_, ERR))); \
    EXPECT(out_ == NULL);                                                              \
  } while (0)
/* A statement refused by both execute and query. */
#define STATEMENT_BAD(parameter, tx, sql, params, n)                                         \
  do {                                                                                       \
    EXPECT_BAD((parameter), harel_tx_execute((tx), (sql), (params), (n), ERR));              \
    QUERY_BAD((parameter), (tx), (sql), (params), (n));                                      \
  } while (0)

static void bad_arguments_of_the_transaction_calls(void) {
  const double bad_delay[] = {NAN, INFINITY, -INFINITY, -1.0, MAX_DELAY + 1.0};
  const double bad_not_before[] = {NAN, INFINITY, -INFINITY};
  const double bad_real[] = {NAN, INFINITY, -INFINITY};
  const int32_t bad_type[] = {-1, 5, INT32_MIN, INT32_MAX};
  const uint8_t bytes[1] = {1};
  char longer[258];
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_value p[2];
  int64_t seq = NOT_SET_SEQ;
  size_t i, n = NOT_SET_COUNT;
  harel_rows *rows = NOT_SET_ROWS;
  harel_tx *tx;
  if (t == NULL) return;
  EXECUTE(t, ORDERS);
  BEGIN_BAD("t", NULL);
  EXPECT_BAD("out", harel_transport_begin(t, NULL, ERR));
  if ((tx = BEGIN(t)) == NULL) return;
  p[0] = int_value(1), p[1] = text_value("kept");
  /* the handle */
  EXPECT_BAD("tx", harel_tx_execute(NULL, INSERT_ORDER, p, 2, ERR));
  QUERY_BAD("tx", NULL, "SELECT 1", NULL, 0);
  EXPECT_BAD("tx", harel_tx_publish(NULL, "g", "1", 0, NULL, NULL, 0.0, -1.0, ERR));
  EXPECT_BAD("tx", harel_tx_commit(NULL, &seq, NULL, 1, &n, ERR));
  EXPECT(seq == NOT_SET_SEQ && n == NOT_SET_COUNT);
  EXPECT_BAD("tx", harel_tx_rollback(NULL, ERR));
  /* the statement: sql, the parameters' array, each parameter */
  STATEMENT_BAD("sql", tx, NULL, p, 2);
  STATEMENT_BAD("sql", tx, "", p, 2);
  for (i = 0; i < N_BAD_UTF8; i++) STATEMENT_BAD("sql", tx, BAD_UTF8[i], NULL, 0);
  STATEMENT_BAD("params", tx, INSERT_ORDER, NULL, 2);
  EXPECT_BAD("out", harel_tx_query(tx, "SELECT 1", NULL, 0, NULL, ERR));
  for (i = 0; i < N_OF(bad_type); i++) {
    p[1] = null_value(), p[1].type = bad_type[i];
    STATEMENT_BAD("params[1].type", tx, INSERT_ORDER, p, 2);
  }
  p[1] = text_value(NULL);
  STATEMENT_BAD("params[1].text", tx, INSERT_ORDER, p, 2);
  for (i = 0; i < N_BAD_UTF8; i++) {
    p[1] = text_value(BAD_UTF8[i]);
    STATEMENT_BAD("params[1].text", tx, INSERT_ORDER, p, 2);
  }
  p[1] = blob_value(NULL, 1);
  STATEMENT_BAD("params[1].blob", tx, INSERT_ORDER, p, 2);
  for (i = 0; i < N_OF(bad_real); i++) {
    p[1] = real_value(bad_real[i]);
    STATEMENT_BAD("params[1]", tx, INSERT_ORDER, p, 2);
    p[0] = real_value(bad_real[i]), p[1] = text_value("x");
    STATEMENT_BAD("params[0]", tx, INSERT_ORDER, p, 2);
    p[0] = int_value(1);
  }
  /* a blob given its pointer: fine, as 0 bytes from NULL are (no row to update) */
  p[0] = int_value(99), p[1] = blob_value(bytes, 1);
  EXPECT_STATUS(harel_tx_execute(tx, "UPDATE orders SET note = ?2 WHERE id = ?1", p, 2, NULL),
                HAREL_OK);
  p[1] = blob_value(NULL, 0);
  EXPECT_STATUS(harel_tx_execute(tx, "UPDATE orders SET note = ?2 WHERE id = ?1", p, 2, NULL),
                HAREL_OK);
  /* the publish: as harel_transport_publish_with refuses them */
  EXPECT_BAD("group_id", harel_tx_publish(tx, NULL, "1", 0, NULL, NULL, 0.0, -1.0, ERR));
  EXPECT_BAD("group_id", harel_tx_publish(tx, "", "1", 0, NULL, NULL, 0.0, -1.0, ERR));
  EXPECT_BAD("event_json", harel_tx_publish(tx, "g", NULL, 0, NULL, NULL, 0.0, -1.0, ERR));
  EXPECT_BAD("event_json", harel_tx_publish(tx, "g", "{", 0, NULL, NULL, 0.0, -1.0, ERR));
  EXPECT_BAD("priority", harel_tx_publish(tx, "g", "1", 5, NULL, NULL, 0.0, -1.0, ERR));
  EXPECT_BAD("priority", harel_tx_publish(tx, "g", "1", -1, NULL, NULL, 0.0, -1.0, ERR));
  EXPECT_BAD("routing_key", harel_tx_publish(tx, "g", "1", 0, "", NULL, 0.0, -1.0, ERR));
  EXPECT_BAD("key", harel_tx_publish(tx, "g", "1", 0, NULL, "", 0.0, -1.0, ERR));
  EXPECT_BAD("key", harel_tx_publish(tx, "g", "1", 0, NULL, key_of(longer, 257), 0.0, -1.0, ERR));
  for (i = 0; i < N_OF(bad_delay); i++)
    EXPECT_BAD("delay", harel_tx_publish(tx, "g", "1", 0, NULL, "k", bad_delay[i], -1.0, ERR));
  for (i = 0; i < N_OF(bad_not_before); i++)
    EXPECT_BAD("not_before",
               harel_tx_publish(tx, "g", "1", 0, NULL, NULL, 0.0, bad_not_before[i], ERR));
  for (i = 0; i < N_BAD_UTF8; i++) {
    EXPECT_BAD("group_id", harel_tx_publish(tx, BAD_UTF8[i], "1", 0, NULL, NULL, 0.0, -1.0, ERR));
    EXPECT_BAD("event_json", harel_tx_publish(tx, "g", BAD_UTF8[i], 0, NULL, NULL, 0.0, -1.0, ERR));
    EXPECT_BAD("routing_key", harel_tx_publish(tx, "g", "1", 0, BAD_UTF8[i], NULL, 0.0, -1.0, ERR));
    EXPECT_BAD("key", harel_tx_publish(tx, "g", "1", 0, NULL, BAD_UTF8[i], 0.0, -1.0, ERR));
  }
  /* it went on: what was good is queued, and only that */
  p[0] = int_value(1), p[1] = text_value("kept");
  EXPECT_STATUS(harel_tx_execute(tx, INSERT_ORDER, p, 2, NULL), HAREL_OK);
  EXPECT_STATUS(harel_tx_publish(tx, "g", "\"kept\"", 0, NULL, "k", 0.0, -1.0, NULL), HAREL_OK);
  rows = QUERY(tx, "SELECT count(*) FROM orders", NULL, 0); /* begun now: refusals go on too */
  if (rows != NULL) EXPECT(is_integer(cell(rows, 0, 0), 1));
  harel_rows_free(rows);
  p[0] = real_value(NAN);
  STATEMENT_BAD("params[0]", tx, INSERT_ORDER, p, 2);
  EXPECT_BAD("group_id", harel_tx_publish(tx, "", "1", 0, NULL, NULL, 0.0, -1.0, ERR));
  n = NOT_SET_COUNT;
  EXPECT_STATUS(harel_tx_commit(tx, NULL, NULL, 0, &n, NULL), HAREL_OK);
  EXPECT(n == 1);
  harel_tx_free(tx);
  EXPECT(SCALAR(t, "SELECT count(*) FROM orders WHERE note = 'kept'") == 1);
  EXPECT(SCALAR(t, "SELECT count(*) FROM orders") == 1);
  {
    int seen = 0;
    EXPECT(drain_now(t, "\"kept\"", &seen) == 1 && seen);
  }
  harel_transport_close(t);
}

/* A due instant more than ten years after now is refused by the publish itself, as
 * harel_transport_publish_with refuses it: nothing queued, the transaction goes on. */
static void a_due_instant_too_far_is_refused_at_the_publish(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_value order[2];
  harel_tx *tx;
  harel_error *e = NULL;
  size_t n = NOT_SET_COUNT;
  if (t == NULL) return;
  EXECUTE(t, ORDERS);
  if ((tx = BEGIN(t)) == NULL) return;
  order[0] = int_value(1), order[1] = text_value("kept");
  EXPECT_CALL(harel_tx_execute(tx, INSERT_ORDER, order, 2, &e), &e, HAREL_OK);
  EXPECT_CALL_NAMING(harel_tx_publish(tx, "g", "1", 0, NULL, NULL, 0.0, T0 + MAX_DELAY + 1.0, &e),
                     &e, HAREL_ERR_ARGUMENT, "not_before");
  EXPECT_CALL_NAMING(harel_tx_publish(tx, "g", "1", 0, NULL, NULL, 5.0, 1e12, &e), &e,
                     HAREL_ERR_ARGUMENT, "not_before");
  EXPECT_CALL(harel_tx_commit(tx, NULL, NULL, 0, &n, &e), &e, HAREL_OK);
  EXPECT(n == 0);
  harel_tx_free(tx);
  EXPECT(SCALAR(t, "SELECT count(*) FROM orders") == 1);
  CLAIM_EMPTY(t);
  harel_transport_close(t);
}

/* A freed transaction is refused by every call (rollback too: it is not a live handle),
 * also once another was begun; a second free does nothing. */
static void a_freed_transaction_is_refused_and_a_second_free_is_harmless(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_rows *rows = NOT_SET_ROWS;
  harel_tx *tx, *live;
  if (t == NULL) return;
  if ((tx = BEGIN(t)) == NULL) return;
  EXPECT_STATUS(harel_tx_publish(tx, "g", "\"freed\"", 0, NULL, NULL, 0.0, -1.0, NULL), HAREL_OK);
  harel_tx_free(tx);
  live = BEGIN(t); /* a new one is another handle: the freed stays refused */
  EXPECT(live != tx);
  EXPECT_BAD("tx", harel_tx_execute(tx, "SELECT 1", NULL, 0, ERR));
  EXPECT_BAD("tx", (rows = NOT_SET_ROWS, harel_tx_query(tx, "SELECT 1", NULL, 0, &rows, ERR)));
  EXPECT(rows == NULL);
  EXPECT_BAD("tx", harel_tx_publish(tx, "g", "1", 0, NULL, NULL, 0.0, -1.0, ERR));
  EXPECT_BAD("tx", harel_tx_commit(tx, NULL, NULL, 0, NULL, ERR));
  EXPECT_BAD("tx", harel_tx_rollback(tx, ERR));
  harel_tx_free(tx); /* a second free */
  if (live != NULL) {
    EXPECT_STATUS(harel_tx_publish(live, "g", "\"live\"", 0, NULL, NULL, 0.0, -1.0, NULL),
                  HAREL_OK);
    EXPECT_STATUS(harel_tx_commit(live, NULL, NULL, 0, NULL, NULL), HAREL_OK);
  }
  harel_tx_free(live);
  {
    int seen = 0;
    EXPECT(drain_now(t, "\"live\"", &seen) == 1 && seen); /* not "freed" */
  }
  harel_transport_close(t);
}

/* While a transaction holds the connection (after a query), a second transaction's query or
 * commit and the transport's own calls wait the busy timeout, then fail HAREL_ERR_BUSY
 * saying why; the busy transaction is ended with nothing kept, and the first goes on. */
static void a_second_transaction_of_the_transport_is_busy(void) {
  double now = T0, started;
  harel_options *o = harel_options_new();
  harel_transport *t = NULL;
  harel_value order[2];
  harel_tx *first, *second, *third;
  harel_rows *rows = NOT_SET_ROWS;
  harel_error *e = NULL;
  size_t n = NOT_SET_COUNT;
  if (!EXPECT(o != NULL)) return;
  EXPECT_CALL(harel_options_set_busy_timeout(o, 0.3, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_clock(o, test_clock, &now, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_open(":memory:", o, &t, &e), &e, HAREL_OK);
  harel_options_free(o);
  if (t == NULL) return;
  EXECUTE(t, ORDERS);
  PUBLISH(t, "before", "\"b\"");
  if ((first = BEGIN(t)) == NULL) return;
  order[0] = int_value(1), order[1] = text_value("first");
  EXPECT_CALL(harel_tx_execute(first, INSERT_ORDER, order, 2, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_tx_publish(first, "g", "\"first\"", 0, NULL, NULL, 0.0, -1.0, &e), &e,
              HAREL_OK);
  harel_rows_free(QUERY(first, "SELECT 1", NULL, 0)); /* it holds the connection now */
  /* a second and a third: their work queues (nothing is sent); the second's commit and the
   * third's first query wait the busy timeout and fail, which ends them */
  second = BEGIN(t);
  third = BEGIN(t);
  if (second != NULL && third != NULL) {
    order[0] = int_value(2), order[1] = text_value("second");
    EXPECT_CALL(harel_tx_execute(second, INSERT_ORDER, order, 2, &e), &e, HAREL_OK);
    EXPECT_CALL(harel_tx_publish(second, "g", "\"second\"", 0, NULL, NULL, 0.0, -1.0, &e), &e,
                HAREL_OK);
    started = monotonic();
    EXPECT_CALL_NAMING(harel_tx_commit(second, NULL, NULL, 0, &n, &e), &e, HAREL_ERR_BUSY, "nest");
    EXPECT(monotonic() - started >= 0.25);
    EXPECT(n == NOT_SET_COUNT);
    ENDED(second, "rolled");
    EXPECT_CALL(harel_tx_execute(third, INSERT_ORDER, order, 2, &e), &e, HAREL_OK);
    started = monotonic();
    EXPECT_CALL_NAMING(harel_tx_query(third, "SELECT 1", NULL, 0, &rows, &e), &e, HAREL_ERR_BUSY,
                       "nest");
    EXPECT(monotonic() - started >= 0.25 && rows == NULL);
    ENDED(third, "rolled");
  }
  harel_tx_free(second);
  harel_tx_free(third);
  /* the transport's own calls: publish with the transaction's own publish */
  EXPECT_FAILS(HAREL_ERR_BUSY, "nest",
               harel_transport_publish(t, "g", "\"outside\"", 0, NULL, ERR));
  CLAIM_FAILS(HAREL_ERR_BUSY, "nest", t, "w", VIS, 0, NULL, 0);
  /* the first goes on, and commits only its own */
  rows = QUERY(first, "SELECT note FROM orders", NULL, 0);
  if (rows != NULL && EXPECT(rows->n_rows == 1)) EXPECT(is_text(cell(rows, 0, 0), "first", 5));
  harel_rows_free(rows);
  n = NOT_SET_COUNT;
  EXPECT_CALL(harel_tx_commit(first, NULL, NULL, 0, &n, &e), &e, HAREL_OK);
  EXPECT(n == 1);
  harel_tx_free(first);
  EXPECT(SCALAR(t, "SELECT count(*) FROM orders") == 1);
  ACK(t, CLAIM(t, "w", "\"b\""));
  ACK(t, CLAIM(t, "w", "\"first\""));
  CLAIM_EMPTY(t);
  harel_transport_close(t);
}

/* Closing the transport rolls back its open transactions, the one holding the connection
 * and one with work queued: their calls are refused naming the close, rollback is
 * HAREL_OK, free is fine, and nothing of them is in the file. */
static void closing_the_transport_rolls_back_its_transactions(void) {
  double now = T0;
  char path[300];
  harel_transport *t = open_at(new_path(path, sizeof path), &now);
  harel_value order[2];
  harel_tx *holding, *queued;
  if (t == NULL) return;
  EXECUTE(t, ORDERS);
  holding = BEGIN(t);
  queued = BEGIN(t);
  if (holding == NULL || queued == NULL) {
    harel_transport_close(t);
    harel_tx_free(holding);
    harel_tx_free(queued);
    return;
  }
  order[0] = int_value(1), order[1] = text_value("holding");
  EXPECT_STATUS(harel_tx_execute(holding, INSERT_ORDER, order, 2, NULL), HAREL_OK);
  harel_rows_free(QUERY(holding, "SELECT 1", NULL, 0));
  EXPECT_STATUS(harel_tx_publish(holding, "g", "1", 0, NULL, NULL, 0.0, -1.0, NULL), HAREL_OK);
  order[0] = int_value(2), order[1] = text_value("queued");
  EXPECT_STATUS(harel_tx_execute(queued, INSERT_ORDER, order, 2, NULL), HAREL_OK);
  EXPECT_STATUS(harel_tx_publish(queued, "g", "2", 0, NULL, NULL, 0.0, -1.0, NULL), HAREL_OK);
  harel_transport_close(t);
  ENDED(holding, "closed");
  ENDED(queued, "closed");
  harel_tx_free(holding);
  harel_tx_free(queued);
  t = open_at(path, &now);
  if (t == NULL) return;
  NOTHING_KEPT(t);
  harel_transport_close(t);
}

/* Threads, each with its own transport on one file, each committing transactions of a row
 * and a message (half begun by a query that reads the thread's own rows): every row and
 * every message once, each message with the seq its commit handed out, each group in order. */
#define TX_THREADS 4
#define TX_ROUNDS 10

typedef struct {
  harel_transport *t;
  int id;
  int64_t seqs[TX_ROUNDS];
  char problem[600];
} tx_thread;

static void tx_problem(tx_thread *me, const char *what, harel_status s, harel_error *e) {
  if (me->problem[0] == '\0')
    snprintf(me->problem, sizeof me->problem, "%s: %s %s", what, harel_status_name(s),
             or_null(harel_error_message(e)));
  harel_error_free(e);
}

static void *commit_rounds(void *arg) {
  tx_thread *me = arg;
  char group[16], event[64];
  int i;
  snprintf(group, sizeof group, "t%d", me->id);
  for (i = 0; i < TX_ROUNDS && me->problem[0] == '\0'; i++) {
    harel_value row[2];
    harel_rows *rows = NULL;
    harel_tx *tx = NULL;
    harel_error *e = NULL;
    size_t n = 0;
    harel_status s;
    snprintf(event, sizeof event, "{\"t\":%d,\"i\":%d}", me->id, i);
    row[0] = int_value(me->id * 1000 + i), row[1] = text_value(group);
    if ((s = harel_transport_begin(me->t, &tx, &e)) != HAREL_OK) {
      tx_problem(me, "begin", s, e);
      break;
    }
    s = harel_tx_execute(tx, INSERT_ORDER, row, 2, &e);
    if (s == HAREL_OK && i % 2 == 1) {
      s = harel_tx_query(tx, "SELECT count(*) FROM orders WHERE note = ?1", row + 1, 1, &rows, &e);
      if (s == HAREL_OK && !(rows->n_rows == 1 && is_integer(cell(rows, 0, 0), i + 1)))
        snprintf(me->problem, sizeof me->problem, "round %d: not its own %d rows", i, i + 1);
      harel_rows_free(rows);
    }
    if (s == HAREL_OK) s = harel_tx_publish(tx, group, event, 0, NULL, NULL, 0.0, -1.0, &e);
    if (s == HAREL_OK) s = harel_tx_commit(tx, &me->seqs[i], NULL, 1, &n, &e);
    if (s != HAREL_OK || n != 1) tx_problem(me, "the transaction", s, e);
    harel_tx_free(tx);
  }
  return NULL;
}

static void threads_commit_transactions_on_one_file(void) {
  double now = T0;
  char path[300];
  tx_thread me[TX_THREADS];
  pthread_t threads[TX_THREADS];
  int next[TX_THREADS], i, strays = 0;
  harel_transport *t = open_at(new_path(path, sizeof path), &now);
  harel_lease *l = NULL;
  if (t == NULL) return;
  EXECUTE(t, ORDERS);
  for (i = 0; i < TX_THREADS; i++) {
    memset(&me[i], 0, sizeof me[i]);
    me[i].t = open_at(path, &now);
    me[i].id = i;
    next[i] = 0;
  }
  for (i = 0; i < TX_THREADS; i++)
    if (me[i].t == NULL || !EXPECT(pthread_create(&threads[i], NULL, commit_rounds, &me[i]) == 0))
      snprintf(me[i].problem, sizeof me[i].problem, "not started"), me[i].t = NULL;
  for (i = 0; i < TX_THREADS; i++) {
    if (me[i].t != NULL) pthread_join(threads[i], NULL);
    if (me[i].problem[0] != '\0') test_fail(__FILE__, __LINE__, "thread %d: %s", i, me[i].problem);
    harel_transport_close(me[i].t);
  }
  EXPECT(SCALAR(t, "SELECT count(*) FROM orders") == TX_THREADS * TX_ROUNDS);
  for (i = 0; i < TX_THREADS; i++) {
    char sql[80];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM orders WHERE note = 't%d'", i);
    EXPECT(SCALAR(t, sql) == TX_ROUNDS);
  }
  while (harel_transport_claim(t, "w", VIS, 0, NULL, 0, &l, NULL) == HAREL_OK && l != NULL) {
    int k, j;
    if (sscanf(l->event, "{\"t\":%d,\"i\":%d}", &k, &j) == 2 && k >= 0 && k < TX_THREADS &&
        j == next[k] && l->seq == me[k].seqs[j])
      next[k]++;
    else
      strays++, fprintf(stderr, "  unexpected %s (seq %lld)\n", l->event, (long long)l->seq);
    ACK(t, l);
    l = NULL;
  }
  EXPECT(strays == 0);
  for (i = 0; i < TX_THREADS; i++)
    if (next[i] != TX_ROUNDS) test_fail(__FILE__, __LINE__, "t%d: %d messages", i, next[i]);
  harel_transport_close(t);
}

/* A `*err` already set: the transaction calls refused, the error untouched, nothing done
 * (no transaction handed out, nothing queued, the transaction not ended). */
static void a_set_err_is_refused_by_the_transaction_calls(void) {
  double now = T0;
  char was_text[512];
  harel_transport *t = open_at(":memory:", &now);
  harel_error *stale = NULL;
  const harel_error *was;
  harel_value one;
  harel_rows *rows = NOT_SET_ROWS;
  harel_tx *tx = NOT_SET_TX;
  int64_t seq = NOT_SET_SEQ;
  size_t n = NOT_SET_COUNT;
  if (t == NULL) return;
  EXPECT(harel_options_set_prefix(NULL, "p", &stale) == HAREL_ERR_ARGUMENT);
  if (!EXPECT(stale != NULL)) {
    harel_transport_close(t);
    return;
  }
  was = stale;
  snprintf(was_text, sizeof was_text, "%s", harel_error_message(stale));
  EXECUTE(t, ORDERS);
  REFUSED(harel_transport_begin(t, &tx, &stale));
  EXPECT(tx == NULL);
  if ((tx = BEGIN(t)) == NULL) {
    harel_error_free(stale);
    harel_transport_close(t);
    return;
  }
  one = int_value(1);
  REFUSED(harel_tx_execute(tx, "INSERT INTO orders (id) VALUES (?1)", &one, 1, &stale));
  REFUSED(harel_tx_query(tx, "INSERT INTO orders (id) VALUES (2) RETURNING id", NULL, 0, &rows,
                         &stale));
  EXPECT(rows == NULL);
  REFUSED(harel_tx_publish(tx, "g", "\"stale\"", 0, NULL, NULL, 0.0, -1.0, &stale));
  REFUSED(harel_tx_commit(tx, &seq, NULL, 1, &n, &stale));
  EXPECT(seq == NOT_SET_SEQ && n == NOT_SET_COUNT);
  REFUSED(harel_tx_rollback(tx, &stale));
  /* not ended, not rolled back: it commits, and nothing refused was queued */
  EXPECT_STATUS(harel_tx_publish(tx, "g", "\"kept\"", 0, NULL, NULL, 0.0, -1.0, NULL), HAREL_OK);
  EXPECT_STATUS(harel_tx_commit(tx, NULL, NULL, 0, &n, NULL), HAREL_OK);
  EXPECT(n == 1);
  harel_tx_free(tx);
  EXPECT(SCALAR(t, "SELECT count(*) FROM orders") == 0);
  {
    int seen = 0;
    EXPECT(drain_now(t, "\"kept\"", &seen) == 1 && seen);
  }
  harel_error_free(stale);
  harel_transport_close(t);
}

/* ---------------------------------------------------------------------------------------
 * A queue sharded over several databases (issue 28: harel_transport_open_shards,
 * harel_transport_shard_count, harel_shard_of; the pages' `shards`). What the sharded queue
 * does is the Rust contract's (tests/shards.rs); here, the mapping: each function's outputs
 * and every refusal its header names, with *out NULL after it.
 */

#define SHARDS_MAX 256 /* the most databases a queue has (the header's MAX_SHARDS) */
#define N_SHARDS 3
#define PER_SHARD 3                       /* groups picked on each shard */
#define N_PICKED (N_SHARDS * PER_SHARD)

/* harel_shard_of, which must succeed; N_SHARDS (never a shard) if it failed. */
#define SHARD_OF(group, n) shard_of_at((group), (n), __FILE__, __LINE__)
static size_t shard_of_at(const char *group, size_t n, const char *file, int line) {
  size_t shard = NOT_SET_COUNT;
  harel_error *e = NULL;
  if (!expect_call(harel_shard_of(group, n, &shard, &e), &e, HAREL_OK, NULL, "harel_shard_of",
                   file, line))
    return N_SHARDS;
  if (shard >= n) {
    test_fail(file, line, "harel_shard_of(\"%s\", %zu) is %zu", group, n, shard);
    return N_SHARDS;
  }
  return shard;
}

/* Group ids, PER_SHARD on each of the N_SHARDS shards, shard by shard: ids[s * PER_SHARD + k]
 * lives on shard s (harel_shard_of says so). */
typedef struct {
  char ids[N_PICKED][16];
} picked_groups;

static void pick_groups(picked_groups *p) {
  size_t on[N_SHARDS] = {0}, found = 0;
  int i;
  char id[16];
  for (i = 0; found < N_PICKED && i < 1000; i++) {
    size_t s;
    snprintf(id, sizeof id, "g%d", i);
    s = SHARD_OF(id, N_SHARDS);
    if (s >= N_SHARDS || on[s] == PER_SHARD) continue;
    snprintf(p->ids[s * PER_SHARD + on[s]], sizeof p->ids[0], "%s", id);
    on[s]++;
    found++;
  }
  EXPECT(found == N_PICKED);
}

/* Options with the clock reading *now, synchronous NORMAL (the caller frees them). */
static harel_options *options_at(double *now) {
  harel_options *o = harel_options_new();
  harel_error *e = NULL;
  if (!EXPECT(o != NULL)) return NULL;
  EXPECT_CALL(harel_options_set_clock(o, test_clock, now, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_synchronous_full(o, false, &e), &e, HAREL_OK);
  return o;
}

/* Three new database files' paths (not made yet) in dbs[0..2]. */
typedef struct {
  char paths[N_SHARDS][300];
  const char *dbs[N_SHARDS];
} shard_files;

static void new_shard_files(shard_files *f) {
  size_t i;
  for (i = 0; i < N_SHARDS; i++) f->dbs[i] = new_path(f->paths[i], sizeof f->paths[i]);
}

/* open_shards of `dbs`, which must succeed; NULL if it failed. */
#define OPEN_SHARDS(dbs, n, options) open_shards_at((dbs), (n), (options), __FILE__, __LINE__)
static harel_transport *open_shards_at(const char *const *dbs, size_t n,
                                       const harel_options *options, const char *file, int line) {
  harel_transport *t = NOT_SET_HANDLE;
  harel_error *e = NULL;
  if (!expect_call(harel_transport_open_shards(dbs, n, options, &t, &e), &e, HAREL_OK, NULL,
                   "harel_transport_open_shards", file, line))
    return NULL;
  if (t == NULL || t == NOT_SET_HANDLE) {
    test_fail(file, line, "open_shards returned HAREL_OK with no handle");
    return NULL;
  }
  return t;
}

/* The number of shards of `t`; 0 if the call failed. */
#define SHARD_COUNT(t) shard_count_at((t), __FILE__, __LINE__)
static size_t shard_count_at(const harel_transport *t, const char *file, int line) {
  size_t n = NOT_SET_COUNT;
  harel_error *e = NULL;
  if (!expect_call(harel_transport_shard_count(t, &n, &e), &e, HAREL_OK, NULL,
                   "harel_transport_shard_count", file, line))
    return 0;
  return n;
}

/* open_shards refused with `want`, once with err NULL and once with err given: the message
 * names `parameter` (NULL: any) and holds `says` (NULL: anything), *out is NULL after each. */
#define OPEN_SHARDS_FAILS(want, parameter, says, dbs, n, options) \
  open_shards_fails_at((want), (parameter), (says), (dbs), (n), (options), __FILE__, __LINE__)
#define OPEN_SHARDS_BAD(parameter, says, dbs, n, options) \
  OPEN_SHARDS_FAILS(HAREL_ERR_ARGUMENT, (parameter), (says), (dbs), (n), (options))
static void open_shards_fails_at(harel_status want, const char *parameter, const char *says,
                                 const char *const *dbs, size_t n, const harel_options *options,
                                 const char *file, int line) {
  harel_transport *out = NOT_SET_HANDLE;
  harel_error *e = NULL;
  const char *message;
  harel_status s = harel_transport_open_shards(dbs, n, options, &out, NULL);
  message = harel_last_error();
  if (says != NULL && (message == NULL || strstr(message, says) == NULL))
    test_fail(file, line, "open_shards with err NULL: the message \"%s\" does not say \"%s\"",
              or_null(message), says);
  expect_error(s, want, parameter, "harel_transport_open_shards with err NULL", file, line);
  if (out != NULL) test_fail(file, line, "open_shards with err NULL: *out is not NULL");
  out = NOT_SET_HANDLE;
  s = harel_transport_open_shards(dbs, n, options, &out, &e);
  message = harel_error_message(e);
  if (says != NULL && (message == NULL || strstr(message, says) == NULL))
    test_fail(file, line, "open_shards: the message \"%s\" does not say \"%s\"", or_null(message),
              says);
  expect_call(s, &e, want, parameter, "harel_transport_open_shards", file, line);
  if (out != NULL) test_fail(file, line, "open_shards: *out is not NULL");
  if (out != NULL && out != NOT_SET_HANDLE) harel_transport_close(out);
}

/* The known values (docs/queue.md gives the hash); every shard in range; a list of one
 * shard; each bad argument, *shard untouched. */
#define SHARD_OF_BAD(parameter, group, n)                                        \
  do {                                                                           \
    size_t shard_ = NOT_SET_COUNT;                                               \
    EXPECT_BAD((parameter), harel_shard_of((group), (n), &shard_, ERR));         \
    EXPECT(shard_ == NOT_SET_COUNT);                                             \
  } while (0)
static void shard_of_names_the_shard(void) {
  size_t i, seen[4] = {0};
  char id[16];
  EXPECT(SHARD_OF("order-42", 3) == 2);
  EXPECT(SHARD_OF("order-42", 4) == 0);
  EXPECT(SHARD_OF("order-42", 1) == 0);
  EXPECT(SHARD_OF("order-42", SHARDS_MAX) < SHARDS_MAX);
  EXPECT(SHARD_OF("\xc3\xa9t\xc3\xa9", 4) < 4); /* UTF-8 beyond ASCII */
  for (i = 0; i < 64; i++) {
    snprintf(id, sizeof id, "group-%zu", i);
    seen[SHARD_OF(id, 4) % 4]++;
  }
  EXPECT(seen[0] > 0 && seen[1] > 0 && seen[2] > 0 && seen[3] > 0); /* spread over all four */
  EXPECT(SHARD_OF("order-42", 3) == 2);                             /* the same each time */
  SHARD_OF_BAD("group_id", NULL, 3);
  SHARD_OF_BAD("group_id", "", 3);
  for (i = 0; i < N_BAD_UTF8; i++) SHARD_OF_BAD("group_id", BAD_UTF8[i], 3);
  SHARD_OF_BAD("n_shards", "order-42", 0);
  SHARD_OF_BAD("n_shards", "order-42", SHARDS_MAX + 1);
  SHARD_OF_BAD("n_shards", "order-42", SIZE_MAX);
  EXPECT_BAD("shard", harel_shard_of("order-42", 3, NULL, ERR));
}

/* The first open of three new files makes them a set; shard_count says 3; the same list
 * reopens it; a list of one and an ordinary open are not sharded (1). */
static void open_shards_makes_a_set_and_reopens_it(void) {
  double now = T0;
  shard_files f;
  harel_options *o = options_at(&now);
  harel_transport *t, *one;
  harel_stats *s;
  char single[300];
  if (o == NULL) return;
  new_shard_files(&f);
  t = OPEN_SHARDS(f.dbs, N_SHARDS, o);
  if (t != NULL) {
    EXPECT(SHARD_COUNT(t) == N_SHARDS);
    PUBLISH(t, "order-42", "\"kept\"");
    harel_transport_close(t);
  }
  EXPECT(access(f.dbs[0], F_OK) == 0 && access(f.dbs[1], F_OK) == 0 && access(f.dbs[2], F_OK) == 0);
  t = OPEN_SHARDS(f.dbs, N_SHARDS, NULL); /* the same list, the default options */
  if (t != NULL) {
    EXPECT(SHARD_COUNT(t) == N_SHARDS);
    s = STATS(t);
    if (s != NULL) EXPECT(s->messages == 1 && s->groups == 1);
    harel_stats_free(s);
    harel_transport_close(t);
  }
  /* a list of one: a queue of one database, as harel_transport_open opens it */
  new_path(single, sizeof single);
  {
    const char *const list[] = {single};
    one = OPEN_SHARDS(list, 1, o);
  }
  if (one != NULL) {
    EXPECT(SHARD_COUNT(one) == 1);
    PUBLISH(one, "g", "\"alone\"");
    harel_transport_close(one);
  }
  one = open_at(single, &now);
  if (one != NULL) {
    EXPECT(SHARD_COUNT(one) == 1);
    ACK(one, CLAIM(one, "w", "\"alone\""));
    harel_transport_close(one);
  }
  one = open_at(":memory:", &now);
  if (one != NULL) EXPECT(SHARD_COUNT(one) == 1);
  harel_transport_close(one);
  harel_options_free(o);
}

/* Messages of groups on each of the three shards, published one by one and in one batch,
 * claimed (claim, claim_many) and acked (ack, ack_many) through the one handle: each
 * exactly once, each group's in order; the stats add the shards up. */
static void claims_and_acks_across_three_shards_exactly_once(void) {
  double now = T0;
  shard_files f;
  picked_groups p;
  harel_options *o = options_at(&now);
  harel_transport *t;
  harel_message batch[N_PICKED];
  char events[N_PICKED][2][32];
  int seen[N_PICKED][2];
  harel_lease *leases[4];
  harel_status outcomes[4];
  harel_stats *s;
  size_t i, k, n, claimed = 0;
  int rounds = 0;
  harel_error *e = NULL;
  if (o == NULL) return;
  new_shard_files(&f);
  pick_groups(&p);
  t = OPEN_SHARDS(f.dbs, N_SHARDS, o);
  harel_options_free(o);
  if (t == NULL) return;
  memset(seen, 0, sizeof seen);
  /* each group's first message one by one, its second in a batch (a transaction a shard) */
  for (i = 0; i < N_PICKED; i++) {
    for (k = 0; k < 2; k++) snprintf(events[i][k], sizeof events[i][k], "\"%s-%zu\"", p.ids[i], k);
    PUBLISH(t, p.ids[i], events[i][0]);
    batch[i].group_id = p.ids[i];
    batch[i].event_json = events[i][1];
    batch[i].priority = 0;
    batch[i].routing_key = NULL;
  }
  /* a batch with a bad message, last: refused whole, nothing written on any shard */
  batch[N_PICKED - 1].event_json = "{oops";
  EXPECT_CALL_NAMING(harel_transport_publish_many(t, batch, N_PICKED, &e), &e, HAREL_ERR_ARGUMENT,
                     "messages[8].event_json");
  batch[N_PICKED - 1].event_json = events[N_PICKED - 1][1];
  s = STATS(t);
  if (s != NULL) EXPECT(s->messages == N_PICKED && s->groups == N_PICKED);
  harel_stats_free(s);
  EXPECT_CALL(harel_transport_publish_many(t, batch, N_PICKED, &e), &e, HAREL_OK);
  s = STATS(t);
  if (s != NULL) EXPECT(s->messages == 2 * N_PICKED && s->groups == N_PICKED && s->ready == N_PICKED);
  harel_stats_free(s);
  /* one by one, then in batches of up to 4, until nothing is left */
  for (;; rounds++) {
    size_t got;
    harel_status status;
    if (rounds < 4) {
      harel_lease *l = NULL;
      status = harel_transport_claim(t, "w", VIS, 0, NULL, 0, &l, NULL);
      leases[0] = l;
      got = l != NULL ? 1 : 0;
    } else {
      got = 0;
      status = harel_transport_claim_many(t, "w", VIS, 0, NULL, 0, 4, 0.0, NULL, leases, &got,
                                          NULL);
    }
    if (status == HAREL_EMPTY) break;
    if (!EXPECT_STATUS(status, HAREL_OK) || rounds > 4 * N_PICKED) break;
    for (n = 0; n < got; n++) {
      const harel_lease *l = leases[n];
      for (i = 0; i < N_PICKED; i++) {
        if (strcmp(l->group_id, p.ids[i]) != 0) continue;
        k = strcmp(l->event, events[i][0]) == 0 ? 0 : 1;
        EXPECT(strcmp(l->event, events[i][k]) == 0);
        EXPECT(k == 0 || seen[i][0] == 1); /* the group's order: its first before its second */
        seen[i][k]++;
        break;
      }
      EXPECT(i < N_PICKED);
      claimed++;
    }
    if (rounds < 4) {
      EXPECT_CALL(harel_transport_ack(t, leases[0], &e), &e, HAREL_OK);
    } else {
      EXPECT_CALL(harel_transport_ack_many(t, (const harel_lease *const *)leases, got, outcomes, &e),
                  &e, HAREL_OK);
      for (n = 0; n < got; n++) EXPECT(outcomes[n] == HAREL_OK);
    }
    for (n = 0; n < got; n++) harel_lease_free(leases[n]);
  }
  EXPECT(claimed == 2 * N_PICKED);
  for (i = 0; i < N_PICKED; i++) EXPECT(seen[i][0] == 1 && seen[i][1] == 1);
  CLAIM_EMPTY(t);
  s = STATS(t);
  if (s != NULL) EXPECT(s->messages == 0 && s->groups == 0);
  harel_stats_free(s);
  harel_transport_close(t);
}

/* A sharded queue of the picked groups, one message each, and one dead letter ("d<k>" of
 * group k's second message) in every group of ids[0], ids[PER_SHARD], ... (one a shard)
 * and ids[1]: four dead letters on three shards. */
static harel_transport *sharded_with_dead_letters(shard_files *f, picked_groups *p, double *now) {
  harel_options *o = options_at(now);
  harel_transport *t;
  static const size_t doomed[] = {0, 1, PER_SHARD, 2 * PER_SHARD};
  size_t i, d;
  if (o == NULL) return NULL;
  new_shard_files(f);
  pick_groups(p);
  t = OPEN_SHARDS(f->dbs, N_SHARDS, o);
  harel_options_free(o);
  if (t == NULL) return NULL;
  for (d = 0; d < N_OF(doomed); d++) PUBLISH(t, p->ids[doomed[d]], "\"doomed\"");
  for (d = 0; d < N_OF(doomed); d++) {
    harel_lease *l = CLAIM(t, "w", "\"doomed\"");
    if (l != NULL) EXPECT_STATUS(harel_transport_dead_letter(t, l, "poison", NULL), HAREL_OK);
    harel_lease_free(l);
  }
  for (i = 0; i < N_PICKED; i++) PUBLISH(t, p->ids[i], "\"live\"");
  return t;
}

/* The groups' page and the dead letters' page give each item's shard, harel_shard_of's,
 * page after page; a queue that is not sharded gives 0 for each. */
static void groups_and_dead_letters_carry_their_shard(void) {
  double now = T0;
  shard_files f;
  picked_groups p;
  harel_transport *t = sharded_with_dead_letters(&f, &p, &now), *plain;
  harel_group_page *page = NULL, *prev;
  harel_dead_page *dead, *rest;
  harel_lease *l;
  size_t i, listed = 0, last_shard = 0;
  int pages = 0;
  harel_error *e = NULL;
  if (t == NULL) return;
  /* groups, two a page: every picked group once, each on its shard */
  EXPECT_CALL(harel_transport_groups(t, -1, NULL, 2, &page, &e), &e, HAREL_OK);
  while (page != NULL && pages++ < 2 * N_PICKED) {
    if (page->n_groups > 0 && !EXPECT(page->shards != NULL)) break;
    for (i = 0; i < page->n_groups; i++, listed++) {
      const harel_group_info *g = &page->groups[i];
      EXPECT(page->shards[i] == SHARD_OF(g->group_id, N_SHARDS));
    }
    if (page->next_cursor == NULL) break;
    prev = page;
    page = NULL;
    EXPECT_CALL(harel_transport_groups(t, -1, prev->next_cursor, 2, &page, &e), &e, HAREL_OK);
    harel_group_page_free(prev);
  }
  harel_group_page_free(page);
  EXPECT(listed == N_PICKED);
  /* a state filter: the one group leased, on its shard */
  l = NULL;
  EXPECT_STATUS(harel_transport_claim(t, "w", VIS, 0, NULL, 0, &l, NULL), HAREL_OK);
  page = NULL;
  EXPECT_CALL(harel_transport_groups(t, HAREL_GROUP_LEASED, NULL, 10, &page, &e), &e, HAREL_OK);
  if (l != NULL && page != NULL && EXPECT(page->n_groups == 1)) {
    EXPECT_STR(page->groups[0].group_id, l->group_id);
    EXPECT(page->shards[0] == SHARD_OF(l->group_id, N_SHARDS));
  }
  harel_group_page_free(page);
  ACK(t, l);
  /* dead letters, a page of 3 and the rest: four, each on its shard, shard after shard */
  listed = 0;
  dead = DEAD_PAGE(t, NULL, NULL, 3);
  if (dead != NULL && EXPECT(dead->n_letters == 3 && dead->shards != NULL) &&
      EXPECT(dead->next_cursor != NULL)) {
    for (i = 0; i < dead->n_letters; i++, listed++) {
      EXPECT(dead->shards[i] == SHARD_OF(dead->letters[i].group_id, N_SHARDS));
      EXPECT(dead->shards[i] >= last_shard);
      last_shard = dead->shards[i];
      EXPECT_STR(dead->letters[i].reason, "poison");
    }
    rest = DEAD_PAGE(t, NULL, dead->next_cursor, 3);
    if (rest != NULL && EXPECT(rest->n_letters == 1 && rest->shards != NULL)) {
      EXPECT(rest->shards[0] == SHARD_OF(rest->letters[0].group_id, N_SHARDS));
      EXPECT(rest->shards[0] >= last_shard && rest->next_cursor == NULL);
      listed++;
    }
    harel_dead_page_free(rest);
  }
  harel_dead_page_free(dead);
  EXPECT(listed == 4);
  /* one group's: on its shard (shard 1) */
  dead = DEAD_PAGE(t, p.ids[PER_SHARD], NULL, 10);
  if (dead != NULL && EXPECT(dead->n_letters == 1 && dead->shards != NULL)) {
    EXPECT(dead->shards[0] == 1);
    EXPECT_STR(dead->letters[0].group_id, p.ids[PER_SHARD]);
  }
  harel_dead_page_free(dead);
  harel_transport_close(t);

  /* not sharded: every item on shard 0 */
  plain = open_at(":memory:", &now);
  if (plain == NULL) return;
  PUBLISH(plain, "a", "1");
  PUBLISH(plain, "b", "2");
  BURY(plain, 1, "poison");
  page = NULL;
  EXPECT_CALL(harel_transport_groups(plain, -1, NULL, 10, &page, &e), &e, HAREL_OK);
  if (page != NULL && EXPECT(page->n_groups == 1 && page->shards != NULL))
    EXPECT(page->shards[0] == 0);
  harel_group_page_free(page);
  dead = DEAD_PAGE(plain, NULL, NULL, 10);
  if (dead != NULL && EXPECT(dead->n_letters == 1 && dead->shards != NULL))
    EXPECT(dead->shards[0] == 0);
  harel_dead_page_free(dead);
  harel_transport_close(plain);
}

/* redrive and purge_dead by seqs are refused on a sharded queue (a seq is one shard's),
 * nothing moved; by group and all, they work on every shard. */
static void redrive_and_purge_on_a_sharded_queue(void) {
  double now = T0;
  shard_files f;
  picked_groups p;
  harel_transport *t = sharded_with_dead_letters(&f, &p, &now);
  harel_dead_page *dead;
  harel_stats *s;
  int64_t seqs[1] = {1};
  uint64_t n;
  size_t i;
  harel_error *e = NULL;
  if (t == NULL) return;
  dead = DEAD_PAGE(t, NULL, NULL, 1);
  if (dead != NULL && EXPECT(dead->n_letters == 1)) seqs[0] = dead->letters[0].seq;
  harel_dead_page_free(dead);
  n = NOT_SET_COUNT;
  EXPECT_CALL(harel_transport_redrive(t, false, NULL, seqs, 1, &n, &e), &e, HAREL_ERR_ARGUMENT);
  EXPECT(n == NOT_SET_COUNT);
  EXPECT_STATUS(harel_transport_redrive(t, false, NULL, seqs, 1, &n, NULL), HAREL_ERR_ARGUMENT);
  EXPECT(strstr(or_null(harel_last_error()), "a seq names a dead letter of one shard") != NULL);
  EXPECT(n == NOT_SET_COUNT);
  EXPECT_CALL(harel_transport_purge_dead(t, false, NULL, seqs, 1, &n, &e), &e, HAREL_ERR_ARGUMENT);
  EXPECT_STATUS(harel_transport_purge_dead(t, false, NULL, seqs, 1, &n, NULL), HAREL_ERR_ARGUMENT);
  EXPECT(strstr(or_null(harel_last_error()), "a seq names a dead letter of one shard") != NULL);
  EXPECT(n == NOT_SET_COUNT);
  s = STATS(t);
  if (s != NULL) EXPECT(s->dead == 4 && s->messages == N_PICKED);
  harel_stats_free(s);
  /* by group (ids[1], on shard 0), then all (one on each shard) */
  n = NOT_SET_COUNT;
  EXPECT_CALL(harel_transport_redrive(t, false, p.ids[1], NULL, 0, &n, &e), &e, HAREL_OK);
  EXPECT(n == 1);
  n = NOT_SET_COUNT;
  EXPECT_CALL(harel_transport_redrive(t, true, NULL, NULL, 0, &n, &e), &e, HAREL_OK);
  EXPECT(n == 3);
  s = STATS(t);
  if (s != NULL) EXPECT(s->dead == 0 && s->messages == N_PICKED + 4);
  harel_stats_free(s);
  /* the redriven messages are served again: each once, after its group's "live" */
  {
    int doomed = 0, live = 0, other = 0;
    harel_lease *l = NULL;
    while (harel_transport_claim(t, "w", VIS, 0, NULL, 0, &l, NULL) == HAREL_OK && l != NULL) {
      if (strcmp(l->event, "\"doomed\"") == 0) doomed++;
      else if (strcmp(l->event, "\"live\"") == 0) live++;
      else other++;
      if (strcmp(l->event, "\"doomed\"") == 0 && doomed <= 2) {
        EXPECT_STATUS(harel_transport_dead_letter(t, l, "again", NULL), HAREL_OK);
      } else {
        EXPECT_STATUS(harel_transport_ack(t, l, NULL), HAREL_OK);
      }
      harel_lease_free(l);
      l = NULL;
    }
    EXPECT(doomed == 4 && live == N_PICKED && other == 0);
  }
  /* purge_dead by group and all */
  dead = DEAD_PAGE(t, NULL, NULL, 10);
  if (dead != NULL && EXPECT(dead->n_letters == 2)) {
    n = NOT_SET_COUNT;
    EXPECT_CALL(harel_transport_purge_dead(t, false, dead->letters[0].group_id, NULL, 0, &n, &e),
                &e, HAREL_OK);
    EXPECT(n == 1);
  }
  harel_dead_page_free(dead);
  n = NOT_SET_COUNT;
  EXPECT_CALL(harel_transport_purge_dead(t, true, NULL, NULL, 0, &n, &e), &e, HAREL_OK);
  EXPECT(n == 1);
  s = STATS(t);
  if (s != NULL) EXPECT(s->dead == 0 && s->messages == 0);
  harel_stats_free(s);
  for (i = 0; i < N_SHARDS; i++) EXPECT(access(f.dbs[i], F_OK) == 0);
  harel_transport_close(t);
}

/* A transaction on a sharded queue: begin hands one out, and its first call (any of them)
 * is refused with HAREL_ERR_ARGUMENT, nothing written; rollback and free work. */
static void a_transaction_on_a_sharded_queue_is_refused(void) {
  static const char says[] = "a transaction runs on one database";
  double now = T0;
  shard_files f;
  harel_options *o = options_at(&now);
  harel_transport *t;
  harel_tx *tx;
  harel_rows *rows = NOT_SET_ROWS;
  int64_t seq = NOT_SET_SEQ;
  size_t n = NOT_SET_COUNT;
  harel_stats *s;
  harel_error *e = NULL;
  if (o == NULL) return;
  new_shard_files(&f);
  t = OPEN_SHARDS(f.dbs, N_SHARDS, o);
  harel_options_free(o);
  if (t == NULL) return;
  tx = BEGIN(t);
  if (tx != NULL) {
    EXPECT_STATUS(harel_tx_execute(tx, "CREATE TABLE orders (id INTEGER)", NULL, 0, NULL),
                  HAREL_ERR_ARGUMENT);
    EXPECT(strstr(or_null(harel_last_error()), says) != NULL);
    EXPECT_CALL(harel_tx_execute(tx, "CREATE TABLE orders (id INTEGER)", NULL, 0, &e), &e,
                HAREL_ERR_ARGUMENT);
    EXPECT_STATUS(harel_tx_query(tx, "SELECT 1", NULL, 0, &rows, NULL), HAREL_ERR_ARGUMENT);
    EXPECT(strstr(or_null(harel_last_error()), says) != NULL);
    EXPECT(rows == NULL);
    EXPECT_STATUS(harel_tx_publish(tx, "order-42", "1", 0, NULL, NULL, 0.0, -1.0, NULL),
                  HAREL_ERR_ARGUMENT);
    EXPECT(strstr(or_null(harel_last_error()), says) != NULL);
    EXPECT_STATUS(harel_tx_commit(tx, &seq, NULL, 1, &n, NULL), HAREL_ERR_ARGUMENT);
    EXPECT(strstr(or_null(harel_last_error()), says) != NULL);
    EXPECT(seq == NOT_SET_SEQ && n == NOT_SET_COUNT);
    EXPECT_CALL(harel_tx_rollback(tx, &e), &e, HAREL_OK);
    harel_tx_free(tx);
  }
  /* a transaction freed unused, then the queue as it was */
  tx = BEGIN(t);
  harel_tx_free(tx);
  s = STATS(t);
  if (s != NULL) EXPECT(s->messages == 0);
  harel_stats_free(s);
  PUBLISH(t, "order-42", "\"after\"");
  ACK(t, CLAIM(t, "w", "\"after\""));
  harel_transport_close(t);
}

/* Each bad argument of open_shards, refused before anything is made: no file. */
static void bad_arguments_of_open_shards(void) {
  shard_files f;
  const char *many[SHARDS_MAX + 1];
  const char *list[N_SHARDS];
  char says[700];
  size_t i;
  harel_options *o = harel_options_new();
  new_shard_files(&f);
  OPEN_SHARDS_BAD("databases", "databases is NULL", NULL, N_SHARDS, o);
  OPEN_SHARDS_BAD("databases", "0 entries", NULL, 0, o);
  OPEN_SHARDS_BAD("databases", "0 entries", f.dbs, 0, o);
  for (i = 0; i < N_OF(many); i++) many[i] = f.dbs[0];
  OPEN_SHARDS_BAD("databases", "257 entries", many, SHARDS_MAX + 1, o);
  EXPECT_BAD("out", harel_transport_open_shards(f.dbs, N_SHARDS, o, NULL, ERR));
  EXPECT_BAD("out", harel_transport_open_shards(f.dbs, N_SHARDS, NULL, NULL, ERR));
  /* an element NULL, empty, not UTF-8, repeated */
  list[0] = f.dbs[0], list[1] = NULL, list[2] = f.dbs[2];
  OPEN_SHARDS_BAD("databases[1]", "is NULL", list, N_SHARDS, o);
  list[1] = f.dbs[1], list[2] = "";
  OPEN_SHARDS_BAD("databases[2]", "is empty", list, N_SHARDS, NULL);
  for (i = 0; i < N_BAD_UTF8; i++) {
    list[0] = BAD_UTF8[i], list[2] = f.dbs[2];
    OPEN_SHARDS_BAD("databases[0]", "UTF-8", list, N_SHARDS, o);
  }
  list[0] = f.dbs[0], list[1] = f.dbs[1], list[2] = f.dbs[0];
  snprintf(says, sizeof says, "databases[2] repeats databases[0] (%s)", f.dbs[0]);
  OPEN_SHARDS_BAD("databases[2]", says, list, N_SHARDS, o);
  for (i = 0; i < N_SHARDS; i++) EXPECT(access(f.dbs[i], F_OK) != 0);
  harel_options_free(o);
}

/* harel_options_set_sync_urls: its bad arguments; the open's count and mix checks; three
 * replicas of servers that can't be reached fail as HAREL_ERR_CONNECT naming databases[0],
 * so the URLs reached the shards. (tests/server_shards.rs opens replica shards on sqld.) */
static void replica_shards_take_one_primary_each(void) {
  shard_files f;
  char urls_text[N_SHARDS][64], says[700];
  const char *urls[N_SHARDS], *many[SHARDS_MAX + 1], *list[N_SHARDS];
  harel_options *o = harel_options_new();
  harel_error *e = NULL;
  size_t i;
  if (!EXPECT(o != NULL)) return;
  new_shard_files(&f);
  for (i = 0; i < N_SHARDS; i++) {
    snprintf(urls_text[i], sizeof urls_text[i], "http://127.0.0.1:%d/%zu", closed_port(), i);
    urls[i] = urls_text[i];
  }
  EXPECT_BAD("o", harel_options_set_sync_urls(NULL, urls, N_SHARDS, ERR));
  EXPECT_BAD("urls", harel_options_set_sync_urls(o, NULL, N_SHARDS, ERR));
  for (i = 0; i < N_OF(many); i++) many[i] = urls[0];
  EXPECT_BAD("urls", harel_options_set_sync_urls(o, many, SHARDS_MAX + 1, ERR));
  list[0] = urls[0], list[1] = NULL, list[2] = urls[2];
  EXPECT_BAD("urls[1]", harel_options_set_sync_urls(o, list, N_SHARDS, ERR));
  list[1] = "";
  EXPECT_BAD("urls[1]", harel_options_set_sync_urls(o, list, N_SHARDS, ERR));
  for (i = 0; i < N_BAD_UTF8; i++) {
    list[1] = BAD_UTF8[i];
    EXPECT_BAD("urls[1]", harel_options_set_sync_urls(o, list, N_SHARDS, ERR));
  }
  list[1] = urls[0];
  EXPECT_BAD("urls[1]", harel_options_set_sync_urls(o, list, N_SHARDS, ERR)); /* repeated */
  EXPECT_STATUS(harel_options_set_sync_urls(o, NULL, 0, NULL), HAREL_OK);       /* unsets */
  /* the open checks the URLs against the list */
  EXPECT_CALL(harel_options_set_sync_urls(o, urls, 2, &e), &e, HAREL_OK);
  OPEN_SHARDS_BAD(NULL, "sync_urls has 2 URLs and databases 3 paths", f.dbs, N_SHARDS, o);
  EXPECT_CALL(harel_options_set_sync_urls(o, urls, N_SHARDS, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_sync_url(o, urls[0], &e), &e, HAREL_OK);
  OPEN_SHARDS_BAD(NULL, "sync_url and sync_urls are both set", f.dbs, N_SHARDS, o);
  EXPECT_STATUS(harel_options_set_sync_urls(o, NULL, 0, NULL), HAREL_OK);
  OPEN_SHARDS_BAD(NULL, "sync_url names one primary", f.dbs, N_SHARDS, o);
  EXPECT_CALL(harel_options_set_sync_url(o, NULL, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_sync_urls(o, urls, N_SHARDS, &e), &e, HAREL_OK);
  snprintf(says, sizeof says, "databases[0] (%s)", f.dbs[0]);
  OPEN_SHARDS_FAILS(HAREL_ERR_CONNECT, NULL, says, f.dbs, N_SHARDS, o);
  harel_options_free(o);
}

/* A later open whose list does not match the set's records is refused, *out NULL, the
 * message naming the database ("databases[i] (its text)") and what is wrong: a database
 * missing, one extra, the order changed, another queue's database, a database that holds
 * messages and belongs to no set (in a set's list and in a new one). One member of the set
 * opened alone with harel_transport_open is refused. Then the right list opens the queue as
 * it was. */
static void open_shards_refuses_a_list_that_does_not_match(void) {
  double now = T0;
  shard_files set, other;
  harel_options *o = options_at(&now);
  harel_transport *t;
  harel_stats *s;
  char plain[300], fresh[300], extra[300], says[800];
  const char *list[N_SHARDS + 1];
  if (o == NULL) return;
  new_shard_files(&set);
  new_shard_files(&other);
  t = OPEN_SHARDS(set.dbs, N_SHARDS, o);
  if (t != NULL) PUBLISH(t, "order-42", "\"kept\"");
  harel_transport_close(t);
  t = OPEN_SHARDS(other.dbs, N_SHARDS, o);
  harel_transport_close(t);
  t = open_at(new_path(plain, sizeof plain), &now); /* a queue of its own, with a message */
  if (t != NULL) PUBLISH(t, "p", "\"plain\"");
  harel_transport_close(t);

  /* missing: the first two of three */
  snprintf(says, sizeof says, "databases[0] (%s) is shard 0 of 3", set.dbs[0]);
  OPEN_SHARDS_BAD("databases", says, set.dbs, 2, o);
  OPEN_SHARDS_BAD("databases", "1 database is missing", set.dbs, 2, o);
  /* extra: a fourth, new file */
  list[0] = set.dbs[0], list[1] = set.dbs[1], list[2] = set.dbs[2];
  list[3] = new_path(extra, sizeof extra);
  OPEN_SHARDS_BAD("databases", says, list, 4, o);
  OPEN_SHARDS_BAD("databases", "1 database is extra", list, 4, o);
  /* reordered */
  list[0] = set.dbs[1], list[1] = set.dbs[0];
  snprintf(says, sizeof says, "databases[0] (%s) is shard 1 of queue", set.dbs[1]);
  OPEN_SHARDS_BAD("databases", says, list, N_SHARDS, o);
  OPEN_SHARDS_BAD("databases", "the list is reordered", list, N_SHARDS, o);
  /* another queue's database in the middle */
  list[0] = set.dbs[0], list[1] = other.dbs[1];
  snprintf(says, sizeof says, "databases[1] (%s) belongs to another sharded queue", other.dbs[1]);
  OPEN_SHARDS_BAD("databases", says, list, N_SHARDS, o);
  /* a database that holds messages and has no record: in the set's list, and in a new one */
  list[1] = set.dbs[1], list[2] = plain;
  snprintf(says, sizeof says, "databases[2] (%s) holds messages and is not a shard of queue", plain);
  OPEN_SHARDS_BAD("databases", says, list, N_SHARDS, o);
  list[0] = new_path(fresh, sizeof fresh), list[1] = plain;
  snprintf(says, sizeof says, "databases[1] (%s) holds messages and belongs to no shard set", plain);
  OPEN_SHARDS_BAD("databases", says, list, 2, o);
  /* one member alone */
  {
    harel_transport *out = NOT_SET_HANDLE;
    harel_error *e = NULL;
    EXPECT_CALL_NAMING(harel_transport_open(set.dbs[1], o, &out, &e), &e, HAREL_ERR_ARGUMENT,
                       NULL);
    EXPECT(out == NULL);
    out = NOT_SET_HANDLE;
    EXPECT_STATUS(harel_transport_open(set.dbs[1], NULL, &out, NULL), HAREL_ERR_ARGUMENT);
    EXPECT(strstr(or_null(harel_last_error()), "shard 1 of 3") != NULL);
    EXPECT(out == NULL);
    out = NOT_SET_HANDLE;
    {
      const char *const alone[] = {set.dbs[0]};
      OPEN_SHARDS_BAD("databases", "shard 0 of 3", alone, 1, o);
    }
  }
  /* the right list: the queue as it was, its message there; the plain queue still its own */
  t = OPEN_SHARDS(set.dbs, N_SHARDS, o);
  if (t != NULL) {
    s = STATS(t);
    if (s != NULL) EXPECT(s->messages == 1);
    harel_stats_free(s);
    ACK(t, CLAIM(t, "w", "\"kept\""));
    harel_transport_close(t);
  }
  t = open_at(plain, &now);
  if (t != NULL) {
    EXPECT(SHARD_COUNT(t) == 1);
    ACK(t, CLAIM(t, "w", "\"plain\""));
    harel_transport_close(t);
  }
  harel_options_free(o);
}

static void bad_arguments_of_shard_count(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  size_t n = NOT_SET_COUNT;
  EXPECT_BAD("t", harel_transport_shard_count(NULL, &n, ERR));
  EXPECT(n == NOT_SET_COUNT);
  if (t != NULL) EXPECT_BAD("n", harel_transport_shard_count(t, NULL, ERR));
  harel_transport_close(t);
}

/* A *err already set: open_shards, shard_count and shard_of refuse it, doing nothing (no
 * file made, no handle, *n and *shard as they were). */
static void a_set_err_is_refused_by_the_shard_calls(void) {
  double now = T0;
  char was_text[512];
  shard_files f;
  harel_transport *t = open_at(":memory:", &now), *t2 = NOT_SET_HANDLE;
  harel_error *stale = NULL;
  const harel_error *was;
  size_t n = NOT_SET_COUNT, shard = NOT_SET_COUNT, i;
  if (t == NULL) return;
  EXPECT(harel_options_set_prefix(NULL, "p", &stale) == HAREL_ERR_ARGUMENT);
  if (!EXPECT(stale != NULL)) {
    harel_transport_close(t);
    return;
  }
  was = stale;
  snprintf(was_text, sizeof was_text, "%s", harel_error_message(stale));
  new_shard_files(&f);
  REFUSED(harel_transport_open_shards(f.dbs, N_SHARDS, NULL, &t2, &stale));
  EXPECT(t2 == NULL);
  for (i = 0; i < N_SHARDS; i++) EXPECT(access(f.dbs[i], F_OK) != 0);
  REFUSED(harel_transport_shard_count(t, &n, &stale));
  EXPECT(n == NOT_SET_COUNT);
  REFUSED(harel_shard_of("order-42", 3, &shard, &stale));
  EXPECT(shard == NOT_SET_COUNT);
  {
    harel_options *o = harel_options_new();
    const char *const urls[] = {"http://127.0.0.1:1"};
    if (EXPECT(o != NULL)) REFUSED(harel_options_set_sync_urls(o, urls, 1, &stale));
    harel_options_free(o);
  }
  harel_error_free(stale);
  harel_transport_close(t);
}

int main(int argc, char **argv) {
  const char *tmp = getenv("TMPDIR");
  if (argc == 5 && strcmp(argv[1], "--publish") == 0)
    return publish_as_the_child(argv[2], argv[3], argv[4]);
  self_path = argv[0];
  snprintf(temp_dir, sizeof temp_dir, "%s/harel-c-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (mkdtemp(temp_dir) == NULL) {
    perror("mkdtemp");
    return 2;
  }

  RUN(version);
  RUN(status_names);
  RUN(null_is_fine_for_accessors_and_frees);
  RUN(an_error_outlives_later_calls);
  RUN(smoke_publish_claim_ack_nack);
  RUN(ok_and_empty_leave_err_null);
  RUN(the_lease_lengths);
  RUN(a_caller_filled_lease_is_read_by_its_length);
  RUN(nul_bytes_written_by_another_process);
  RUN(invalid_utf8_written_by_another_process);
  RUN(status_empty);
  RUN(status_lease_lost);
  RUN(status_database);
  RUN(status_busy);
  RUN(status_connect);
  RUN(bad_arguments_of_the_setters);
  RUN(bad_arguments_of_schema_sql);
  RUN(schema_sql);
  RUN(bad_arguments_of_open);
  RUN(bad_arguments_of_publish);
  RUN(bad_arguments_of_publish_many);
  RUN(bad_arguments_of_claim);
  RUN(bad_arguments_of_ack);
  RUN(bad_arguments_of_nack);
  RUN(bad_arguments_of_ack_and_claim);
  RUN(a_clock_that_is_not_a_time);
  RUN(set_clock_passes_ctx_and_null_restores_the_system_clock);
  RUN(options_reach_open);
  RUN(a_set_err_is_refused_untouched_and_nothing_done);
  RUN(last_error_is_per_thread);
  RUN(errors_are_read_on_another_thread);
  RUN(attempts_and_max_attempts);
  RUN(stats_maps_every_field);
  RUN(groups_pages_and_the_state_filter);
  RUN(peek_maps_every_field);
  RUN(dead_letters_listed_redriven_and_purged);
  RUN(dead_letter_reads_a_caller_filled_lease);
  RUN(purge_group_and_purge_count);
  RUN(release_true_and_false);
  RUN(big_pages_are_whole_and_freed);
  RUN(bad_arguments_of_set_max_attempts);
  RUN(bad_arguments_of_dead_letter);
  RUN(bad_arguments_of_redrive_and_purge_dead);
  RUN(bad_arguments_of_purge_group_purge_and_release);
  RUN(bad_arguments_of_the_looks);
  RUN(a_set_err_is_refused_by_the_new_functions);
  RUN(claim_wait_maps_the_claim);
  RUN(claim_many_hands_out_what_claims_would);
  RUN(claim_many_empty_and_a_full_batch);
  RUN(ack_many_reports_each_outcome);
  RUN(ack_and_claim_many_acks_then_claims);
  RUN(extend_moves_the_end_of_the_lease);
  RUN(a_cancel_fired_before_the_call);
  RUN(bad_arguments_of_claim_wait);
  RUN(bad_arguments_of_claim_many);
  RUN(bad_arguments_of_ack_many);
  RUN(bad_arguments_of_ack_and_claim_many);
  RUN(bad_arguments_of_extend);
  RUN(a_set_err_is_refused_by_the_worker_loop_calls);
  RUN(threads_publish_through_one_handle);
  RUN(threads_drain_one_handle);
  RUN(a_cancel_fired_on_another_thread_ends_the_wait);
  RUN(interrupt_ends_every_wait_on_the_handle);
  RUN(a_commit_on_another_handle_wakes_a_waiter);
  RUN(a_commit_of_another_process_wakes_a_waiter);
  RUN(the_end_of_a_lease_or_a_park_wakes_a_waiter);
  RUN(one_message_for_eight_waiters);
  RUN(metrics_count_what_the_handle_did);
  RUN(bad_arguments_of_metrics);
  RUN(a_watch_rings_for_commits_in_this_process);
  RUN(a_watch_looks_with_its_filter);
  RUN(a_watch_rings_for_another_process);
  RUN(a_watch_rings_at_a_lease_or_a_park_end);
  RUN(one_watch_serves_several_threads);
  RUN(a_closed_transport_leaves_its_watches_readable);
  RUN(rearm_reads_without_the_write_lock_and_fails_as_a_read);
  RUN(a_watch_without_a_descriptor_left);
  RUN(bad_arguments_of_watch);
  RUN(publish_with_hands_out_seq_and_duplicate);
  RUN(publish_many_with_hands_out_each_outcome);
  RUN(bad_arguments_of_publish_with);
  RUN(bad_arguments_of_publish_many_with);
  RUN(a_refused_batch_takes_no_key);
  RUN(keys_are_forgotten_after_the_retention);
  RUN(a_delayed_message_is_claimed_after_its_time);
  RUN(later_messages_wait_behind_a_delayed_one);
  RUN(a_waiting_claim_wakes_at_the_due_time);
  RUN(a_keyed_publish_needs_the_keys_table);
  RUN(a_set_err_is_refused_by_the_producer_calls);
  RUN(a_transaction_commits_its_rows_and_messages_together);
  RUN(commit_hands_out_at_most_n_outcomes);
  RUN(rollback_and_free_keep_nothing);
  RUN(values_go_in_and_come_back);
  RUN(a_failing_statement_ends_the_transaction);
  RUN(bad_arguments_of_the_transaction_calls);
  RUN(a_due_instant_too_far_is_refused_at_the_publish);
  RUN(a_freed_transaction_is_refused_and_a_second_free_is_harmless);
  RUN(a_second_transaction_of_the_transport_is_busy);
  RUN(closing_the_transport_rolls_back_its_transactions);
  RUN(threads_commit_transactions_on_one_file);
  RUN(a_set_err_is_refused_by_the_transaction_calls);
  RUN(shard_of_names_the_shard);
  RUN(open_shards_makes_a_set_and_reopens_it);
  RUN(claims_and_acks_across_three_shards_exactly_once);
  RUN(groups_and_dead_letters_carry_their_shard);
  RUN(redrive_and_purge_on_a_sharded_queue);
  RUN(a_transaction_on_a_sharded_queue_is_refused);
  RUN(bad_arguments_of_open_shards);
  RUN(replica_shards_take_one_primary_each);
  RUN(open_shards_refuses_a_list_that_does_not_match);
  RUN(bad_arguments_of_shard_count);
  RUN(a_set_err_is_refused_by_the_shard_calls);

  remove_temp_dir();
  return SUMMARY();
}
