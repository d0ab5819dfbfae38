/*
 * harel_test.h: the smallest test harness that does the job, header-only, for one C test
 * program. A test is a function `static void name(void)` listed in RUN(); EXPECT_*
 * record a failure (file:line, what was expected, the library's last error) and let the
 * test go on. main() ends with SUMMARY(), which prints "c: N passed, N failed" and
 * returns the exit status.
 *
 * Two ways to check a call, after the two ways the ABI reports an error:
 * - EXPECT_STATUS / EXPECT_ERROR / EXPECT_ARG: a call made with `err` NULL, checked
 *   through harel_last_error();
 * - EXPECT_CALL(call, &e, want): a call made with its own `harel_error *e` (NULL before),
 *   checked through it (and harel_last_error() agreeing), which it frees and sets NULL;
 * - EXPECT_FAILS(want, parameter, call): a failing call written with `ERR` as its `err`,
 *   made twice: with ERR NULL, then with ERR pointing to a NULL `harel_error *`.
 */
#ifndef HAREL_TEST_H
#define HAREL_TEST_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "harel_transport.h"

static int test_passed, test_failed, test_case_failed;
static const char *test_name;

static void test_fail(const char *file, int line, const char *format, ...) {
  va_list args;
  test_case_failed = 1;
  fprintf(stderr, "FAIL %s (%s:%d): ", test_name, file, line);
  va_start(args, format);
  vfprintf(stderr, format, args);
  va_end(args);
  fputc('\n', stderr);
}

#define RUN(test)                                                       \
  do {                                                                  \
    test_name = #test;                                                  \
    test_case_failed = 0;                                               \
    test();                                                             \
    if (test_case_failed) test_failed++; else test_passed++;            \
    printf("%s %s\n", test_case_failed ? "FAIL" : "ok  ", #test);       \
    fflush(stdout);                                                     \
  } while (0)

#define SUMMARY()                                                       \
  (printf("c: %d passed, %d failed\n", test_passed, test_failed),      \
   test_failed ? 1 : 0)

#define EXPECT(cond) expect_true((cond) ? 1 : 0, #cond, __FILE__, __LINE__)
static int expect_true(int ok, const char *what, const char *file, int line) {
  if (!ok) test_fail(file, line, "%s", what);
  return ok;
}

static const char *or_null(const char *s) { return s ? s : "(NULL)"; }

#define EXPECT_STR(got, want) expect_str((got), (want), #got, __FILE__, __LINE__)
static int expect_str(const char *got, const char *want, const char *expr, const char *file,
                      int line) {
  if (got != NULL && want != NULL && strcmp(got, want) == 0) return 1;
  test_fail(file, line, "%s is \"%s\", want \"%s\"", expr, or_null(got), or_null(want));
  return 0;
}

/* The call returns `want`; after an error harel_last_error() has a message, after
 * HAREL_OK or HAREL_EMPTY it is NULL. */
#define EXPECT_STATUS(call, want) expect_status((call), (want), #call, __FILE__, __LINE__)
static int expect_status(harel_status got, harel_status want, const char *expr,
                         const char *file, int line) {
  const char *message = harel_last_error();
  if (got != want) {
    test_fail(file, line, "%s returned %s, want %s (last error: %s)", expr,
              harel_status_name(got), harel_status_name(want), or_null(message));
    return 0;
  }
  if (want < 0 && (message == NULL || message[0] == '\0')) {
    test_fail(file, line, "%s: no harel_last_error() message after %s", expr,
              harel_status_name(got));
    return 0;
  }
  if (want >= 0 && message != NULL) {
    test_fail(file, line, "%s: harel_last_error() is \"%s\" after %s, want NULL", expr, message,
              harel_status_name(got));
    return 0;
  }
  return 1;
}

/* `name` stands in `message` as a word of its own (not inside a longer identifier). */
static int names_parameter(const char *message, const char *name) {
  size_t n = strlen(name);
  const char *at;
  for (at = strstr(message, name); at != NULL; at = strstr(at + 1, name)) {
    int ident_before = at > message && (at[-1] == '_' || (at[-1] >= 'a' && at[-1] <= 'z') ||
                                        (at[-1] >= 'A' && at[-1] <= 'Z') ||
                                        (at[-1] >= '0' && at[-1] <= '9'));
    char after = at[n];
    int ident_after = after == '_' || (after >= 'a' && after <= 'z') ||
                      (after >= 'A' && after <= 'Z') || (after >= '0' && after <= '9');
    if (!ident_before && !ident_after) return 1;
  }
  return 0;
}

/* The call is rejected with `want` and the message names `parameter`. */
#define EXPECT_ERROR(call, want, parameter)                                         \
  expect_error((call), (want), (parameter), #call, __FILE__, __LINE__)
static int expect_error(harel_status got, harel_status want, const char *parameter,
                        const char *expr, const char *file, int line) {
  const char *message = harel_last_error();
  if (!expect_status(got, want, expr, file, line)) return 0;
  if (parameter != NULL && !names_parameter(message, parameter)) {
    test_fail(file, line, "%s: the message \"%s\" does not name %s", expr, message, parameter);
    return 0;
  }
  return 1;
}

#define EXPECT_ARG(call, parameter) EXPECT_ERROR(call, HAREL_ERR_ARGUMENT, parameter)

/* A call made with `err` (pointing to a harel_error * that was NULL before the call)
 * returned `got`; it should be `want`, and the error object and harel_last_error() agree:
 * after HAREL_OK or HAREL_EMPTY *err stays NULL and harel_last_error() is NULL; after an
 * error *err is a new error of status `want` whose message is non-empty, names
 * `parameter` (NULL: any) and equals harel_last_error(). Frees *err and sets it NULL. */
#define EXPECT_CALL(call, err, want) \
  expect_call((call), (err), (want), NULL, #call, __FILE__, __LINE__)
#define EXPECT_CALL_NAMING(call, err, want, parameter) \
  expect_call((call), (err), (want), (parameter), #call, __FILE__, __LINE__)
static int expect_call(harel_status got, harel_error **err, harel_status want,
                       const char *parameter, const char *expr, const char *file, int line) {
  const char *last = harel_last_error(); /* read first: it lives until the next call */
  harel_error *e = *err;
  const char *message = e != NULL ? harel_error_message(e) : NULL;
  int ok = 1;
  *err = NULL;
  if (got != want) {
    test_fail(file, line, "%s returned %s, want %s (its error: %s)", expr, harel_status_name(got),
              harel_status_name(want), or_null(message));
    ok = 0;
  } else if (want >= 0) {
    if (e != NULL) test_fail(file, line, "%s: *err set after %s: %s", expr,
                             harel_status_name(got), or_null(message)), ok = 0;
    if (last != NULL) test_fail(file, line, "%s: harel_last_error() is \"%s\" after %s", expr,
                                last, harel_status_name(got)), ok = 0;
  } else if (e == NULL) {
    test_fail(file, line, "%s: %s but *err is NULL", expr, harel_status_name(got));
    ok = 0;
  } else {
    if (harel_error_status(e) != want)
      test_fail(file, line, "%s: harel_error_status is %s, want %s", expr,
                harel_status_name(harel_error_status(e)), harel_status_name(want)), ok = 0;
    if (message == NULL || message[0] == '\0')
      test_fail(file, line, "%s: no harel_error_message", expr), ok = 0;
    else if (parameter != NULL && !names_parameter(message, parameter))
      test_fail(file, line, "%s: the message \"%s\" does not name %s", expr, message, parameter),
          ok = 0;
    if (message != NULL && (last == NULL || strcmp(last, message) != 0))
      test_fail(file, line, "%s: harel_last_error() is \"%s\", the error's message \"%s\"", expr,
                or_null(last), message), ok = 0;
  }
  harel_error_free(e);
  return ok;
}

/* `call`, written with ERR as its `err` argument, fails with `want` and a message naming
 * `parameter` (NULL: any): once with ERR NULL (harel_last_error() has the message), once
 * with ERR pointing to a NULL harel_error * (the error handed out, see expect_call). */
#define EXPECT_FAILS(want, parameter, call)                                               \
  do {                                                                                    \
    harel_error *err_ = NULL, **ERR = NULL;                                               \
    harel_status got_ = (call);                                                           \
    expect_error(got_, (want), (parameter), #call " with err NULL", __FILE__, __LINE__);  \
    ERR = &err_;                                                                          \
    got_ = (call);                                                                        \
    expect_call(got_, &err_, (want), (parameter), #call, __FILE__, __LINE__);             \
  } while (0)
#define EXPECT_BAD(parameter, call) EXPECT_FAILS(HAREL_ERR_ARGUMENT, parameter, call)

#endif /* HAREL_TEST_H */
