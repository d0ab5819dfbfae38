/*
 * The C check of tests/dist/run.sh: one publish, claim and ack through an installed
 * libharel_transport (the tarball's, the .deb's), on the queue file DATABASE.
 *
 *   smoke DATABASE      prints "smoke: ok VERSION" and exits 0, or names what failed
 */
#include <stdio.h>
#include <string.h>

#include "harel_transport.h"

static int failed(const char *what, harel_error *err) {
  fprintf(stderr, "smoke: %s: %s: %s\n", what, err ? harel_status_name(harel_error_status(err)) : "-",
          err ? harel_error_message(err) : "unexpected result");
  harel_error_free(err);
  return 1;
}

int main(int argc, char **argv) {
  harel_transport *queue = NULL;
  harel_lease *lease = NULL;
  harel_error *err = NULL;
  if (argc != 2) {
    fprintf(stderr, "usage: %s DATABASE\n", argv[0]);
    return 2;
  }
  if (harel_transport_open(argv[1], NULL, &queue, &err) != HAREL_OK) return failed("open", err);
  if (harel_transport_publish(queue, "order-1", "{\"n\":1}", 0, NULL, &err) != HAREL_OK)
    return failed("publish", err);
  if (harel_transport_claim(queue, "worker-1", 30.0, 0, NULL, 0, &lease, &err) != HAREL_OK)
    return failed("claim", err);
  if (strcmp(lease->group_id, "order-1") != 0 || lease->event_len != 7 ||
      memcmp(lease->event, "{\"n\":1}", 7) != 0)
    return failed("claim returned another message", NULL);
  if (harel_transport_ack(queue, lease, &err) != HAREL_OK) return failed("ack", err);
  harel_lease_free(lease);
  lease = NULL;
  if (harel_transport_claim(queue, "worker-1", 30.0, 0, NULL, 0, &lease, &err) != HAREL_EMPTY)
    return failed("claim after the ack: not empty", err);
  harel_transport_close(queue);
  printf("smoke: ok %s\n", harel_version());
  return 0;
}
