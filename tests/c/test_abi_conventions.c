/*
 * test_abi_conventions.c: what the ABI's calls share, across the groups: accessors and
 * frees that take NULL; an error handed out, the thread's last error, and errors read on
 * another thread; success leaving both NULL; a `*err` already set refused with nothing done;
 * the statuses every call that touches the database returns (HAREL_ERR_DATABASE,
 * HAREL_ERR_BUSY) and a clock that is not a time; and the queue end to end, once.
 */
#include "harel_test.h"

#include <math.h>
#include <pthread.h>
#include <unistd.h>

/* Every accessor and every free function accepts NULL, and leaves no last error. */
static void null_is_fine_for_accessors_and_frees(void) {
  char *sql = NULL;
  /* none to begin with, whatever an earlier test left */
  EXPECT_STATUS(harel_schema_sql("harel", &sql, NULL), HAREL_OK);
  harel_string_free(sql);
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

/* Each thread has its own last error: a new thread starts with none, and its failure leaves
 * this thread's as it was. */
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

/* An error made here is read and freed on another thread, and one made there is read here;
 * neither touches the other thread's last error. */
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

/* The queue end to end, once: the success of publish, publish_many, claim (a routing key
 * and a priority floor), nack, ack and ack_and_claim; a lease stays the caller's after the
 * handle closes, and ends on a new handle. */
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

/* HAREL_ERR_DATABASE: open of a file that is not a database, in a missing directory, or
 * without tables (create_schema off); then every queue call on a handle whose tables
 * another process dropped. */
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

/* ack_many fails with `want`, naming `parameter` (NULL: any). */
#define ACK_MANY_FAILS(want, parameter, t, leases, n)                                        \
  do {                                                                                        \
    harel_status outcomes_[4];                                                                \
    EXPECT_FAILS((want), (parameter),                                                         \
                 harel_transport_ack_many((t), (leases), (n), outcomes_, ERR));               \
  } while (0)

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
    /* and dead_letter's, the admin calls' and the looks' */
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

static double not_a_clock(void *ctx) {
  (void)ctx;
  return NAN;
}

/* A `*err` already set, given to the setters, the schema's SQL, open and the queue's first
 * calls: each refused (REFUSED), and nothing done: no option taken, no string, handle or
 * file made, nothing written, leased, acked or nacked. */
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

/* A `*err` already set, given to set_max_attempts, dead_letter, the admin calls and the
 * looks: refused, *out NULL (never a page), the counts untouched, and nothing done. */
static void a_set_err_is_refused_by_the_admin_calls_and_the_looks(void) {
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

/* A `*err` already set, given to the worker loop's calls (claim_wait, claim_many, ack_many,
 * ack_and_claim_many, extend): refused, the error untouched, *out NULL, *n_out 0,
 * leases_out and outcomes not written, the lease not extended, a fired cancel not looked
 * at, and nothing claimed or acked. */
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

const test_case abi_conventions_tests[] = {
    TEST(null_is_fine_for_accessors_and_frees),
    TEST(an_error_outlives_later_calls),
    TEST(ok_and_empty_leave_err_null),
    TEST(last_error_is_per_thread),
    TEST(errors_are_read_on_another_thread),
    TEST(smoke_publish_claim_ack_nack),
    TEST(status_database),
    TEST(status_busy),
    TEST(a_clock_that_is_not_a_time),
    TEST(a_set_err_is_refused_untouched_and_nothing_done),
    TEST(a_set_err_is_refused_by_the_admin_calls_and_the_looks),
    TEST(a_set_err_is_refused_by_the_worker_loop_calls),
    {NULL, NULL}};
