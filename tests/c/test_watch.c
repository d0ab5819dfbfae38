/*
 * test_watch.c: the readiness descriptor of an event loop: harel_transport_watch,
 * harel_watch_fd, harel_watch_rearm, harel_watch_free. What the watch promises is the
 * protocol of the header: readable from its making until a rearm returns HAREL_EMPTY, then
 * readable again once a claim with its filter may find work (a commit in this process or
 * another, a lease's or a park's end). A wake means "may": spurious ones are allowed, so no
 * test counts on their absence; each decides by rearm (HAREL_EMPTY: nothing yet), and a
 * descriptor found readable after a rearm's HAREL_EMPTY is rearmed again (settle).
 * Timings are loose, for valgrind's sake, except where the protocol names an instant.
 */
#include "harel_test.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

/* Where harel_transport_watch's *out starts, so a test sees the call set it to NULL. */
static int sentinel_watch;
#define NOT_SET_WATCH ((harel_watch *)&sentinel_watch)

/* Whether `fd` polls readable within `seconds` (0: now, without waiting). */
static int readable_within(int fd, double seconds) {
  double deadline = monotonic() + seconds;
  for (;;) {
    struct pollfd p;
    double left = deadline - monotonic();
    int n;
    p.fd = fd;
    p.events = POLLIN;
    p.revents = 0;
    n = poll(&p, 1, left > 0.0 ? (int)(left * 1000.0) + 1 : 0);
    if (n > 0) return (p.revents & POLLIN) != 0;
    if (n == 0 && monotonic() >= deadline) return 0;
    if (n < 0 && errno != EINTR) return 0;
  }
}
#define READABLE(fd) readable_within((fd), 0.0)

/* A watch of `t` with the filter, checked made, and its descriptor in *fd (-1 if none). */
#define WATCH(t, min_priority, keys, n, fd) \
  watch_at((t), (min_priority), (keys), (n), (fd), __FILE__, __LINE__)
static harel_watch *watch_at(harel_transport *t, int32_t min_priority, const char *const *keys,
                             size_t n, int *fd, const char *file, int line) {
  harel_watch *w = NULL;
  harel_error *e = NULL;
  *fd = -1;
  if (!expect_call(harel_transport_watch(t, min_priority, keys, n, &w, &e), &e, HAREL_OK, NULL,
                   "harel_transport_watch", file, line))
    return w;
  if (w == NULL) {
    test_fail(file, line, "harel_transport_watch returned HAREL_OK with no watch");
    return NULL;
  }
  expect_call(harel_watch_fd(w, fd, &e), &e, HAREL_OK, NULL, "harel_watch_fd", file, line);
  if (*fd < 0) test_fail(file, line, "harel_watch_fd gave the descriptor %d", *fd);
  return w;
}

/* harel_watch_rearm returns `want`, with err given (and NULL after HAREL_OK/HAREL_EMPTY). */
#define REARM(t, w, want) rearm_at((t), (w), (want), __FILE__, __LINE__)
static int rearm_at(harel_transport *t, harel_watch *w, harel_status want, const char *file,
                    int line) {
  harel_error *e = NULL;
  return expect_call(harel_watch_rearm(t, w, &e), &e, want, NULL, "harel_watch_rearm", file,
                     line);
}

/* Nothing to claim: rearm returns HAREL_EMPTY and the descriptor is then not readable. A
 * spurious ring between the rearm and the look is allowed: rearm again (each time EMPTY),
 * up to 100 times. */
#define SETTLE(t, w, fd) EXPECT(settle((t), (w), (fd), __FILE__, __LINE__))
static int settle(harel_transport *t, harel_watch *w, int fd, const char *file, int line) {
  int i;
  for (i = 0; i < 100; i++) {
    if (!rearm_at(t, w, HAREL_EMPTY, file, line)) return 0;
    if (!READABLE(fd)) return 1;
    pause_for(0.01);
  }
  test_fail(file, line, "the descriptor stays readable after rearm's HAREL_EMPTY");
  return 0;
}

/* Work has come: the descriptor becomes readable within `seconds`, rearm returns HAREL_OK,
 * and the descriptor stays readable. How long it took to become readable; -1 if it did not. */
#define RINGS(t, w, fd, seconds) rings_at((t), (w), (fd), (seconds), __FILE__, __LINE__)
static double rings_at(harel_transport *t, harel_watch *w, int fd, double seconds,
                       const char *file, int line) {
  double started = monotonic(), took;
  if (!readable_within(fd, seconds)) {
    test_fail(file, line, "the descriptor was not readable within %.1f s", seconds);
    return -1.0;
  }
  took = monotonic() - started;
  if (rearm_at(t, w, HAREL_OK, file, line) && !READABLE(fd))
    test_fail(file, line, "the descriptor is not readable after rearm's HAREL_OK");
  return took;
}

/* Something becomes claimable `after` seconds past a call made between `from` and `until`
 * (monotonic seconds): a lease's or a park's end. Rings before it are allowed, each rearm
 * then HAREL_EMPTY; the rearm that returns HAREL_OK comes at the end, not before, and
 * within `slack` seconds of it; no rearm after the end returns HAREL_EMPTY. */
#define RINGS_AT_THE_END(t, w, fd, from, until, after, slack) \
  rings_at_the_end((t), (w), (fd), (from), (until), (after), (slack), __FILE__, __LINE__)
static void rings_at_the_end(harel_transport *t, harel_watch *w, int fd, double from,
                             double until, double after, double slack, const char *file,
                             int line) {
  double deadline = until + after + slack, at;
  harel_error *e = NULL;
  harel_status s;
  for (;;) {
    if (!readable_within(fd, deadline - monotonic())) {
      test_fail(file, line, "no ring by %.1f s after the start (the end: %.1f s)",
                deadline - from, after);
      return;
    }
    at = monotonic();
    s = harel_watch_rearm(t, w, &e);
    if (s == HAREL_EMPTY) {
      expect_call(s, &e, HAREL_EMPTY, NULL, "harel_watch_rearm", file, line);
      if (at > until + after + 0.05) /* the end passed: rearm must see it */
        test_fail(file, line, "rearm found nothing %.3f s after the start (the end: %.3f s)",
                  at - from, after);
      continue;
    }
    if (!expect_call(s, &e, HAREL_OK, NULL, "harel_watch_rearm", file, line)) return;
    if (at - from < after - 0.005)
      test_fail(file, line, "work %.3f s after the start, before the end (%.3f s)", at - from,
                after);
    return;
  }
}

/* A new watch is readable; rearm on an empty queue clears it; a commit by another
 * transport of this process on the same queue, or by the watch's own, makes it readable
 * again (at once: well under a second); rearm's HAREL_OK leaves it readable while the
 * claims (non-waiting) take the work, and the next rearm, the work taken, clears it. The
 * descriptor: stable, close-on-exec, one per watch. */
static void a_watch_rings_for_commits_in_this_process(void) {
  double now = T0;
  char path[300];
  harel_transport *t, *other;
  harel_watch *w, *w2;
  harel_lease *l;
  harel_error *e = NULL;
  int fd, fd2, again = -1, flags;
  t = open_at(new_path(path, sizeof path), &now);
  other = open_at(path, &now);
  if (t == NULL || other == NULL) {
    harel_transport_close(t);
    harel_transport_close(other);
    return;
  }
  w = WATCH(t, 0, NULL, 0, &fd);
  w2 = WATCH(t, 0, NULL, 0, &fd2);
  if (w != NULL && w2 != NULL && fd >= 0) {
    EXPECT(fd2 >= 0 && fd2 != fd);
    EXPECT_CALL(harel_watch_fd(w, &again, &e), &e, HAREL_OK);
    EXPECT(again == fd);
    flags = fcntl(fd, F_GETFD);
    EXPECT(flags >= 0 && (flags & FD_CLOEXEC) != 0);
    /* new: readable, and stays so until a rearm */
    EXPECT(READABLE(fd));
    EXPECT(READABLE(fd));
    /* an empty queue: rearm clears it, and again */
    SETTLE(t, w, fd);
    SETTLE(t, w, fd);
    EXPECT(READABLE(fd2)); /* the other watch: not rearmed yet */
    SETTLE(t, w2, fd2);
    /* another transport's publish rings both */
    PUBLISH(other, "g", "\"from other\"");
    EXPECT(RINGS(t, w, fd, 10.0) < 1.0);
    EXPECT(RINGS(t, w2, fd2, 10.0) < 1.0);
    REARM(t, w, HAREL_OK); /* it looks again: still work */
    EXPECT(READABLE(fd));
    l = CLAIM(t, "w1", "\"from other\"");
    CLAIM_EMPTY(t);
    SETTLE(t, w, fd); /* g in flight: nothing to claim */
    ACK(t, l);
    SETTLE(t, w, fd); /* the ack's commit may ring; still nothing */
    /* the watch's own transport's publish rings it too */
    PUBLISH(t, "h", "\"from t\"");
    EXPECT(RINGS(t, w, fd, 10.0) < 1.0);
    ACK(t, CLAIM(t, "w1", "\"from t\""));
    CLAIM_EMPTY(t);
    SETTLE(t, w, fd);
  }
  harel_watch_free(w);
  harel_watch_free(w2);
  harel_transport_close(t);
  harel_transport_close(other);
}

/* A watch looks for what a claim with its filter would take: a floor of 2 and the key
 * "eu" (the keys copied: the caller's array and strings are gone by the rearm) let rearm
 * find nothing in groups below 2 or of another key; a group of both makes it HAREL_OK, and
 * the claim with the same filter takes it. A watch without a filter, of the same
 * transport, sees every group. */
static void a_watch_looks_with_its_filter(void) {
  double now = T0;
  char path[300];
  harel_transport *t = open_at(new_path(path, sizeof path), &now);
  harel_watch *filtered = NULL, *any;
  harel_lease *l = NOT_SET_LEASE;
  harel_error *e = NULL;
  char *key = malloc(3);
  const char **keys = malloc(sizeof *keys);
  const char *const eu[] = {"eu"};
  int fd = -1, fd_any;
  if (t == NULL || !EXPECT(key != NULL && keys != NULL)) {
    free(key);
    free(keys);
    harel_transport_close(t);
    return;
  }
  memcpy(key, "eu", 3);
  keys[0] = key;
  filtered = WATCH(t, 2, keys, 1, &fd);
  free(key);
  free(keys);
  any = WATCH(t, 0, NULL, 0, &fd_any);
  if (filtered != NULL && any != NULL) {
    SETTLE(t, filtered, fd);
    SETTLE(t, any, fd_any);
    EXPECT_STATUS(harel_transport_publish(t, "low", "\"low\"", 1, "eu", NULL), HAREL_OK);
    EXPECT_STATUS(harel_transport_publish(t, "us", "\"us\"", 4, "us", NULL), HAREL_OK);
    EXPECT_STATUS(harel_transport_publish(t, "none", "\"none\"", 4, NULL, NULL), HAREL_OK);
    SETTLE(t, filtered, fd); /* the commits may ring it; nothing of its filter */
    EXPECT(RINGS(t, any, fd_any, 10.0) >= 0.0);
    EXPECT_STATUS(harel_transport_publish(t, "hit", "\"hit\"", 2, "eu", NULL), HAREL_OK);
    EXPECT(RINGS(t, filtered, fd, 10.0) < 1.0);
    EXPECT_CALL(harel_transport_claim(t, "w", VIS, 2, eu, 1, &l, &e), &e, HAREL_OK);
    if (l != NULL) EXPECT_STR(l->event, "\"hit\"");
    ACK(t, l);
    SETTLE(t, filtered, fd);
    REARM(t, any, HAREL_OK); /* low, us, none: still there */
  }
  harel_watch_free(filtered);
  harel_watch_free(any);
  harel_transport_close(t);
}

/* A commit by another process (this program run again as a child, `--publish`) to the
 * file makes the watch readable within a few ms: here, within a second of the child's
 * exit (valgrind included). */
static void a_watch_rings_for_another_process(void) {
  double now = T0, took;
  char path[300];
  harel_transport *t = open_at(new_path(path, sizeof path), &now);
  harel_watch *w;
  int fd;
  if (t == NULL) return;
  w = WATCH(t, 0, NULL, 0, &fd);
  if (w != NULL) {
    SETTLE(t, w, fd);
    if (EXPECT(publish_from_a_child(path, "g", "\"from a child\""))) {
      took = RINGS(t, w, fd, 10.0);
      EXPECT(took >= 0.0 && took < 1.0);
      ACK(t, CLAIM(t, "w1", "\"from a child\""));
      CLAIM_EMPTY(t);
      SETTLE(t, w, fd);
    }
  }
  harel_watch_free(w);
  harel_transport_close(t);
}

/* The system clock: a lease of 0.3 s, then a park of 0.3 s (a nack with that delay). Once
 * rearm took in the lease (or the park), the watch rings at its end, not before: a rearm
 * before the end returns HAREL_EMPTY; the first after it, HAREL_OK; then the claim gets
 * the message again. */
static void a_watch_rings_at_a_lease_or_a_park_end(void) {
  char path[300];
  harel_transport *t = NULL;
  harel_lease *first = NULL, *next = NULL;
  harel_watch *w;
  harel_error *e = NULL;
  double from, until;
  int fd;
  EXPECT_CALL(harel_transport_open(new_path(path, sizeof path), NULL, &t, &e), &e, HAREL_OK);
  if (t == NULL) return;
  w = WATCH(t, 0, NULL, 0, &fd);
  if (w != NULL) {
    SETTLE(t, w, fd);
    PUBLISH(t, "g", "1");
    EXPECT(RINGS(t, w, fd, 10.0) >= 0.0);
    from = monotonic();
    EXPECT_CALL(harel_transport_claim(t, "w1", 0.3, 0, NULL, 0, &first, &e), &e, HAREL_OK);
    until = monotonic();
    CLAIM_EMPTY(t);
    RINGS_AT_THE_END(t, w, fd, from, until, 0.3, 10.0);
    EXPECT_CALL(harel_transport_claim(t, "w2", VIS, 0, NULL, 0, &next, &e), &e, HAREL_OK);
    if (first != NULL && next != NULL) EXPECT(next->seq == first->seq && next->attempts == 2);
    harel_lease_free(first);
    first = NULL;
    if (next != NULL) {
      from = monotonic();
      EXPECT_STATUS(harel_transport_nack(t, next, 0.3, NULL), HAREL_OK);
      until = monotonic();
      CLAIM_EMPTY(t);
      RINGS_AT_THE_END(t, w, fd, from, until, 0.3, 10.0);
      EXPECT_CALL(harel_transport_claim(t, "w3", VIS, 0, NULL, 0, &first, &e), &e, HAREL_OK);
      if (first != NULL) EXPECT(first->seq == next->seq && first->attempts == 3);
    }
    harel_lease_free(next);
    ACK(t, first);
    CLAIM_EMPTY(t);
    SETTLE(t, w, fd);
  }
  harel_watch_free(w);
  harel_transport_close(t);
}

/* One watch serves several threads: each polls its descriptor, rearms and claims without
 * waiting until HAREL_EMPTY, then polls again; a batch of groups published by another
 * transport is claimed by them, each message once. */
#define POLLERS 4
#define POLLED_GROUPS 12
typedef struct {
  harel_transport *t;
  harel_watch *w;
  int fd;
  pthread_mutex_t lock;
  int claimed[POLLED_GROUPS]; /* per group, under lock */
  int total;                  /* under lock */
  char problem[300];          /* under lock; the first one */
} shared_watch;

static void shared_problem(shared_watch *s, const char *what, harel_status status) {
  pthread_mutex_lock(&s->lock);
  if (s->problem[0] == '\0')
    snprintf(s->problem, sizeof s->problem, "%s: %s", what, harel_status_name(status));
  pthread_mutex_unlock(&s->lock);
}

static void *poll_and_claim(void *arg) {
  shared_watch *s = arg;
  double deadline = monotonic() + 30.0;
  for (;;) {
    harel_status st;
    int done;
    pthread_mutex_lock(&s->lock);
    done = s->total >= POLLED_GROUPS || s->problem[0] != '\0';
    pthread_mutex_unlock(&s->lock);
    if (done) return NULL;
    if (monotonic() > deadline) {
      shared_problem(s, "not every message claimed within 30 s", HAREL_OK);
      return NULL;
    }
    if (!readable_within(s->fd, 0.05)) continue;
    st = harel_watch_rearm(s->t, s->w, NULL);
    if (st == HAREL_EMPTY) continue;
    if (st != HAREL_OK) {
      shared_problem(s, "rearm", st);
      return NULL;
    }
    for (;;) {
      harel_lease *l = NULL;
      int group;
      st = harel_transport_claim(s->t, "poller", VIS, 0, NULL, 0, &l, NULL);
      if (st == HAREL_EMPTY) break;
      if (st != HAREL_OK || l == NULL) {
        shared_problem(s, "claim", st);
        return NULL;
      }
      group = atoi(l->group_id + 1);
      st = harel_transport_ack(s->t, l, NULL);
      harel_lease_free(l);
      if (st != HAREL_OK || group < 0 || group >= POLLED_GROUPS) {
        shared_problem(s, "ack", st);
        return NULL;
      }
      pthread_mutex_lock(&s->lock);
      s->claimed[group]++;
      s->total++;
      pthread_mutex_unlock(&s->lock);
    }
  }
}

static void one_watch_serves_several_threads(void) {
  double now = T0;
  char path[300], groups[POLLED_GROUPS][8];
  harel_message batch[POLLED_GROUPS];
  harel_transport *t = open_at(new_path(path, sizeof path), &now), *other = open_at(path, &now);
  pthread_t threads[POLLERS];
  int started[POLLERS], i;
  shared_watch s;
  memset(&s, 0, sizeof s);
  pthread_mutex_init(&s.lock, NULL);
  s.t = t;
  if (t != NULL && other != NULL) s.w = WATCH(t, 0, NULL, 0, &s.fd);
  if (s.w != NULL) {
    SETTLE(t, s.w, s.fd);
    for (i = 0; i < POLLERS; i++)
      started[i] = EXPECT(pthread_create(&threads[i], NULL, poll_and_claim, &s) == 0);
    pause_for(0.1);
    for (i = 0; i < POLLED_GROUPS; i++) {
      snprintf(groups[i], sizeof groups[i], "g%d", i);
      batch[i].group_id = groups[i];
      batch[i].event_json = "{}";
      batch[i].priority = 0;
      batch[i].routing_key = NULL;
    }
    EXPECT_STATUS(harel_transport_publish_many(other, batch, POLLED_GROUPS, NULL), HAREL_OK);
    for (i = 0; i < POLLERS; i++)
      if (started[i]) pthread_join(threads[i], NULL);
    if (s.problem[0] != '\0') test_fail(__FILE__, __LINE__, "a poller: %s", s.problem);
    EXPECT(s.total == POLLED_GROUPS);
    for (i = 0; i < POLLED_GROUPS; i++) EXPECT(s.claimed[i] == 1);
    CLAIM_EMPTY(other);
  }
  harel_watch_free(s.w);
  harel_transport_close(t);
  harel_transport_close(other);
  pthread_mutex_destroy(&s.lock);
}

/* Closing the transport makes each of its watches readable for good; the watch still
 * gives its descriptor, is refused by another transport's rearm, and is freed (twice:
 * harmless). A watch freed before the close is no trouble to it. */
static void a_closed_transport_leaves_its_watches_readable(void) {
  double now = T0;
  char path[300];
  harel_transport *t = open_at(new_path(path, sizeof path), &now), *u = open_at(path, &now);
  harel_watch *w = NULL, *early = NULL;
  int fd = -1, fd_early, again = -1, i;
  if (t != NULL && u != NULL) {
    w = WATCH(t, 0, NULL, 0, &fd);
    early = WATCH(t, 0, NULL, 0, &fd_early);
  }
  if (w != NULL && early != NULL) {
    SETTLE(t, w, fd);
    harel_watch_free(early);
    harel_transport_close(t);
    t = NULL;
    EXPECT(readable_within(fd, 10.0));
    for (i = 0; i < 3; i++) {
      pause_for(0.05);
      EXPECT(READABLE(fd));
    }
    EXPECT_STATUS(harel_watch_fd(w, &again, NULL), HAREL_OK);
    EXPECT(again == fd);
    EXPECT_BAD(NULL, harel_watch_rearm(u, w, ERR));
    EXPECT(strstr(or_null(harel_last_error()), "another transport") != NULL);
    PUBLISH(u, "g", "\"still\"");
    EXPECT(READABLE(fd));
    ACK(u, CLAIM(u, "w", "\"still\""));
    harel_watch_free(w);
    harel_watch_free(w);
    w = NULL;
  }
  harel_watch_free(w);
  harel_transport_close(t);
  harel_transport_close(u);
}

/* rearm is a read: while another process holds the write lock (busy timeout 0) it still
 * answers; on a handle whose tables another process dropped it fails HAREL_ERR_DATABASE,
 * and the descriptor becomes readable again. */
static void rearm_reads_without_the_write_lock_and_fails_as_a_read(void) {
  double now = T0;
  char path[300], release[300], line[32];
  harel_options *o = harel_options_new();
  harel_transport *t = NULL;
  harel_watch *w = NULL;
  harel_error *e = NULL;
  FILE *holder;
  int fd = -1;
  if (!EXPECT(o != NULL)) return;
  snprintf(release, sizeof release, "%s/release", temp_dir);
  EXPECT_CALL(harel_options_set_busy_timeout(o, 0.0, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_options_set_clock(o, test_clock, &now, &e), &e, HAREL_OK);
  EXPECT_CALL(harel_transport_open(new_path(path, sizeof path), o, &t, &e), &e, HAREL_OK);
  harel_options_free(o);
  if (t == NULL) return;
  w = WATCH(t, 0, NULL, 0, &fd);
  if (w != NULL) {
    SETTLE(t, w, fd);
    holder = hold_write_lock(path, release);
    if (EXPECT(holder != NULL)) {
      SETTLE(t, w, fd); /* the lock taken may ring; rearm answers */
      EXPECT(release_write_lock(holder, release));
    }
    PUBLISH(t, "g", "1");
    holder = hold_write_lock(path, release);
    if (EXPECT(holder != NULL)) {
      REARM(t, w, HAREL_OK);
      EXPECT(release_write_lock(holder, release));
    }
    if (EXPECT(python_run(DROP_TABLES, path, line, sizeof line) &&
               strcmp(line, "dropped\n") == 0)) {
      EXPECT_FAILS(HAREL_ERR_DATABASE, NULL, harel_watch_rearm(t, w, ERR));
      /* after an error the descriptor becomes readable again (within a second), so that
       * a loop that polls retries */
      EXPECT(readable_within(fd, 10.0));
    }
  }
  harel_watch_free(w);
  harel_transport_close(t);
}

/* With no descriptor left to the process (its limit of open files lowered and filled),
 * harel_transport_watch fails HAREL_ERR_DATABASE with no watch handed out (and, under
 * valgrind, nothing leaked of what it had made); with descriptors again, it works. */
static void a_watch_without_a_descriptor_left(void) {
  double now = T0;
  harel_transport *t = open_at(":memory:", &now);
  harel_watch *w;
  struct rlimit was, low;
  int fds[512], n = 0, fd = -1, lowered;
  if (t == NULL) return;
  lowered = EXPECT(getrlimit(RLIMIT_NOFILE, &was) == 0);
  if (lowered && was.rlim_cur > 256) {
    low = was;
    low.rlim_cur = 256;
    lowered = setrlimit(RLIMIT_NOFILE, &low) == 0;
  }
  if (lowered) {
    while (n < (int)N_OF(fds) && (fds[n] = dup(2)) >= 0) n++;
    if (EXPECT(n < (int)N_OF(fds) && errno == EMFILE)) {
      EXPECT_FAILS(HAREL_ERR_DATABASE, NULL,
                   (w = NOT_SET_WATCH, harel_transport_watch(t, 0, NULL, 0, &w, ERR)));
      EXPECT(w == NULL);
    }
    while (n > 0) close(fds[--n]);
    EXPECT(setrlimit(RLIMIT_NOFILE, &was) == 0);
  }
  w = WATCH(t, 0, NULL, 0, &fd);
  if (w != NULL) SETTLE(t, w, fd);
  harel_watch_free(w);
  harel_transport_close(t);
}

/* Every bad argument of the four functions: NULL t, out, w, fd; a bad filter; a watch of
 * another transport; a freed watch (fd and rearm refuse it, a second free is harmless);
 * and a *err already set. The fixture's queue is unchanged after all of them. */
static void bad_arguments_of_watch(void) {
  const char *const with_null[] = {"k", NULL};
  const char *const with_empty[] = {"k", ""};
  char was_text[512];
  double now = T0;
  fixture fx;
  harel_transport *u;
  harel_watch *w = NULL, *theirs = NULL, *fresh = NULL, *freed, *out;
  harel_error *stale = NULL;
  const harel_error *was;
  int fd = -1, theirs_fd = -1, fresh_fd = -1, freed_fd = -1, got;
  size_t i;
  if (!fixture_open(&fx)) return;
  u = open_at(":memory:", &now);
  if (u != NULL) {
    w = WATCH(fx.t, 0, NULL, 0, &fd);
    theirs = WATCH(u, 0, NULL, 0, &theirs_fd);
  }
  if (w == NULL || theirs == NULL) {
    harel_watch_free(w);
    harel_watch_free(theirs);
    harel_transport_close(u);
    FIXTURE_CLOSE(&fx);
    return;
  }
#define WATCH_BAD(parameter, t, min_priority, keys, n)                              \
  do {                                                                              \
    EXPECT_BAD((parameter), (out = NOT_SET_WATCH,                 \
                             harel_transport_watch((t), (min_priority), (keys), (n), \
                                                   &out, ERR)));                    \
    EXPECT(out == NULL);                                                            \
  } while (0)
  /* harel_transport_watch */
  WATCH_BAD("t", NULL, 0, NULL, 0);
  EXPECT_BAD("out", harel_transport_watch(fx.t, 0, NULL, 0, NULL, ERR));
  for (i = 0; i < N_OF(BAD_MIN_PRIORITY); i++)
    WATCH_BAD("min_priority", fx.t, BAD_MIN_PRIORITY[i], NULL, 0);
  WATCH_BAD("routing_keys", fx.t, 0, NULL, 1);
  WATCH_BAD("routing_keys", fx.t, 0, NULL, SIZE_MAX);
  WATCH_BAD("routing_keys", fx.t, 0, with_null, 2);
  WATCH_BAD("routing_keys", fx.t, 0, with_empty, 2);
  for (i = 0; i < N_BAD_UTF8; i++) {
    const char *const keys[] = {"k", BAD_UTF8[i]};
    WATCH_BAD("routing_keys", fx.t, 0, keys, 2);
  }
#undef WATCH_BAD
  /* harel_watch_fd */
  EXPECT_BAD("w", harel_watch_fd(NULL, &got, ERR));
  EXPECT_BAD("fd", harel_watch_fd(w, NULL, ERR));
  EXPECT_BAD(NULL, harel_watch_fd(NULL, NULL, ERR));
  /* harel_watch_rearm: NULLs, a watch of another transport (both ways) */
  EXPECT_BAD("t", harel_watch_rearm(NULL, w, ERR));
  EXPECT_BAD("w", harel_watch_rearm(fx.t, NULL, ERR));
  /* (the message says "made by another transport" without naming w) */
  EXPECT_BAD(NULL, harel_watch_rearm(u, w, ERR));
  EXPECT(strstr(or_null(harel_last_error()), "another transport") != NULL);
  EXPECT_BAD(NULL, harel_watch_rearm(fx.t, theirs, ERR));
  EXPECT(strstr(or_null(harel_last_error()), "another transport") != NULL);
  EXPECT(READABLE(fd) && READABLE(theirs_fd)); /* new, and no rearm refused cleared them */
  SETTLE(fx.t, w, fd); /* g1 in flight, d1 dead: nothing; each its own still works */
  SETTLE(u, theirs, theirs_fd);
  /* a freed watch: refused; freed again, harmlessly */
  freed = WATCH(fx.t, 0, NULL, 0, &freed_fd);
  if (freed != NULL) {
    harel_watch_free(freed);
    got = -7;
    EXPECT_BAD("w", harel_watch_fd(freed, &got, ERR));
    EXPECT_BAD("w", harel_watch_rearm(fx.t, freed, ERR));
    harel_watch_free(freed);
    harel_watch_free(freed);
  }
  harel_watch_free(NULL);
  /* a *err already set: refused, untouched, nothing handed out */
  EXPECT(harel_watch_fd(NULL, &got, &stale) == HAREL_ERR_ARGUMENT);
  if (EXPECT(stale != NULL)) {
    was = stale;
    snprintf(was_text, sizeof was_text, "%s", harel_error_message(stale));
    out = NOT_SET_WATCH;
    REFUSED(harel_transport_watch(fx.t, 0, NULL, 0, &out, &stale));
    EXPECT(out == NULL || out == NOT_SET_WATCH);
    got = -7;
    REFUSED(harel_watch_fd(w, &got, &stale));
    EXPECT(got == -7);
    fresh = WATCH(fx.t, 0, NULL, 0, &fresh_fd);
    if (fresh != NULL) {
      REFUSED(harel_watch_rearm(fx.t, fresh, &stale));
      EXPECT(READABLE(fresh_fd)); /* not cleared: the rearm did nothing */
    }
  }
  harel_error_free(stale);
  harel_watch_free(w);
  harel_watch_free(theirs);
  harel_watch_free(fresh);
  harel_transport_close(u);
  FIXTURE_CLOSE(&fx);
}

const test_case watch_tests[] = {
    TEST(a_watch_rings_for_commits_in_this_process),
    TEST(a_watch_looks_with_its_filter),
    TEST(a_watch_rings_for_another_process),
    TEST(a_watch_rings_at_a_lease_or_a_park_end),
    TEST(one_watch_serves_several_threads),
    TEST(a_closed_transport_leaves_its_watches_readable),
    TEST(rearm_reads_without_the_write_lock_and_fails_as_a_read),
    TEST(a_watch_without_a_descriptor_left),
    TEST(bad_arguments_of_watch),
    {NULL, NULL}};
