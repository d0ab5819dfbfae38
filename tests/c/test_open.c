/*
 * test_open.c: opening a queue (a file, a server, a replica) with its options, and the calls
 * that need no queue: the version, the status names, the schema's SQL. A sharded queue's
 * open is test_shards.c's.
 */
#include "harel_test.h"

#include <math.h>
#include <unistd.h>

/* MAJOR.MINOR.PATCH, this build's (EXPECTED_VERSION, from Cargo.toml), a static string. */
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

/* Each status's name, HAREL_UNKNOWN for any other value, static strings; the values
 * docs/abi.md fixes. */
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

/* The schema's SQL and its upgrade's, for a prefix; the caller frees them. */
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

#define PREFIX_31 "ppppppppppppppppppppppppppppppp" /* one character too long */

/* A prefix that is not an identifier, too long, not UTF-8 or NULL, and a NULL out: refused,
 * *out NULL. */
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

/* Options reach open: the prefix, create_schema, NULL options; options are the caller's to
 * free right after open, or to reuse. */
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

static double fixed_clock_or_ctx(void *ctx) { return ctx ? *(const double *)ctx : 5000.0; }

/* The clock gets its ctx as given, NULL included; a NULL clock is the system clock again. */
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

/* Key retentions out of range: not positive, not finite, over ten years. */
static const double BAD_RETENTION[] = {0.0, -0.0, -1.0, NAN, INFINITY, -INFINITY,
                                       MAX_DELAY + 1.0};

/* Each setter's bad arguments (NULL o, a bad prefix, URL or token, numbers out of range,
 * strings not UTF-8); then the NULLs that mean something and the edges that are fine. */
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

/* set_max_attempts refuses a NULL o (any count is taken: test_claim.c). */
static void bad_arguments_of_set_max_attempts(void) {
  EXPECT_BAD("o", harel_options_set_max_attempts(NULL, 3, ERR));
}

/* open refuses a NULL, empty or non-UTF-8 database and a NULL out, before anything is made. */
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

const test_case open_tests[] = {
    TEST(version),
    TEST(status_names),
    TEST(schema_sql),
    TEST(bad_arguments_of_schema_sql),
    TEST(options_reach_open),
    TEST(set_clock_passes_ctx_and_null_restores_the_system_clock),
    TEST(bad_arguments_of_the_setters),
    TEST(bad_arguments_of_set_max_attempts),
    TEST(bad_arguments_of_open),
    TEST(status_connect),
    {NULL, NULL}};
