/*
 * test_shards.c: a queue sharded over several databases: harel_transport_open_shards,
 * harel_options_set_sync_urls, harel_transport_shard_count, harel_shard_of, the pages'
 * `shards`, and the calls a sharded queue answers its own way. What the sharded queue does
 * is the Rust contract's (tests/shards.rs); here, the mapping: each function's outputs and
 * every refusal its header names, with *out NULL after it.
 */
#include "harel_test.h"

#include <unistd.h>

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

/* shard_count refuses a NULL t or n, *n untouched. */
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

const test_case shards_tests[] = {
    TEST(shard_of_names_the_shard),
    TEST(open_shards_makes_a_set_and_reopens_it),
    TEST(claims_and_acks_across_three_shards_exactly_once),
    TEST(groups_and_dead_letters_carry_their_shard),
    TEST(redrive_and_purge_on_a_sharded_queue),
    TEST(a_transaction_on_a_sharded_queue_is_refused),
    TEST(bad_arguments_of_open_shards),
    TEST(replica_shards_take_one_primary_each),
    TEST(open_shards_refuses_a_list_that_does_not_match),
    TEST(bad_arguments_of_shard_count),
    TEST(a_set_err_is_refused_by_the_shard_calls),
    {NULL, NULL}};
