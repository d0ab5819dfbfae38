/*
 * test_pause.c: pausing and resuming (docs/queue.md, "Pause and resume"):
 * harel_transport_pause and _resume (admin), harel_transport_pauses and
 * harel_pause_list_free (looks), the HAREL_GROUP_PAUSED state of harel_transport_groups and
 * harel_stats.paused. What a pause does is the Rust contract's (tests/common/contract_pause.rs);
 * here, the mapping: each kind reaching its target, the outputs (*paused, *resumed, NULL
 * accepted), the list field by field and who frees it, every refusal the header names with its
 * message and the queue unchanged, a set `*err`, a sharded queue, and one handle shared by
 * threads that pause, resume and claim.
 */
#include "harel_test.h"

#include <pthread.h>
#include <stdlib.h>

typedef harel_status (*pause_fn)(harel_transport *, int32_t, const char *, bool *,
                                 harel_error **);

/* pause or resume of `kind` and `name`, which must succeed saying `want` (the pause is new,
 * there was such a pause): its output written from the other value; then the same call
 * again, which changes nothing, saying false over a true. */
#define EXPECT_PAUSE(t, kind, name, want)                                                 \
  flag_call_at(harel_transport_pause, "pause", (t), (kind), (name), (want), __FILE__, \
               __LINE__)
#define EXPECT_RESUME(t, kind, name, want)                                                   \
  flag_call_at(harel_transport_resume, "resume", (t), (kind), (name), (want), __FILE__, \
               __LINE__)
static void flag_call_at(pause_fn call, const char *what, harel_transport *t, int32_t kind,
                         const char *name, bool want, const char *file, int line) {
  bool flag = !want;
  harel_error *e = NULL;
  if (!expect_call(call(t, kind, name, &flag, &e), &e, HAREL_OK, NULL, what, file, line)) return;
  if (flag != want)
    test_fail(file, line, "%s of kind %d, name %s said %s", what, kind, or_null(name),
              flag ? "true" : "false");
  flag = true;
  if (!expect_call(call(t, kind, name, &flag, &e), &e, HAREL_OK, NULL, what, file, line)) return;
  if (flag) test_fail(file, line, "%s of kind %d, name %s, again: true", what, kind, or_null(name));
}

/* The pauses in force (the caller frees them); NULL if the call failed. */
#define PAUSES(t) pauses_at((t), __FILE__, __LINE__)
static harel_pause_list sentinel_pauses;
#define NOT_SET_PAUSES (&sentinel_pauses)
static harel_pause_list *pauses_at(harel_transport *t, const char *file, int line) {
  harel_pause_list *list = NOT_SET_PAUSES;
  harel_error *e = NULL;
  if (!expect_call(harel_transport_pauses(t, &list, &e), &e, HAREL_OK, NULL,
                   "harel_transport_pauses", file, line))
    return NULL;
  if (list == NULL || list == NOT_SET_PAUSES) {
    test_fail(file, line, "pauses returned HAREL_OK with no list");
    return NULL;
  }
  return list;
}

/* The list's pause i is `kind`, `name` (its length, its NUL) and `at`. */
#define IS_PAUSE(list, i, kind, name, at) \
  is_pause_at((list), (i), (kind), (name), (at), __FILE__, __LINE__)
static void is_pause_at(const harel_pause_list *list, size_t i, harel_pause_kind kind,
                        const char *name, double at, const char *file, int line) {
  const harel_pause *p;
  if (list == NULL || i >= list->n_pauses) {
    test_fail(file, line, "no pause %zu in the list", i);
    return;
  }
  p = &list->pauses[i];
  if (p->kind != kind || p->name == NULL || p->name_len != strlen(name) ||
      memcmp(p->name, name, p->name_len + 1) != 0 || p->paused_at != at)
    test_fail(file, line, "pause %zu is kind %d \"%s\" (%zu bytes) at %f, want %d \"%s\" at %f",
              i, (int)p->kind, or_null(p->name), p->name_len, p->paused_at, (int)kind, name, at);
}

/* A claim restricted to the routing key `key` (NULL: any group) finds nothing. */
static int claims_nothing(harel_transport *t, const char *key) {
  harel_lease *l = NOT_SET_LEASE;
  harel_status s = harel_transport_claim(t, "w", VIS, 0, key ? &key : NULL, key ? 1 : 0, &l, NULL);
  if (s == HAREL_OK) harel_lease_free(l);
  return s == HAREL_EMPTY && l == NULL;
}

/* A claim restricted to the routing key `key` takes the head of `group`, which it gives back
 * at once (nack, no delay). */
#define CLAIMS_FROM(t, key, group) claims_from_at((t), (key), (group), __FILE__, __LINE__)
static void claims_from_at(harel_transport *t, const char *key, const char *group,
                           const char *file, int line) {
  harel_lease *l = NULL;
  harel_error *e = NULL;
  if (!expect_call(harel_transport_claim(t, "w", VIS, 0, &key, 1, &l, &e), &e, HAREL_OK, NULL,
                   "harel_transport_claim", file, line))
    return;
  if (l == NULL || strcmp(l->group_id, group) != 0)
    test_fail(file, line, "claimed from %s, want %s", l ? l->group_id : "(no lease)", group);
  if (l != NULL)
    expect_call(harel_transport_nack(t, l, 0.0, &e), &e, HAREL_OK, NULL, "harel_transport_nack",
                file, line);
  harel_lease_free(l);
}

/* The group's state in the listing of every group; -1 when it is not listed. */
static int state_of(harel_transport *t, const char *group) {
  harel_group_page *page = NULL;
  int state = -1;
  size_t i;
  if (harel_transport_groups(t, -1, NULL, HAREL_MAX_PAGE, &page, NULL) != HAREL_OK) return -1;
  for (i = 0; i < page->n_groups; i++)
    if (strcmp(page->groups[i].group_id, group) == 0) state = (int)page->groups[i].state;
  harel_group_page_free(page);
  return state;
}

/* ---- each kind, its outputs -------------------------------------------------------------- */

/* Each kind reaches its target (a group, a routing key's groups, every group): what a claim
 * then finds, and the group's state; pause says whether the pause is new, resume whether there
 * was one, each output written from either value and NULL accepted. */
static void each_kind_pauses_its_target(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_error *e = NULL;
  if (t == NULL) return;
  EXPECT_STATUS(harel_transport_publish(t, "a", "\"a\"", 0, "eu", NULL), HAREL_OK);
  EXPECT_STATUS(harel_transport_publish(t, "b", "\"b\"", 0, "eu", NULL), HAREL_OK);
  EXPECT_STATUS(harel_transport_publish(t, "c", "\"c\"", 0, "us", NULL), HAREL_OK);
  /* a group: "a" only */
  EXPECT_PAUSE(t, HAREL_PAUSE_GROUP, "a", true);
  EXPECT(state_of(t, "a") == HAREL_GROUP_PAUSED && state_of(t, "b") == HAREL_GROUP_READY);
  CLAIMS_FROM(t, "eu", "b"); /* a arrived first, and is passed over */
  EXPECT_RESUME(t, HAREL_PAUSE_GROUP, "a", true);
  EXPECT(state_of(t, "a") == HAREL_GROUP_READY);
  /* a routing key: a and b, not c */
  EXPECT_PAUSE(t, HAREL_PAUSE_ROUTING_KEY, "eu", true);
  EXPECT(state_of(t, "a") == HAREL_GROUP_PAUSED && state_of(t, "b") == HAREL_GROUP_PAUSED);
  EXPECT(state_of(t, "c") == HAREL_GROUP_READY);
  EXPECT(claims_nothing(t, "eu"));
  CLAIMS_FROM(t, "us", "c");
  EXPECT_RESUME(t, HAREL_PAUSE_ROUTING_KEY, "eu", true);
  EXPECT(state_of(t, "a") == HAREL_GROUP_READY && state_of(t, "b") == HAREL_GROUP_READY);
  /* the queue: every group, and one made while it lasts */
  EXPECT_PAUSE(t, HAREL_PAUSE_QUEUE, NULL, true);
  PUBLISH(t, "new", "\"new\"");
  EXPECT(state_of(t, "c") == HAREL_GROUP_PAUSED && state_of(t, "new") == HAREL_GROUP_PAUSED);
  EXPECT(claims_nothing(t, NULL));
  EXPECT_RESUME(t, HAREL_PAUSE_QUEUE, NULL, true);
  EXPECT(state_of(t, "new") == HAREL_GROUP_READY);
  /* nothing to resume: false, nothing changed */
  EXPECT_RESUME(t, HAREL_PAUSE_GROUP, "a", false);
  EXPECT_RESUME(t, HAREL_PAUSE_ROUTING_KEY, "none", false);
  EXPECT_RESUME(t, HAREL_PAUSE_QUEUE, NULL, false);
  /* a group with no messages may be paused; a NULL output is accepted by both */
  EXPECT_CALL(harel_transport_pause(t, HAREL_PAUSE_GROUP, "later", NULL, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_pause(t, HAREL_PAUSE_ROUTING_KEY, "k", NULL, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_pause(t, HAREL_PAUSE_QUEUE, NULL, NULL, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_resume(t, HAREL_PAUSE_QUEUE, NULL, NULL, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_resume(t, HAREL_PAUSE_ROUTING_KEY, "k", NULL, &e), &e, HAREL_OK);
  EXPECT_PAUSE(t, HAREL_PAUSE_GROUP, "later", false); /* the NULL-output pause took */
  PUBLISH(t, "later", "\"later\"");
  EXPECT(state_of(t, "later") == HAREL_GROUP_PAUSED);
  EXPECT_CALL(harel_transport_resume(t, HAREL_PAUSE_GROUP, "later", NULL, &e), &e, HAREL_OK);
  EXPECT(state_of(t, "later") == HAREL_GROUP_READY);
  EXPECT(drain_now(t, NULL, NULL) == 5);
  harel_transport_close(t);
}

/* ---- the list ---------------------------------------------------------------------------- */

/* harel_transport_pauses: empty, then each pause in force with its kind, name (length and
 * NUL; "" for the queue; a multi-byte name), and the clock's time, the queue's first, then by
 * kind and name; the list is the caller's, alive past the handle's close; NULL frees nothing. */
static void pauses_lists_each_pause_in_order(void) {
  static const char ETE[] = "\xc3\xa9t\xc3\xa9";
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_pause_list *list;
  if (t == NULL) return;
  harel_pause_list_free(NULL);
  list = PAUSES(t);
  if (list != NULL) EXPECT(list->n_pauses == 0);
  harel_pause_list_free(list);
  now = T0 + 1;
  EXPECT_PAUSE(t, HAREL_PAUSE_ROUTING_KEY, "eu", true);
  now = T0 + 2;
  EXPECT_PAUSE(t, HAREL_PAUSE_GROUP, "g-b", true);
  now = T0 + 3;
  EXPECT_PAUSE(t, HAREL_PAUSE_QUEUE, NULL, true);
  now = T0 + 4;
  EXPECT_PAUSE(t, HAREL_PAUSE_GROUP, ETE, true);
  now = T0 + 5;
  EXPECT_PAUSE(t, HAREL_PAUSE_GROUP, "g-a", true);
  EXPECT_PAUSE(t, HAREL_PAUSE_GROUP, "g-b", false); /* already there: its time stays */
  list = PAUSES(t);
  if (list != NULL && EXPECT(list->n_pauses == 5)) {
    IS_PAUSE(list, 0, HAREL_PAUSE_QUEUE, "", T0 + 3);
    IS_PAUSE(list, 1, HAREL_PAUSE_GROUP, "g-a", T0 + 5);
    IS_PAUSE(list, 2, HAREL_PAUSE_GROUP, "g-b", T0 + 2);
    IS_PAUSE(list, 3, HAREL_PAUSE_GROUP, ETE, T0 + 4);
    IS_PAUSE(list, 4, HAREL_PAUSE_ROUTING_KEY, "eu", T0 + 1);
    EXPECT(list->pauses[3].name_len == 5 && list->pauses[0].paused_at > 0);
  }
  /* resume takes one pause out of the list */
  EXPECT_RESUME(t, HAREL_PAUSE_GROUP, "g-b", true);
  EXPECT_RESUME(t, HAREL_PAUSE_QUEUE, NULL, true);
  harel_transport_close(t);
  if (list != NULL) { /* the list outlives the handle; its strings are its own */
    EXPECT(list->n_pauses == 5 && strcmp(list->pauses[2].name, "g-b") == 0);
    EXPECT(strcmp(list->pauses[4].name, "eu") == 0);
  }
  harel_pause_list_free(list);
}

/* The list after resumes: what is left, then nothing. */
static void pauses_after_resumes(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_pause_list *list;
  if (t == NULL) return;
  EXPECT_PAUSE(t, HAREL_PAUSE_GROUP, "g", true);
  EXPECT_PAUSE(t, HAREL_PAUSE_ROUTING_KEY, "g", true); /* the same name, another kind */
  EXPECT_RESUME(t, HAREL_PAUSE_GROUP, "g", true);
  list = PAUSES(t);
  if (list != NULL && EXPECT(list->n_pauses == 1))
    IS_PAUSE(list, 0, HAREL_PAUSE_ROUTING_KEY, "g", T0);
  harel_pause_list_free(list);
  EXPECT_RESUME(t, HAREL_PAUSE_ROUTING_KEY, "g", true);
  list = PAUSES(t);
  if (list != NULL) EXPECT(list->n_pauses == 0);
  harel_pause_list_free(list);
  harel_transport_close(t);
}

/* ---- the looks --------------------------------------------------------------------------- */

/* A paused group in the looks: harel_transport_groups lists it as HAREL_GROUP_PAUSED (with
 * its own priority, and the holder of a lease taken before the pause), the state filter 4
 * lists only those, harel_stats.paused counts them apart from ready, leased, parked and
 * delayed, and its level's groups include it; the lease taken before finishes. */
static void a_paused_group_in_the_looks(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_group_page *page = NULL;
  harel_stats *s;
  harel_lease *held;
  harel_error *e = NULL;
  size_t i;
  if (t == NULL) return;
  EXPECT_STATUS(harel_transport_publish(t, "held", "\"h1\"", 3, NULL, NULL), HAREL_OK);
  EXPECT_STATUS(harel_transport_publish(t, "held", "\"h2\"", 3, NULL, NULL), HAREL_OK);
  EXPECT_STATUS(harel_transport_publish(t, "idle", "\"i\"", 3, "eu", NULL), HAREL_OK);
  EXPECT_STATUS(harel_transport_publish(t, "open", "\"o\"", 3, NULL, NULL), HAREL_OK);
  held = CLAIM(t, "w1", "\"h1\"");
  EXPECT_PAUSE(t, HAREL_PAUSE_GROUP, "held", true);
  EXPECT_PAUSE(t, HAREL_PAUSE_ROUTING_KEY, "eu", true);
  /* every group: two paused, one ready */
  EXPECT_CALL(harel_transport_groups(t, -1, NULL, 10, &page, &e), &e, HAREL_OK);
  if (EXPECT(page != NULL) && EXPECT(page->n_groups == 3)) {
    const harel_group_info *h = &page->groups[0], *i0 = &page->groups[1], *o = &page->groups[2];
    EXPECT_STR(h->group_id, "held");
    EXPECT(h->state == HAREL_GROUP_PAUSED && h->priority == 3 && h->depth == 2);
    EXPECT_STR(h->holder, "w1"); /* the lease taken before the pause */
    EXPECT(i0->state == HAREL_GROUP_PAUSED && i0->priority == 3 && i0->holder == NULL);
    EXPECT_STR(i0->routing_key, "eu");
    EXPECT(o->state == HAREL_GROUP_READY && o->priority == 3);
  }
  harel_group_page_free(page);
  /* the state filter HAREL_GROUP_PAUSED (4): only those */
  page = NULL;
  EXPECT_CALL(harel_transport_groups(t, HAREL_GROUP_PAUSED, NULL, 10, &page, &e), &e, HAREL_OK);
  if (EXPECT(page != NULL) && EXPECT(page->n_groups == 2)) {
    EXPECT_STR(page->groups[0].group_id, "held");
    EXPECT_STR(page->groups[1].group_id, "idle");
    for (i = 0; i < page->n_groups; i++) EXPECT(page->groups[i].state == HAREL_GROUP_PAUSED);
  }
  harel_group_page_free(page);
  page = NULL;
  EXPECT_CALL(harel_transport_groups(t, HAREL_GROUP_LEASED, NULL, 10, &page, &e), &e, HAREL_OK);
  if (EXPECT(page != NULL)) EXPECT(page->n_groups == 0); /* held is listed as paused only */
  harel_group_page_free(page);
  /* one past the last state is refused */
  GROUPS_FAILS(HAREL_ERR_ARGUMENT, "state", t, HAREL_GROUP_RETRYING + 1, NULL, 10);
  /* the counts */
  if ((s = STATS(t)) != NULL) {
    EXPECT(s->groups == 3 && s->messages == 4 && s->paused == 2);
    EXPECT(s->ready == 1 && s->leased == 0 && s->parked == 0 && s->delayed == 0);
    if (EXPECT(s->n_priorities == 1)) { /* its own level, in groups and in none of the others */
      const harel_priority_stats *level = &s->by_priority[0];
      EXPECT(level->priority == 3 && level->groups == 3 && level->ready == 1 &&
             level->leased == 0 && level->parked == 0);
    }
  }
  harel_stats_free(s);
  /* the lease taken before the pause finishes; the group's next stays held */
  ACK(t, held);
  ACK(t, CLAIM(t, "w", "\"o\""));
  CLAIM_EMPTY(t);
  EXPECT_RESUME(t, HAREL_PAUSE_GROUP, "held", true);
  EXPECT_RESUME(t, HAREL_PAUSE_ROUTING_KEY, "eu", true);
  if ((s = STATS(t)) != NULL) EXPECT(s->paused == 0 && s->ready == 2);
  harel_stats_free(s);
  EXPECT(drain_now(t, NULL, NULL) == 2);
  harel_transport_close(t);
}

/* ---- refusals ---------------------------------------------------------------------------- */

/* pause or resume of `kind` and `name` refused with HAREL_ERR_ARGUMENT, the message naming
 * `parameter` and being `text` (or, `prefix` set, starting with it), with err NULL and with
 * err given; the flag left as it was. */
#define REFUSED_SAYING(call, t, kind, name, parameter, text) \
  refused_at((call), #call, (t), (kind), (name), (parameter), (text), 0, __FILE__, __LINE__)
#define REFUSED_STARTING(call, t, kind, name, parameter, text) \
  refused_at((call), #call, (t), (kind), (name), (parameter), (text), 1, __FILE__, __LINE__)
static int says(const char *message, const char *text, int prefix) {
  return message != NULL &&
         (prefix ? strncmp(message, text, strlen(text)) == 0 : strcmp(message, text) == 0);
}
static void refused_at(pause_fn call, const char *what, harel_transport *t, int32_t kind,
                       const char *name, const char *parameter, const char *text, int prefix,
                       const char *file, int line) {
  bool flag = true;
  harel_error *e = NULL;
  harel_status s;
  const char *message;
  char expr[200];
  snprintf(expr, sizeof expr, "%s(kind %d, name %s)", what, kind, name ? "given" : "NULL");
  s = call(t, kind, name, &flag, NULL);
  message = harel_last_error();
  if (expect_error(s, HAREL_ERR_ARGUMENT, parameter, expr, file, line) &&
      !says(message, text, prefix))
    test_fail(file, line, "%s: the message is \"%s\", want \"%s\"%s", expr, message, text,
              prefix ? "..." : "");
  s = call(t, kind, name, &flag, &e);
  message = e != NULL ? harel_error_message(e) : NULL;
  if (message != NULL && !says(message, text, prefix))
    test_fail(file, line, "%s: the error's message is \"%s\", want \"%s\"", expr, message, text);
  expect_call(s, &e, HAREL_ERR_ARGUMENT, parameter, expr, file, line);
  if (!flag) test_fail(file, line, "%s wrote its output", expr);
}

/* The messages of the refusals. */
#define KIND_MUST_BE "it must be HAREL_PAUSE_QUEUE, HAREL_PAUSE_GROUP or HAREL_PAUSE_ROUTING_KEY"
#define NAME_NULL "name is NULL: a group id or routing key to pause"
#define NAME_NOT_NULL "name must be NULL with HAREL_PAUSE_QUEUE"
#define NAME_NOT_UTF8 "name is not valid UTF-8"

/* Both calls refuse each bad argument the same way. */
static void bad_arguments_of(pause_fn call) {
  static const int32_t bad_kind[] = {7, -1, 3, INT32_MIN, INT32_MAX};
  fixture fx;
  char text[200];
  size_t i, u;
  if (!fixture_open(&fx)) return;
  REFUSED_SAYING(call, NULL, HAREL_PAUSE_QUEUE, NULL, "t", "t is NULL");
  REFUSED_SAYING(call, NULL, HAREL_PAUSE_GROUP, "g1", "t", "t is NULL");
  for (i = 0; i < N_OF(bad_kind); i++) {
    snprintf(text, sizeof text, "kind is %ld; %s", (long)bad_kind[i], KIND_MUST_BE);
    REFUSED_SAYING(call, fx.t, bad_kind[i], NULL, "kind", text);
    REFUSED_SAYING(call, fx.t, bad_kind[i], "g1", "kind", text); /* never read as a group */
  }
  REFUSED_SAYING(call, fx.t, HAREL_PAUSE_GROUP, NULL, "name", NAME_NULL);
  REFUSED_SAYING(call, fx.t, HAREL_PAUSE_ROUTING_KEY, NULL, "name", NAME_NULL);
  REFUSED_SAYING(call, fx.t, HAREL_PAUSE_QUEUE, "g1", "name", NAME_NOT_NULL);
  REFUSED_SAYING(call, fx.t, HAREL_PAUSE_QUEUE, "", "name", NAME_NOT_NULL);
  REFUSED_SAYING(call, fx.t, HAREL_PAUSE_GROUP, "", "group_id", "group_id is empty");
  REFUSED_SAYING(call, fx.t, HAREL_PAUSE_ROUTING_KEY, "", "routing_key", "routing_key is empty");
  for (u = 0; u < N_BAD_UTF8; u++) {
    REFUSED_STARTING(call, fx.t, HAREL_PAUSE_GROUP, BAD_UTF8[u], "name", NAME_NOT_UTF8);
    REFUSED_STARTING(call, fx.t, HAREL_PAUSE_ROUTING_KEY, BAD_UTF8[u], "name", NAME_NOT_UTF8);
    REFUSED_STARTING(call, fx.t, HAREL_PAUSE_QUEUE, BAD_UTF8[u], "name", NAME_NOT_UTF8);
  }
  /* nothing was paused: no pause listed, the fixture as it was (g1 leased, its next waiting) */
  {
    harel_pause_list *list = PAUSES(fx.t);
    if (list != NULL) EXPECT(list->n_pauses == 0);
    harel_pause_list_free(list);
  }
  FIXTURE_CLOSE(&fx);
}

static void bad_arguments_of_pause(void) { bad_arguments_of(harel_transport_pause); }

/* resume refuses as pause does; a refused resume leaves the pauses there. */
static void bad_arguments_of_resume(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_pause_list *list;
  bad_arguments_of(harel_transport_resume);
  if (t == NULL) return;
  EXPECT_PAUSE(t, HAREL_PAUSE_GROUP, "g", true);
  EXPECT_PAUSE(t, HAREL_PAUSE_QUEUE, NULL, true);
  REFUSED_SAYING(harel_transport_resume, t, HAREL_PAUSE_GROUP, "", "group_id", "group_id is empty");
  REFUSED_SAYING(harel_transport_resume, t, 9, "g", "kind", "kind is 9; " KIND_MUST_BE);
  REFUSED_SAYING(harel_transport_resume, t, HAREL_PAUSE_QUEUE, "g", "name", NAME_NOT_NULL);
  list = PAUSES(t);
  if (list != NULL) EXPECT(list->n_pauses == 2);
  harel_pause_list_free(list);
  harel_transport_close(t);
}

/* harel_transport_pauses refuses a NULL t or out, *out NULL after it. */
#define PAUSES_FAILS(want, parameter, t, text)                                           \
  do {                                                                                   \
    harel_pause_list *out_ = NOT_SET_PAUSES;                                             \
    harel_error *e_ = NULL;                                                              \
    EXPECT_FAILS((want), (parameter),                                                    \
                 (out_ = NOT_SET_PAUSES, harel_transport_pauses((t), &out_, ERR)));      \
    EXPECT(out_ == NULL);                                                                \
    EXPECT(harel_transport_pauses((t), &out_, &e_) == (want) && e_ != NULL);             \
    EXPECT_STR(harel_error_message(e_), (text));                                         \
    harel_error_free(e_);                                                                \
  } while (0)

static void bad_arguments_of_pauses(void) {
  fixture fx;
  harel_error *e = NULL;
  if (!fixture_open(&fx)) return;
  PAUSES_FAILS(HAREL_ERR_ARGUMENT, "t", NULL, "t is NULL");
  EXPECT_FAILS(HAREL_ERR_ARGUMENT, "out", harel_transport_pauses(fx.t, NULL, ERR));
  EXPECT(harel_transport_pauses(fx.t, NULL, &e) == HAREL_ERR_ARGUMENT && e != NULL);
  EXPECT_STR(harel_error_message(e), "out is NULL");
  harel_error_free(e);
  FIXTURE_CLOSE(&fx);
}

/* A `*err` already set: each call refused, nothing done, the outputs untouched. */
static void a_set_err_is_refused_by_pause_resume_and_pauses(void) {
  double now = T0;
  char was_text[512];
  harel_transport *t = open_at(":memory:", &now);
  harel_error *stale = NULL;
  const harel_error *was;
  harel_pause_list *list = NOT_SET_PAUSES;
  bool flag = true;
  if (t == NULL) return;
  EXPECT(harel_transport_pause(NULL, HAREL_PAUSE_QUEUE, NULL, NULL, &stale) == HAREL_ERR_ARGUMENT);
  if (!EXPECT(stale != NULL)) {
    harel_transport_close(t);
    return;
  }
  was = stale;
  snprintf(was_text, sizeof was_text, "%s", harel_error_message(stale));
  REFUSED(harel_transport_pause(t, HAREL_PAUSE_GROUP, "g", &flag, &stale));
  REFUSED(harel_transport_pause(t, HAREL_PAUSE_QUEUE, NULL, &flag, &stale));
  EXPECT(flag);
  EXPECT_PAUSE(t, HAREL_PAUSE_ROUTING_KEY, "k", true);
  flag = true;
  REFUSED(harel_transport_resume(t, HAREL_PAUSE_ROUTING_KEY, "k", &flag, &stale));
  EXPECT(flag);
  REFUSED(harel_transport_pauses(t, &list, &stale));
  EXPECT(list == NULL);
  list = PAUSES(t); /* the refused resume left the pause, the refused pauses made none */
  if (list != NULL && EXPECT(list->n_pauses == 1))
    IS_PAUSE(list, 0, HAREL_PAUSE_ROUTING_KEY, "k", T0);
  harel_pause_list_free(list);
  harel_transport_close(t);
  harel_error_free(stale);
}

/* ---- a busy database, a sharded queue, a queue without the table ------------------------- */

/* On a queue sharded over three files: a pause acts on every shard (no claim finds a group
 * of any of them), the list gives it once, resume ends it everywhere. */
static void a_sharded_queue(void) {
  char paths[3][300];
  const char *dbs[3];
  double now = T0;
  harel_options *o = harel_options_new();
  harel_transport *t = NULL;
  harel_pause_list *list;
  harel_error *e = NULL;
  char group[16];
  int i;
  if (!EXPECT(o != NULL)) return;
  for (i = 0; i < 3; i++) dbs[i] = new_path(paths[i], sizeof paths[i]);
  EXPECT_CALL(harel_options_set_clock(o, test_clock, &now, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_synchronous_full(o, false, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_open_shards(dbs, 3, o, &t, &e), &e, HAREL_OK);
  harel_options_free(o);
  if (t == NULL) return;
  for (i = 0; i < 12; i++) { /* groups on every shard, all with the routing key "eu" */
    snprintf(group, sizeof group, "g%d", i);
    EXPECT_STATUS(harel_transport_publish(t, group, "1", 0, "eu", NULL), HAREL_OK);
  }
  EXPECT_PAUSE(t, HAREL_PAUSE_ROUTING_KEY, "eu", true);
  EXPECT_PAUSE(t, HAREL_PAUSE_QUEUE, NULL, true);
  CLAIM_EMPTY(t);
  list = PAUSES(t);
  if (list != NULL && EXPECT(list->n_pauses == 2)) {
    IS_PAUSE(list, 0, HAREL_PAUSE_QUEUE, "", T0);
    IS_PAUSE(list, 1, HAREL_PAUSE_ROUTING_KEY, "eu", T0);
  }
  harel_pause_list_free(list);
  EXPECT_RESUME(t, HAREL_PAUSE_QUEUE, NULL, true);
  CLAIM_EMPTY(t); /* eu's pause holds on every shard */
  EXPECT_RESUME(t, HAREL_PAUSE_ROUTING_KEY, "eu", true);
  EXPECT(drain_now(t, NULL, NULL) == 12);
  harel_transport_close(t);
}

static const char DROP_PAUSES[] =
    "import sqlite3, sys\n"
    "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "for (name,) in c.execute(\"SELECT name FROM sqlite_master WHERE type = 'trigger' \"\n"
    "                         \"AND name LIKE '%paused%'\").fetchall():\n"
    "    c.execute('DROP TRIGGER \"%s\"' % name)\n"
    "c.execute('DROP TABLE harel_transport_pauses')\n"
    "print('dropped', flush=True)\n";

/* Another process holds the write lock, and the busy timeout is 0: pause and resume are
 * HAREL_ERR_BUSY, their output untouched, and changed nothing once the lock is free again;
 * pauses takes no write lock and answers. */
static void status_busy(void) {
  double now = T0;
  char path[300], release[300];
  harel_options *o = harel_options_new();
  harel_transport *t = NULL;
  harel_pause_list *list;
  harel_error *e = NULL;
  bool flag = true;
  FILE *holder;
  if (!EXPECT(o != NULL)) return;
  snprintf(release, sizeof release, "%s/release", temp_dir);
  EXPECT_CALL(harel_options_set_busy_timeout(o, 0.0, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_clock(o, test_clock, &now, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_open(new_path(path, sizeof path), o, &t, &e), &e, HAREL_OK);
  harel_options_free(o);
  if (t == NULL) return;
  PUBLISH(t, "g", "\"m1\"");
  EXPECT_PAUSE(t, HAREL_PAUSE_ROUTING_KEY, "k", true);
  holder = hold_write_lock(path, release);
  if (EXPECT(holder != NULL)) {
    EXPECT_FAILS(HAREL_ERR_BUSY, NULL,
                 harel_transport_pause(t, HAREL_PAUSE_GROUP, "g", &flag, ERR));
    EXPECT_FAILS(HAREL_ERR_BUSY, NULL,
                 harel_transport_pause(t, HAREL_PAUSE_QUEUE, NULL, &flag, ERR));
    EXPECT_FAILS(HAREL_ERR_BUSY, NULL,
                 harel_transport_resume(t, HAREL_PAUSE_ROUTING_KEY, "k", &flag, ERR));
    EXPECT(flag);
    list = PAUSES(t);
    if (list != NULL && EXPECT(list->n_pauses == 1))
      IS_PAUSE(list, 0, HAREL_PAUSE_ROUTING_KEY, "k", T0);
    harel_pause_list_free(list);
    EXPECT(release_write_lock(holder, release));
  }
  /* as it was: k's pause alone, g served */
  list = PAUSES(t);
  if (list != NULL) EXPECT(list->n_pauses == 1);
  harel_pause_list_free(list);
  ACK(t, CLAIM(t, "w", "\"m1\""));
  EXPECT_RESUME(t, HAREL_PAUSE_ROUTING_KEY, "k", true);
  harel_transport_close(t);
}

#define MISSING "the table harel_transport_pauses or its triggers are missing"

/* A queue without the pauses table (its file made before it, opened with create_schema
 * off): pause and resume are HAREL_ERR_DATABASE naming the table, the list is empty, the
 * rest goes on. */
static void a_queue_without_the_table(void) {
  double now = T0;
  char path[300], line[32];
  harel_transport *t = open_at(new_path(path, sizeof path), &now);
  harel_options *o;
  harel_pause_list *list;
  harel_error *e = NULL;
  bool flag = true;
  if (t == NULL) return;
  PUBLISH(t, "g", "\"before\"");
  harel_transport_close(t);
  t = NULL;
  if (!EXPECT(python_run(DROP_PAUSES, path, line, sizeof line) &&
              strcmp(line, "dropped\n") == 0))
    return;
  if (!EXPECT((o = harel_options_new()) != NULL)) return;
  EXPECT_CALL(harel_options_set_clock(o, test_clock, &now, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_create_schema(o, false, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_open(path, o, &t, &e), &e, HAREL_OK);
  harel_options_free(o);
  if (t == NULL) return;
  EXPECT_FAILS(HAREL_ERR_DATABASE, NULL,
               harel_transport_pause(t, HAREL_PAUSE_GROUP, "g", &flag, ERR));
  EXPECT_FAILS(HAREL_ERR_DATABASE, NULL,
               harel_transport_resume(t, HAREL_PAUSE_QUEUE, NULL, &flag, ERR));
  EXPECT(flag);
  EXPECT(harel_transport_pause(t, HAREL_PAUSE_QUEUE, NULL, NULL, &e) == HAREL_ERR_DATABASE);
  if (EXPECT(e != NULL) && strstr(or_null(harel_error_message(e)), MISSING) == NULL)
    test_fail(__FILE__, __LINE__, "the message \"%s\" does not say \"%s\"",
              harel_error_message(e), MISSING);
  harel_error_free(e);
  list = PAUSES(t);
  if (list != NULL) EXPECT(list->n_pauses == 0);
  harel_pause_list_free(list);
  ACK(t, CLAIM(t, "w", "\"before\""));
  harel_transport_close(t);
}

/* ---- threads ----------------------------------------------------------------------------- */

#define PAUSERS 4
#define ROUNDS 6
#define TOGGLES 20

typedef struct {
  harel_transport *t;
  int index;
  int claimed, failures;
} pauser;

/* The call succeeds with its output `want` (err NULL: any thread's own last error). */
static int answers(pause_fn call, harel_transport *t, int32_t kind, const char *name, bool want) {
  bool flag = !want;
  return call(t, kind, name, &flag, NULL) == HAREL_OK && flag == want;
}

/* A claim on the routing keys `keys` (one) finds nothing. */
static int finds_nothing(harel_transport *t, const char *const *keys) {
  harel_lease *l = NULL;
  harel_status s = harel_transport_claim(t, "w", VIS, 0, keys, 1, &l, NULL);
  harel_lease_free(l);
  return s == HAREL_EMPTY;
}

/* One thread's own group and routing key ("g<i>", "k<i>", nobody else's): each round, its
 * pauses and resumes answer as if it were alone, a claim on its key finds nothing while
 * either pause lasts, and after both are resumed its next message comes (retried while the
 * queue's pause, another thread's, lasts). */
static void *pause_and_claim(void *arg) {
  pauser *p = arg;
  char group[16], key[16];
  const char *keys[1];
  int round, tries;
  snprintf(group, sizeof group, "g%d", p->index);
  snprintf(key, sizeof key, "k%d", p->index);
  keys[0] = key;
  for (round = 0; round < ROUNDS; round++) {
    harel_lease *l = NULL;
    p->failures += !answers(harel_transport_pause, p->t, HAREL_PAUSE_GROUP, group, true);
    p->failures += !answers(harel_transport_pause, p->t, HAREL_PAUSE_GROUP, group, false);
    p->failures += !finds_nothing(p->t, keys);
    p->failures += !answers(harel_transport_pause, p->t, HAREL_PAUSE_ROUTING_KEY, key, true);
    p->failures += !answers(harel_transport_resume, p->t, HAREL_PAUSE_GROUP, group, true);
    p->failures += !finds_nothing(p->t, keys);
    p->failures += !answers(harel_transport_resume, p->t, HAREL_PAUSE_ROUTING_KEY, key, true);
    for (tries = 0; tries < 5000; tries++) {
      harel_status s = harel_transport_claim(p->t, "w", VIS, 0, keys, 1, &l, NULL);
      if (s == HAREL_OK) break;
      p->failures += s != HAREL_EMPTY;
      pause_for(0.001);
    }
    if (l != NULL) {
      p->claimed++;
      p->failures += harel_transport_ack(p->t, l, NULL) != HAREL_OK;
      harel_lease_free(l);
    }
  }
  return NULL;
}

/* The queue's pause, toggled TOGGLES times by one thread, which alone touches it. */
static void *toggle_the_queue(void *arg) {
  pauser *p = arg;
  int i;
  for (i = 0; i < TOGGLES; i++) {
    harel_pause_list *list = NULL;
    p->failures += !answers(harel_transport_pause, p->t, HAREL_PAUSE_QUEUE, NULL, true);
    p->failures += harel_transport_pauses(p->t, &list, NULL) != HAREL_OK || list == NULL ||
                   list->n_pauses < 1 || list->pauses[0].kind != HAREL_PAUSE_QUEUE;
    harel_pause_list_free(list);
    pause_for(0.002);
    p->failures += !answers(harel_transport_resume, p->t, HAREL_PAUSE_QUEUE, NULL, true);
  }
  return NULL;
}

/* Threads sharing one handle pause, resume, list and claim at once; every call answers as
 * its thread alone would, each message is claimed once, and nothing is left paused. */
static void threads_pause_resume_and_claim_on_one_handle(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  pthread_t threads[PAUSERS + 1];
  pauser me[PAUSERS + 1];
  harel_pause_list *list;
  harel_stats *s;
  char group[16], key[16];
  int i, r, started[PAUSERS + 1];
  if (t == NULL) return;
  for (i = 0; i < PAUSERS; i++)
    for (r = 0; r < ROUNDS; r++) {
      snprintf(group, sizeof group, "g%d", i);
      snprintf(key, sizeof key, "k%d", i);
      EXPECT_STATUS(harel_transport_publish(t, group, "1", 0, key, NULL), HAREL_OK);
    }
  for (i = 0; i <= PAUSERS; i++) {
    me[i].t = t;
    me[i].index = i;
    me[i].claimed = me[i].failures = 0;
    started[i] = EXPECT(pthread_create(&threads[i], NULL,
                                       i < PAUSERS ? pause_and_claim : toggle_the_queue,
                                       &me[i]) == 0);
  }
  for (i = 0; i <= PAUSERS; i++)
    if (started[i]) pthread_join(threads[i], NULL);
  for (i = 0; i <= PAUSERS; i++) {
    if (me[i].failures != 0)
      test_fail(__FILE__, __LINE__, "thread %d: %d calls answered wrong", i, me[i].failures);
    if (i < PAUSERS && me[i].claimed != ROUNDS)
      test_fail(__FILE__, __LINE__, "thread %d claimed %d of its %d messages", i, me[i].claimed,
                ROUNDS);
  }
  list = PAUSES(t);
  if (list != NULL) EXPECT(list->n_pauses == 0);
  harel_pause_list_free(list);
  if ((s = STATS(t)) != NULL) EXPECT(s->messages == 0 && s->paused == 0);
  harel_stats_free(s);
  harel_transport_close(t);
}

const test_case pause_tests[] = {
    TEST(each_kind_pauses_its_target),
    TEST(pauses_lists_each_pause_in_order),
    TEST(pauses_after_resumes),
    TEST(a_paused_group_in_the_looks),
    TEST(bad_arguments_of_pause),
    TEST(bad_arguments_of_resume),
    TEST(bad_arguments_of_pauses),
    TEST(a_set_err_is_refused_by_pause_resume_and_pauses),
    TEST(status_busy),
    TEST(a_sharded_queue),
    TEST(a_queue_without_the_table),
    TEST(threads_pause_resume_and_claim_on_one_handle),
    {NULL, NULL}};
