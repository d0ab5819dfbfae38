/* Instructions per operation, phase by phase, for `make bench-icount` (compare.sh): run
 * under callgrind, each phase ends in a dump of what it executed. Instruction counts do not
 * depend on what else the machine is doing, so two builds of the library compare to a
 * fraction of a percent where wall-clock figures on a shared machine vary by ±20%.
 *
 * usage: ops DIR FULL   (DIR: an empty directory; FULL: 1 synchronous FULL, 0 NORMAL) */
#include <stdio.h>
#include <stdlib.h>
#include <valgrind/callgrind.h>

#include "harel_transport.h"

enum { MESSAGES = 2000, GROUPS = 100, BATCH = 100, CLAIMS = 500, LOOKS = 50 };

static void check(enum harel_status status, harel_error *err, const char *what) {
  if (status != HAREL_OK) {
    fprintf(stderr, "%s: %s\n", what, err ? harel_error_message(err) : harel_status_name(status));
    exit(1);
  }
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s DIR FULL\n", argv[0]);
    return 2;
  }
  char path[4096], group[32];
  harel_error *err = NULL;
  snprintf(path, sizeof path, "%s/queue.db", argv[1]);
  harel_options *options = harel_options_new();
  check(harel_options_set_synchronous_full(options, atoi(argv[2]) != 0, &err), err, "synchronous");
  harel_transport *t = NULL;
  check(harel_transport_open(path, options, &t, &err), err, "open");
  harel_options_free(options);

  CALLGRIND_ZERO_STATS;
  for (int i = 0; i < MESSAGES; i++) {
    snprintf(group, sizeof group, "g%d", i % GROUPS);
    check(harel_transport_publish(t, group, "{\"n\":1}", 0, NULL, &err), err, "publish");
  }
  CALLGRIND_DUMP_STATS_AT("publish");

  harel_message batch[BATCH];
  char groups[BATCH][32];
  for (int i = 0; i < BATCH; i++) {
    snprintf(groups[i], sizeof groups[i], "b%d", i);
    batch[i] = (harel_message){groups[i], "{\"n\":2}", 0, NULL};
  }
  for (int i = 0; i < MESSAGES / BATCH; i++) {
    check(harel_transport_publish_many(t, batch, BATCH, &err), err, "publish_many");
  }
  CALLGRIND_DUMP_STATS_AT("publish_many");

  /* A claim among 200 ready groups, each followed by nack(0): the state stays as it was. */
  for (int i = 0; i < CLAIMS; i++) {
    harel_lease *lease = NULL;
    check(harel_transport_claim(t, "w", 30.0, 0, NULL, 0, &lease, &err), err, "claim");
    check(harel_transport_nack(t, lease, 0.0, &err), err, "nack");
    harel_lease_free(lease);
  }
  CALLGRIND_DUMP_STATS_AT("claim_and_nack");

  for (int i = 0; i < LOOKS; i++) {
    harel_stats *stats = NULL;
    check(harel_transport_stats(t, &stats, &err), err, "stats");
    harel_stats_free(stats);
  }
  CALLGRIND_DUMP_STATS_AT("stats");

  /* Half the queue drained as claim then ack, the other half fused. */
  for (int i = 0; i < MESSAGES; i++) {
    harel_lease *lease = NULL;
    check(harel_transport_claim(t, "w", 30.0, 0, NULL, 0, &lease, &err), err, "claim");
    check(harel_transport_ack(t, lease, &err), err, "ack");
    harel_lease_free(lease);
  }
  CALLGRIND_DUMP_STATS_AT("claim_and_ack");

  harel_lease *lease = NULL;
  check(harel_transport_claim(t, "w", 30.0, 0, NULL, 0, &lease, &err), err, "claim");
  for (;;) {
    harel_lease *next = NULL;
    enum harel_status status = harel_transport_ack_and_claim(t, lease, "w", 30.0, 0, NULL, 0, &next, &err);
    harel_lease_free(lease);
    if (status == HAREL_EMPTY) break;
    check(status, err, "ack_and_claim");
    lease = next;
  }
  CALLGRIND_DUMP_STATS_AT("ack_and_claim");
  harel_transport_close(t);
  return 0;
}
