/*
 * test_admin.c: the operator's writes: redrive, purge_dead, purge_group, purge, release.
 * Each call's count (the out-parameter may be NULL) and what it did, and its bad arguments
 * (a selection that is not exactly one of all, group_id and seqs) refused with the fixture
 * unchanged.
 */
#include "harel_test.h"

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

/* redrive and purge_dead refuse a NULL t and every selection that is not exactly one, the
 * count untouched. */
static void bad_arguments_of_redrive_and_purge_dead(void) {
  fixture fx;
  if (!fixture_open(&fx)) return;
  EACH_BAD_SELECTION(REDRIVE_BAD, fx.t);
  EACH_BAD_SELECTION(PURGE_DEAD_BAD, fx.t);
  FIXTURE_CLOSE(&fx);
}

/* purge_group, purge and release refuse a NULL t and a group id that is NULL, empty or not
 * UTF-8: the count and `released` untouched. */
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

const test_case admin_tests[] = {
    TEST(dead_letters_listed_redriven_and_purged),
    TEST(purge_group_and_purge_count),
    TEST(release_true_and_false),
    TEST(bad_arguments_of_redrive_and_purge_dead),
    TEST(bad_arguments_of_purge_group_purge_and_release),
    {NULL, NULL}};
