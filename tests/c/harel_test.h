/*
 * harel_test.h: the harness of the C tests (one program, test_abi: harness.c and the
 * test_*.c files) and the helpers they share; harness.c defines what is declared here and
 * runs the tests. Every file includes this header first: it sets the POSIX level the
 * system headers read.
 *
 * A test is a function `static void name(void)`, listed with TEST(name) in its file's
 * table (open_tests, ...), which main() runs in order. EXPECT_* record a failure
 * (file:line, what was expected, the library's last error) and let the test go on. The run
 * ends with "c: N passed, N failed".
 *
 * Two ways to check a call, after the two ways the ABI reports an error:
 * - EXPECT_STATUS / EXPECT_ERROR / EXPECT_ARG: a call made with `err` NULL, checked
 *   through harel_last_error();
 * - EXPECT_CALL(call, &e, want): a call made with its own `harel_error *e` (NULL before),
 *   checked through it (and harel_last_error() agreeing), which it frees and sets NULL;
 * - EXPECT_FAILS(want, parameter, call): a failing call written with `ERR` as its `err`,
 *   made twice: with ERR NULL, then with ERR pointing to a NULL `harel_error *`.
 */
#ifndef HAREL_TEST_H
#define HAREL_TEST_H

#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harel_transport.h"

/* ---- the harness ------------------------------------------------------------------------ */

typedef struct {
  const char *name;
  void (*run)(void);
} test_case;
#define TEST(name) {#name, name}

/* Each file's tests, in the order they run, ended by {NULL, NULL}. */
extern const test_case open_tests[], abi_conventions_tests[], publish_tests[], claim_tests[],
    finish_tests[], looks_tests[], admin_tests[], shards_tests[], transactions_tests[],
    watch_tests[], metrics_tests[], trace_tests[], headers_tests[], unique_tests[], pause_tests[],
    expiry_tests[], archive_tests[], limits_tests[], retry_tests[];

/* Marks the running test failed, with where and why. */
void test_fail(const char *file, int line, const char *format, ...);

#define EXPECT(cond) expect_true((cond) ? 1 : 0, #cond, __FILE__, __LINE__)
int expect_true(int ok, const char *what, const char *file, int line);

const char *or_null(const char *s);

#define EXPECT_STR(got, want) expect_str((got), (want), #got, __FILE__, __LINE__)
int expect_str(const char *got, const char *want, const char *expr, const char *file, int line);

/* The call returns `want`; after an error harel_last_error() has a message, after
 * HAREL_OK or HAREL_EMPTY it is NULL. */
#define EXPECT_STATUS(call, want) expect_status((call), (want), #call, __FILE__, __LINE__)
int expect_status(harel_status got, harel_status want, const char *expr, const char *file,
                  int line);

/* `name` stands in `message` as a word of its own (not inside a longer identifier). */
int names_parameter(const char *message, const char *name);

/* The call is rejected with `want` and the message names `parameter`. */
#define EXPECT_ERROR(call, want, parameter)                                         \
  expect_error((call), (want), (parameter), #call, __FILE__, __LINE__)
int expect_error(harel_status got, harel_status want, const char *parameter, const char *expr,
                 const char *file, int line);

#define EXPECT_ARG(call, parameter) EXPECT_ERROR(call, HAREL_ERR_ARGUMENT, parameter)

/* A call made with `err` (pointing to a harel_error * that was NULL before the call)
 * returned `got`; it should be `want`, and the error object and harel_last_error() agree:
 * after HAREL_OK or HAREL_EMPTY *err stays NULL and harel_last_error() is NULL; after an
 * error *err is a new error of status `want` whose message is non-empty, names
 * `parameter` (NULL: any) and equals harel_last_error(). Frees *err and sets it NULL. */
#define EXPECT_CALL(call, err, want) \
  expect_call((call), (err), (want), NULL, #call, __FILE__, __LINE__)
#define EXPECT_CALL_NAMING(call, err, want, parameter) \
  expect_call((call), (err), (want), (parameter), #call, __FILE__, __LINE__)
int expect_call(harel_status got, harel_error **err, harel_status want, const char *parameter,
                const char *expr, const char *file, int line);

/* `call`, written with ERR as its `err` argument, fails with `want` and a message naming
 * `parameter` (NULL: any): once with ERR NULL (harel_last_error() has the message), once
 * with ERR pointing to a NULL harel_error * (the error handed out, see expect_call). */
#define EXPECT_FAILS(want, parameter, call)                                               \
  do {                                                                                    \
    harel_error *err_ = NULL, **ERR = NULL;                                               \
    harel_status got_ = (call);                                                           \
    expect_error(got_, (want), (parameter), #call " with err NULL", __FILE__, __LINE__);  \
    ERR = &err_;                                                                          \
    got_ = (call);                                                                        \
    expect_call(got_, &err_, (want), (parameter), #call, __FILE__, __LINE__);             \
  } while (0)
#define EXPECT_BAD(parameter, call) EXPECT_FAILS(HAREL_ERR_ARGUMENT, parameter, call)

/* A call given a `*err` already set (`stale`, whose message was `was_text`) is refused with
 * HAREL_ERR_ARGUMENT naming err, the error left as it was (pointer, status and message). */
#define REFUSED(call) expect_refused((call), &stale, was, was_text, #call, __FILE__, __LINE__)
void expect_refused(harel_status got, harel_error **err, const harel_error *was,
                    const char *was_text, const char *expr, const char *file, int line);

/* ---- what the tests share ----------------------------------------------------------- */

#define VIS 30.0  /* the visibility of every claim */
#define T0 1000.0 /* where the test clock starts */
#define N_OF(a) (sizeof a / sizeof a[0])
/* The longest delay, the farthest due time from now and the longest key retention: ten
 * years, in seconds. */
#define MAX_DELAY HAREL_MAX_DELAY

extern char temp_dir[256]; /* the run's own directory, removed at its end */

/* Strings that are not UTF-8; each string argument is tried with all of them. */
#define N_BAD_UTF8 4
extern const char *const BAD_UTF8[N_BAD_UTF8];
/* Visibilities and priority floors out of range, for every call that takes one. */
extern const double BAD_VISIBILITY[6];
extern const int32_t BAD_MIN_PRIORITY[4];

/* Where an out-pointer starts, so a test sees the call set it to NULL. */
extern harel_lease sentinel_lease;
extern char sentinel_string[1];
extern int sentinel_handle, sentinel_tx;
extern harel_stats sentinel_stats;
extern harel_group_page sentinel_groups;
extern harel_message_page sentinel_messages;
extern harel_dead_page sentinel_dead;
extern harel_rows sentinel_rows;
#define NOT_SET_LEASE (&sentinel_lease)
#define NOT_SET_STRING (sentinel_string)
#define NOT_SET_HANDLE ((harel_transport *)&sentinel_handle)
#define NOT_SET_STATS (&sentinel_stats)
#define NOT_SET_GROUPS (&sentinel_groups)
#define NOT_SET_MESSAGES (&sentinel_messages)
#define NOT_SET_DEAD (&sentinel_dead)
#define NOT_SET_TX ((harel_tx *)&sentinel_tx)
#define NOT_SET_ROWS (&sentinel_rows)
#define NOT_SET_COUNT 777u /* where a count out-parameter starts */
#define NOT_SET_SEQ ((int64_t)-777)
#define NOT_SET_DUP (-777)

/* The clock of every test transport: "now" is the double ctx points to. */
double test_clock(void *ctx);

/* A path for a new database file in the run's directory. */
const char *new_path(char *buf, size_t size);

/* Opens `database` with the clock reading *now. */
harel_transport *open_at(const char *database, double *now);

#define PUBLISH(t, group, event) \
  EXPECT_STATUS(harel_transport_publish((t), (group), (event), 0, NULL, NULL), HAREL_OK)

/* publish_with (priority 0, no routing key) that succeeds handing out a seq and
 * `want_duplicate`; the seq, or -1. */
#define PUBLISH_WITH(t, group, event, key, delay, not_before, want_duplicate)                 \
  publish_with_at((t), (group), (event), (key), (delay), (not_before), (want_duplicate),      \
                  __FILE__, __LINE__)
int64_t publish_with_at(harel_transport *t, const char *group, const char *event, const char *key,
                        double delay, double not_before, int want_duplicate, const char *file,
                        int line);

/* publish_delivery (priority 0, no routing key, no headers) that stores the message; its
 * seq, or -1. */
#define PUBLISH_DELIVERY(t, group, event, delivery) \
  publish_delivery_at((t), (group), (event), (delivery), __FILE__, __LINE__)
int64_t publish_delivery_at(harel_transport *t, const char *group, const char *event,
                            const harel_delivery *delivery, const char *file, int line);

/* The queue's seven group states as harel_stats counts them, which add up to its `groups`,
 * and every level's `ready` adds up to the queue's; harel_transport_groups filtered by each
 * state lists as many groups, each in that state. */
#define STATES(t, ready, leased, parked, delayed, paused, held, retrying)                   \
  do {                                                                                   \
    const uint64_t want_[7] = {(ready),  (leased), (parked),  (delayed),                 \
                               (paused), (held),   (retrying)};                          \
    states_at((t), want_, __FILE__, __LINE__);                                           \
  } while (0)
void states_at(harel_transport *t, const uint64_t want[7], const char *file, int line);

/* A delivery as a caller built against an older header holds it: `size` bytes in a block
 * exactly that long (valgrind and ASan see a read past it), its fields those of `from` that
 * fit. Freed with free(); NULL if out of memory. */
harel_delivery *short_delivery(const harel_delivery *from, size_t size);

/* Claims for `worker` and expects a lease of `event` (NULL: any); NULL if none. */
#define CLAIM(t, worker, event) claim_at((t), (worker), (event), __FILE__, __LINE__)
harel_lease *claim_at(harel_transport *t, const char *worker, const char *event,
                      const char *file, int line);

#define CLAIM_EMPTY(t)                                                                      \
  do {                                                                                      \
    harel_lease *none_ = NOT_SET_LEASE;                                                     \
    EXPECT_STATUS(harel_transport_claim((t), "w", VIS, 0, NULL, 0, &none_, NULL), HAREL_EMPTY); \
    EXPECT(none_ == NULL);                                                                  \
  } while (0)

/* Acks a lease (if the claim gave one) and frees it. */
#define ACK(t, lease)                                                                       \
  do {                                                                                      \
    harel_lease *l_ = (lease);                                                              \
    if (l_ != NULL) EXPECT_STATUS(harel_transport_ack((t), l_, NULL), HAREL_OK);            \
    harel_lease_free(l_);                                                                   \
  } while (0)

/* Claims and acks everything claimable now; how many, and whether `event` was among them. */
int drain_now(harel_transport *t, const char *event, int *seen);

/* The queue's counts (the caller frees them); NULL if the call failed. */
#define STATS(t) stats_at((t), __FILE__, __LINE__)
harel_stats *stats_at(harel_transport *t, const char *file, int line);

/* A page of dead letters (the caller frees it); NULL if the call failed. */
#define DEAD_PAGE(t, group, cursor, limit) dead_page_at((t), (group), (cursor), (limit), __FILE__, __LINE__)
harel_dead_page *dead_page_at(harel_transport *t, const char *group, const char *cursor,
                              size_t limit, const char *file, int line);

/* Claims for "w" and dead-letters what it got with `reason`, `n` times. */
#define BURY(t, n, reason) bury_at((t), (n), (reason), __FILE__, __LINE__)
void bury_at(harel_transport *t, int n, const char *reason, const char *file, int line);

/* A new transaction of `t`; NULL if begin failed. */
#define BEGIN(t) begin_at((t), __FILE__, __LINE__)
harel_tx *begin_at(harel_transport *t, const char *file, int line);

/* A key of `n` bytes in `buf` (at least n + 1 long). */
const char *key_of(char *buf, size_t n);

/* ---- calls that fail, each checked with err NULL and err given, its outputs after it ---- */

/* open is refused with `want` (naming `parameter`; NULL: any), *out NULL after it. */
#define OPEN_FAILS(want, parameter, database, options)                                \
  do {                                                                                \
    harel_transport *out_ = NOT_SET_HANDLE;                                           \
    EXPECT_FAILS((want), (parameter),                                                 \
                 (out_ = NOT_SET_HANDLE,                                              \
                  harel_transport_open((database), (options), &out_, ERR)));          \
    EXPECT(out_ == NULL);                                                             \
  } while (0)

/* publish_with and publish_many_with refused with `want`, naming `parameter` (NULL: any),
 * their outputs (*seq and *duplicate; seqs and duplicates) left as they were in both runs
 * of the call (err NULL, err given). */
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

#define OUTPUTS_MAX 8 /* the longest batch given to PUBLISH_MANY_WITH_FAILS */
extern int64_t seqs_out[OUTPUTS_MAX];
extern int dups_out[OUTPUTS_MAX];
void outputs_reset(void);
int outputs_untouched(void);
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

/* The worker loop's calls refused with `want`, naming `parameter` (NULL: any): claim_wait's
 * *out NULL after it; claim_many's and ack_and_claim_many's *n_out 0 and their leases_out
 * not written; extend's lease->lock_expiry as it was. The leases_out of a refused call is
 * `many_out`, as long as the largest max a call may be given. */
extern harel_lease *many_out[HAREL_MAX_CLAIM + 1];
void many_out_reset(void);
int many_out_untouched(void);
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

/* ---- the fixture of the bad-argument tests -------------------------------------------- */

/* A queue with g1's first message leased to "w1" (`held`) and its second waiting, and one
 * dead letter (d1's, reason "fixture"). A rejected call must leave it so: fixture_close
 * checks. */
typedef struct {
  harel_transport *t;
  double now;
  harel_lease *held;
  int64_t dead_seq;
} fixture;
int fixture_open(fixture *f);
#define FIXTURE_CLOSE(f) fixture_close((f), __FILE__, __LINE__)
void fixture_close(fixture *f, const char *file, int line);

/* A copy of `from` naming another group (its length set to match) or another worker. */
const harel_lease *with_group(harel_lease *built, const harel_lease *from, const char *group);
const harel_lease *with_worker(harel_lease *built, const harel_lease *from, const char *worker);

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

/* A bad element of a batch is named by its index ("leases[1].group_id_len"). */
const char *element(char *buf, size_t size, int i, const char *parameter);

/* ---- time, and other processes -------------------------------------------------------- */

/* Seconds on a clock that only goes forward, to time the calls that wait. */
double monotonic(void);
void pause_for(double seconds);

/* A port on the loopback nothing listens on: bound by the kernel's choice, then closed. */
int closed_port(void);

/* Runs `code` with Python's sqlite3 in a child process (never a second SQLite in this
 * one) to its end, with `arg`; its first line of output, in `line`. */
int python_run(const char *code, const char *arg, char *line, size_t size);

/* Drops the queue's tables, printing "dropped": for python_run, on a handle's file. */
extern const char DROP_TABLES[];

/* A child process that holds `database`'s write lock (BEGIN IMMEDIATE) until the file
 * `release` exists; NULL if it could not start or take the lock. */
FILE *hold_write_lock(const char *database, const char *release);
int release_write_lock(FILE *holder, const char *release);

/* A commit by another process: this program, run again as a child (`--publish`),
 * publishes; whether it did. */
int publish_from_a_child(const char *database, const char *group, const char *event);

#endif /* HAREL_TEST_H */
