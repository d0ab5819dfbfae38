/*
 * epoll_worker: a worker on an epoll loop, with no thread blocked in a claim. The queue's
 * readiness descriptor (harel_transport_watch) sits in one epoll set with a signalfd
 * (SIGINT, SIGTERM: stop) and a timerfd (the run's deadline); the loop could serve
 * sockets, pipes and other timers the same way.
 *
 *   epoll_worker DATABASE [MESSAGES]
 *
 * When the watch's descriptor fires, the worker rearms it (harel_watch_rearm). HAREL_EMPTY:
 * nothing to claim yet (a spurious wake, or work another worker took); the descriptor is
 * clear until a commit, or a lease's or a park's end, rings it. HAREL_OK: it claims
 * batches without waiting (harel_transport_claim_many, wait 0), handles them and acks them
 * in one commit (harel_transport_ack_many), until a claim finds nothing; then back to
 * epoll_wait (level-triggered: a descriptor left readable fires again).
 *
 * So that a run shows it all on its own, a producer thread with a transport of its own (as
 * another part of the program, or another process, would be) publishes MESSAGES events
 * (default 200) into GROUPS groups, a small batch at a time with a pause between; every 7th
 * event fails the first time it comes and is nacked with a delay of RETRY_DELAY (its group
 * parks; the watch rings at the park's end). The worker stops once it has acked every event
 * the producer published, and checks that each group's events came in order: exit 0 and
 * "epoll_worker: N published, N acked, N retried, N wakes (N found nothing), in order".
 * SIGINT, SIGTERM or the deadline (DEADLINE seconds) stop it early: exit 1.
 *
 * Build: cc epoll_worker.c $(pkg-config --cflags --libs harel_transport) -pthread -o epoll_worker
 * (Linux only: epoll, signalfd, timerfd; the watch itself is Linux only.)
 */
#define _POSIX_C_SOURCE 200809L /* sigprocmask, nanosleep */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "harel_transport.h"

#define WORKER_ID "epoll-worker"
#define VISIBILITY 30.0   /* seconds to handle an event before another worker may get it */
#define RETRY_DELAY 0.2   /* seconds a failed event's group waits before it comes again */
#define BATCH 16          /* events claimed at once, each the head of its own group */
#define GROUPS 10         /* the producer's groups */
#define PUBLISH_BATCH 7   /* events the producer publishes at once */
#define DEADLINE 120      /* seconds the run may take */
#define MAX_MESSAGES 100000

/* ---- the producer: another part of the program, with a transport of its own ---------- */

typedef struct {
  const char *database;
  int messages;
  int published; /* read by the worker after the join */
  int failed;
  pthread_mutex_t lock;
  int stopping; /* under lock: the worker stops early */
} producer;

static int producer_stopping(producer *p) {
  int stopping;
  pthread_mutex_lock(&p->lock);
  stopping = p->stopping;
  pthread_mutex_unlock(&p->lock);
  return stopping;
}

static void *produce(void *arg) {
  producer *p = arg;
  harel_transport *t = NULL;
  harel_error *err = NULL;
  harel_message batch[PUBLISH_BATCH];
  char groups[PUBLISH_BATCH][16], events[PUBLISH_BATCH][32];
  int next_step[GROUPS] = {0};
  struct timespec between = {0, 5 * 1000 * 1000}; /* 5 ms between batches */
  if (harel_transport_open(p->database, NULL, &t, &err) != HAREL_OK) {
    fprintf(stderr, "producer: open: %s\n", harel_error_message(err));
    harel_error_free(err);
    p->failed = 1;
    return NULL;
  }
  while (p->published < p->messages && !producer_stopping(p)) {
    size_t n = 0;
    for (; n < PUBLISH_BATCH && p->published + (int)n < p->messages; n++) {
      int g = (p->published + (int)n) % GROUPS;
      snprintf(groups[n], sizeof groups[n], "order-%d", g);
      snprintf(events[n], sizeof events[n], "{\"step\":%d}", next_step[g]++);
      batch[n].group_id = groups[n];
      batch[n].event_json = events[n];
      batch[n].priority = 0;
      batch[n].routing_key = NULL;
    }
    /* one transaction, one commit: it rings every watch of the queue in this process */
    if (harel_transport_publish_many(t, batch, n, &err) != HAREL_OK) {
      fprintf(stderr, "producer: publish_many: %s\n", harel_error_message(err));
      harel_error_free(err);
      p->failed = 1;
      break;
    }
    p->published += (int)n;
    nanosleep(&between, NULL);
  }
  harel_transport_close(t);
  return NULL;
}

/* ---- the worker ------------------------------------------------------------------------ */

typedef struct {
  harel_transport *t;
  int next_step[GROUPS]; /* each group's next step: its events must come in order */
  int in_order;
  long acked, retried, wakes, found_nothing;
  int64_t failed_once[MAX_MESSAGES / 7 + 1]; /* the seqs failed once (every 7th event) */
  size_t n_failed;
} worker;

/* Prints a failed call's error and frees it. */
static void report(const char *what, harel_error **err) {
  fprintf(stderr, "epoll_worker: %s: %s: %s\n", what, harel_status_name(harel_error_status(*err)),
          harel_error_message(*err));
  harel_error_free(*err);
  *err = NULL;
}

/* The work: 1 done, 0 failed (every 7th event, the first time it comes). */
static int handle(worker *w, const harel_lease *lease) {
  size_t i;
  int group, step;
  if (lease->seq % 7 == 0) {
    for (i = 0; i < w->n_failed && w->failed_once[i] != lease->seq; i++) {
    }
    if (i == w->n_failed && w->n_failed < sizeof w->failed_once / sizeof w->failed_once[0]) {
      w->failed_once[w->n_failed++] = lease->seq;
      return 0;
    }
  }
  if (sscanf(lease->group_id, "order-%d", &group) != 1 || group < 0 || group >= GROUPS ||
      sscanf(lease->event, "{\"step\":%d}", &step) != 1 || step != w->next_step[group])
    w->in_order = 0;
  else
    w->next_step[group]++;
  return 1;
}

/* The watch fired: rearm, then claim without waiting until nothing comes. 0 on an error. */
static int on_watch(worker *w, harel_watch *watch) {
  harel_error *err = NULL;
  harel_lease *leases[BATCH];
  const harel_lease *done[BATCH];
  harel_status outcomes[BATCH];
  size_t n, n_done, i;
  int ok = 1;
  harel_status s = harel_watch_rearm(w->t, watch, &err);
  w->wakes++;
  if (s == HAREL_EMPTY) { /* nothing now: the descriptor is clear until the next ring */
    w->found_nothing++;
    return 1;
  }
  if (s != HAREL_OK) {
    report("rearm", &err);
    return 0;
  }
  for (;;) {
    s = harel_transport_claim_many(w->t, WORKER_ID, VISIBILITY, 0, NULL, 0, BATCH, 0.0, NULL,
                                   leases, &n, &err);
    if (s == HAREL_EMPTY) return 1; /* back to epoll_wait */
    if (s != HAREL_OK) {
      report("claim_many", &err);
      return 0;
    }
    n_done = 0;
    for (i = 0; i < n && ok; i++) {
      if (handle(w, leases[i])) {
        done[n_done++] = leases[i];
      } else if (harel_transport_nack(w->t, leases[i], RETRY_DELAY, &err) == HAREL_OK) {
        w->retried++; /* its group parks; the watch rings at the park's end */
      } else {
        report("nack", &err);
        ok = 0;
      }
    }
    /* the handled events acked in one transaction, one commit */
    if (ok && harel_transport_ack_many(w->t, done, n_done, outcomes, &err) != HAREL_OK) {
      report("ack_many", &err);
      ok = 0;
    }
    for (i = 0; i < n_done && ok; i++) {
      if (outcomes[i] == HAREL_OK) w->acked++; /* HAREL_ERR_LEASE_LOST: another has it */
    }
    for (i = 0; i < n; i++) harel_lease_free(leases[i]);
    if (!ok) return 0;
  }
}

enum { WATCH_EVENT, SIGNAL_EVENT, DEADLINE_EVENT };

/* Adds `fd` to the epoll set, readable, tagged `tag`. */
static int add(int epoll, int fd, int tag) {
  struct epoll_event e;
  memset(&e, 0, sizeof e);
  e.events = EPOLLIN; /* level-triggered */
  e.data.u32 = (uint32_t)tag;
  return epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &e);
}

int main(int argc, char **argv) {
  static worker w; /* large (the failed seqs): not on the stack */
  producer p;
  pthread_t producer_thread;
  harel_error *err = NULL;
  harel_watch *watch = NULL;
  sigset_t stop_signals;
  struct itimerspec deadline;
  int epoll = -1, signals = -1, timer = -1, watch_fd = -1, producing = 0, error = 0;
  int stopped = 0, messages = argc > 2 ? atoi(argv[2]) : 200;

  if (argc < 2 || messages < 1 || messages > MAX_MESSAGES) {
    fprintf(stderr, "usage: %s DATABASE [MESSAGES (1..%d)]\n", argv[0], MAX_MESSAGES);
    return 2;
  }
  memset(&p, 0, sizeof p);
  p.database = argv[1];
  p.messages = messages;
  pthread_mutex_init(&p.lock, NULL);
  w.in_order = 1;

  /* SIGINT and SIGTERM come through a signalfd: blocked in every thread (the producer's
   * too: it starts after this) */
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  if (sigprocmask(SIG_BLOCK, &stop_signals, NULL) != 0) {
    perror("sigprocmask");
    return 1;
  }

  if (harel_transport_open(argv[1], NULL, &w.t, &err) != HAREL_OK) {
    report("open", &err);
    return 1;
  }
  /* a watch for the claims this worker makes: min_priority 0, no routing keys */
  if (harel_transport_watch(w.t, 0, NULL, 0, &watch, &err) != HAREL_OK ||
      harel_watch_fd(watch, &watch_fd, &err) != HAREL_OK) {
    report("watch", &err);
    harel_watch_free(watch);
    harel_transport_close(w.t);
    return 1;
  }

  memset(&deadline, 0, sizeof deadline);
  deadline.it_value.tv_sec = DEADLINE;
  if ((epoll = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
      (signals = signalfd(-1, &stop_signals, SFD_CLOEXEC)) < 0 ||
      (timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC)) < 0 ||
      timerfd_settime(timer, 0, &deadline, NULL) != 0 || add(epoll, watch_fd, WATCH_EVENT) != 0 ||
      add(epoll, signals, SIGNAL_EVENT) != 0 || add(epoll, timer, DEADLINE_EVENT) != 0) {
    perror("epoll_worker: setting up the loop");
    error = 1;
  }

  if (!error) producing = pthread_create(&producer_thread, NULL, produce, &p) == 0;
  if (!error && !producing) {
    fprintf(stderr, "epoll_worker: could not start the producer\n");
    error = 1;
  }

  /* the loop: until every event is acked (the producer done: its count is final once
   * joined), a signal, the deadline or an error */
  while (!error && !stopped) {
    struct epoll_event events[3];
    int n = epoll_wait(epoll, events, 3, -1), i;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      perror("epoll_wait");
      error = 1;
      break;
    }
    for (i = 0; i < n && !error && !stopped; i++) {
      switch (events[i].data.u32) {
        case WATCH_EVENT:
          if (!on_watch(&w, watch)) error = 1;
          break;
        case SIGNAL_EVENT: {
          struct signalfd_siginfo info;
          if (read(signals, &info, sizeof info) == (ssize_t)sizeof info)
            fprintf(stderr, "epoll_worker: signal %u: stopping\n", (unsigned)info.ssi_signo);
          stopped = 1;
          break;
        }
        case DEADLINE_EVENT:
          fprintf(stderr, "epoll_worker: not done within %d s\n", DEADLINE);
          stopped = 1;
          break;
      }
    }
    if (w.acked == messages) break; /* every event the producer publishes, acked */
  }
  /* the producer's end: at once, or (stopped early) after the batch in hand */
  if (producing) {
    pthread_mutex_lock(&p.lock);
    p.stopping = 1;
    pthread_mutex_unlock(&p.lock);
    pthread_join(producer_thread, NULL);
  }
  pthread_mutex_destroy(&p.lock);

  /* out of the epoll set before the watch is freed (which closes its descriptor) */
  if (epoll >= 0 && watch_fd >= 0) epoll_ctl(epoll, EPOLL_CTL_DEL, watch_fd, NULL);
  harel_watch_free(watch);
  harel_transport_close(w.t);
  if (timer >= 0) close(timer);
  if (signals >= 0) close(signals);
  if (epoll >= 0) close(epoll);

  printf("epoll_worker: %d published, %ld acked, %ld retried, %ld wakes (%ld found nothing), %s\n",
         p.published, w.acked, w.retried, w.wakes, w.found_nothing,
         w.in_order ? "in order" : "OUT OF ORDER");
  return error || stopped || p.failed || w.acked != messages || p.published != messages ||
                 !w.in_order
             ? 1
             : 0;
}
