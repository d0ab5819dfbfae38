/*
 * worker: claims events from a harel_transport queue, handles them, acks them.
 *
 *   worker DATABASE WORKER_ID [--until-empty]
 *
 * Events of one group come one at a time, in order; several workers (processes) may run
 * on the same database. An event whose handling fails is nacked with a delay: its group
 * waits RETRY_DELAY seconds, then the event comes back. To show that, every 7th event
 * fails the first time this worker sees it.
 *
 * The worker runs until interrupted (Ctrl-C) or, with --until-empty, until nothing has
 * been deliverable for longer than RETRY_DELAY (so parked retries have come back). It
 * ends with a line "WORKER_ID: N acked, N retried, N lost".
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

static void report(const char *worker_id, const char *what, harel_status status) {
  fprintf(stderr, "%s: %s: %s: %s\n", worker_id, what, harel_status_name(status),
          harel_last_error());
}

int main(int argc, char **argv) {
  harel_transport *queue = NULL;
  harel_status status;
  const char *worker_id;
  int until_empty, error = 0;
  long acked = 0, retried = 0, lost = 0, idle_ms = 0;

  until_empty = argc == 4 && strcmp(argv[3], "--until-empty") == 0;
  if (argc < 3 || argc > 4 || (argc == 4 && !until_empty)) {
    fprintf(stderr, "usage: %s DATABASE WORKER_ID [--until-empty]\n", argv[0]);
    return 2;
  }
  worker_id = argv[2];
  signal(SIGINT, stop);
  signal(SIGTERM, stop);

  status = harel_transport_open(argv[1], NULL, &queue);
  if (status != HAREL_OK) {
    report(worker_id, "open", status);
    return 1;
  }

  while (!stopping) {
    harel_lease *lease = NULL;
    /* min_priority 0 and no routing keys: any group */
    status = harel_transport_claim(queue, worker_id, VISIBILITY, 0, NULL, 0, &lease);
    if (status == HAREL_EMPTY) {
      if (until_empty && idle_ms > RETRY_DELAY * 1000 + 5 * POLL_MS) break;
      sleep_ms(POLL_MS);
      idle_ms += POLL_MS;
      continue;
    }
    if (status != HAREL_OK) {
      report(worker_id, "claim", status);
      error = 1;
      break;
    }
    idle_ms = 0;

    if (handle(lease)) {
      status = harel_transport_ack(queue, lease);
      if (status == HAREL_OK) {
        acked++;
        printf("%s: acked %s #%" PRId64 " %s\n", worker_id, lease->group_id, lease->seq,
               lease->event);
      }
    } else {
      status = harel_transport_nack(queue, lease, RETRY_DELAY);
      if (status == HAREL_OK) {
        retried++;
        printf("%s: failed %s #%" PRId64 ", retry in %g s\n", worker_id, lease->group_id,
               lease->seq, RETRY_DELAY);
      }
    }
    if (status == HAREL_ERR_LEASE_LOST) {
      /* it took longer than VISIBILITY and another worker has the event now */
      lost++;
      printf("%s: lost %s #%" PRId64 "\n", worker_id, lease->group_id, lease->seq);
    } else if (status != HAREL_OK) {
      report(worker_id, "ack/nack", status);
      error = 1;
    }
    harel_lease_free(lease);
    if (error) break;
  }

  status = harel_transport_close(queue);
  if (status != HAREL_OK) {
    report(worker_id, "close", status);
    error = 1;
  }
  printf("%s: %ld acked, %ld retried, %ld lost\n", worker_id, acked, retried, lost);
  return error;
}
