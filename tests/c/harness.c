/*
 * harness.c: the runner of test_abi, the C tests of the mapping of the C ABI (docs/abi.md,
 * include/harel_transport.h), and the helpers its files share (declared in harel_test.h).
 *
 * What the queue does is tested once, in Rust (tests/contract.rs); these tests check what
 * C adds on top: every exported function called; every status the C API returns produced;
 * each call's outputs, field by field, and who frees them; for every fallible function,
 * NULL in each pointer, invalid UTF-8 in each string and numbers out of range, each with
 * `err` NULL and with `err` given (the status, a message naming the parameter,
 * harel_last_error() equal to it), and a `*err` already set refused with nothing done; and,
 * run under valgrind and ASan + LSan (`make test-c`, `make test-reliability`), that nothing
 * leaks. One file a method group (docs/architecture.md, "Method groups"), run in this order:
 *
 *   test_open.c             open, its options and close; version, schema SQL, status names
 *   test_abi_conventions.c  what every group shares: NULL-safe frees, errors (per thread,
 *                           kept until freed, a set `*err` refused), the statuses every call
 *                           may return, the clock, and the queue end to end once
 *   test_publish.c          publish, publish_many, publish_with, publish_many_with
 *   test_claim.c            the claims, the lease they hand out, and what ends a wait
 *   test_finish.c           ack, ack_many, nack, dead_letter, extend
 *   test_looks.c            stats, groups, peek, dead_letters
 *   test_admin.c            redrive, purge_dead, purge_group, purge, release
 *   test_shards.c           open_shards, shard_count, shard_of, a sharded queue's calls
 *   test_transactions.c     the application's transaction: begin, harel_tx_*, harel_rows_free
 *   test_watch.c            the readiness descriptor: watch, its fd, rearm, free
 *   test_metrics.c          harel_transport_metrics
 *   test_trace.c            W3C Trace Context: traceparent_format, traceparent_parse,
 *                           tracestate_valid
 *   test_headers.c          a message's headers: the _headers publishes, and the headers
 *                           of every lease, peek and dead page, and after a redrive
 *   test_unique.c           a publish's delivery options and unique keys: publish_delivery,
 *                           publish_many_delivery, tx_publish_delivery, each outcome
 *   test_pause.c            pause and resume (admin), pauses and pause_list_free (looks), the
 *                           paused state and count
 *   test_expiry.c           a publish's expiry: harel_delivery's ttl and expires_at, the
 *                           reason "expired", harel_stats.expired
 *   test_archive.c          the archive of acked messages: set_archive (options), archive and
 *                           archive_page_free (looks)
 *   test_limits.c           limits per routing key: set_limit and remove_limit (admin),
 *                           limits and limit_list_free (looks)
 *   test_retry.c            retry policies: set_retry (options), harel_delivery's retry
 *                           fields, the message page's retry_delays
 */
#include "harel_test.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the runner ------------------------------------------------------------------------- */

static int test_passed, test_failed, test_case_failed;
static const char *test_name;

void test_fail(const char *file, int line, const char *format, ...) {
  va_list args;
  test_case_failed = 1;
  fprintf(stderr, "FAIL %s (%s:%d): ", test_name, file, line);
  va_start(args, format);
  vfprintf(stderr, format, args);
  va_end(args);
  fputc('\n', stderr);
}

static void run(const test_case *test) {
  test_name = test->name;
  test_case_failed = 0;
  test->run();
  if (test_case_failed) test_failed++; else test_passed++;
  printf("%s %s\n", test_case_failed ? "FAIL" : "ok  ", test->name);
  fflush(stdout);
}

int expect_true(int ok, const char *what, const char *file, int line) {
  if (!ok) test_fail(file, line, "%s", what);
  return ok;
}

const char *or_null(const char *s) { return s ? s : "(NULL)"; }

int expect_str(const char *got, const char *want, const char *expr, const char *file, int line) {
  if (got != NULL && want != NULL && strcmp(got, want) == 0) return 1;
  test_fail(file, line, "%s is \"%s\", want \"%s\"", expr, or_null(got), or_null(want));
  return 0;
}

int expect_status(harel_status got, harel_status want, const char *expr, const char *file,
                  int line) {
  const char *message = harel_last_error();
  if (got != want) {
    test_fail(file, line, "%s returned %s, want %s (last error: %s)", expr,
              harel_status_name(got), harel_status_name(want), or_null(message));
    return 0;
  }
  if (want < 0 && (message == NULL || message[0] == '\0')) {
    test_fail(file, line, "%s: no harel_last_error() message after %s", expr,
              harel_status_name(got));
    return 0;
  }
  if (want >= 0 && message != NULL) {
    test_fail(file, line, "%s: harel_last_error() is \"%s\" after %s, want NULL", expr, message,
              harel_status_name(got));
    return 0;
  }
  return 1;
}

int names_parameter(const char *message, const char *name) {
  size_t n = strlen(name);
  const char *at;
  for (at = strstr(message, name); at != NULL; at = strstr(at + 1, name)) {
    int ident_before = at > message && (at[-1] == '_' || (at[-1] >= 'a' && at[-1] <= 'z') ||
                                        (at[-1] >= 'A' && at[-1] <= 'Z') ||
                                        (at[-1] >= '0' && at[-1] <= '9'));
    char after = at[n];
    int ident_after = after == '_' || (after >= 'a' && after <= 'z') ||
                      (after >= 'A' && after <= 'Z') || (after >= '0' && after <= '9');
    if (!ident_before && !ident_after) return 1;
  }
  return 0;
}

int expect_error(harel_status got, harel_status want, const char *parameter, const char *expr,
                 const char *file, int line) {
  const char *message = harel_last_error();
  if (!expect_status(got, want, expr, file, line)) return 0;
  if (parameter != NULL && !names_parameter(message, parameter)) {
    test_fail(file, line, "%s: the message \"%s\" does not name %s", expr, message, parameter);
    return 0;
  }
  return 1;
}

int expect_call(harel_status got, harel_error **err, harel_status want, const char *parameter,
                const char *expr, const char *file, int line) {
  const char *last = harel_last_error(); /* read first: it lives until the next call */
  harel_error *e = *err;
  const char *message = e != NULL ? harel_error_message(e) : NULL;
  int ok = 1;
  *err = NULL;
  if (got != want) {
    test_fail(file, line, "%s returned %s, want %s (its error: %s)", expr, harel_status_name(got),
              harel_status_name(want), or_null(message));
    ok = 0;
  } else if (want >= 0) {
    if (e != NULL) test_fail(file, line, "%s: *err set after %s: %s", expr,
                             harel_status_name(got), or_null(message)), ok = 0;
    if (last != NULL) test_fail(file, line, "%s: harel_last_error() is \"%s\" after %s", expr,
                                last, harel_status_name(got)), ok = 0;
  } else if (e == NULL) {
    test_fail(file, line, "%s: %s but *err is NULL", expr, harel_status_name(got));
    ok = 0;
  } else {
    if (harel_error_status(e) != want)
      test_fail(file, line, "%s: harel_error_status is %s, want %s", expr,
                harel_status_name(harel_error_status(e)), harel_status_name(want)), ok = 0;
    if (message == NULL || message[0] == '\0')
      test_fail(file, line, "%s: no harel_error_message", expr), ok = 0;
    else if (parameter != NULL && !names_parameter(message, parameter))
      test_fail(file, line, "%s: the message \"%s\" does not name %s", expr, message, parameter),
          ok = 0;
    if (message != NULL && (last == NULL || strcmp(last, message) != 0))
      test_fail(file, line, "%s: harel_last_error() is \"%s\", the error's message \"%s\"", expr,
                or_null(last), message), ok = 0;
  }
  harel_error_free(e);
  return ok;
}

void expect_refused(harel_status got, harel_error **err, const harel_error *was,
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

/* ---- what the tests share ----------------------------------------------------------- */

char temp_dir[256];
static const char *self_path; /* argv[0]: run again as a child that publishes (--publish) */
extern char **environ;

const char *const BAD_UTF8[] = {
    "\xff",         /* never valid */
    "ab\xc3",       /* a truncated two-byte sequence */
    "\xc0\xaf",     /* an overlong '/' */
    "\xed\xa0\x80", /* a UTF-16 surrogate */
};
const double BAD_VISIBILITY[] = {0.0, -0.0, -1.0, NAN, INFINITY, -INFINITY};
const int32_t BAD_MIN_PRIORITY[] = {-1, 5, INT32_MIN, INT32_MAX};

harel_lease sentinel_lease;
char sentinel_string[1];
int sentinel_handle, sentinel_tx;
harel_stats sentinel_stats;
harel_group_page sentinel_groups;
harel_message_page sentinel_messages;
harel_dead_page sentinel_dead;
harel_rows sentinel_rows;

double test_clock(void *ctx) { return *(const double *)ctx; }

const char *new_path(char *buf, size_t size) {
  static int n;
  snprintf(buf, size, "%s/q%d.db", temp_dir, ++n);
  return buf;
}

harel_transport *open_at(const char *database, double *now) {
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

int64_t publish_with_at(harel_transport *t, const char *group, const char *event, const char *key,
                        double delay, double not_before, int want_duplicate, const char *file,
                        int line) {
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

harel_delivery *short_delivery(const harel_delivery *from, size_t size) {
  harel_delivery copy = *from;
  unsigned char *block = malloc(size);
  copy.size = size;
  if (block != NULL) memcpy(block, &copy, size);
  return (harel_delivery *)(void *)block;
}

int64_t publish_delivery_at(harel_transport *t, const char *group, const char *event,
                            const harel_delivery *delivery, const char *file, int line) {
  int64_t seq = NOT_SET_SEQ;
  int outcome = NOT_SET_DUP;
  harel_error *e = NULL;
  harel_status s = harel_transport_publish_delivery(t, group, event, 0, NULL, NULL, 0, delivery,
                                                    &seq, &outcome, &e);
  if (!expect_call(s, &e, HAREL_OK, NULL, "harel_transport_publish_delivery", file, line))
    return -1;
  if (seq <= 0 || outcome != HAREL_PUBLISHED_STORED) {
    test_fail(file, line, "publish_delivery handed out seq %lld, outcome %d; want a new seq",
              (long long)seq, outcome);
    return -1;
  }
  return seq;
}

void states_at(harel_transport *t, const uint64_t want[7], const char *file, int line) {
  static const char *names[7] = {"ready",  "leased", "parked",  "delayed",
                                 "paused", "held",   "retrying"};
  harel_stats *s = stats_at(t, file, line);
  uint64_t got[7], sum = 0, levels_ready = 0;
  size_t i;
  if (s == NULL) return;
  got[0] = s->ready, got[1] = s->leased, got[2] = s->parked, got[3] = s->delayed;
  got[4] = s->paused, got[5] = s->held, got[6] = s->retrying;
  for (i = 0; i < s->n_priorities; i++) levels_ready += s->by_priority[i].ready;
  for (i = 0; i < 7; i++) {
    sum += got[i];
    if (got[i] != want[i])
      test_fail(file, line, "stats' %s is %llu; want %llu", names[i], (unsigned long long)got[i],
                (unsigned long long)want[i]);
  }
  if (sum != s->groups || levels_ready != s->ready)
    test_fail(file, line, "the states add up to %llu of %llu groups; the levels' ready to %llu of "
              "%llu", (unsigned long long)sum, (unsigned long long)s->groups,
              (unsigned long long)levels_ready, (unsigned long long)s->ready);
  harel_stats_free(s);
  for (i = 0; i < 7; i++) {
    harel_group_page *page = NULL;
    harel_error *e = NULL;
    size_t j, in_state = 0;
    harel_status status = harel_transport_groups(t, (int32_t)i, NULL, HAREL_MAX_PAGE, &page, &e);
    if (!expect_call(status, &e, HAREL_OK, NULL, "harel_transport_groups", file, line)) continue;
    for (j = 0; j < page->n_groups; j++) in_state += page->groups[j].state == (harel_group_state)i;
    if (page->n_groups != got[i] || in_state != got[i])
      test_fail(file, line, "the %s filter lists %zu groups, %zu of them %s; stats counts %llu",
                names[i], page->n_groups, in_state, names[i], (unsigned long long)got[i]);
    harel_group_page_free(page);
  }
}

harel_lease *claim_at(harel_transport *t, const char *worker, const char *event,
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

int drain_now(harel_transport *t, const char *event, int *seen) {
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

harel_stats *stats_at(harel_transport *t, const char *file, int line) {
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

harel_dead_page *dead_page_at(harel_transport *t, const char *group, const char *cursor,
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

void bury_at(harel_transport *t, int n, const char *reason, const char *file, int line) {
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

harel_tx *begin_at(harel_transport *t, const char *file, int line) {
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

const char *key_of(char *buf, size_t n) {
  memset(buf, 'k', n);
  buf[n] = '\0';
  return buf;
}

int64_t seqs_out[OUTPUTS_MAX];
int dups_out[OUTPUTS_MAX];

void outputs_reset(void) {
  size_t i;
  for (i = 0; i < OUTPUTS_MAX; i++) seqs_out[i] = NOT_SET_SEQ, dups_out[i] = NOT_SET_DUP;
}

int outputs_untouched(void) {
  size_t i;
  for (i = 0; i < OUTPUTS_MAX; i++)
    if (seqs_out[i] != NOT_SET_SEQ || dups_out[i] != NOT_SET_DUP) return 0;
  return 1;
}

harel_lease *many_out[HAREL_MAX_CLAIM + 1];

void many_out_reset(void) {
  size_t i;
  for (i = 0; i < N_OF(many_out); i++) many_out[i] = NOT_SET_LEASE;
}

int many_out_untouched(void) {
  size_t i;
  for (i = 0; i < N_OF(many_out); i++)
    if (many_out[i] != NOT_SET_LEASE) return 0;
  return 1;
}

int fixture_open(fixture *f) {
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

void fixture_close(fixture *f, const char *file, int line) {
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

const harel_lease *with_group(harel_lease *built, const harel_lease *from, const char *group) {
  *built = *from;
  built->group_id = (char *)group;
  built->group_id_len = group != NULL ? strlen(group) : from->group_id_len;
  return built;
}

const harel_lease *with_worker(harel_lease *built, const harel_lease *from, const char *worker) {
  *built = *from;
  built->worker_id = (char *)worker;
  return built;
}

const char *element(char *buf, size_t size, int i, const char *parameter) {
  if (strcmp(parameter, "lease") == 0) snprintf(buf, size, "leases[%d]", i);
  else snprintf(buf, size, "leases[%d].%s", i, parameter);
  return buf;
}

double monotonic(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

void pause_for(double seconds) {
  struct timespec left;
  left.tv_sec = (time_t)seconds;
  left.tv_nsec = (long)((seconds - (double)left.tv_sec) * 1e9);
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
}

int closed_port(void) {
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

/* Runs `code` with Python's sqlite3 in a child process, with two arguments; its stdout is
 * the returned stream, for pclose. */
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

int python_run(const char *code, const char *arg, char *line, size_t size) {
  FILE *child = python_child("run", code, arg, NULL);
  int ok;
  line[0] = '\0';
  if (child == NULL) return 0;
  if (fgets(line, (int)size, child) == NULL) line[0] = '\0';
  ok = pclose(child) == 0;
  return ok;
}

const char DROP_TABLES[] =
    "import sqlite3, sys\n"
    "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "c.execute('DROP TABLE harel_transport_messages')\n"
    "c.execute('DROP TABLE harel_transport_groups')\n"
    "c.execute('DROP TABLE harel_transport_dead')\n"
    "print('dropped', flush=True)\n";

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

FILE *hold_write_lock(const char *database, const char *release) {
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

int release_write_lock(FILE *holder, const char *release) {
  FILE *f = fopen(release, "w");
  int ok = f != NULL;
  if (f != NULL) fclose(f);
  ok &= pclose(holder) == 0;
  unlink(release);
  return ok;
}

int publish_from_a_child(const char *database, const char *group, const char *event) {
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

/* ---- main ------------------------------------------------------------------------------- */

/* `test_abi --publish DATABASE GROUP EVENT`: the child of publish_from_a_child, one publish
 * from another process. */
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

int main(int argc, char **argv) {
  static const test_case *const files[] = {
      open_tests,  abi_conventions_tests, publish_tests, claim_tests,        finish_tests,
      looks_tests, admin_tests,           shards_tests,  transactions_tests, watch_tests,
      metrics_tests, trace_tests, headers_tests, unique_tests, pause_tests, expiry_tests,
      archive_tests, limits_tests, retry_tests};
  const char *tmp = getenv("TMPDIR");
  const test_case *test;
  size_t i;
  if (argc == 5 && strcmp(argv[1], "--publish") == 0)
    return publish_as_the_child(argv[2], argv[3], argv[4]);
  self_path = argv[0];
  snprintf(temp_dir, sizeof temp_dir, "%s/harel-c-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (mkdtemp(temp_dir) == NULL) {
    perror("mkdtemp");
    return 2;
  }
  for (i = 0; i < N_OF(files); i++)
    for (test = files[i]; test->name != NULL; test++) run(test);
  remove_temp_dir();
  printf("c: %d passed, %d failed\n", test_passed, test_failed);
  return test_failed ? 1 : 0;
}
