/* The C face of `make bench-faces` (bench/faces/run.py): the reference every other face is
 * a ratio to. Usage: face <path|:memory:> <claim_ack|ack_and_claim> [messages] [groups]
 *
 * Opens the queue at synchronous NORMAL, publishes the messages over the groups with one
 * publish_many (untimed), then times the drain until empty and prints one line of JSON.
 * Every face does exactly this, with the same events and group ids. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <harel_transport.h>

static void die(const char *what, harel_status s, harel_error *err) {
  fprintf(stderr, "%s: %s: %s\n", what, harel_status_name(s), err ? harel_error_message(err) : "");
  exit(1);
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s <path|:memory:> <claim_ack|ack_and_claim> [messages] [groups]\n", argv[0]);
    return 2;
  }
  const char *path = argv[1], *mode = argv[2];
  int fused = strcmp(mode, "ack_and_claim") == 0;
  if (!fused && strcmp(mode, "claim_ack") != 0) {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  size_t n = argc > 3 ? strtoul(argv[3], NULL, 10) : 4000, groups = argc > 4 ? strtoul(argv[4], NULL, 10) : 50;

  harel_error *err = NULL;
  harel_options *o = harel_options_new();
  harel_options_set_synchronous_full(o, false, NULL);
  harel_transport *t;
  harel_status s = harel_transport_open(path, o, &t, &err);
  harel_options_free(o);
  if (s != HAREL_OK) die("open", s, err);

  /* The same events and group ids as every face: harel's Event JSON, so the drop-in reads them too. */
  harel_message *batch = calloc(n, sizeof *batch);
  char (*group)[24] = calloc(n, sizeof *group);
  char (*event)[128] = calloc(n, sizeof *event);
  for (size_t i = 0; i < n; i++) {
    snprintf(group[i], sizeof group[i], "g-%03zu", i % groups);
    snprintf(event[i], sizeof event[i],
             "{\"id\":\"ev-%zu\",\"kind\":\"bench\",\"created_time\":null,\"received_time\":null,\"data\":{\"n\":%zu}}", i, i);
    batch[i] = (harel_message){group[i], event[i], 0, NULL};
  }
  if ((s = harel_transport_publish_many(t, batch, n, &err)) != HAREL_OK) die("publish_many", s, err);

  size_t done = 0;
  harel_lease *lease = NULL, *next = NULL;
  double start = now_us();
  if (fused) {
    s = harel_transport_claim(t, "worker", 30.0, 0, NULL, 0, &lease, &err);
    while (s == HAREL_OK) {
      s = harel_transport_ack_and_claim(t, lease, "worker", 30.0, 0, NULL, 0, &next, &err);
      if (s != HAREL_OK && s != HAREL_EMPTY) die("ack_and_claim", s, err);
      harel_lease_free(lease);
      lease = next;
      done++;
    }
  } else {
    while ((s = harel_transport_claim(t, "worker", 30.0, 0, NULL, 0, &lease, &err)) == HAREL_OK) {
      harel_status a = harel_transport_ack(t, lease, &err);
      if (a != HAREL_OK) die("ack", a, err);
      harel_lease_free(lease);
      done++;
    }
  }
  double elapsed = now_us() - start;
  if (s != HAREL_EMPTY) die("claim", s, err);
  if (done != n) {
    fprintf(stderr, "drained %zu of %zu messages\n", done, n);
    return 1;
  }
  harel_transport_close(t);
  printf("{\"face\":\"c\",\"mode\":\"%s\",\"store\":\"%s\",\"messages\":%zu,\"us_per_msg\":%.3f}\n", mode,
         strcmp(path, ":memory:") == 0 ? "memory" : "file", done, elapsed / (double)done);
  free(batch);
  free(group);
  free(event);
  return 0;
}
