# The shell test scripts' harness, sourced after setting SUITE: `check NAME COMMAND...`
# counts a check, `finish` prints "SUITE: N passed, N failed" and exits non-zero on a failure.
passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok   $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1"; }
check() { # check NAME COMMAND...: passes when the command succeeds
  local name=$1
  shift
  if "$@"; then pass "$name"; else fail "$name"; fi
}
finish() {
  echo "$SUITE: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
}
