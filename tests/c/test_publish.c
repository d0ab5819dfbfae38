/*
 * test_publish.c: the producers' calls: publish, publish_many, publish_with and
 * publish_many_with (an idempotency key, a delay or a due instant per message; each
 * message's seq and whether it was a duplicate), the key retention, and the delayed state
 * in stats and listings. What they do to the queue is the Rust contract's; here, each
 * call's mapping: its outputs (each may be NULL), its statuses, every bad argument (named,
 * "messages[i]." in a batch; nothing written, keys included; the outputs untouched), and the
 * queue as C sees it on the test's clock. A transaction's publish is test_transactions.c's.
 */
#include "harel_test.h"

#include <float.h>
#include <math.h>
#include <pthread.h>

/* publish refuses a NULL t, group or event, an empty group or routing key, an event that is
 * not JSON, a priority out of range and strings not UTF-8; nothing written (the fixture
 * checks). */
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

/* publish_many refuses a NULL t or messages and a batch with one bad field, naming it;
 * nothing written. */
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

/* publish_with and publish_many_with refused with HAREL_ERR_ARGUMENT (see their _FAILS). */
#define PUBLISH_WITH_BAD(parameter, ...) PUBLISH_WITH_FAILS(HAREL_ERR_ARGUMENT, parameter, __VA_ARGS__)
#define PUBLISH_MANY_WITH_BAD(parameter, ...) \
  PUBLISH_MANY_WITH_FAILS(HAREL_ERR_ARGUMENT, parameter, __VA_ARGS__)

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

/* publish_many_with refuses a NULL t or messages, and a batch with one bad field (a
 * message's, a key, a delay, a due instant), naming it: nothing written, nothing handed
 * out. */
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

const test_case publish_tests[] = {
    TEST(bad_arguments_of_publish),
    TEST(bad_arguments_of_publish_many),
    TEST(threads_publish_through_one_handle),
    TEST(publish_with_hands_out_seq_and_duplicate),
    TEST(publish_many_with_hands_out_each_outcome),
    TEST(bad_arguments_of_publish_with),
    TEST(bad_arguments_of_publish_many_with),
    TEST(a_refused_batch_takes_no_key),
    TEST(keys_are_forgotten_after_the_retention),
    TEST(a_delayed_message_is_claimed_after_its_time),
    TEST(later_messages_wait_behind_a_delayed_one),
    TEST(a_waiting_claim_wakes_at_the_due_time),
    TEST(a_keyed_publish_needs_the_keys_table),
    TEST(a_set_err_is_refused_by_the_producer_calls),
    {NULL, NULL}};
