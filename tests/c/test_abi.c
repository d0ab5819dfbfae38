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
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <dirent.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harel_test.h"

#define VIS 30.0  /* the visibility of every claim */
#define T0 1000.0 /* where the test clock starts */

static char temp_dir[256];

static const char *const BAD_UTF8[] = {
    "\xff",         /* never valid */
    "ab\xc3",       /* a truncated two-byte sequence */
    "\xc0\xaf",     /* an overlong '/' */
    "\xed\xa0\x80", /* a UTF-16 surrogate */
};
#define N_BAD_UTF8 (sizeof BAD_UTF8 / sizeof BAD_UTF8[0])
#define PREFIX_31 "ppppppppppppppppppppppppppppppp" /* one character too long */

/* Where an out-pointer starts, so a test sees the call set it to NULL. */
static harel_lease sentinel_lease;
static char sentinel_string[1];
static int sentinel_handle;
#define NOT_SET_LEASE (&sentinel_lease)
#define NOT_SET_STRING (sentinel_string)
#define NOT_SET_HANDLE ((harel_transport *)&sentinel_handle)

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
 * (`held`) and its second waiting. A rejected call must leave it so: fixture_close checks.
 */
typedef struct {
  harel_transport *t;
  double now;
  harel_lease *held;
} fixture;

static int fixture_open(fixture *f) {
  f->now = T0;
  f->held = NULL;
  f->t = open_at(":memory:", &f->now);
  if (f->t == NULL) return 0;
  PUBLISH(f->t, "g1", "\"m1\"");
  PUBLISH(f->t, "g1", "\"m2\"");
  f->held = CLAIM(f->t, "w1", "\"m1\"");
  if (f->held == NULL) {
    harel_transport_close(f->t);
    return 0;
  }
  return 1;
}

#define FIXTURE_CLOSE(f) fixture_close((f), __FILE__, __LINE__)
static void fixture_close(fixture *f, const char *file, int line) {
  harel_lease *l = NULL;
  int ok;
  f->now = T0;
  ok = harel_transport_ack(f->t, f->held, NULL) == HAREL_OK; /* still w1's */
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
  EXPECT_STR(harel_status_name(HAREL_ERR_PANIC), "HAREL_ERR_PANIC");
  EXPECT_STR(harel_status_name(2), "HAREL_UNKNOWN");
  EXPECT_STR(harel_status_name(-6), "HAREL_UNKNOWN");
  EXPECT_STR(harel_status_name(-98), "HAREL_UNKNOWN");
  EXPECT_STR(harel_status_name(INT32_MIN), "HAREL_UNKNOWN");
  EXPECT_STR(harel_status_name(INT32_MAX), "HAREL_UNKNOWN");
  EXPECT(harel_status_name(HAREL_OK) == harel_status_name(HAREL_OK)); /* static */
  /* the values docs/abi.md fixes */
  EXPECT(HAREL_OK == 0 && HAREL_EMPTY == 1 && HAREL_ERR_ARGUMENT == -1 &&
         HAREL_ERR_DATABASE == -2 && HAREL_ERR_BUSY == -3 && HAREL_ERR_LEASE_LOST == -4 &&
         HAREL_ERR_CONNECT == -5 && HAREL_ERR_PANIC == -99);
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

/* An event another program stored as TEXT that is not UTF-8: the claim that meets it is
 * HAREL_ERR_DATABASE (an early ABI 1 build panicked, HAREL_ERR_PANIC, and kept its write
 * transaction open), rolled back: another process can write, and once the row is gone the
 * handle works on. */
static const char WRITE_INVALID_UTF8[] =
    "import sqlite3, sys\n"
    "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "c.execute(\"INSERT INTO harel_transport_groups (group_id, last_claimed_at, priority, \"\n"
    "          \"routing_key) VALUES ('bad', 0.0, 0, NULL)\")\n"
    "c.execute(\"INSERT INTO harel_transport_messages (group_id, event) \"\n"
    "          \"VALUES ('bad', CAST(? AS TEXT))\", (b'\\xff{}',))\n"
    "print('written', flush=True)\n";
static const char WRITE_THEN_DELETE_IT[] =
    "import sqlite3, sys\n"
    "c = sqlite3.connect(sys.argv[1], timeout=0, isolation_level=None)\n"
    "c.execute('BEGIN IMMEDIATE')\n"
    "c.execute(\"DELETE FROM harel_transport_messages WHERE group_id = 'bad'\")\n"
    "c.execute(\"DELETE FROM harel_transport_groups WHERE group_id = 'bad'\")\n"
    "c.execute('COMMIT')\n"
    "print('deleted', flush=True)\n";

static void invalid_utf8_written_by_another_process(void) {
  double now = T0;
  char path[300], line[64];
  harel_transport *t = open_at(new_path(path, sizeof path), &now);
  if (t == NULL) return;
  if (EXPECT(python_run(WRITE_INVALID_UTF8, path, line, sizeof line) &&
             strcmp(line, "written\n") == 0)) {
    CLAIM_FAILS(HAREL_ERR_DATABASE, NULL, t, "w", VIS, 0, NULL, 0);
    /* busy timeout 0 in the child: the write lock is free at once */
    EXPECT(python_run(WRITE_THEN_DELETE_IT, path, line, sizeof line) &&
           strcmp(line, "deleted\n") == 0);
  }
  PUBLISH(t, "g", "1");
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
  harel_lease *l = NOT_SET_LEASE, *held;
  harel_error *e = NULL;
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
  harel_transport_close(t);
}

static void status_lease_lost(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *l;
  if (t == NULL) return;
  PUBLISH(t, "g", "1");
  l = CLAIM(t, "w", "1");
  if (l != NULL) {
    EXPECT_STATUS(harel_transport_ack(t, l, NULL), HAREL_OK);
    EXPECT_FAILS(HAREL_ERR_LEASE_LOST, NULL, harel_transport_ack(t, l, ERR));
    EXPECT_FAILS(HAREL_ERR_LEASE_LOST, NULL, harel_transport_nack(t, l, 0.0, ERR));
    EXPECT_FAILS(HAREL_ERR_LEASE_LOST, NULL, harel_transport_nack(t, l, 5.0, ERR));
    ACK_AND_CLAIM_FAILS(HAREL_ERR_LEASE_LOST, NULL, t, l, "w", VIS, 0, NULL, 0);
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
    "print('dropped', flush=True)\n";

static void status_database(void) {
  double now = T0;
  char path[300], line[32];
  const harel_message batch[] = {{"g", "1", 0, NULL}};
  harel_options *o = harel_options_new();
  harel_transport *held_on;
  harel_lease *held;
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
    CLAIM_FAILS(HAREL_ERR_DATABASE, NULL, held_on, "w", VIS, 0, NULL, 0);
    EXPECT_FAILS(HAREL_ERR_DATABASE, NULL, harel_transport_ack(held_on, held, ERR));
    EXPECT_FAILS(HAREL_ERR_DATABASE, NULL, harel_transport_nack(held_on, held, 1.0, ERR));
    ACK_AND_CLAIM_FAILS(HAREL_ERR_DATABASE, NULL, held_on, held, "w", VIS, 0, NULL, 0);
  }
  harel_lease_free(held);
  harel_transport_close(held_on);
}

/* Another process holds the write lock, and the busy timeout is 0: every call that writes
 * is HAREL_ERR_BUSY, and changed nothing once the lock is free again. */
static void status_busy(void) {
  double now = T0;
  char path[300], fresh[300], release[300];
  const harel_message batch[] = {{"g", "\"lost\"", 0, NULL}};
  harel_options *o = harel_options_new();
  harel_transport *t = NULL;
  harel_lease *held = NULL;
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
    CLAIM_FAILS(HAREL_ERR_BUSY, NULL, t, "w2", VIS, 0, NULL, 0);
    EXPECT_FAILS(HAREL_ERR_BUSY, NULL, harel_transport_ack(t, held, ERR));
    EXPECT_FAILS(HAREL_ERR_BUSY, NULL, harel_transport_nack(t, held, 0.0, ERR));
    ACK_AND_CLAIM_FAILS(HAREL_ERR_BUSY, NULL, t, held, "w1", VIS, 0, NULL, 0);
  }
  if (holder != NULL) EXPECT(release_write_lock(holder, release));
  /* as it was: m1 still w1's, h1 waiting, nothing "lost" */
  ACK(t, CLAIM(t, "w2", "\"h1\""));
  CLAIM_EMPTY(t);
  ACK(t, held);
  CLAIM_EMPTY(t);
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
#define N_OF(a) (sizeof a / sizeof a[0])

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
  fixture fx;
  size_t i;
  if (!fixture_open(&fx)) return;
  for (i = 0; i < N_OF(bad); i++) {
    fx.now = bad[i];
    CLAIM_BAD("clock", fx.t, "w", VIS, 0, NULL, 0);
    EXPECT_BAD("clock", harel_transport_ack(fx.t, fx.held, ERR));
    EXPECT_BAD("clock", harel_transport_nack(fx.t, fx.held, 0.0, ERR));
    ACK_AND_CLAIM_BAD("clock", fx.t, fx.held, "w1", VIS, 0, NULL, 0);
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
  harel_transport_claim(NULL, "w", VIS, 0, NULL, 0, NULL, &h->error);
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
  RUN(threads_publish_through_one_handle);
  RUN(threads_drain_one_handle);

  remove_temp_dir();
  return SUMMARY();
}
