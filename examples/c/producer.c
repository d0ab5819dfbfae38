/*
 * producer: publishes the steps of some orders into a harel_transport queue.
 *
 *   producer DATABASE GROUPS MESSAGES_PER_GROUP
 *
 * Each order is a group: its steps are delivered in the order published, one at a time.
 * Orders get priorities 0 to 4 in turn, so a worker may ask for urgent ones only. Every
 * event goes out with headers beside it: its content type, and a W3C `traceparent` (one
 * trace per order, one span per step, written by harel_traceparent_format) that a worker
 * reads back from its lease (`lease->headers`, `lease->n_headers`) to continue the trace.
 *
 * Build: cc producer.c $(pkg-config --cflags --libs harel_transport) -o producer
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "harel_transport.h"

static int parse_count(const char *text, long *out) {
  char *end;
  *out = strtol(text, &end, 10);
  return *text != '\0' && *end == '\0' && *out > 0 && *out <= 1000000;
}

/* Prints a failed call's error and frees it. */
static void report(const char *what, harel_error *err) {
  fprintf(stderr, "producer: %s: %s: %s\n", what, harel_status_name(harel_error_status(err)),
          harel_error_message(err));
  harel_error_free(err);
}

int main(int argc, char **argv) {
  harel_transport *queue = NULL;
  harel_error *err = NULL; /* each call sets it on error: the caller then frees it */
  long groups, per_group, g, m;

  if (argc != 4 || !parse_count(argv[2], &groups) || !parse_count(argv[3], &per_group)) {
    fprintf(stderr, "usage: %s DATABASE GROUPS MESSAGES_PER_GROUP\n", argv[0]);
    return 2;
  }

  /* NULL: the default options */
  if (harel_transport_open(argv[1], NULL, &queue, &err) != HAREL_OK) {
    report("open", err);
    return 1;
  }

  for (g = 0; g < groups; g++) {
    char group_id[32];
    int priority = (int)(g % (HAREL_MAX_PRIORITY + 1));
    /* the order's trace: 16 bytes, never all zero (an example's ids; use random ones) */
    uint8_t trace_id[16] = {0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6};
    trace_id[8] = (uint8_t)(g >> 24), trace_id[9] = (uint8_t)(g >> 16);
    trace_id[10] = (uint8_t)(g >> 8), trace_id[11] = (uint8_t)g;
    snprintf(group_id, sizeof group_id, "order-%ld", g);
    for (m = 0; m < per_group; m++) {
      char event[128], traceparent[HAREL_TRACEPARENT_LEN + 1];
      uint8_t span_id[8] = {0x00, 0xf0, 0x67, 0xaa};
      harel_header headers[2];
      span_id[4] = (uint8_t)(m >> 24), span_id[5] = (uint8_t)(m >> 16);
      span_id[6] = (uint8_t)(m >> 8), span_id[7] = (uint8_t)m;
      snprintf(event, sizeof event,
               "{\"kind\":\"order.step\",\"id\":\"%s/%ld\",\"data\":{\"step\":%ld}}",
               group_id, m, m);
      if (harel_traceparent_format(trace_id, span_id, 0x01 /* sampled */, traceparent, &err) !=
          HAREL_OK) {
        report("traceparent", err);
        harel_transport_close(queue);
        return 1;
      }
      /* (name, value) pairs, in order; copied by the publish */
      headers[0].name = "content-type";
      headers[0].value = "application/json";
      headers[1].name = "traceparent";
      headers[1].value = traceparent;
      /* the first publish into a group fixes its priority; NULL: no routing key */
      if (harel_transport_publish_headers(queue, group_id, event, priority, NULL, headers, 2,
                                          &err) != HAREL_OK) {
        report("publish", err);
        harel_transport_close(queue);
        return 1;
      }
    }
    printf("published %ld events into %s (priority %d)\n", per_group, group_id, priority);
  }

  harel_transport_close(queue); /* closing cannot fail */
  printf("producer: %ld events in %ld groups\n", groups * per_group, groups);
  return 0;
}
