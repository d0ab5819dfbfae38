/*
 * test_finish.c: what a worker does with a lease it holds: ack, ack_many, nack, dead_letter,
 * extend. Each call's outputs, a lease the caller filled (read by its lengths),
 * HAREL_ERR_LEASE_LOST, and every bad argument, of the lease and the rest, refused with the
 * fixture unchanged.
 */
#include "harel_test.h"

#include <math.h>

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

/* HAREL_ERR_LEASE_LOST for a lease acked already: ack, nack (with a delay or not),
 * ack_and_claim and extend; ack_many and ack_and_claim_many report it per lease, and the
 * call is HAREL_OK. */
static void status_lease_lost(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *l, *got[1];
  const harel_lease *lost[1];
  harel_status outcomes[1];
  harel_error *e = NULL;
  size_t n = NOT_SET_COUNT;
  if (t == NULL) return;
  PUBLISH(t, "g", "1");
  l = CLAIM(t, "w", "1");
  if (l != NULL) {
    EXPECT_STATUS(harel_transport_ack(t, l, NULL), HAREL_OK);
    EXPECT_FAILS(HAREL_ERR_LEASE_LOST, NULL, harel_transport_ack(t, l, ERR));
    EXPECT_FAILS(HAREL_ERR_LEASE_LOST, NULL, harel_transport_nack(t, l, 0.0, ERR));
    EXPECT_FAILS(HAREL_ERR_LEASE_LOST, NULL, harel_transport_nack(t, l, 5.0, ERR));
    ACK_AND_CLAIM_FAILS(HAREL_ERR_LEASE_LOST, NULL, t, l, "w", VIS, 0, NULL, 0);
    EXTEND_FAILS(HAREL_ERR_LEASE_LOST, NULL, t, l, VIS);
    /* the batch calls report it per lease, and the call is HAREL_OK */
    lost[0] = l;
    EXPECT_CALL(harel_transport_ack_many(t, lost, 1, outcomes, &e), &e, HAREL_OK);
    EXPECT(outcomes[0] == HAREL_ERR_LEASE_LOST);
    outcomes[0] = HAREL_OK;
    EXPECT_CALL(harel_transport_ack_and_claim_many(t, lost, 1, outcomes, "w", VIS, 0, NULL, 0, 1,
                                                   got, &n, &e),
                &e, HAREL_EMPTY);
    EXPECT(outcomes[0] == HAREL_ERR_LEASE_LOST && n == 0);
  }
  harel_lease_free(l);
  harel_transport_close(t);
}

/* ack refuses a NULL t and each bad field of its lease; the fixture unchanged. */
static void bad_arguments_of_ack(void) {
  fixture fx;
  if (!fixture_open(&fx)) return;
  EXPECT_BAD("t", harel_transport_ack(NULL, fx.held, ERR));
#define ACK_BAD(parameter) EXPECT_BAD(parameter, harel_transport_ack(fx.t, bad, ERR))
  EACH_BAD_LEASE(fx, ACK_BAD);
#undef ACK_BAD
  FIXTURE_CLOSE(&fx);
}

/* nack refuses what ack refuses, and a delay that is negative or not finite. */
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

/* One outcome per lease: HAREL_OK, or HAREL_ERR_LEASE_LOST for one acked already (before,
 * or earlier in the same call) or lapsed and claimed by another worker, while the others
 * are acked all the same; a caller-filled lease is read by its lengths. */
static void ack_many_reports_each_outcome(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *got[3] = {NULL, NULL, NULL}, *by_group[3] = {NULL, NULL, NULL}, *lapsed, *again;
  harel_lease mine;
  const harel_lease *leases[4];
  harel_status outcomes[4];
  harel_error *e = NULL;
  harel_stats *s;
  char group[2] = {'a', 'X'}; /* "a" with no NUL after it */
  size_t n = 0, i;
  if (t == NULL) return;
  PUBLISH(t, "a", "\"a1\"");
  PUBLISH(t, "b", "\"b1\"");
  PUBLISH(t, "c", "\"c1\"");
  PUBLISH(t, "a", "\"a2\"");
  EXPECT_CALL(harel_transport_claim_many(t, "w", VIS, 0, NULL, 0, 3, 0.0, NULL, got, &n, &e), &e,
              HAREL_OK);
  for (i = 0; i < n && i < 3; i++)
    if (got[i] != NULL && got[i]->group_id[0] >= 'a' && got[i]->group_id[0] <= 'c')
      by_group[got[i]->group_id[0] - 'a'] = got[i];
  if (!EXPECT(n == 3 && by_group[0] && by_group[1] && by_group[2])) {
    for (i = 0; i < n && i < 3; i++) harel_lease_free(got[i]);
    harel_transport_close(t);
    return;
  }
  EXPECT_STATUS(harel_transport_ack(t, by_group[1], NULL), HAREL_OK); /* b's, before */
  leases[0] = by_group[0];
  leases[1] = by_group[1];
  leases[2] = by_group[2];
  leases[3] = by_group[0]; /* a's again, in the same call */
  for (i = 0; i < 4; i++) outcomes[i] = HAREL_ERR_PANIC;
  EXPECT_CALL(harel_transport_ack_many(t, leases, 4, outcomes, &e), &e, HAREL_OK);
  EXPECT(outcomes[0] == HAREL_OK && outcomes[1] == HAREL_ERR_LEASE_LOST &&
         outcomes[2] == HAREL_OK && outcomes[3] == HAREL_ERR_LEASE_LOST);
  for (i = 0; i < 3; i++) harel_lease_free(got[i]);
  /* a2: its lease lapses and another worker has it; that worker's, copied by a binding */
  lapsed = CLAIM(t, "w", "\"a2\"");
  now += VIS + 1;
  again = CLAIM(t, "w2", "\"a2\"");
  if (lapsed != NULL && again != NULL) {
    mine = *again;
    mine.group_id = group;
    mine.group_id_len = 1;
    mine.event = NULL; /* not read */
    leases[0] = lapsed;
    leases[1] = &mine;
    outcomes[0] = outcomes[1] = HAREL_ERR_PANIC;
    EXPECT_CALL(harel_transport_ack_many(t, leases, 2, outcomes, &e), &e, HAREL_OK);
    EXPECT(outcomes[0] == HAREL_ERR_LEASE_LOST && outcomes[1] == HAREL_OK);
  }
  harel_lease_free(lapsed);
  harel_lease_free(again);
  s = STATS(t);
  if (s != NULL) EXPECT(s->messages == 0 && s->groups == 0);
  harel_stats_free(s);
  /* none: nothing read, nothing written */
  EXPECT_CALL(harel_transport_ack_many(t, NULL, 0, NULL, &e), &e, HAREL_OK);
  outcomes[0] = HAREL_ERR_PANIC;
  EXPECT_CALL(harel_transport_ack_many(t, leases, 0, outcomes, &e), &e, HAREL_OK);
  EXPECT(outcomes[0] == HAREL_ERR_PANIC);
  harel_transport_close(t);
}

/* ack_many refuses a NULL t, leases or outcomes, and a NULL or bad lease in the batch,
 * named by its index ("leases[1].group_id_len"); the good one beside it is not acked either
 * (the fixture's lease is still w1's at the end). */
static void bad_arguments_of_ack_many(void) {
  harel_status outcomes[2];
  const harel_lease *leases[2];
  char name[64];
  fixture fx;
  if (!fixture_open(&fx)) return;
  leases[0] = fx.held;
  leases[1] = NULL;
  EXPECT_BAD("t", harel_transport_ack_many(NULL, leases, 1, outcomes, ERR));
  EXPECT_BAD("leases", harel_transport_ack_many(fx.t, NULL, 1, outcomes, ERR));
  EXPECT_BAD("leases", harel_transport_ack_many(fx.t, NULL, SIZE_MAX, outcomes, ERR));
  EXPECT_BAD("outcomes", harel_transport_ack_many(fx.t, leases, 1, NULL, ERR));
  EXPECT_BAD("leases[1]", harel_transport_ack_many(fx.t, leases, 2, outcomes, ERR));
  leases[0] = NULL;
  leases[1] = fx.held;
  EXPECT_BAD("leases[0]", harel_transport_ack_many(fx.t, leases, 2, outcomes, ERR));
  leases[0] = fx.held;
#define ACK_MANY_LEASE_BAD(parameter)                                                      \
  do {                                                                                     \
    leases[1] = bad;                                                                       \
    EXPECT_BAD(element(name, sizeof name, 1, parameter),                                   \
               harel_transport_ack_many(fx.t, leases, 2, outcomes, ERR));                  \
  } while (0)
  EACH_BAD_LEASE(fx, ACK_MANY_LEASE_BAD);
#undef ACK_MANY_LEASE_BAD
  FIXTURE_CLOSE(&fx);
}

/* dead_letter reads a caller-filled lease by its group_id_len, as ack does. */
static void dead_letter_reads_a_caller_filled_lease(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *claimed, mine;
  char group[2] = {'g', 'X'}; /* "g", with no NUL after it */
  char worker[] = "w1";
  harel_dead_page *dead;
  if (t == NULL) return;
  PUBLISH(t, "g", "1");
  claimed = CLAIM(t, "w1", "1");
  if (claimed == NULL) {
    harel_transport_close(t);
    return;
  }
  memset(&mine, 0, sizeof mine);
  mine.seq = claimed->seq;
  mine.group_id = group;
  mine.group_id_len = 2; /* "gX": another group */
  mine.worker_id = worker;
  harel_lease_free(claimed);
  EXPECT_FAILS(HAREL_ERR_LEASE_LOST, NULL, harel_transport_dead_letter(t, &mine, "r", ERR));
  mine.group_id_len = 1;
  EXPECT_STATUS(harel_transport_dead_letter(t, &mine, "r", NULL), HAREL_OK);
  dead = DEAD_PAGE(t, "g", NULL, 10);
  if (dead != NULL) EXPECT(dead->n_letters == 1 && dead->letters[0].seq == mine.seq);
  harel_dead_page_free(dead);
  CLAIM_EMPTY(t);
  harel_transport_close(t);
}

/* dead_letter refuses what ack refuses, and a reason that is NULL, empty or not UTF-8. */
static void bad_arguments_of_dead_letter(void) {
  fixture fx;
  size_t i;
  if (!fixture_open(&fx)) return;
  EXPECT_BAD("t", harel_transport_dead_letter(NULL, fx.held, "r", ERR));
  EXPECT_BAD("reason", harel_transport_dead_letter(fx.t, fx.held, NULL, ERR));
  EXPECT_BAD("reason", harel_transport_dead_letter(fx.t, fx.held, "", ERR));
  for (i = 0; i < N_BAD_UTF8; i++)
    EXPECT_BAD("reason", harel_transport_dead_letter(fx.t, fx.held, BAD_UTF8[i], ERR));
#define DEAD_LETTER_BAD(parameter) \
  EXPECT_BAD(parameter, harel_transport_dead_letter(fx.t, bad, "r", ERR))
  EACH_BAD_LEASE(fx, DEAD_LETTER_BAD);
#undef DEAD_LETTER_BAD
  FIXTURE_CLOSE(&fx);
}

/* extend: the lease runs to now + visibility, and lease->lock_expiry says so; the group
 * stays out of claims until then; a lapsed lease nobody claimed since is still the worker's
 * and is extended; HAREL_ERR_LEASE_LOST (nothing written) once another worker claimed it,
 * after an ack, and for a parked message; a caller-filled lease is read by its lengths. */
static void extend_moves_the_end_of_the_lease(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_lease *l, *other, mine;
  harel_error *e = NULL;
  char group[2] = {'g', 'X'}; /* "g" with no NUL after it */
  if (t == NULL) return;
  PUBLISH(t, "g", "1");
  PUBLISH(t, "g", "2");
  l = CLAIM(t, "w1", "1");
  if (l == NULL) {
    harel_transport_close(t);
    return;
  }
  now = T0 + 10;
  EXPECT_CALL(harel_transport_extend(t, l, 60.0, &e), &e, HAREL_OK);
  EXPECT(l->lock_expiry == T0 + 70 && l->seq == 1 && l->attempts == 1);
  EXPECT_STR(l->worker_id, "w1");
  now = T0 + 69; /* past the first end, before the new one */
  CLAIM_EMPTY(t);
  now = T0 + 71; /* lapsed, and no one claimed it since: still w1's */
  EXPECT_CALL(harel_transport_extend(t, l, VIS, &e), &e, HAREL_OK);
  EXPECT(l->lock_expiry == T0 + 71 + VIS);
  now = T0 + 71 + VIS + 1; /* lapsed again, and claimed by w2 */
  other = CLAIM(t, "w2", "1");
  EXTEND_FAILS(HAREL_ERR_LEASE_LOST, NULL, t, l, VIS);
  EXPECT_FAILS(HAREL_ERR_LEASE_LOST, NULL, harel_transport_ack(t, l, ERR));
  if (other != NULL) {
    EXPECT(other->attempts == 2);
    /* w2's lease as a binding copies it: extended in the copy */
    mine = *other;
    mine.group_id = group;
    mine.group_id_len = 1;
    mine.event = NULL;
    now += 5;
    EXPECT_CALL(harel_transport_extend(t, &mine, 45.0, &e), &e, HAREL_OK);
    EXPECT(mine.lock_expiry == now + 45.0 && other->lock_expiry == now - 5 + VIS);
    EXPECT_STATUS(harel_transport_ack(t, other, NULL), HAREL_OK);
    EXTEND_FAILS(HAREL_ERR_LEASE_LOST, NULL, t, other, VIS); /* acked */
  }
  harel_lease_free(other);
  harel_lease_free(l);
  /* parked by its nack: no lease to extend */
  l = CLAIM(t, "w1", "2");
  if (l != NULL) {
    EXPECT_STATUS(harel_transport_nack(t, l, 100.0, NULL), HAREL_OK);
    EXTEND_FAILS(HAREL_ERR_LEASE_LOST, NULL, t, l, VIS);
    now += 101;
    ACK(t, CLAIM(t, "w1", "2"));
  }
  harel_lease_free(l);
  CLAIM_EMPTY(t);
  harel_transport_close(t);
}

/* extend refuses a NULL t, a bad lease and a visibility out of range, the lease not
 * written. */
static void bad_arguments_of_extend(void) {
  fixture fx;
  size_t i;
  if (!fixture_open(&fx)) return;
  EXTEND_BAD("t", NULL, fx.held, VIS);
  /* the lease is the caller's, not the library's: a built one is written only on success */
#define EXTEND_LEASE_BAD(parameter) EXTEND_BAD(parameter, fx.t, (harel_lease *)bad, VIS)
  EACH_BAD_LEASE(fx, EXTEND_LEASE_BAD);
#undef EXTEND_LEASE_BAD
  for (i = 0; i < N_OF(BAD_VISIBILITY); i++)
    EXTEND_BAD("visibility", fx.t, fx.held, BAD_VISIBILITY[i]);
  EXPECT(fx.held->lock_expiry == T0 + VIS);
  FIXTURE_CLOSE(&fx);
}

const test_case finish_tests[] = {
    TEST(a_caller_filled_lease_is_read_by_its_length),
    TEST(status_lease_lost),
    TEST(bad_arguments_of_ack),
    TEST(bad_arguments_of_nack),
    TEST(ack_many_reports_each_outcome),
    TEST(bad_arguments_of_ack_many),
    TEST(dead_letter_reads_a_caller_filled_lease),
    TEST(bad_arguments_of_dead_letter),
    TEST(extend_moves_the_end_of_the_lease),
    TEST(bad_arguments_of_extend),
    {NULL, NULL}};
