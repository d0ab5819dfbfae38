/* The C producer of the cross-language trace test (tests/tracing/run.py): for each routing
 * key, one message to group "c-<key>" whose traceparent header, written with
 * harel_traceparent_format, names the trace and span given on the command line.
 *
 *   c_producer QUEUE PREFIX TRACE_ID_HEX32 SPAN_ID_HEX16 KEY... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harel_transport.h"

static int hex_bytes(const char *hex, uint8_t *out, size_t n) {
  if (strlen(hex) != 2 * n) return -1;
  for (size_t i = 0; i < n; i++) {
    unsigned int byte;
    if (sscanf(hex + 2 * i, "%2x", &byte) != 1) return -1;
    out[i] = (uint8_t)byte;
  }
  return 0;
}

static int fail(const char *what, harel_error *err) {
  fprintf(stderr, "c_producer: %s: %s\n", what, err ? harel_error_message(err) : "bad arguments");
  harel_error_free(err);
  return 1;
}

int main(int argc, char **argv) {
  uint8_t trace_id[16], span_id[8];
  if (argc < 6 || hex_bytes(argv[3], trace_id, 16) || hex_bytes(argv[4], span_id, 8)) {
    return fail("usage: c_producer QUEUE PREFIX TRACE_ID SPAN_ID KEY...", NULL);
  }
  harel_error *err = NULL;
  char traceparent[HAREL_TRACEPARENT_LEN + 1];
  if (harel_traceparent_format(trace_id, span_id, 1, traceparent, &err) != HAREL_OK) return fail("format", err);
  harel_options *options = harel_options_new();
  if (harel_options_set_prefix(options, argv[2], &err) != HAREL_OK) return fail("prefix", err);
  harel_transport *t = NULL;
  harel_status opened = harel_transport_open(argv[1], options, &t, &err);
  harel_options_free(options);
  if (opened != HAREL_OK) return fail("open", err);
  for (int i = 5; i < argc; i++) {
    char group[128], event[128];
    snprintf(group, sizeof group, "c-%s", argv[i]);
    snprintf(event, sizeof event, "{\"from\":\"c\",\"key\":\"%s\"}", argv[i]);
    harel_header headers[] = {{"traceparent", traceparent}, {"content-type", "application/json"}};
    if (harel_transport_publish_headers(t, group, event, 0, argv[i], headers, 2, &err) != HAREL_OK) {
      harel_transport_close(t);
      return fail("publish", err);
    }
  }
  harel_transport_close(t);
  printf("%s\n", traceparent);
  return 0;
}
