/*
 * test_transactions.c: publishing inside the application's transaction:
 * harel_transport_begin, harel_tx_execute, _query, _publish, _commit, _rollback, _free and
 * harel_rows_free. What a transaction does to the queue is the Rust contract's; here, each
 * call's mapping: the rows as C reads them (every value type, row-major, texts NUL-terminated
 * with their sizes), the commit's outputs, every status each call documents, every bad
 * argument (named; nothing queued, the transaction goes on), an ended transaction refusing
 * all but rollback and free, a stale handle, a second transaction of the transport and its
 * other calls busy, a closed transport, and threads committing on one file. A transaction on
 * a sharded queue is test_shards.c's.
 */
#include "harel_test.h"

#include <math.h>
#include <pthread.h>

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

/* Each call's bad arguments: a NULL handle or out; sql NULL, empty or not UTF-8; a
 * parameter of no type, a NULL or non-UTF-8 text, a NULL blob, a real not finite; a
 * publish's bad fields; then what was good, and only that, is committed. */
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

const test_case transactions_tests[] = {
    TEST(a_transaction_commits_its_rows_and_messages_together),
    TEST(commit_hands_out_at_most_n_outcomes),
    TEST(rollback_and_free_keep_nothing),
    TEST(values_go_in_and_come_back),
    TEST(a_failing_statement_ends_the_transaction),
    TEST(bad_arguments_of_the_transaction_calls),
    TEST(a_due_instant_too_far_is_refused_at_the_publish),
    TEST(a_freed_transaction_is_refused_and_a_second_free_is_harmless),
    TEST(a_second_transaction_of_the_transport_is_busy),
    TEST(closing_the_transport_rolls_back_its_transactions),
    TEST(threads_commit_transactions_on_one_file),
    TEST(a_set_err_is_refused_by_the_transaction_calls),
    {NULL, NULL}};
