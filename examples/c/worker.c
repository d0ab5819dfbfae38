/*
 * worker: claims events from a harel_transport queue, handles them, acks them.
 *
 *   worker DATABASE WORKER_ID [--until-empty] [--log FILE]
 *
 * Events of one group come one at a time, in order; several workers (processes) may run
 * on the same database. An event whose handling fails is nacked with a delay: its group
 * waits RETRY_DELAY seconds, then the event comes back. To show that, every 7th event
 * fails the first time this worker sees it.
 *
 * The worker runs until interrupted (Ctrl-C) or, with --until-empty, until nothing has
 * been deliverable for longer than RETRY_DELAY (so parked retries have come back). It
 * ends with a line "WORKER_ID: N acked, N retried, N lost". With --log FILE it also writes
 * a line per acked event, "claimed_ns acking_ns seq group_id", stamped after the claim
 * returned and before the ack was sent (`make demo` checks per-group order with them).
 *
 * Build: cc worker.c $(pkg-config --cflags --libs harel_transport) -o worker
 */
#define _POSIX_C_SOURCE 200809L  /* nanosleep */

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "harel_transport.h"

#define VISIBILITY 30.0 /* seconds to handle an event before another worker may get it */
#define RETRY_DELAY 1.0 /* seconds a failed event waits before it is delivered again */
#define POLL_MS 100     /* pause between claims while nothing is deliverable */

static volatile sig_atomic_t stopping;
static void stop(int signal_number) {
  (void)signal_number;
  stopping = 1;
}

static void sleep_ms(long ms) {
  struct timespec pause = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&pause, NULL);
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

int main(int argc, char **argv) {
  harel_transport *queue = NULL;
  harel_error *err = NULL; /* a failed call sets it; NULL again before the next call */
  harel_status status;
  const char *worker_id;
  FILE *log = NULL;
  int i, until_empty = 0, error = 0;
  long acked = 0, retried = 0, lost = 0, idle_ms = 0;

  for (i = 3; i < argc; i++) {
    if (strcmp(argv[i], "--until-empty") == 0) {
      until_empty = 1;
    } else if (strcmp(argv[i], "--log") == 0 && i + 1 < argc && !log) {
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

  while (!stopping) {
    harel_lease *lease = NULL;
    long long claimed;
    /* min_priority 0 and no routing keys: any group */
    status = harel_transport_claim(queue, worker_id, VISIBILITY, 0, NULL, 0, &lease, &err);
    if (status == HAREL_EMPTY) {
      if (until_empty && idle_ms > RETRY_DELAY * 1000 + 5 * POLL_MS) break;
      sleep_ms(POLL_MS);
      idle_ms += POLL_MS;
      continue;
    }
    if (status != HAREL_OK) {
      report(worker_id, "claim", &err);
      error = 1;
      break;
    }
    idle_ms = 0;
    claimed = now_ns();

    if (handle(lease)) {
      long long acking = now_ns();
      status = harel_transport_ack(queue, lease, &err);
      if (status == HAREL_OK) {
        acked++;
        /* the lengths give every byte (another writer's group id may hold a NUL) */
        if (log)
          fprintf(log, "%lld %lld %" PRId64 " %.*s\n", claimed, acking, lease->seq,
                  (int)lease->group_id_len, lease->group_id);
        printf("%s: acked %.*s #%" PRId64 " %.*s\n", worker_id, (int)lease->group_id_len,
               lease->group_id, lease->seq, (int)lease->event_len, lease->event);
      }
    } else {
      status = harel_transport_nack(queue, lease, RETRY_DELAY, &err);
      if (status == HAREL_OK) {
        retried++;
        printf("%s: failed %.*s #%" PRId64 ", retry in %g s\n", worker_id,
               (int)lease->group_id_len, lease->group_id, lease->seq, RETRY_DELAY);
      }
    }
    if (status == HAREL_ERR_LEASE_LOST) {
      /* it took longer than VISIBILITY and another worker has the event now */
      lost++;
      printf("%s: lost %.*s #%" PRId64 "\n", worker_id, (int)lease->group_id_len,
             lease->group_id, lease->seq);
      harel_error_free(err);
      err = NULL;
    } else if (status != HAREL_OK) {
      report(worker_id, "ack/nack", &err);
      error = 1;
    }
    harel_lease_free(lease);
    if (error) break;
  }

  harel_transport_close(queue); /* closing cannot fail */
  if (log && fclose(log) != 0) error = 1;
  printf("%s: %ld acked, %ld retried, %ld lost\n", worker_id, acked, retried, lost);
  return error;
}
