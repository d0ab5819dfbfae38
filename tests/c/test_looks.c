/*
 * test_looks.c: the reads that change nothing: stats, groups, peek, dead_letters. Each
 * one's outputs, field by field; pages followed by their next_cursor; pages of many strings
 * freed; and the bad arguments (cursors of another listing or made up) refused with the
 * fixture unchanged. The delayed state is test_publish.c's, the paused one test_pause.c's;
 * a sharded queue's pages, test_shards.c's.
 */
#include "harel_test.h"

/* stats, field by field: an empty queue's, then a group in each state on two priorities and
 * a dead letter: the counts, the age and the next release, the levels. */
static void stats_maps_every_field(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_stats *s;
  harel_lease *leased, *parked, *poison;
  if (t == NULL) return;
  /* empty: zeros, -1 for the numbers that are absent, no levels */
  s = STATS(t);
  if (s != NULL) {
    EXPECT(s->now == T0);
    EXPECT(s->messages == 0 && s->groups == 0 && s->ready == 0 && s->leased == 0 &&
           s->parked == 0 && s->dead == 0);
    EXPECT(s->oldest_ready_age == -1.0 && s->next_release_at == -1.0);
    EXPECT(s->delayed == 0 && s->next_due_at == -1.0 && s->oldest_ready_seq == -1);
    EXPECT(s->n_priorities == 0);
  }
  harel_stats_free(s);
  /* a group in each state, on priorities 0 and 2; and a dead letter of priority 4 */
  PUBLISH(t, "leased", "0");
  now += 1;
  EXPECT_STATUS(harel_transport_publish(t, "parked", "1", 2, NULL, NULL), HAREL_OK);
  EXPECT_STATUS(harel_transport_publish(t, "parked", "2", 2, NULL, NULL), HAREL_OK);
  EXPECT_STATUS(harel_transport_publish(t, "ready", "3", 2, "k", NULL), HAREL_OK);
  EXPECT_STATUS(harel_transport_publish(t, "dead", "4", 4, NULL, NULL), HAREL_OK);
  leased = NULL;
  EXPECT_STATUS(harel_transport_claim(t, "w", 10.0, 0, NULL, 0, &leased, NULL), HAREL_OK);
  parked = NULL;
  EXPECT_STATUS(harel_transport_claim(t, "w", 10.0, 0, NULL, 0, &parked, NULL), HAREL_OK);
  if (parked != NULL) {
    EXPECT_STR(parked->group_id, "parked");
    EXPECT_STATUS(harel_transport_nack(t, parked, 5.0, NULL), HAREL_OK);
  }
  poison = NULL;
  EXPECT_STATUS(harel_transport_claim(t, "w", 10.0, 4, NULL, 0, &poison, NULL), HAREL_OK);
  if (poison != NULL) EXPECT_STATUS(harel_transport_dead_letter(t, poison, "x", NULL), HAREL_OK);
  now += 2;
  s = STATS(t);
  if (s != NULL) {
    EXPECT(s->now == T0 + 3);
    EXPECT(s->messages == 4 && s->groups == 3);
    EXPECT(s->ready == 1 && s->leased == 1 && s->parked == 1 && s->dead == 1);
    EXPECT(s->delayed == 0 && s->next_due_at == -1.0);
    EXPECT(s->oldest_ready_age == 2.0);          /* "ready" was published at T0 + 1 */
    EXPECT(s->next_release_at == T0 + 1 + 5.0); /* the park ends before the lease */
    if (EXPECT(s->n_priorities == 2) && EXPECT(s->by_priority != NULL)) {
      const harel_priority_stats *p0 = &s->by_priority[0], *p2 = &s->by_priority[1];
      EXPECT(p0->priority == 0 && p0->groups == 1 && p0->ready == 0 && p0->leased == 1 &&
             p0->parked == 0);
      EXPECT(p2->priority == 2 && p2->groups == 2 && p2->ready == 1 && p2->leased == 0 &&
             p2->parked == 1);
    }
  }
  harel_stats_free(s);
  harel_lease_free(leased);
  harel_lease_free(parked);
  harel_lease_free(poison);
  harel_transport_close(t);
}

/* Group ids in order, with lengths (a multi-byte id among them), every field, pages
 * followed by their next_cursor to the end, and the state filter. */
static void groups_pages_and_the_state_filter(void) {
  static const char *const order[] = {"a", "b", "c", "d", "e", "\xc3\xa9t\xc3\xa9"};
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_group_page *page = NULL, *prev;
  harel_lease *leased = NULL, *parked = NULL, *a = NULL;
  harel_error *e = NULL;
  size_t i, seen = 0;
  int pages = 0;
  if (t == NULL) return;
  for (i = 5; i-- > 0;) /* e, d, c, b, a: arrival order is not id order */
    EXPECT_STATUS(harel_transport_publish(t, order[i], "{}", 1, "key", NULL), HAREL_OK);
  PUBLISH(t, "a", "2");
  EXPECT_STATUS(harel_transport_publish(t, order[5], "{}", 3, NULL, NULL), HAREL_OK);
  leased = CLAIM(t, "w1", NULL); /* e, first to arrive */
  parked = CLAIM(t, "w2", NULL); /* d */
  if (leased == NULL || parked == NULL) {
    harel_lease_free(leased);
    harel_lease_free(parked);
    harel_transport_close(t);
    return;
  }
  EXPECT_STR(leased->group_id, "e");
  EXPECT_STR(parked->group_id, "d");
  EXPECT_STATUS(harel_transport_nack(t, parked, 60.0, NULL), HAREL_OK);
  now += 4;
  /* every group, two a page */
  EXPECT_CALL(harel_transport_groups(t, -1, NULL, 2, &page, &e), &e, HAREL_OK);
  while (page != NULL) {
    pages++;
    EXPECT(page->n_groups == 2 || (page->n_groups == 0 && seen == 6));
    for (i = 0; i < page->n_groups && seen < 6; i++, seen++) {
      const harel_group_info *g = &page->groups[i];
      if (!EXPECT(g->group_id_len == strlen(order[seen]) &&
                  memcmp(g->group_id, order[seen], g->group_id_len + 1) == 0))
        continue;
      EXPECT(g->head_seq > 0);
      EXPECT(g->head_age == 4.0);
      if (seen == 0) { /* a: ready, two messages, its first publish's priority and key */
        EXPECT(g->state == HAREL_GROUP_READY && g->depth == 2 && g->priority == 1);
        EXPECT(g->holder == NULL && g->lock_expiry == -1.0 && g->head_attempts == 0);
        EXPECT_STR(g->routing_key, "key");
      } else if (seen == 3) { /* d: parked, no holder, the park's end, claimed once */
        EXPECT(g->state == HAREL_GROUP_PARKED && g->depth == 1 && g->holder == NULL);
        EXPECT(g->lock_expiry == T0 + 60.0 && g->head_attempts == 1 && g->head_seq == parked->seq);
      } else if (seen == 4) { /* e: leased to w1 */
        EXPECT(g->state == HAREL_GROUP_LEASED && g->head_seq == leased->seq);
        EXPECT_STR(g->holder, "w1");
        EXPECT(g->lock_expiry == T0 + VIS && g->head_attempts == 1);
      } else if (seen == 5) { /* été: no routing key, priority 3 */
        EXPECT(g->state == HAREL_GROUP_READY && g->priority == 3 && g->routing_key == NULL);
      } else {
        EXPECT(g->state == HAREL_GROUP_READY && g->depth == 1 && g->head_attempts == 0);
      }
    }
    if (page->next_cursor == NULL || pages > 6) break;
    prev = page;
    page = NULL;
    /* the cursor is copied: the page it came from may be freed after the call */
    EXPECT_CALL(harel_transport_groups(t, -1, prev->next_cursor, 2, &page, &e), &e, HAREL_OK);
    harel_group_page_free(prev);
  }
  EXPECT(seen == 6 && pages == 3);
  harel_group_page_free(page);
  /* the state filter */
  page = NULL;
  EXPECT_CALL(harel_transport_groups(t, HAREL_GROUP_LEASED, NULL, 10, &page, &e), &e, HAREL_OK);
  if (EXPECT(page != NULL) && EXPECT(page->n_groups == 1)) {
    EXPECT_STR(page->groups[0].group_id, "e");
    EXPECT(page->next_cursor == NULL);
  }
  harel_group_page_free(page);
  page = NULL;
  EXPECT_CALL(harel_transport_groups(t, HAREL_GROUP_PARKED, NULL, 10, &page, &e), &e, HAREL_OK);
  if (EXPECT(page != NULL) && EXPECT(page->n_groups == 1)) EXPECT_STR(page->groups[0].group_id, "d");
  harel_group_page_free(page);
  page = NULL;
  EXPECT_CALL(harel_transport_groups(t, HAREL_GROUP_READY, NULL, 3, &page, &e), &e, HAREL_OK);
  if (EXPECT(page != NULL) && EXPECT(page->n_groups == 3) && EXPECT(page->next_cursor != NULL)) {
    EXPECT_STR(page->groups[2].group_id, "c");
    prev = page;
    page = NULL;
    EXPECT_CALL(harel_transport_groups(t, HAREL_GROUP_READY, prev->next_cursor, 3, &page, &e), &e,
                HAREL_OK);
    harel_group_page_free(prev);
    if (EXPECT(page != NULL) && EXPECT(page->n_groups == 1)) {
      EXPECT_STR(page->groups[0].group_id, order[5]);
      EXPECT(page->next_cursor == NULL);
    }
  }
  harel_group_page_free(page);
  /* the edges of limit are fine */
  page = NULL;
  EXPECT_CALL(harel_transport_groups(t, -1, NULL, 1, &page, &e), &e, HAREL_OK);
  if (EXPECT(page != NULL)) EXPECT(page->n_groups == 1 && page->next_cursor != NULL);
  harel_group_page_free(page);
  page = NULL;
  EXPECT_CALL(harel_transport_groups(t, -1, NULL, HAREL_MAX_PAGE, &page, &e), &e, HAREL_OK);
  if (EXPECT(page != NULL)) EXPECT(page->n_groups == 6 && page->next_cursor == NULL);
  harel_group_page_free(page);
  /* nothing was claimed: e still w1's, d parked, c (next to arrive) served */
  now = T0 + 5;
  a = CLAIM(t, "w", NULL);
  if (a != NULL) EXPECT_STR(a->group_id, "c");
  harel_lease_free(a);
  ACK(t, leased);
  harel_lease_free(parked);
  harel_transport_close(t);
}

/* A group's messages, oldest first, with their locks and times; a page and the next; an
 * unknown group's empty page. */
static void peek_maps_every_field(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_message_page *page = NULL, *rest = NULL;
  harel_lease *l;
  harel_error *e = NULL;
  if (t == NULL) return;
  PUBLISH(t, "g", "\"p0\"");
  now += 1;
  PUBLISH(t, "g", "{\"p\": 1}");
  now += 1;
  PUBLISH(t, "g", "\"p2\"");
  l = CLAIM(t, "w", "\"p0\"");
  if (l == NULL) {
    harel_transport_close(t);
    return;
  }
  EXPECT_CALL(harel_transport_peek(t, "g", NULL, 2, &page, &e), &e, HAREL_OK);
  if (EXPECT(page != NULL) && EXPECT(page->n_messages == 2)) {
    const harel_message_info *head = &page->messages[0], *second = &page->messages[1];
    EXPECT(head->seq == l->seq && head->event_len == 4 && strcmp(head->event, "\"p0\"") == 0);
    EXPECT(head->attempts == 1 && head->lock_expiry == T0 + 2 + VIS && head->published_at == T0);
    EXPECT_STR(head->locked_by, "w");
    EXPECT(second->seq > head->seq && second->event_len == 8);
    EXPECT_STR(second->event, "{\"p\": 1}");
    EXPECT(second->attempts == 0 && second->locked_by == NULL && second->lock_expiry == -1.0);
    EXPECT(second->published_at == T0 + 1);
    if (EXPECT(page->next_cursor != NULL)) {
      EXPECT_CALL(harel_transport_peek(t, "g", page->next_cursor, 2, &rest, &e), &e, HAREL_OK);
      if (EXPECT(rest != NULL) && EXPECT(rest->n_messages == 1)) {
        EXPECT_STR(rest->messages[0].event, "\"p2\"");
        EXPECT(rest->messages[0].published_at == T0 + 2 && rest->next_cursor == NULL);
      }
      harel_message_page_free(rest);
    }
  }
  harel_message_page_free(page);
  /* parked: locked by "__parked__" until the park's end */
  EXPECT_STATUS(harel_transport_nack(t, l, 60.0, NULL), HAREL_OK);
  page = NULL;
  EXPECT_CALL(harel_transport_peek(t, "g", NULL, 1, &page, &e), &e, HAREL_OK);
  if (EXPECT(page != NULL) && EXPECT(page->n_messages == 1)) {
    EXPECT_STR(page->messages[0].locked_by, "__parked__");
    EXPECT(page->messages[0].lock_expiry == T0 + 2 + 60.0);
  }
  harel_message_page_free(page);
  page = NOT_SET_MESSAGES;
  EXPECT_CALL(harel_transport_peek(t, "none", NULL, 10, &page, &e), &e, HAREL_OK);
  if (EXPECT(page != NULL && page != NOT_SET_MESSAGES))
    EXPECT(page->n_messages == 0 && page->next_cursor == NULL);
  harel_message_page_free(page);
  CLAIM_EMPTY(t); /* peek claimed nothing: g is still parked */
  harel_lease_free(l);
  harel_transport_close(t);
}

/* Pages of many items, each with strings, and the stats' levels: every string
 * NUL-terminated at its length, and (under valgrind and ASan) everything freed. */
static void big_pages_are_whole_and_freed(void) {
  enum { GROUPS = 120, PER_GROUP = 3, BIG = 2000 };
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  static char key[BIG + 1], worker[BIG + 1], reason[BIG + 1], event[BIG + 8];
  char group[BIG + 16];
  harel_message batch[GROUPS * PER_GROUP];
  char groups[GROUPS][BIG + 16];
  harel_group_page *gp = NULL;
  harel_message_page *mp = NULL;
  harel_dead_page *dp = NULL;
  harel_stats *s;
  harel_error *e = NULL;
  size_t i;
  int k;
  if (t == NULL) return;
  memset(key, 'k', BIG);
  memset(worker, 'w', BIG);
  memset(reason, 'r', BIG);
  event[0] = '"';
  memset(event + 1, 'e', BIG);
  event[BIG + 1] = '"';
  event[BIG + 2] = '\0';
  memset(group, 'g', BIG);
  for (i = 0; i < GROUPS; i++) snprintf(groups[i], sizeof groups[i], "%.*s-%03u", BIG, group, (unsigned)i);
  for (i = 0; i < GROUPS * PER_GROUP; i++) {
    batch[i].group_id = groups[i % GROUPS];
    batch[i].event_json = event;
    batch[i].priority = (int32_t)(i % GROUPS % 5);
    batch[i].routing_key = key;
  }
  EXPECT_STATUS(harel_transport_publish_many(t, batch, GROUPS * PER_GROUP, NULL), HAREL_OK);
  for (k = 0; k < GROUPS / 2; k++) { /* half the groups: a head dead, the next leased */
    harel_lease *l = NULL;
    EXPECT_STATUS(harel_transport_claim(t, worker, VIS, 0, NULL, 0, &l, NULL), HAREL_OK);
    if (l == NULL) break;
    EXPECT_STATUS(harel_transport_dead_letter(t, l, reason, NULL), HAREL_OK);
    harel_lease_free(l);
  }
  for (k = 0; k < GROUPS / 2; k++) {
    harel_lease *l = NULL;
    EXPECT_STATUS(harel_transport_claim(t, worker, VIS, 0, NULL, 0, &l, NULL), HAREL_OK);
    harel_lease_free(l);
  }
  EXPECT_CALL(harel_transport_groups(t, -1, NULL, HAREL_MAX_PAGE, &gp, &e), &e, HAREL_OK);
  if (EXPECT(gp != NULL) && EXPECT(gp->n_groups == GROUPS)) {
    size_t leased = 0;
    for (i = 0; i < gp->n_groups; i++) {
      const harel_group_info *g = &gp->groups[i];
      EXPECT(g->group_id_len == BIG + 4 && strlen(g->group_id) == g->group_id_len);
      EXPECT(g->routing_key != NULL && strlen(g->routing_key) == BIG);
      if (g->holder != NULL) EXPECT(strcmp(g->holder, worker) == 0), leased++;
    }
    EXPECT(leased == GROUPS / 2);
  }
  harel_group_page_free(gp);
  EXPECT_CALL(harel_transport_peek(t, groups[0], NULL, HAREL_MAX_PAGE, &mp, &e), &e, HAREL_OK);
  if (EXPECT(mp != NULL) && EXPECT(mp->n_messages == PER_GROUP - 1))
    for (i = 0; i < mp->n_messages; i++)
      EXPECT(mp->messages[i].event_len == BIG + 2 && strlen(mp->messages[i].event) == BIG + 2);
  harel_message_page_free(mp);
  EXPECT_CALL(harel_transport_dead_letters(t, NULL, NULL, HAREL_MAX_PAGE, &dp, &e), &e, HAREL_OK);
  if (EXPECT(dp != NULL) && EXPECT(dp->n_letters == GROUPS / 2))
    for (i = 0; i < dp->n_letters; i++) {
      const harel_dead_letter *d = &dp->letters[i];
      EXPECT(d->group_id_len == BIG + 4 && strlen(d->group_id) == d->group_id_len);
      EXPECT(d->event_len == BIG + 2 && strlen(d->event) == d->event_len);
      EXPECT(strcmp(d->reason, reason) == 0 && strcmp(d->last_worker, worker) == 0);
    }
  harel_dead_page_free(dp);
  s = STATS(t);
  if (s != NULL) {
    EXPECT(s->n_priorities == 5 && s->messages == GROUPS * PER_GROUP - GROUPS / 2);
    EXPECT(s->dead == GROUPS / 2 && s->leased == GROUPS / 2);
  }
  harel_stats_free(s);
  harel_transport_close(t);
}

/* Cursors of another queue are as good as this one's: a cursor says where a listing goes
 * on, not which queue. These are of each listing, from a queue of their own. */
typedef struct {
  char groups[64], messages[64], dead[64];
} cursors;
static int cursors_of_each_listing(cursors *c) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_group_page *g = NULL;
  harel_message_page *m = NULL;
  harel_dead_page *d = NULL;
  int ok;
  if (t == NULL) return 0;
  PUBLISH(t, "a", "1");
  PUBLISH(t, "a", "2");
  PUBLISH(t, "a", "3");
  PUBLISH(t, "b", "4");
  PUBLISH(t, "c", "5");
  BURY(t, 2, "x");
  ok = harel_transport_groups(t, -1, NULL, 1, &g, NULL) == HAREL_OK && g->next_cursor != NULL &&
       harel_transport_peek(t, "a", NULL, 1, &m, NULL) == HAREL_OK && m->next_cursor != NULL &&
       harel_transport_dead_letters(t, NULL, NULL, 1, &d, NULL) == HAREL_OK &&
       d->next_cursor != NULL;
  if (ok) {
    snprintf(c->groups, sizeof c->groups, "%s", g->next_cursor);
    snprintf(c->messages, sizeof c->messages, "%s", m->next_cursor);
    snprintf(c->dead, sizeof c->dead, "%s", d->next_cursor);
  }
  harel_group_page_free(g);
  harel_message_page_free(m);
  harel_dead_page_free(d);
  harel_transport_close(t);
  return EXPECT(ok);
}

/* Each look refuses a NULL t or out, a state or a limit out of range, a group id empty or
 * not UTF-8, and a cursor of another listing, made up or not UTF-8; a cursor of the right
 * listing from another queue is taken. */
static void bad_arguments_of_the_looks(void) {
  static const char *const made_up[] = {"", "x", "g", "g1", "g1.f", "g1.zz", "m1.00",
                                        "d1.0000", "m2.0000000000000001"};
  const int32_t bad_state[] = {HAREL_GROUP_RETRYING + 1, -2, INT32_MIN, INT32_MAX};
  const size_t bad_limit[] = {0, HAREL_MAX_PAGE + 1, SIZE_MAX};
  fixture fx;
  cursors c;
  size_t i;
  if (!cursors_of_each_listing(&c) || !fixture_open(&fx)) return;
  /* stats */
  STATS_FAILS(HAREL_ERR_ARGUMENT, "t", NULL);
  EXPECT_BAD("out", harel_transport_stats(fx.t, NULL, ERR));
  EXPECT_BAD("out", harel_transport_stats(NULL, NULL, ERR));
  /* groups */
  GROUPS_FAILS(HAREL_ERR_ARGUMENT, "t", NULL, -1, NULL, 10);
  EXPECT_BAD("out", harel_transport_groups(fx.t, -1, NULL, 10, NULL, ERR));
  for (i = 0; i < N_OF(bad_state); i++)
    GROUPS_FAILS(HAREL_ERR_ARGUMENT, "state", fx.t, bad_state[i], NULL, 10);
  for (i = 0; i < N_OF(bad_limit); i++)
    GROUPS_FAILS(HAREL_ERR_ARGUMENT, "limit", fx.t, -1, NULL, bad_limit[i]);
  GROUPS_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, -1, c.messages, 10);
  GROUPS_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, HAREL_GROUP_READY, c.dead, 10);
  /* peek */
  PEEK_FAILS(HAREL_ERR_ARGUMENT, "t", NULL, "g1", NULL, 10);
  PEEK_FAILS(HAREL_ERR_ARGUMENT, "group_id", fx.t, NULL, NULL, 10);
  PEEK_FAILS(HAREL_ERR_ARGUMENT, "group_id", fx.t, "", NULL, 10);
  EXPECT_BAD("out", harel_transport_peek(fx.t, "g1", NULL, 10, NULL, ERR));
  for (i = 0; i < N_OF(bad_limit); i++)
    PEEK_FAILS(HAREL_ERR_ARGUMENT, "limit", fx.t, "g1", NULL, bad_limit[i]);
  PEEK_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, "g1", c.groups, 10);
  PEEK_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, "g1", c.dead, 10);
  /* dead_letters (group_id NULL is all of them) */
  DEAD_FAILS(HAREL_ERR_ARGUMENT, "t", NULL, NULL, NULL, 10);
  DEAD_FAILS(HAREL_ERR_ARGUMENT, "group_id", fx.t, "", NULL, 10);
  EXPECT_BAD("out", harel_transport_dead_letters(fx.t, NULL, NULL, 10, NULL, ERR));
  for (i = 0; i < N_OF(bad_limit); i++)
    DEAD_FAILS(HAREL_ERR_ARGUMENT, "limit", fx.t, "d1", NULL, bad_limit[i]);
  DEAD_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, NULL, c.groups, 10);
  DEAD_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, NULL, c.messages, 10);
  /* "after the bytes ff" is a groups cursor (a stored group id need not be UTF-8), and
     no other listing's */
  PEEK_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, "g1", "g1.ff", 10);
  DEAD_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, NULL, "g1.ff", 10);
  /* made-up cursors, and strings that are not UTF-8 */
  for (i = 0; i < N_OF(made_up); i++) {
    GROUPS_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, -1, made_up[i], 10);
    PEEK_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, "g1", made_up[i], 10);
    DEAD_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, NULL, made_up[i], 10);
  }
  for (i = 0; i < N_BAD_UTF8; i++) {
    GROUPS_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, -1, BAD_UTF8[i], 10);
    PEEK_FAILS(HAREL_ERR_ARGUMENT, "group_id", fx.t, BAD_UTF8[i], NULL, 10);
    PEEK_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, "g1", BAD_UTF8[i], 10);
    DEAD_FAILS(HAREL_ERR_ARGUMENT, "group_id", fx.t, BAD_UTF8[i], NULL, 10);
    DEAD_FAILS(HAREL_ERR_ARGUMENT, "cursor", fx.t, NULL, BAD_UTF8[i], 10);
  }
  /* a cursor of the right listing, from the other queue, is taken */
  {
    harel_group_page *g = NULL;
    harel_message_page *m = NULL;
    harel_dead_page *d = NULL;
    EXPECT_STATUS(harel_transport_groups(fx.t, -1, c.groups, 10, &g, NULL), HAREL_OK);
    EXPECT_STATUS(harel_transport_peek(fx.t, "g1", c.messages, 10, &m, NULL), HAREL_OK);
    EXPECT_STATUS(harel_transport_dead_letters(fx.t, NULL, c.dead, 10, &d, NULL), HAREL_OK);
    harel_group_page_free(g);
    harel_message_page_free(m);
    harel_dead_page_free(d);
  }
  FIXTURE_CLOSE(&fx);
}

const test_case looks_tests[] = {
    TEST(stats_maps_every_field),
    TEST(groups_pages_and_the_state_filter),
    TEST(peek_maps_every_field),
    TEST(big_pages_are_whole_and_freed),
    TEST(bad_arguments_of_the_looks),
    {NULL, NULL}};
