/*
 * test_archive.c: the archive of acked messages through C (docs/queue.md, "The archive"):
 * harel_options_set_archive, harel_transport_archive and harel_archive_page_free. What the
 * archive keeps and when it prunes is the Rust contract's (tests/common/contract_archive.rs);
 * here, the mapping, on the test clock: every field of harel_archived reaching C (a message
 * published with headers, claimed, nacked, claimed again by a named worker and acked: its
 * seq, group and event by their lengths, its headers in order, attempts 2, the worker, when
 * it was published, claimed and acked, exactly; another writer's message with NUL bytes and
 * no times, -1 for each); the pages (next_cursor across pages, a group's history in order,
 * an exact fit, an empty listing); off by default, per transport; each refusal of the option
 * and of the look with its message (HAREL_ERR_ARGUMENT, *out NULL, a set `*err` refused),
 * harel_archive_page_free(NULL); a sharded queue listing shard after shard, each item's
 * `shard` set; and a file without the archive table opened with create_schema off.
 */
#include "harel_test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#define HOUR 3600.0
#define TRACEPARENT "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

/* Headers as a producer sends them: a name repeated (order kept), UTF-8 of two bytes. */
static const harel_header SENT[] = {
    {"traceparent", TRACEPARENT},
    {"note", "caf\xc3\xa9"},
    {"traceparent", "a repeated name keeps its place"},
};

static harel_archive_page sentinel_archive;
#define NOT_SET_ARCHIVE (&sentinel_archive)

/* ---- helpers ---------------------------------------------------------------------------- */

/* Opens `database` with the clock reading *now, the archive kept for `retention` seconds
 * (0: not set, the default) and create_schema `create`. */
static harel_transport *open_archiving(const char *database, double *now, double retention,
                                       bool create) {
  harel_options *o = harel_options_new();
  harel_transport *t = NULL;
  harel_error *e = NULL;
  if (!EXPECT(o != NULL)) return NULL;
  EXPECT_CALL(harel_options_set_clock(o, test_clock, now, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_synchronous_full(o, false, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_create_schema(o, create, &e), &e, HAREL_OK);
  if (retention != 0.0) EXPECT_CALL(harel_options_set_archive(o, retention, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_open(database, o, &t, &e), &e, HAREL_OK);
  harel_options_free(o);
  return t;
}

/* A page of the archive, which must be handed out (the caller frees it); NULL if the call
 * failed. */
#define ARCHIVE_PAGE(t, group, cursor, limit) \
  archive_page_at((t), (group), (cursor), (limit), __FILE__, __LINE__)
static harel_archive_page *archive_page_at(harel_transport *t, const char *group,
                                           const char *cursor, size_t limit, const char *file,
                                           int line) {
  harel_archive_page *page = NOT_SET_ARCHIVE;
  harel_error *e = NULL;
  if (!expect_call(harel_transport_archive(t, group, cursor, limit, &page, &e), &e, HAREL_OK,
                   NULL, "harel_transport_archive", file, line))
    return NULL;
  if (page == NULL || page == NOT_SET_ARCHIVE) {
    test_fail(file, line, "archive returned HAREL_OK with no page");
    return NULL;
  }
  if (page->n_messages > limit) {
    test_fail(file, line, "a page of %zu messages, over its limit %zu", page->n_messages, limit);
  }
  return page;
}

/* How many messages the archive lists (every group's, or `group`'s), one page of the most;
 * the page is the last. */
#define ARCHIVED(t, group) archived_at((t), (group), __FILE__, __LINE__)
static size_t archived_at(harel_transport *t, const char *group, const char *file, int line) {
  harel_archive_page *page = archive_page_at(t, group, NULL, HAREL_MAX_PAGE, file, line);
  size_t n = page != NULL ? page->n_messages : 0;
  if (page != NULL && page->next_cursor != NULL)
    test_fail(file, line, "one page of every archived message has a next_cursor");
  harel_archive_page_free(page);
  return n;
}

/* The look refused with `want`, naming `parameter` (NULL: any), with err NULL and with err
 * given; *out NULL after each. */
#define ARCHIVE_FAILS(want, parameter, t, group, cursor, limit)                            \
  do {                                                                                     \
    harel_archive_page *out_ = NOT_SET_ARCHIVE;                                            \
    EXPECT_FAILS((want), (parameter),                                                      \
                 (out_ = NOT_SET_ARCHIVE,                                                  \
                  harel_transport_archive((t), (group), (cursor), (limit), &out_, ERR)));  \
    EXPECT(out_ == NULL);                                                                  \
  } while (0)
#define ARCHIVE_BAD(parameter, ...) ARCHIVE_FAILS(HAREL_ERR_ARGUMENT, parameter, __VA_ARGS__)

/* The message of `status` (the call made with its own error) says `text`: equal to it
 * (SAYS), starting with it (SAYS_FIRST) or holding it (SAYS_WITHIN). Frees the error. */
#define SAYS(call, e, text) says_at((call), &(e), (text), 0, #call, __FILE__, __LINE__)
#define SAYS_FIRST(call, e, text) says_at((call), &(e), (text), 1, #call, __FILE__, __LINE__)
#define SAYS_WITHIN(call, e, text) says_at((call), &(e), (text), 2, #call, __FILE__, __LINE__)
static void says_at(harel_status status, harel_error **e, const char *text, int how,
                    const char *expr, const char *file, int line) {
  static const char *const wanted[] = {"", "...", " in it"};
  const char *got = *e != NULL ? harel_error_message(*e) : NULL;
  if (status != HAREL_ERR_ARGUMENT || got == NULL) {
    test_fail(file, line, "%s returned %s with message \"%s\", want HAREL_ERR_ARGUMENT", expr,
              harel_status_name(status), or_null(got));
  } else if (how == 0   ? strcmp(got, text) != 0
             : how == 1 ? strncmp(got, text, strlen(text)) != 0
                        : strstr(got, text) == NULL) {
    test_fail(file, line, "%s: the message is \"%s\", want \"%s\"%s", expr, got, text,
              wanted[how]);
  }
  harel_error_free(*e);
  *e = NULL;
}

/* `got` (n bytes, then a NUL) is the `want_len` bytes of `want`. */
static int same_bytes(const char *got, size_t n, const char *want, size_t want_len) {
  return got != NULL && n == want_len && memcmp(got, want, n) == 0 && got[n] == '\0';
}

/* The archived message is `seq` of `group` and `event` (NUL-terminated both), `attempts`
 * claims, acked by `worker`, published, claimed and acked at those instants, on `shard`. */
#define IS_ARCHIVED(a, seq, group, event, attempts, worker, published, claimed, acked, shard) \
  is_archived_at((a), (seq), (group), (event), (attempts), (worker), (published), (claimed),  \
                 (acked), (shard), __FILE__, __LINE__)
static int is_archived_at(const harel_archived *a, int64_t seq, const char *group,
                          const char *event, int64_t attempts, const char *worker,
                          double published, double claimed, double acked, size_t shard,
                          const char *file, int line) {
  if (a->seq != seq || !same_bytes(a->group_id, a->group_id_len, group, strlen(group)) ||
      !same_bytes(a->event, a->event_len, event, strlen(event)) || a->attempts != attempts ||
      a->worker_id == NULL || strcmp(a->worker_id, worker) != 0 || a->published_at != published ||
      a->claimed_at != claimed || a->acked_at != acked || a->shard != shard) {
    test_fail(file, line,
              "archived seq %lld, \"%s\" (%zu bytes), %s (%zu bytes), attempts %lld, by %s, "
              "published %f, claimed %f, acked %f, shard %zu; want seq %lld, \"%s\", %s, "
              "attempts %lld, by %s, published %f, claimed %f, acked %f, shard %zu",
              (long long)a->seq, or_null(a->group_id), a->group_id_len, or_null(a->event),
              a->event_len, (long long)a->attempts, or_null(a->worker_id), a->published_at,
              a->claimed_at, a->acked_at, a->shard, (long long)seq, group, event,
              (long long)attempts, worker, published, claimed, acked, shard);
    return 0;
  }
  return 1;
}

/* The archived message's headers are `want`, in order, byte for byte. */
static int headers_are(const harel_headers *got, const harel_header *want, size_t n) {
  size_t i;
  if (got->n != n || (n > 0 && got->items == NULL)) return 0;
  for (i = 0; i < n; i++)
    if (got->items[i].name == NULL || got->items[i].value == NULL ||
        strcmp(got->items[i].name, want[i].name) != 0 ||
        strcmp(got->items[i].value, want[i].value) != 0)
      return 0;
  return 1;
}

/* Claims for `worker` and acks, `n` times, the clock moving on by `step` before each ack. */
static void claim_and_ack(harel_transport *t, double *now, const char *worker, int n,
                          double step) {
  int i;
  for (i = 0; i < n; i++) {
    harel_lease *l = CLAIM(t, worker, NULL);
    if (l == NULL) return;
    *now += step;
    EXPECT_STATUS(harel_transport_ack(t, l, NULL), HAREL_OK);
    harel_lease_free(l);
  }
}

/* ---- the option ------------------------------------------------------------------------- */

/* harel_options_set_archive takes any finite retention > 0 up to ten years, and refuses the
 * rest with the library's words; a NULL o; a set `*err`, nothing set. */
static void set_archive_takes_a_retention_and_refuses_the_rest(void) {
  static const struct {
    double retention;
    const char *says;
  } bad[] = {
      {0.0, "archive_retention is 0; it must be a finite number of seconds > 0"},
      {-0.0, "archive_retention is -0; it must be a finite number of seconds > 0"},
      {-1.0, "archive_retention is -1; it must be a finite number of seconds > 0"},
      {-1e-9, "archive_retention is -0.000000001; it must be a finite number of seconds > 0"},
      {NAN, "archive_retention is NaN; it must be a finite number of seconds > 0"},
      {INFINITY, "archive_retention is inf; it must be a finite number of seconds > 0"},
      {-INFINITY, "archive_retention is -inf; it must be a finite number of seconds > 0"},
      {MAX_DELAY + 1.0, "archive_retention is 315360001; at most 315360000 (ten years)"},
      {400000000.0, "archive_retention is 400000000; at most 315360000 (ten years)"},
  };
  char was_text[512];
  harel_options *o = harel_options_new();
  harel_error *e = NULL, *stale = NULL;
  const harel_error *was;
  size_t i;
  if (!EXPECT(o != NULL)) return;
  EXPECT_CALL(harel_options_set_archive(o, HOUR, &e), &e, HAREL_OK);
  EXPECT_STATUS(harel_options_set_archive(o, MAX_DELAY, NULL), HAREL_OK); /* ten years */
  EXPECT_STATUS(harel_options_set_archive(o, 1e-3, NULL), HAREL_OK);
  EXPECT_STATUS(harel_options_set_archive(o, 86400.0, NULL), HAREL_OK); /* set again */
  EXPECT_BAD("o", harel_options_set_archive(NULL, HOUR, ERR));
  SAYS(harel_options_set_archive(NULL, HOUR, &e), e, "o is NULL");
  for (i = 0; i < N_OF(bad); i++) {
    EXPECT_BAD("archive_retention", harel_options_set_archive(o, bad[i].retention, ERR));
    SAYS(harel_options_set_archive(o, bad[i].retention, &e), e, bad[i].says);
  }
  /* a `*err` already set: refused, the error as it was */
  EXPECT(harel_options_set_archive(o, 0.0, &stale) == HAREL_ERR_ARGUMENT);
  if (EXPECT(stale != NULL)) {
    was = stale;
    snprintf(was_text, sizeof was_text, "%s", harel_error_message(stale));
    REFUSED(harel_options_set_archive(o, HOUR, &stale));
    REFUSED(harel_options_set_archive(NULL, HOUR, &stale));
  }
  harel_error_free(stale);
  harel_options_free(o);
}

/* A refused setting leaves the one before it: options set to keep the archive, then given a
 * bad retention, still keep it. */
static void a_refused_retention_leaves_the_one_set(void) {
  double now = T0;
  harel_options *o = harel_options_new();
  harel_transport *t = NULL;
  harel_error *e = NULL;
  if (!EXPECT(o != NULL)) return;
  EXPECT_CALL(harel_options_set_clock(o, test_clock, &now, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_archive(o, HOUR, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_archive(o, -1.0, &e), &e, HAREL_ERR_ARGUMENT);
  EXPECT_CALL(harel_options_set_archive(o, NAN, &e), &e, HAREL_ERR_ARGUMENT);
  EXPECT_CALL(harel_transport_open(":memory:", o, &t, &e), &e, HAREL_OK);
  harel_options_free(o);
  if (t == NULL) return;
  PUBLISH(t, "g", "1");
  claim_and_ack(t, &now, "w", 1, 0.0);
  EXPECT(ARCHIVED(t, NULL) == 1);
  harel_transport_close(t);
}

/* ---- the look: every field -------------------------------------------------------------- */

/* Published with headers at T0, claimed and nacked at T0 + 1, claimed by "worker-7" at
 * T0 + 2, acked at T0 + 4.5: one archived message with every field as it was, living until
 * the page is freed (the lease and the transport's next calls do not touch it). Nothing is
 * archived before the ack; a message without headers has none. */
static void every_field_reaches_c(void) {
  static const char group[] = "order-\xc3\xa9";
  static const char event[] = "{\"k\":\"caf\xc3\xa9\",\"n\":[1,2]}";
  double now = T0;
  harel_transport *t = open_archiving(":memory:", &now, HOUR, true);
  harel_archive_page *page;
  harel_lease *l;
  harel_error *e = NULL;
  int64_t seq = NOT_SET_SEQ, plain;
  int duplicate = NOT_SET_DUP;
  harel_stats *s;
  if (t == NULL) return;
  EXPECT_CALL(harel_transport_publish_with_headers(t, group, event, 0, NULL, SENT, N_OF(SENT),
                                                   NULL, 0.0, 0.0, &seq, &duplicate, &e),
              &e, HAREL_OK);
  EXPECT(seq > 0 && duplicate == 0);
  now = T0 + 1.0;
  l = CLAIM(t, "w1", event);
  if (l != NULL) EXPECT_STATUS(harel_transport_nack(t, l, 0.0, NULL), HAREL_OK);
  harel_lease_free(l);
  now = T0 + 2.0;
  l = CLAIM(t, "worker-7", event);
  if (l != NULL) EXPECT(l->attempts == 2);
  now = T0 + 4.5;
  page = ARCHIVE_PAGE(t, NULL, NULL, 10);
  if (page != NULL) EXPECT(page->n_messages == 0 && page->next_cursor == NULL);
  harel_archive_page_free(page);
  if (l != NULL) EXPECT_STATUS(harel_transport_ack(t, l, NULL), HAREL_OK);
  harel_lease_free(l);
  now = T0 + 10.0; /* the look reads the archive: acked_at is the ack's */
  page = ARCHIVE_PAGE(t, NULL, NULL, 10);
  if (page != NULL && EXPECT(page->n_messages == 1 && page->messages != NULL)) {
    const harel_archived *a = &page->messages[0];
    EXPECT(page->next_cursor == NULL);
    IS_ARCHIVED(a, seq, group, event, 2, "worker-7", T0, T0 + 2.0, T0 + 4.5, 0);
    EXPECT(a->group_id_len == sizeof group - 1 && a->event_len == sizeof event - 1);
    EXPECT(headers_are(&a->headers, SENT, N_OF(SENT)));
    if (a->headers.n == N_OF(SENT)) EXPECT(a->headers.items[0].name != SENT[0].name); /* copies */
  }
  /* the page lives on while the queue changes */
  plain = PUBLISH_WITH(t, "plain", "\"no headers\"", NULL, 0.0, 0.0, 0);
  claim_and_ack(t, &now, "w", 1, 1.0);
  if (page != NULL && page->n_messages == 1)
    IS_ARCHIVED(&page->messages[0], seq, group, event, 2, "worker-7", T0, T0 + 2.0, T0 + 4.5, 0);
  harel_archive_page_free(page);
  /* the second: no headers, claimed once, by "w" */
  page = ARCHIVE_PAGE(t, "plain", NULL, 10);
  if (page != NULL && EXPECT(page->n_messages == 1)) {
    IS_ARCHIVED(&page->messages[0], plain, "plain", "\"no headers\"", 1, "w", T0 + 10.0,
                T0 + 10.0, T0 + 11.0, 0);
    EXPECT(page->messages[0].headers.n == 0);
  }
  harel_archive_page_free(page);
  /* the group's own listing has the first; acked, it is gone from the queue */
  page = ARCHIVE_PAGE(t, group, NULL, 1);
  if (page != NULL && EXPECT(page->n_messages == 1 && page->next_cursor == NULL))
    EXPECT(page->messages[0].seq == seq && headers_are(&page->messages[0].headers, SENT,
                                                       N_OF(SENT)));
  harel_archive_page_free(page);
  s = STATS(t);
  if (s != NULL) EXPECT(s->messages == 0 && s->dead == 0);
  harel_stats_free(s);
  EXPECT(ARCHIVED(t, NULL) == 2);
  harel_transport_close(t);
}

/* A message another program wrote (no time stamped, NUL bytes in its group id and event),
 * whose claim's time is unknown too: acked, it is archived with every byte (read by the
 * lengths) and -1 for each unknown time. */
static const char WRITE_UNSTAMPED[] =
    "import sqlite3, sys\n"
    "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "c.execute('BEGIN IMMEDIATE')\n"
    "c.execute('INSERT INTO harel_transport_groups (group_id, last_claimed_at, priority, '\n"
    "          'routing_key) VALUES (?, 0.0, 0, NULL)', ('a\\0b',))\n"
    "c.execute('INSERT INTO harel_transport_messages (group_id, event) VALUES (?, ?)',\n"
    "          ('a\\0b', '{\"k\":\"x\"}\\0tail'))\n"
    "c.execute('COMMIT')\n"
    "print('written', flush=True)\n";
static const char FORGET_THE_CLAIMS_TIME[] =
    "import sqlite3, sys\n"
    "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "n = c.execute('UPDATE harel_transport_messages SET claimed_at = NULL').rowcount\n"
    "print('forgot', n, flush=True)\n";

static void unknown_times_read_as_minus_one(void) {
  static const char group[] = "a\0b";               /* 3 bytes and the NUL */
  static const char event[] = "{\"k\":\"x\"}\0tail"; /* 14 bytes and the NUL */
  double now = T0;
  char path[300], line[64];
  harel_transport *t = open_archiving(new_path(path, sizeof path), &now, HOUR, true);
  harel_archive_page *page;
  harel_lease *l;
  if (t == NULL) return;
  if (!EXPECT(python_run(WRITE_UNSTAMPED, path, line, sizeof line) &&
              strcmp(line, "written\n") == 0)) {
    harel_transport_close(t);
    return;
  }
  now = T0 + 1.0;
  l = CLAIM(t, "w", NULL);
  EXPECT(python_run(FORGET_THE_CLAIMS_TIME, path, line, sizeof line) &&
         strcmp(line, "forgot 1\n") == 0);
  now = T0 + 2.0;
  if (l != NULL) EXPECT_STATUS(harel_transport_ack(t, l, NULL), HAREL_OK);
  page = ARCHIVE_PAGE(t, NULL, NULL, 10);
  if (l != NULL && page != NULL && EXPECT(page->n_messages == 1)) {
    const harel_archived *a = &page->messages[0];
    EXPECT(a->seq == l->seq && a->attempts == 1);
    EXPECT(same_bytes(a->group_id, a->group_id_len, group, sizeof group - 1));
    EXPECT(same_bytes(a->event, a->event_len, event, sizeof event - 1));
    EXPECT_STR(a->worker_id, "w");
    EXPECT(a->published_at == -1.0 && a->claimed_at == -1.0 && a->acked_at == T0 + 2.0);
    EXPECT(a->headers.n == 0 && a->shard == 0);
  }
  harel_archive_page_free(page);
  harel_lease_free(l);
  harel_transport_close(t);
}

/* ---- the look: pages -------------------------------------------------------------------- */

#define N_GROUPS 3
#define PER_GROUP 5
static const char *const GROUP_IDS[N_GROUPS] = {"a", "b", "c"};

/* Five messages in each of three groups, published in turns; each acked (by "w", a quarter
 * second apart). Every group's listing goes page after page by next_cursor (each cursor
 * copied: the page before is freed after the call), each message once, in seq order, full
 * pages but the last; a group's history is its messages in order, events and acks in order;
 * a page that fits exactly, and the page of the most, end the listing; a group never
 * archived lists nothing. */
static void pages_follow_next_cursor(void) {
  double now = T0;
  harel_transport *t = open_archiving(":memory:", &now, HOUR, true);
  harel_archive_page *page, *prev;
  int64_t seqs[N_GROUPS][PER_GROUP], last;
  char event[32];
  size_t g, k, i, listed, pages;
  if (t == NULL) return;
  for (k = 0; k < PER_GROUP; k++)
    for (g = 0; g < N_GROUPS; g++) {
      snprintf(event, sizeof event, "\"%s%zu\"", GROUP_IDS[g], k);
      seqs[g][k] = PUBLISH_WITH(t, GROUP_IDS[g], event, NULL, 0.0, 0.0, 0);
    }
  claim_and_ack(t, &now, "w", N_GROUPS * PER_GROUP, 0.25);
  CLAIM_EMPTY(t);
  /* every group's, four a page: 4, 4, 4, 3 */
  listed = pages = 0;
  last = 0;
  page = ARCHIVE_PAGE(t, NULL, NULL, 4);
  while (page != NULL && pages++ < 10) {
    for (i = 0; i < page->n_messages; i++, listed++) {
      EXPECT(page->messages[i].seq > last);
      last = page->messages[i].seq;
    }
    if (page->next_cursor == NULL) {
      EXPECT(page->n_messages == 3);
      break;
    }
    EXPECT(page->n_messages == 4);
    prev = page;
    page = ARCHIVE_PAGE(t, NULL, prev->next_cursor, 4);
    harel_archive_page_free(prev);
  }
  harel_archive_page_free(page);
  EXPECT(listed == N_GROUPS * PER_GROUP && pages == 4);
  /* each group's history, two a page: 2, 2, 1, its messages in order */
  for (g = 0; g < N_GROUPS; g++) {
    double acked = 0.0;
    listed = pages = 0;
    page = ARCHIVE_PAGE(t, GROUP_IDS[g], NULL, 2);
    while (page != NULL && pages++ < 10) {
      for (i = 0; i < page->n_messages; i++, listed++) {
        const harel_archived *a = &page->messages[i];
        if (listed >= PER_GROUP) break;
        snprintf(event, sizeof event, "\"%s%zu\"", GROUP_IDS[g], listed);
        EXPECT(a->seq == seqs[g][listed] && a->acked_at > acked && a->attempts == 1);
        EXPECT(same_bytes(a->event, a->event_len, event, strlen(event)));
        EXPECT(same_bytes(a->group_id, a->group_id_len, GROUP_IDS[g], 1));
        acked = a->acked_at;
      }
      if (page->next_cursor == NULL) break;
      prev = page;
      page = ARCHIVE_PAGE(t, GROUP_IDS[g], prev->next_cursor, 2);
      harel_archive_page_free(prev);
    }
    harel_archive_page_free(page);
    EXPECT(listed == PER_GROUP && pages == 3);
  }
  /* an exact fit ends the listing, and so does the page of the most */
  page = ARCHIVE_PAGE(t, "b", NULL, PER_GROUP);
  if (page != NULL) EXPECT(page->n_messages == PER_GROUP && page->next_cursor == NULL);
  harel_archive_page_free(page);
  page = ARCHIVE_PAGE(t, NULL, NULL, HAREL_MAX_PAGE);
  if (page != NULL) {
    EXPECT(page->n_messages == N_GROUPS * PER_GROUP && page->next_cursor == NULL);
    EXPECT(page->messages[0].seq == seqs[0][0]);
  }
  harel_archive_page_free(page);
  /* a group with nothing archived: an empty page, the last */
  page = ARCHIVE_PAGE(t, "none", NULL, 10);
  if (page != NULL) EXPECT(page->n_messages == 0 && page->next_cursor == NULL);
  harel_archive_page_free(page);
  harel_transport_close(t);
}

/* ---- off by default ----------------------------------------------------------------------- */

/* Without the option an ack archives nothing; beside a transport that keeps it, on the same
 * file, only that one's acks are archived, and either reads them. */
static void off_by_default_and_per_transport(void) {
  double now = T0;
  char path[300], event[32] = "";
  harel_transport *off = open_archiving(new_path(path, sizeof path), &now, 0.0, true), *on;
  harel_archive_page *page;
  harel_lease *l;
  int64_t seq = -1;
  if (off == NULL) return;
  PUBLISH(off, "g1", "\"first\"");
  PUBLISH(off, "g2", "\"second\"");
  PUBLISH(off, "g3", "\"third\"");
  claim_and_ack(off, &now, "w", 1, 0.0);
  EXPECT(ARCHIVED(off, NULL) == 0 && ARCHIVED(off, "g1") == 0);
  on = open_archiving(path, &now, HOUR, true);
  if (on != NULL) {
    now = T0 + 1.0;
    l = CLAIM(on, "w-on", NULL);
    if (l != NULL) {
      seq = l->seq;
      snprintf(event, sizeof event, "%s", l->event);
      EXPECT_STATUS(harel_transport_ack(on, l, NULL), HAREL_OK);
    }
    harel_lease_free(l);
    claim_and_ack(off, &now, "w-off", 1, 0.0);
    CLAIM_EMPTY(off);
    page = ARCHIVE_PAGE(off, NULL, NULL, 10);
    if (page != NULL && EXPECT(page->n_messages == 1)) {
      const harel_archived *a = &page->messages[0];
      EXPECT(a->seq == seq && same_bytes(a->event, a->event_len, event, strlen(event)));
      EXPECT_STR(a->worker_id, "w-on");
      EXPECT(a->published_at == T0 && a->claimed_at == T0 + 1.0 && a->acked_at == T0 + 1.0);
    }
    harel_archive_page_free(page);
    EXPECT(ARCHIVED(on, NULL) == 1);
    harel_transport_close(on);
  }
  harel_transport_close(off);
}

/* ---- refusals ----------------------------------------------------------------------------- */

/* Cursors of the other listings, and of the archive, from a queue of their own. */
typedef struct {
  char groups[64], messages[64], dead[64], archive[64];
} other_cursors;
static int cursors_of_each_listing(other_cursors *c) {
  double now = T0;
  harel_transport *t = open_archiving(":memory:", &now, HOUR, true);
  harel_group_page *g = NULL;
  harel_message_page *m = NULL;
  harel_dead_page *d = NULL;
  harel_archive_page *a = NULL;
  int ok;
  if (t == NULL) return 0;
  PUBLISH(t, "a", "1");
  PUBLISH(t, "b", "2");
  PUBLISH(t, "c", "3");
  PUBLISH(t, "d", "4");
  BURY(t, 2, "x");
  claim_and_ack(t, &now, "w", 2, 0.0);
  PUBLISH(t, "p", "5");
  PUBLISH(t, "p", "6");
  PUBLISH(t, "q", "7");
  ok = harel_transport_groups(t, -1, NULL, 1, &g, NULL) == HAREL_OK && g->next_cursor != NULL &&
       harel_transport_peek(t, "p", NULL, 1, &m, NULL) == HAREL_OK && m->next_cursor != NULL &&
       harel_transport_dead_letters(t, NULL, NULL, 1, &d, NULL) == HAREL_OK &&
       d->next_cursor != NULL &&
       harel_transport_archive(t, NULL, NULL, 1, &a, NULL) == HAREL_OK && a->next_cursor != NULL;
  if (ok) {
    snprintf(c->groups, sizeof c->groups, "%s", g->next_cursor);
    snprintf(c->messages, sizeof c->messages, "%s", m->next_cursor);
    snprintf(c->dead, sizeof c->dead, "%s", d->next_cursor);
    snprintf(c->archive, sizeof c->archive, "%s", a->next_cursor);
  }
  harel_group_page_free(g);
  harel_message_page_free(m);
  harel_dead_page_free(d);
  harel_archive_page_free(a);
  harel_transport_close(t);
  return EXPECT(ok);
}

#define NOT_OURS "is not a cursor of this listing"

/* The look refuses a NULL t or out, a group id empty or not UTF-8, a limit 0 or over
 * 10000, a cursor of another listing (the dead letters' too), made up or not UTF-8: each
 * HAREL_ERR_ARGUMENT naming it, *out NULL; an archive cursor is refused by the other
 * listings; one from another queue is taken. The archive is as it was after them. */
static void bad_arguments_of_archive(void) {
  static const char *const made_up[] = {"", "x", "a", "a1", "a1.", "a1.0", "a1.00", "a1.zz",
                                        "a2.0000000000000001", "A1.0000000000000001",
                                        "d1.0000000000000001", "m1.0000000000000001",
                                        "a1.000000000000000001"};
  const size_t bad_limit[] = {0, HAREL_MAX_PAGE + 1, SIZE_MAX};
  double now = T0;
  harel_transport *t;
  harel_archive_page *page;
  harel_dead_page *dead = NOT_SET_DEAD;
  harel_error *e = NULL;
  other_cursors c;
  char text[200];
  size_t i;
  if (!cursors_of_each_listing(&c)) return;
  t = open_archiving(":memory:", &now, HOUR, true);
  if (t == NULL) return;
  PUBLISH(t, "g1", "\"m1\"");
  PUBLISH(t, "g1", "\"m2\"");
  claim_and_ack(t, &now, "w", 1, 1.0);
  /* t, out */
  ARCHIVE_BAD("t", NULL, NULL, NULL, 10);
  ARCHIVE_BAD("t", NULL, "g1", c.archive, 10);
  EXPECT_BAD("out", harel_transport_archive(t, NULL, NULL, 10, NULL, ERR));
  EXPECT_BAD("out", harel_transport_archive(NULL, NULL, NULL, 10, NULL, ERR));
  SAYS(harel_transport_archive(NULL, NULL, NULL, 10, &page, &e), e, "t is NULL");
  SAYS(harel_transport_archive(t, NULL, NULL, 10, NULL, &e), e, "out is NULL");
  /* group_id */
  ARCHIVE_BAD("group_id", t, "", NULL, 10);
  SAYS(harel_transport_archive(t, "", NULL, 10, &page, &e), e, "group_id is empty");
  for (i = 0; i < N_BAD_UTF8; i++) {
    ARCHIVE_BAD("group_id", t, BAD_UTF8[i], NULL, 10);
    SAYS_FIRST(harel_transport_archive(t, BAD_UTF8[i], NULL, 10, &page, &e), e,
               "group_id is not valid UTF-8");
  }
  /* limit */
  for (i = 0; i < N_OF(bad_limit); i++) {
    ARCHIVE_BAD("limit", t, NULL, NULL, bad_limit[i]);
    ARCHIVE_BAD("limit", t, "g1", NULL, bad_limit[i]);
    snprintf(text, sizeof text, "limit is %zu; it must be 1..10000", bad_limit[i]);
    SAYS(harel_transport_archive(t, NULL, NULL, bad_limit[i], &page, &e), e, text);
  }
  /* cursors of the other listings, the dead letters' among them */
  ARCHIVE_BAD("cursor", t, NULL, c.dead, 10);
  ARCHIVE_BAD("cursor", t, "g1", c.dead, 10);
  ARCHIVE_BAD("cursor", t, NULL, c.groups, 10);
  ARCHIVE_BAD("cursor", t, NULL, c.messages, 10);
  ARCHIVE_BAD("cursor", t, "g1", c.messages, 10);
  snprintf(text, sizeof text, "cursor \"%s\" " NOT_OURS, c.dead);
  SAYS_WITHIN(harel_transport_archive(t, NULL, c.dead, 10, &page, &e), e, text);
  /* made-up ones, and strings that are not UTF-8 */
  for (i = 0; i < N_OF(made_up); i++) {
    ARCHIVE_BAD("cursor", t, NULL, made_up[i], 10);
    ARCHIVE_BAD("cursor", t, "g1", made_up[i], 10);
    SAYS_WITHIN(harel_transport_archive(t, NULL, made_up[i], 10, &page, &e), e, NOT_OURS);
    SAYS_WITHIN(harel_transport_archive(t, "g1", made_up[i], 10, &page, &e), e, NOT_OURS);
  }
  for (i = 0; i < N_BAD_UTF8; i++) {
    ARCHIVE_BAD("cursor", t, NULL, BAD_UTF8[i], 10);
    ARCHIVE_BAD("cursor", t, "g1", BAD_UTF8[i], 10);
  }
  /* an archive cursor is no other listing's */
  DEAD_FAILS(HAREL_ERR_ARGUMENT, "cursor", t, NULL, c.archive, 10);
  PEEK_FAILS(HAREL_ERR_ARGUMENT, "cursor", t, "g1", c.archive, 10);
  GROUPS_FAILS(HAREL_ERR_ARGUMENT, "cursor", t, -1, c.archive, 10);
  /* one from another queue is taken: after its seq, this queue's first is listed or not */
  page = ARCHIVE_PAGE(t, NULL, c.archive, 10);
  harel_archive_page_free(page);
  EXPECT_STATUS(harel_transport_dead_letters(t, NULL, c.dead, 10, &dead, NULL), HAREL_OK);
  harel_dead_page_free(dead);
  /* a `*err` already set: refused, *out NULL, the error as it was */
  {
    char was_text[512];
    harel_error *stale = NULL;
    const harel_error *was;
    EXPECT(harel_transport_archive(t, "", NULL, 10, &page, &stale) == HAREL_ERR_ARGUMENT);
    if (EXPECT(stale != NULL)) {
      was = stale;
      snprintf(was_text, sizeof was_text, "%s", harel_error_message(stale));
      page = NOT_SET_ARCHIVE;
      REFUSED(harel_transport_archive(t, NULL, NULL, 10, &page, &stale));
      EXPECT(page == NULL);
    }
    harel_error_free(stale);
  }
  /* freeing NULL does nothing; the archive as it was: m1, by "w" */
  harel_archive_page_free(NULL);
  page = ARCHIVE_PAGE(t, NULL, NULL, 10);
  if (page != NULL && EXPECT(page->n_messages == 1))
    IS_ARCHIVED(&page->messages[0], page->messages[0].seq, "g1", "\"m1\"", 1, "w", T0, T0,
                T0 + 1.0, 0);
  harel_archive_page_free(page);
  ACK(t, CLAIM(t, "w", "\"m2\""));
  harel_transport_close(t);
}

/* ---- a sharded queue ---------------------------------------------------------------------- */

#define N_SHARDS 3
#define SHARD_GROUPS 2 /* groups on each shard */
#define SHARD_EACH 3   /* messages in each group */

/* Over three files, the archive kept, two groups on each shard with three messages each,
 * all acked: every group's listing goes shard after shard (four a page, a page running on
 * into the next shard), each item's `shard` harel_shard_of's, in seq order within a shard,
 * each message once; a group's history comes from its shard, in order, its shard set; a
 * cursor of a queue that is not sharded is refused, and the sharded one by such a queue. */
static void a_sharded_queue_lists_shard_after_shard(void) {
  char paths[N_SHARDS][300], ids[N_SHARDS * SHARD_GROUPS][16], id[16], event[128];
  const char *dbs[N_SHARDS];
  size_t on[N_SHARDS] = {0}, found = 0, s, i, k, listed = 0, pages = 0, per_shard[N_SHARDS] = {0};
  size_t last_shard = 0, shard;
  int64_t last_seq = 0;
  double now = T0;
  harel_options *o = harel_options_new();
  harel_transport *t = NULL, *plain;
  harel_archive_page *page, *prev;
  harel_error *e = NULL;
  int n;
  char sharded_cursor[64] = "";
  if (!EXPECT(o != NULL)) return;
  for (n = 0; found < N_OF(ids) && n < 1000; n++) { /* two group ids of each shard */
    snprintf(id, sizeof id, "g%d", n);
    if (!EXPECT(harel_shard_of(id, N_SHARDS, &shard, NULL) == HAREL_OK)) break;
    if (on[shard] == SHARD_GROUPS) continue;
    snprintf(ids[shard * SHARD_GROUPS + on[shard]++], sizeof ids[0], "%s", id);
    found++;
  }
  for (s = 0; s < N_SHARDS; s++) dbs[s] = new_path(paths[s], sizeof paths[s]);
  EXPECT_CALL(harel_options_set_clock(o, test_clock, &now, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_synchronous_full(o, false, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_archive(o, HOUR, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_open_shards(dbs, N_SHARDS, o, &t, &e), &e, HAREL_OK);
  harel_options_free(o);
  if (!EXPECT(found == N_OF(ids)) || t == NULL) {
    harel_transport_close(t);
    return;
  }
  for (k = 0; k < SHARD_EACH; k++)
    for (i = 0; i < N_OF(ids); i++) {
      snprintf(event, sizeof event, "\"%s-%zu\"", ids[i], k);
      PUBLISH(t, ids[i], event);
    }
  claim_and_ack(t, &now, "w", (int)(N_OF(ids) * SHARD_EACH), 0.5);
  CLAIM_EMPTY(t);
  /* every group's, four a page: 18 in 4, 4, 4, 4, 2 */
  page = ARCHIVE_PAGE(t, NULL, NULL, 4);
  while (page != NULL && pages++ < 20) {
    for (i = 0; i < page->n_messages; i++, listed++) {
      const harel_archived *a = &page->messages[i];
      EXPECT(harel_shard_of(a->group_id, N_SHARDS, &shard, NULL) == HAREL_OK && a->shard == shard);
      EXPECT(a->shard >= last_shard && a->shard < N_SHARDS);
      if (a->shard == last_shard) EXPECT(a->seq > last_seq);
      last_shard = a->shard;
      last_seq = a->seq;
      if (a->shard < N_SHARDS) per_shard[a->shard]++;
      EXPECT_STR(a->worker_id, "w");
    }
    if (page->next_cursor == NULL) {
      EXPECT(page->n_messages == 2);
      break;
    }
    EXPECT(page->n_messages == 4);
    if (sharded_cursor[0] == '\0')
      snprintf(sharded_cursor, sizeof sharded_cursor, "%s", page->next_cursor);
    prev = page;
    page = ARCHIVE_PAGE(t, NULL, prev->next_cursor, 4);
    harel_archive_page_free(prev);
  }
  harel_archive_page_free(page);
  EXPECT(listed == N_OF(ids) * SHARD_EACH && pages == 5);
  for (s = 0; s < N_SHARDS; s++) EXPECT(per_shard[s] == SHARD_GROUPS * SHARD_EACH);
  /* one page of all of them */
  EXPECT(ARCHIVED(t, NULL) == N_OF(ids) * SHARD_EACH);
  /* a group's history: from its shard, in order */
  for (i = 0; i < N_OF(ids); i++) {
    page = ARCHIVE_PAGE(t, ids[i], NULL, 10);
    if (page != NULL && EXPECT(page->n_messages == SHARD_EACH && page->next_cursor == NULL)) {
      for (k = 0; k < SHARD_EACH; k++) {
        snprintf(event, sizeof event, "\"%s-%zu\"", ids[i], k);
        EXPECT(page->messages[k].shard == i / SHARD_GROUPS);
        EXPECT(same_bytes(page->messages[k].event, page->messages[k].event_len, event,
                          strlen(event)));
        if (k > 0) EXPECT(page->messages[k].seq > page->messages[k - 1].seq);
      }
    }
    harel_archive_page_free(page);
  }
  /* the cursors of a queue sharded and of one not sharded are not each other's */
  plain = open_archiving(":memory:", &now, HOUR, true);
  if (plain != NULL && EXPECT(sharded_cursor[0] != '\0')) {
    PUBLISH(plain, "p", "1");
    PUBLISH(plain, "p", "2");
    claim_and_ack(plain, &now, "w", 2, 0.0);
    page = ARCHIVE_PAGE(plain, NULL, NULL, 1);
    if (page != NULL && EXPECT(page->next_cursor != NULL)) {
      ARCHIVE_BAD("cursor", t, NULL, page->next_cursor, 4);
      ARCHIVE_BAD("cursor", plain, NULL, sharded_cursor, 4);
    }
    harel_archive_page_free(page);
    page = ARCHIVE_PAGE(plain, NULL, NULL, 10);
    if (page != NULL && EXPECT(page->n_messages == 2))
      EXPECT(page->messages[0].shard == 0 && page->messages[1].shard == 0);
    harel_archive_page_free(page);
  }
  harel_transport_close(plain);
  harel_transport_close(t);
}

/* ---- a file without the archive table ----------------------------------------------------- */

static const char DROP_ARCHIVE[] =
    "import sqlite3, sys\n"
    "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "c.execute('DROP TABLE harel_transport_archive')\n"
    "print('dropped', flush=True)\n";

#define ARCHIVE_MISSING "the table harel_transport_archive"

/* A file without the archive table, opened with create_schema off: with the archive on, open
 * fails HAREL_ERR_DATABASE naming the table, *out NULL; off, it opens, the look is empty and
 * an ack deletes as it always did. */
static void a_file_without_the_table(void) {
  double now = T0;
  char path[300], line[32];
  harel_transport *t = open_archiving(new_path(path, sizeof path), &now, HOUR, true);
  harel_options *o;
  harel_error *e = NULL;
  harel_stats *s;
  if (t == NULL) return;
  PUBLISH(t, "g", "\"kept\"");
  PUBLISH(t, "g", "\"before\"");
  claim_and_ack(t, &now, "w", 1, 0.0);
  EXPECT(ARCHIVED(t, NULL) == 1);
  harel_transport_close(t);
  t = NULL;
  if (!EXPECT(python_run(DROP_ARCHIVE, path, line, sizeof line) &&
              strcmp(line, "dropped\n") == 0))
    return;
  if (!EXPECT((o = harel_options_new()) != NULL)) return;
  EXPECT_CALL(harel_options_set_clock(o, test_clock, &now, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_create_schema(o, false, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_archive(o, HOUR, &e), &e, HAREL_OK);
  OPEN_FAILS(HAREL_ERR_DATABASE, NULL, path, o);
  EXPECT(harel_transport_open(path, o, &t, &e) == HAREL_ERR_DATABASE && t == NULL);
  if (EXPECT(e != NULL) && strstr(or_null(harel_error_message(e)), ARCHIVE_MISSING) == NULL)
    test_fail(__FILE__, __LINE__, "the message \"%s\" does not say \"%s\"",
              harel_error_message(e), ARCHIVE_MISSING);
  harel_error_free(e);
  e = NULL;
  harel_options_free(o);
  t = open_archiving(path, &now, 0.0, false);
  if (t == NULL) return;
  EXPECT(ARCHIVED(t, NULL) == 0 && ARCHIVED(t, "g") == 0);
  ACK(t, CLAIM(t, "w", "\"before\""));
  EXPECT(ARCHIVED(t, NULL) == 0);
  s = STATS(t);
  if (s != NULL) EXPECT(s->messages == 0);
  harel_stats_free(s);
  harel_transport_close(t);
}

const test_case archive_tests[] = {
    TEST(set_archive_takes_a_retention_and_refuses_the_rest),
    TEST(a_refused_retention_leaves_the_one_set),
    TEST(every_field_reaches_c),
    TEST(unknown_times_read_as_minus_one),
    TEST(pages_follow_next_cursor),
    TEST(off_by_default_and_per_transport),
    TEST(bad_arguments_of_archive),
    TEST(a_sharded_queue_lists_shard_after_shard),
    TEST(a_file_without_the_table),
    {NULL, NULL}};
