/*
 * test_trace.c: the W3C Trace Context helpers, harel_traceparent_format,
 * harel_traceparent_parse and harel_tracestate_valid. The spec's rules are tested once, in
 * Rust (src/trace_context.rs, with the spec's and its test suite's cases); here, the
 * mapping: the bytes written, the outputs of a valid value and of one that is not (no
 * error), and every refusal the header names, with the outputs untouched after it.
 */
#include "harel_test.h"

/* The spec's example: trace-id 4bf92f3577b34da6a3ce929d0e0e4736, parent-id 00f067aa0ba902b7. */
static const uint8_t TRACE_ID[16] = {0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
                                     0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36};
static const uint8_t SPAN_ID[8] = {0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7};
static const uint8_t ZERO_TRACE_ID[16] = {0};
static const uint8_t ZERO_SPAN_ID[8] = {0};
#define SPEC_SAMPLED "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
#define SPEC_NOT_SAMPLED "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
#define FILL 0xa5 /* where the id outputs start, so a test sees what the call wrote */

/* The outputs of harel_traceparent_parse. */
typedef struct {
  uint8_t trace_id[16];
  uint8_t span_id[8];
  uint8_t flags;
  bool valid;
} parsed;

static void parsed_reset(parsed *p, bool valid) {
  memset(p->trace_id, FILL, sizeof p->trace_id);
  memset(p->span_id, FILL, sizeof p->span_id);
  p->flags = FILL;
  p->valid = valid;
}

static int all_bytes(const uint8_t *bytes, size_t n, uint8_t b) {
  size_t i;
  for (i = 0; i < n; i++)
    if (bytes[i] != b) return 0;
  return 1;
}

/* Nothing written: every output as parsed_reset(p, true) left it. */
static int untouched(const parsed *p) {
  return all_bytes(p->trace_id, 16, FILL) && all_bytes(p->span_id, 8, FILL) && p->flags == FILL &&
         p->valid;
}

/* harel_traceparent_parse of `value`, which must return HAREL_OK: once with err given, once
 * with err NULL, the two with the same outputs; whether the value was valid. */
#define PARSE(value, p) parse_at((value), (p), __FILE__, __LINE__)
static bool parse_at(const char *value, parsed *p, const char *file, int line) {
  parsed again;
  harel_error *e = NULL;
  parsed_reset(p, false);
  expect_call(harel_traceparent_parse(value, p->trace_id, p->span_id, &p->flags, &p->valid, &e),
              &e, HAREL_OK, NULL, "harel_traceparent_parse", file, line);
  parsed_reset(&again, true);
  expect_status(harel_traceparent_parse(value, again.trace_id, again.span_id, &again.flags,
                                        &again.valid, NULL),
                HAREL_OK, "harel_traceparent_parse with err NULL", file, line);
  if (memcmp(p->trace_id, again.trace_id, 16) != 0 || memcmp(p->span_id, again.span_id, 8) != 0 ||
      p->flags != again.flags || p->valid != again.valid)
    test_fail(file, line, "harel_traceparent_parse(\"%s\"): other outputs with err NULL", value);
  return p->valid;
}

/* `value` parses as valid, to the spec example's ids and `flags`. */
#define PARSES_TO_SPEC(value, flags) parses_to_spec_at((value), (flags), __FILE__, __LINE__)
static void parses_to_spec_at(const char *value, uint8_t flags, const char *file, int line) {
  parsed p;
  if (!parse_at(value, &p, file, line)) {
    test_fail(file, line, "\"%s\" is not valid", value);
    return;
  }
  if (memcmp(p.trace_id, TRACE_ID, 16) != 0 || memcmp(p.span_id, SPAN_ID, 8) != 0)
    test_fail(file, line, "\"%s\": other ids", value);
  if (p.flags != flags) test_fail(file, line, "\"%s\": flags %u, want %u", value, p.flags, flags);
}

/* `value` is not valid: HAREL_OK, *valid false and the ids and flags zeroed. */
#define NOT_A_TRACEPARENT(value) not_a_traceparent_at((value), __FILE__, __LINE__)
static void not_a_traceparent_at(const char *value, const char *file, int line) {
  parsed p;
  if (parse_at(value, &p, file, line)) test_fail(file, line, "\"%s\" is valid", value);
  if (!all_bytes(p.trace_id, 16, 0) || !all_bytes(p.span_id, 8, 0) || p.flags != 0)
    test_fail(file, line, "\"%s\": the outputs are not zeroed", value);
}

/* harel_tracestate_valid of `value`, which must return HAREL_OK, err given and NULL, and
 * say `want` both times. */
#define TRACESTATE(value, want) tracestate_at((value), (want), __FILE__, __LINE__)
static void tracestate_at(const char *value, bool want, const char *file, int line) {
  bool valid = !want, again = !want;
  harel_error *e = NULL;
  expect_call(harel_tracestate_valid(value, &valid, &e), &e, HAREL_OK, NULL,
              "harel_tracestate_valid", file, line);
  expect_status(harel_tracestate_valid(value, &again, NULL), HAREL_OK,
                "harel_tracestate_valid with err NULL", file, line);
  if (valid != want || again != want)
    test_fail(file, line, "harel_tracestate_valid(\"%s\") says %s, want %s", value,
              valid ? "valid" : "not valid", want ? "valid" : "not valid");
}

/* A tracestate of `n` members "barNN=NN", into buf. */
static const char *members(char *buf, size_t size, int n) {
  size_t at = 0;
  int i;
  buf[0] = '\0';
  for (i = 1; i <= n && at < size; i++)
    at += (size_t)snprintf(buf + at, size - at, "%sbar%02d=%02d", i > 1 ? "," : "", i, i);
  return buf;
}

/* The spec's examples, written: 55 characters and a NUL, into a buffer of exactly
 * HAREL_TRACEPARENT_LEN + 1 bytes (valgrind and ASan see a write past it), and nothing
 * after the NUL in a longer one. */
static void traceparent_format_writes_the_value(void) {
  char exact[HAREL_TRACEPARENT_LEN + 1], longer[HAREL_TRACEPARENT_LEN + 8];
  uint8_t ones[16], twos[8];
  harel_error *e = NULL;
  EXPECT(HAREL_TRACEPARENT_LEN == 55);
  EXPECT_CALL(harel_traceparent_format(TRACE_ID, SPAN_ID, 0x01, exact, &e), &e, HAREL_OK);
  EXPECT_STR(exact, SPEC_SAMPLED);
  memset(longer, 'x', sizeof longer);
  EXPECT_STATUS(harel_traceparent_format(TRACE_ID, SPAN_ID, 0x00, longer, NULL), HAREL_OK);
  EXPECT_STR(longer, SPEC_NOT_SAMPLED);
  EXPECT(strlen(longer) == HAREL_TRACEPARENT_LEN && longer[HAREL_TRACEPARENT_LEN + 1] == 'x');
  /* every byte as two lower-case digits; the flags as given */
  memset(ones, 0xff, sizeof ones);
  memset(twos, 0xab, sizeof twos);
  EXPECT_CALL(harel_traceparent_format(ones, twos, 0xfe, exact, &e), &e, HAREL_OK);
  EXPECT_STR(exact, "00-ffffffffffffffffffffffffffffffff-abababababababab-fe");
  /* an id of one bit set is not all zero */
  memset(ones, 0, sizeof ones);
  memset(twos, 0, sizeof twos);
  ones[15] = 1;
  twos[0] = 0x10;
  EXPECT_CALL(harel_traceparent_format(ones, twos, 0x01, exact, &e), &e, HAREL_OK);
  EXPECT_STR(exact, "00-00000000000000000000000000000001-1000000000000000-01");
}

/* What format writes, parse reads back: the ids and the flags, whichever they are. */
static void traceparent_round_trips(void) {
  char out[HAREL_TRACEPARENT_LEN + 1];
  uint8_t trace_id[16], span_id[8];
  parsed p;
  int i, flags;
  for (flags = 0; flags < 256; flags += 51) {
    for (i = 0; i < 16; i++) trace_id[i] = (uint8_t)(i * 17 + flags);
    for (i = 0; i < 8; i++) span_id[i] = (uint8_t)(255 - i * 31 - flags);
    if (!EXPECT_STATUS(harel_traceparent_format(trace_id, span_id, (uint8_t)flags, out, NULL),
                       HAREL_OK))
      continue;
    EXPECT(PARSE(out, &p));
    EXPECT(memcmp(p.trace_id, trace_id, 16) == 0 && memcmp(p.span_id, span_id, 8) == 0 &&
           p.flags == flags);
  }
}

/* The spec's examples parse; so do surrounding spaces and tabs, and a higher version (its
 * first 55 characters, its flags but the sampled bit dropped). */
static void traceparent_parse_reads_a_valid_value(void) {
  PARSES_TO_SPEC(SPEC_SAMPLED, 0x01);
  PARSES_TO_SPEC(SPEC_NOT_SAMPLED, 0x00);
  PARSES_TO_SPEC("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03", 0x03);
  PARSES_TO_SPEC(" \t" SPEC_SAMPLED "\t ", 0x01);
  PARSES_TO_SPEC("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", 0x01);
  PARSES_TO_SPEC("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-will-be",
                 0x01);
  PARSES_TO_SPEC("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff-", 0x01);
  PARSES_TO_SPEC("fe-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-02", 0x00);
}

/* A value that is not a traceparent is HAREL_OK with *valid false and the outputs zeroed,
 * never an error: the W3C test suite's invalid cases, and text that is not UTF-8. */
static void traceparent_parse_ignores_an_invalid_value(void) {
  static const char *const invalid[] = {
      "",
      " \t ",
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", /* upper-case */
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0A",
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01", /* all-zero ids */
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", /* version ff */
      "0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  /* short and long fields */
      "000-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e47360-00f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b70-01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-001",
      "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", /* separators */
      "00-4bf92f3577b34da6a3ce929d0e0e4736.00f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7 01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01.", /* version 00 ends there */
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-will-be",
      "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01.what-the-future-will-be",
      "\n" SPEC_SAMPLED, /* only spaces and tabs around it are ignored */
      SPEC_SAMPLED "\xff", /* not UTF-8 */
  };
  size_t i;
  for (i = 0; i < N_OF(invalid); i++) NOT_A_TRACEPARENT(invalid[i]);
  for (i = 0; i < N_BAD_UTF8; i++) NOT_A_TRACEPARENT(BAD_UTF8[i]);
}

/* Valid tracestates: the spec's examples, OWS and empty members, multi-tenant keys, 32
 * members; not valid: a key twice, 33 members, bad keys and values, not UTF-8. */
static void tracestate_valid_judges_the_value(void) {
  char buf[512], key[300];
  size_t i;
  TRACESTATE("", true);
  TRACESTATE("congo=t61rcWkgMzE", true);
  TRACESTATE("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", true);
  TRACESTATE("foo=1 \t , \t bar=2, \t baz=3", true);
  TRACESTATE(",, foo=1 ,\t, ", true);
  TRACESTATE("tenant@system=1,0tenant@s-y_s*t/m=2", true);
  TRACESTATE(members(buf, sizeof buf, 32), true);
  TRACESTATE(members(buf, sizeof buf, 33), false);
  TRACESTATE("foo=1,foo=1", false);
  TRACESTATE("foo=1,bar=2,foo=3", false);
  TRACESTATE("FOO=1", false);
  TRACESTATE("foo.bar=1", false);
  TRACESTATE("foo =1", false);
  TRACESTATE("foo@@bar=1,bar=2", false);
  TRACESTATE("foo@bar@baz=1", false);
  TRACESTATE("@foo=1", false);
  TRACESTATE("foo@=1", false);
  TRACESTATE("foo=bar=baz", false);
  TRACESTATE("foo=,bar=3", false);
  TRACESTATE("foo", false);
  TRACESTATE("foo=a\tb", false);
  memset(key, 'z', 256);
  strcpy(key + 256, "=1");
  TRACESTATE(key, true); /* a key of 256 characters */
  memset(key, 'z', 257);
  strcpy(key + 257, "=1");
  TRACESTATE(key, false); /* of 257 */
  for (i = 0; i < N_BAD_UTF8; i++) {
    snprintf(buf, sizeof buf, "foo=%s", BAD_UTF8[i]);
    TRACESTATE(buf, false);
    TRACESTATE(BAD_UTF8[i], false);
  }
}

/* format's refusals: each pointer NULL, each id all zero; `out` untouched after each. */
#define FORMAT_BAD(parameter, trace_id, span_id, out)                                   \
  do {                                                                                  \
    memset(buf, 'x', sizeof buf);                                                       \
    EXPECT_BAD((parameter), harel_traceparent_format((trace_id), (span_id), 1, (out), ERR)); \
    EXPECT(buf[0] == 'x' && buf[HAREL_TRACEPARENT_LEN] == 'x');                         \
  } while (0)
static void bad_arguments_of_traceparent_format(void) {
  char buf[HAREL_TRACEPARENT_LEN + 1];
  FORMAT_BAD("trace_id", NULL, SPAN_ID, buf);
  FORMAT_BAD("span_id", TRACE_ID, NULL, buf);
  FORMAT_BAD("out", TRACE_ID, SPAN_ID, NULL);
  FORMAT_BAD("trace_id", ZERO_TRACE_ID, SPAN_ID, buf);
  FORMAT_BAD("span_id", TRACE_ID, ZERO_SPAN_ID, buf);
  FORMAT_BAD("trace_id", ZERO_TRACE_ID, ZERO_SPAN_ID, buf);
}

/* parse's refusals: the value or an output NULL; every output untouched after each. */
#define PARSE_BAD(parameter, value, trace_id, span_id, flags, valid)                        \
  do {                                                                                      \
    parsed_reset(&p, true);                                                                 \
    EXPECT_BAD((parameter),                                                                 \
               harel_traceparent_parse((value), (trace_id), (span_id), (flags), (valid), ERR)); \
    EXPECT(untouched(&p));                                                                  \
  } while (0)
static void bad_arguments_of_traceparent_parse(void) {
  parsed p;
  PARSE_BAD("value", NULL, p.trace_id, p.span_id, &p.flags, &p.valid);
  PARSE_BAD("trace_id", SPEC_SAMPLED, NULL, p.span_id, &p.flags, &p.valid);
  PARSE_BAD("span_id", SPEC_SAMPLED, p.trace_id, NULL, &p.flags, &p.valid);
  PARSE_BAD("flags", SPEC_SAMPLED, p.trace_id, p.span_id, NULL, &p.valid);
  PARSE_BAD("valid", SPEC_SAMPLED, p.trace_id, p.span_id, &p.flags, NULL);
}

/* tracestate_valid's refusals: the value or valid NULL; *valid untouched. */
static void bad_arguments_of_tracestate_valid(void) {
  bool valid = true;
  EXPECT_BAD("value", harel_tracestate_valid(NULL, &valid, ERR));
  EXPECT(valid);
  EXPECT_BAD("valid", harel_tracestate_valid("foo=1", NULL, ERR));
}

/* A *err already set: the three calls refuse it, writing nothing. */
static void a_set_err_is_refused_by_the_trace_calls(void) {
  char was_text[512], buf[HAREL_TRACEPARENT_LEN + 1];
  harel_error *stale = NULL;
  const harel_error *was;
  parsed p;
  bool valid = true;
  EXPECT(harel_tracestate_valid(NULL, &valid, &stale) == HAREL_ERR_ARGUMENT);
  if (!EXPECT(stale != NULL)) return;
  was = stale;
  snprintf(was_text, sizeof was_text, "%s", harel_error_message(stale));
  memset(buf, 'x', sizeof buf);
  REFUSED(harel_traceparent_format(TRACE_ID, SPAN_ID, 1, buf, &stale));
  EXPECT(buf[0] == 'x' && buf[HAREL_TRACEPARENT_LEN] == 'x');
  parsed_reset(&p, true);
  REFUSED(harel_traceparent_parse(SPEC_SAMPLED, p.trace_id, p.span_id, &p.flags, &p.valid,
                                  &stale));
  EXPECT(untouched(&p));
  valid = false;
  REFUSED(harel_tracestate_valid("foo=1", &valid, &stale));
  EXPECT(!valid);
  harel_error_free(stale);
}

const test_case trace_tests[] = {
    TEST(traceparent_format_writes_the_value),
    TEST(traceparent_round_trips),
    TEST(traceparent_parse_reads_a_valid_value),
    TEST(traceparent_parse_ignores_an_invalid_value),
    TEST(tracestate_valid_judges_the_value),
    TEST(bad_arguments_of_traceparent_format),
    TEST(bad_arguments_of_traceparent_parse),
    TEST(bad_arguments_of_tracestate_valid),
    TEST(a_set_err_is_refused_by_the_trace_calls),
    {NULL, NULL}};
