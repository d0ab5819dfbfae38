/*
 * worker: claims events from a harel_transport queue in batches, handles them, acks them.
 *
 *   worker DATABASE WORKER_ID [--until-empty] [--log FILE]
 *
 * Events of one group come one at a time, in order; several workers (processes) may run
 * on the same database. The worker claims up to BATCH events at once, each of a different
 * group; when nothing is deliverable the claim waits up to WAIT seconds (a commit to the
 * queue, by this process or another, wakes it at once). It acks the events of a batch it
 * handled and claims the next batch in one transaction: one commit per batch. An event
 * whose handling fails is nacked with a delay: its group waits RETRY_DELAY seconds, then
 * the event comes back. To show that, every 7th event fails the first time this worker
 * sees it. An event whose lease is near its end when its turn in the batch comes (the
 * events before it took long) has its lease extended first.
 *
 * The worker runs until interrupted (Ctrl-C or SIGTERM: it finishes the batch in hand, or
 * the wait in progress, within WAIT seconds) or, with --until-empty, until nothing has
 * been deliverable for WAIT seconds, longer than RETRY_DELAY (so parked retries have come
 * back). It ends with a line "WORKER_ID: N acked, N retried, N lost". With --log FILE it
 * also writes a line per acked event, "claimed_ns acking_ns seq group_id", stamped after
 * the claim returned and before the ack was sent (`make demo` checks per-group order with
 * them).
 *
 * Build: cc worker.c $(pkg-config --cflags --libs harel_transport) -o worker
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "harel_transport.h"

#define VISIBILITY 30.0          /* seconds to handle an event before another worker may get it */
#define RETRY_DELAY 1.0          /* seconds a failed event waits before it is delivered again */
#define BATCH 16                 /* events claimed at once, each the head of its own group */
#define WAIT (RETRY_DELAY + 0.5) /* seconds a claim waits for something deliverable */

static volatile sig_atomic_t stopping;
static void stop(int signal_number) {
  (void)signal_number;
  stopping = 1;
}

/* The work. It fails every 7th event the first time: the seqs it failed are kept here. */
#define MAX_FAILED 4096
static int64_t failed[MAX_FAILED];
static size_t n_failed;

static int handle(const harel_lease *lease) {
  size_t i;
  if (lease->seq % 7 != 0 || n_failed == MAX_FAILED) return 1;
  for (i = 0; i < n_failed; i++)
    if (failed[i] == lease->seq) return 1; /* the retry succeeds */
  failed[n_failed++] = lease->seq;
  return 0;
}

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Prints a failed call's error, frees it and empties *err for the next call. */
static void report(const char *worker_id, const char *what, harel_error **err) {
  fprintf(stderr, "%s: %s: %s: %s\n", worker_id, what,
          harel_status_name(harel_error_status(*err)), harel_error_message(*err));
  harel_error_free(*err);
  *err = NULL;
}

/* A lease that is no longer this worker's: it took longer than VISIBILITY and another
 * worker has the event now. Not an error; the error object is dropped. */
static void lost_lease(const char *worker_id, const harel_lease *lease, harel_error **err,
                       long *lost) {
  (*lost)++;
  printf("%s: lost %.*s #%" PRId64 "\n", worker_id, (int)lease->group_id_len, lease->group_id,
         lease->seq);
  harel_error_free(*err);
  *err = NULL;
}

int main(int argc, char **argv) {
  harel_transport *queue = NULL;
  harel_error *err = NULL; /* a failed call sets it; NULL again before the next call */
  harel_status status;
  harel_lease *batch[BATCH], *next[BATCH]; /* the leases in hand, and the next batch's */
  const harel_lease *handled[BATCH];        /* the batch's events to ack */
  harel_status outcomes[BATCH];             /* one per acked lease: HAREL_OK or LEASE_LOST */
  size_t n = 0, n_next, n_handled, i;
  const char *worker_id;
  FILE *log = NULL;
  int until_empty = 0, error = 0;
  long acked = 0, retried = 0, lost = 0;

  for (i = 3; i < (size_t)argc; i++) {
    if (strcmp(argv[i], "--until-empty") == 0) {
      until_empty = 1;
    } else if (strcmp(argv[i], "--log") == 0 && i + 1 < (size_t)argc && !log) {
      if (!(log = fopen(argv[++i], "w"))) {
        perror(argv[i]);
        return 1;
      }
    } else {
      argc = 0; /* unknown argument: print the usage */
    }
  }
  if (argc < 3) {
    fprintf(stderr, "usage: %s DATABASE WORKER_ID [--until-empty] [--log FILE]\n", argv[0]);
    return 2;
  }
  worker_id = argv[2];
  signal(SIGINT, stop);
  signal(SIGTERM, stop);

  if (harel_transport_open(argv[1], NULL, &queue, &err) != HAREL_OK) {
    report(worker_id, "open", &err);
    return 1;
  }

  /* min_priority 0 and no routing keys: any group; no cancel (a signal handler may not
   * fire one: a wait in progress ends by its timeout) */
  status = harel_transport_claim_many(queue, worker_id, VISIBILITY, 0, NULL, 0, BATCH, WAIT,
                                      NULL, batch, &n, &err);
  for (;;) {
    long long claimed, acking;
    if (status == HAREL_EMPTY) { /* nothing came within WAIT seconds */
      if (until_empty || stopping) break;
      status = harel_transport_claim_many(queue, worker_id, VISIBILITY, 0, NULL, 0, BATCH, WAIT,
                                          NULL, batch, &n, &err);
      continue;
    }
    if (status != HAREL_OK) {
      report(worker_id, "claim", &err);
      error = 1;
      break;
    }
    claimed = now_ns();

    n_handled = 0;
    for (i = 0; i < n && !error; i++) {
      harel_lease *lease = batch[i];
      struct timespec wall;
      clock_gettime(CLOCK_REALTIME, &wall);
      /* the events before it took half its visibility: give it a whole one again */
      if (lease->lock_expiry - ((double)wall.tv_sec + (double)wall.tv_nsec / 1e9) <
          VISIBILITY / 2) {
        status = harel_transport_extend(queue, lease, VISIBILITY, &err);
        if (status == HAREL_ERR_LEASE_LOST) {
          lost_lease(worker_id, lease, &err, &lost);
          continue;
        }
        if (status != HAREL_OK) {
          report(worker_id, "extend", &err);
          error = 1;
          break;
        }
      }
      if (handle(lease)) {
        handled[n_handled++] = lease;
        continue;
      }
      status = harel_transport_nack(queue, lease, RETRY_DELAY, &err);
      if (status == HAREL_OK) {
        retried++;
        printf("%s: failed %.*s #%" PRId64 ", retry in %g s\n", worker_id,
               (int)lease->group_id_len, lease->group_id, lease->seq, RETRY_DELAY);
      } else if (status == HAREL_ERR_LEASE_LOST) {
        lost_lease(worker_id, lease, &err, &lost);
      } else {
        report(worker_id, "nack", &err);
        error = 1;
      }
    }

    /* the handled events acked and the next batch claimed, in one transaction; when
     * stopping (or after an error), only the acks */
    n_next = 0;
    acking = now_ns();
    if (stopping || error)
      status = harel_transport_ack_many(queue, handled, n_handled, outcomes, &err);
    else
      status = harel_transport_ack_and_claim_many(queue, handled, n_handled, outcomes, worker_id,
                                                  VISIBILITY, 0, NULL, 0, BATCH, next, &n_next,
                                                  &err);
    if (status == HAREL_OK || status == HAREL_EMPTY) {
      for (i = 0; i < n_handled; i++) {
        const harel_lease *lease = handled[i];
        if (outcomes[i] != HAREL_OK) {
          lost_lease(worker_id, lease, &err, &lost);
          continue;
        }
        acked++;
        /* the lengths give every byte (another writer's group id may hold a NUL) */
        if (log)
          fprintf(log, "%lld %lld %" PRId64 " %.*s\n", claimed, acking, lease->seq,
                  (int)lease->group_id_len, lease->group_id);
        printf("%s: acked %.*s #%" PRId64 " %.*s\n", worker_id, (int)lease->group_id_len,
               lease->group_id, lease->seq, (int)lease->event_len, lease->event);
      }
    } else {
      report(worker_id, "ack", &err);
      error = 1;
    }
    for (i = 0; i < n; i++) harel_lease_free(batch[i]);
    n = 0;
    if (error || stopping) break;
    /* the next batch; none came with the acks: wait for one */
    memcpy(batch, next, n_next * sizeof next[0]);
    n = n_next;
    if (status == HAREL_EMPTY)
      status = harel_transport_claim_many(queue, worker_id, VISIBILITY, 0, NULL, 0, BATCH, WAIT,
                                          NULL, batch, &n, &err);
  }

  harel_transport_close(queue); /* closing cannot fail */
  if (log && fclose(log) != 0) error = 1;
  printf("%s: %ld acked, %ld retried, %ld lost\n", worker_id, acked, retried, lost);
  return error;
}
