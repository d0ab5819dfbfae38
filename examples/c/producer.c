/*
 * producer: publishes the steps of some orders into a harel_transport queue.
 *
 *   producer DATABASE GROUPS MESSAGES_PER_GROUP
 *
 * Each order is a group: its steps are delivered in the order published, one at a time.
 * Orders get priorities 0 to 4 in turn, so a worker may ask for urgent ones only.
 *
 * Build: cc producer.c $(pkg-config --cflags --libs harel_transport) -o producer
 */
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
    snprintf(group_id, sizeof group_id, "order-%ld", g);
    for (m = 0; m < per_group; m++) {
      char event[128];
      snprintf(event, sizeof event,
               "{\"kind\":\"order.step\",\"id\":\"%s/%ld\",\"data\":{\"step\":%ld}}",
               group_id, m, m);
      /* the first publish into a group fixes its priority; NULL: no routing key */
      if (harel_transport_publish(queue, group_id, event, priority, NULL, &err) != HAREL_OK) {
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
