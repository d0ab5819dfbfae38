// The C++ face (include/harel_transport.hpp): every wrapper function, each error the
// wrapper maps to harel::Error, move semantics of the owning types, an empty claim as
// std::nullopt, and the header's version macros against harel_version(); the worker loop's
// (waits ended by a Cancel or interrupt() on other threads, batches as std::vector<Lease>,
// extend, LeaseKeeper's thread); the readiness descriptor (harel::Watch: readable when new,
// cleared by a rearm that finds nothing, rung by a commit and a park's end, its filter, its
// errors and moves, a closed Transport); the producers' calls (publish_with and
// publish_many_with: seq and duplicate, keys, delays, each error; key_retention; stats with the
// delayed groups apart); publishing inside a transaction (harel::Tx, Value and Rows:
// rows and messages committed together, every value kind, rollback and destruction, transaction()'s
// commit and its rollback on a throw, every error, moves, a closed Transport); sharded queues
// (open_shards over three files: each message claimed once, each listed item's shard,
// reopened, every list refused with the library's message; shard_count; shard_of; a
// transaction refused); headers (every publish form's overload, Lease::headers() in order and
// byte for byte, HeaderList over a peek and a dead page, each refusal named) and the W3C
// Trace Context helpers (format_traceparent, parse_traceparent, tracestate_valid); unique keys
// (harel::Unique and UniqueMode through publish_with, publish_many_with and a transaction: each
// outcome, Published::replaced, debounce on the clock, each refusal named); pause and resume
// (harel::PauseTarget, PauseKind and Pause through pause, resume and pauses: what each says,
// GroupState::Paused and stats' paused, the list's order and fields, each refusal with its
// message, a queue without the pauses table, threads sharing a Transport); expiry (Delivery's ttl
// and expires_at: the dead letter's reason "expired", stats()->expired, a batch, a transaction's
// ttl from its commit, each refusal with its message); the archive (Options::archive,
// Transport::archive's ArchivePage of Archived views: every field, std::nullopt for an unknown
// time, pages by next_cursor and a group's history in order, off by default, a sharded queue's
// shard after shard, each refusal with its message, moves, a file without the table); limits per
// routing key (harel::Limit and Rate through set_limit, remove_limit and limits' LimitList of
// LimitInfo views: a concurrency of 1 and an ack, a rate's tokens, a set replacing, a remove
// serving the held groups, the list's order and fields, moves, a sharded queue's sums, each
// refusal with its message); retries (Options::retry with harel::Retry and Jitter: a nack
// without a delay parked for the backoff that grows to its cap, the defaults, std::nullopt and a
// base of 0 removing it, each jitter's spread; Delivery::retry winning over the queue's by
// every publish form; harel::retry_delay of a peek page, std::nullopt when none; each refusal
// with its message). Run under AddressSanitizer + LeakSanitizer by `make test-cpp`;
// ends with "cpp: N passed, N failed".

#include "harel_transport.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#ifndef EXPECTED_VERSION
#error "build with -DEXPECTED_VERSION='\"MAJOR.MINOR.PATCH\"' (Cargo.toml's version)"
#endif

namespace fs = std::filesystem;

// ---- a tiny runner ----------------------------------------------------------------------------

static int passed = 0;
static int failed = 0;
static bool current_ok = true;

#define CHECK(cond)                                                              \
  do {                                                                           \
    if (!(cond)) {                                                               \
      std::fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
      current_ok = false;                                                        \
    }                                                                            \
  } while (0)

// Runs `body` expecting a harel::Error with `status`; returns its what() ("" if none).
template <class Body>
static std::string expect_error(harel_status status, Body body, int line) {
  try {
    body();
  } catch (const harel::Error &e) {
    if (e.status() != status) {
      std::fprintf(stderr, "  line %d: expected %s, got %s (%s)\n", line,
                   harel_status_name(status), harel_status_name(e.status_value()), e.what());
      current_ok = false;
    }
    return e.what();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "  line %d: expected harel::Error, got %s\n", line, e.what());
    current_ok = false;
    return "";
  }
  std::fprintf(stderr, "  line %d: expected %s, nothing thrown\n", line, harel_status_name(status));
  current_ok = false;
  return "";
}
#define EXPECT_ERROR(status, ...) expect_error(status, [&] { __VA_ARGS__; }, __LINE__)

static void run(const char *name, const std::function<void()> &test) {
  current_ok = true;
  try {
    test();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "  unexpected exception: %s\n", e.what());
    current_ok = false;
  }
  if (current_ok) {
    passed++;
    std::printf("ok   %s\n", name);
  } else {
    failed++;
    std::printf("FAIL %s\n", name);
  }
}

// ---- helpers ------------------------------------------------------------------------------

// A moved clock: ctx points at the seconds it returns.
static double fake_clock(void *ctx) { return *static_cast<double *>(ctx); }

struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "harel-cpp-XXXXXX").string();
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (!mkdtemp(buffer.data())) std::abort();
    path = buffer.data();
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  std::string file(const char *name) const { return (path / name).string(); }
};

// The queue's messages left, drained by one worker (acking each).
static int drain(harel::Transport &t, const char *worker) {
  int n = 0;
  for (auto lease = t.claim(worker, 30.0); lease; lease = t.ack_and_claim(*lease, worker, 30.0)) n++;
  return n;
}

// ---- what the types promise at compile time -----------------------------------------------

static_assert(!std::is_copy_constructible_v<harel::Transport> && !std::is_copy_assignable_v<harel::Transport>);
static_assert(std::is_nothrow_move_constructible_v<harel::Transport> &&
              std::is_nothrow_move_assignable_v<harel::Transport>);
static_assert(!std::is_copy_constructible_v<harel::Lease> && !std::is_copy_assignable_v<harel::Lease>);
static_assert(std::is_nothrow_move_constructible_v<harel::Lease> && std::is_nothrow_move_assignable_v<harel::Lease>);
static_assert(!std::is_copy_constructible_v<harel::Options> && std::is_nothrow_move_constructible_v<harel::Options>);
static_assert(!std::is_copy_constructible_v<harel::String> && std::is_nothrow_move_constructible_v<harel::String>);
static_assert(std::is_nothrow_destructible_v<harel::Transport> && std::is_nothrow_destructible_v<harel::Lease> &&
              std::is_nothrow_destructible_v<harel::Options> && std::is_nothrow_destructible_v<harel::String>);
static_assert(!std::is_copy_constructible_v<harel::Cancel> && std::is_nothrow_move_constructible_v<harel::Cancel> &&
              std::is_nothrow_destructible_v<harel::Cancel>);
static_assert(!std::is_copy_constructible_v<harel::LeaseKeeper> && !std::is_move_constructible_v<harel::LeaseKeeper> &&
              !std::is_move_assignable_v<harel::LeaseKeeper>);
static_assert(!std::is_copy_constructible_v<harel::Metrics> && std::is_nothrow_move_constructible_v<harel::Metrics> &&
              std::is_nothrow_destructible_v<harel::Metrics>);
static_assert(!std::is_copy_constructible_v<harel::Watch> && !std::is_copy_assignable_v<harel::Watch> &&
              std::is_nothrow_move_constructible_v<harel::Watch> && std::is_nothrow_move_assignable_v<harel::Watch> &&
              std::is_nothrow_destructible_v<harel::Watch>);
static_assert(sizeof(harel::Watch) == sizeof(void *), "a Watch is its pointer");
static_assert(!std::is_copy_constructible_v<harel::Stats> && std::is_nothrow_move_constructible_v<harel::Stats> &&
              std::is_nothrow_destructible_v<harel::Stats>);
static_assert(static_cast<int32_t>(harel::GroupState::Ready) == HAREL_GROUP_READY &&
              static_cast<int32_t>(harel::GroupState::Leased) == HAREL_GROUP_LEASED &&
              static_cast<int32_t>(harel::GroupState::Parked) == HAREL_GROUP_PARKED &&
              static_cast<int32_t>(harel::GroupState::Delayed) == HAREL_GROUP_DELAYED &&
              static_cast<int32_t>(harel::GroupState::Held) == HAREL_GROUP_HELD &&
              static_cast<int32_t>(harel::GroupState::Retrying) == HAREL_GROUP_RETRYING);
static_assert(std::is_same_v<decltype(std::declval<harel::Transport &>().publish_with("g", "{}")), harel::Published>);
static_assert(std::is_same_v<decltype(std::declval<harel::Transport &>().publish_many_with({})),
                             std::vector<harel::Published>>);
static_assert(std::is_same_v<decltype(std::declval<harel::Transport &>().rearm(std::declval<harel::Watch &>())), bool>);
static_assert(std::is_base_of_v<std::runtime_error, harel::Error>);
static_assert(sizeof(harel::Header) == sizeof(harel_header) && std::is_base_of_v<harel_header, harel::Header>);
static_assert(std::is_same_v<decltype(std::declval<const harel::Lease &>().headers()), harel::HeaderList>);
static_assert(std::is_same_v<decltype(*std::declval<harel::HeaderList>().begin()),
                             std::pair<std::string_view, std::string_view>>);
static_assert(std::is_same_v<decltype(harel::parse_traceparent("")), std::optional<harel::TraceParent>>);
static_assert(std::is_nothrow_copy_constructible_v<harel::HeaderList>, "a HeaderList is a view");
static_assert(sizeof(std::optional<harel::Lease>) <= 2 * sizeof(void *), "an optional lease is a pointer and a flag");
static_assert(harel::version_major == HAREL_TRANSPORT_VERSION_MAJOR &&
              harel::version_minor == HAREL_TRANSPORT_VERSION_MINOR &&
              harel::version_patch == HAREL_TRANSPORT_VERSION_PATCH);

// ---- the tests ----------------------------------------------------------------------------

static void test_version() {
  // The macros are Cargo.toml's version (EXPECTED_VERSION comes from the Makefile)...
  CHECK(std::string_view(HAREL_TRANSPORT_VERSION) == EXPECTED_VERSION);
  std::string numbers = std::to_string(HAREL_TRANSPORT_VERSION_MAJOR) + "." +
                        std::to_string(HAREL_TRANSPORT_VERSION_MINOR) + "." +
                        std::to_string(HAREL_TRANSPORT_VERSION_PATCH);
  CHECK(numbers == HAREL_TRANSPORT_VERSION);
  // ...and the run-time version is the same.
  CHECK(std::string_view(harel_version()) == numbers);
  CHECK(harel::version() == numbers);
  CHECK(harel::version_matches());
}

static void test_status_names_and_category() {
  CHECK(harel::status_name(HAREL_OK) == "HAREL_OK");
  CHECK(harel::status_name(HAREL_ERR_LEASE_LOST) == "HAREL_ERR_LEASE_LOST");
  CHECK(harel::status_name(-42) == "HAREL_UNKNOWN");
  CHECK(std::string_view(harel::category().name()) == "harel_transport");
  CHECK(harel::category().message(HAREL_ERR_BUSY) == "HAREL_ERR_BUSY");
  std::error_code code = harel::make_error_code(HAREL_ERR_DATABASE);
  CHECK(code.value() == HAREL_ERR_DATABASE && &code.category() == &harel::category());
  CHECK(code.message() == "HAREL_ERR_DATABASE");
  CHECK(&harel::category() == &harel::category());
}

static void test_error_type() {
  harel::Error e(HAREL_ERR_BUSY, "the lock was held");
  CHECK(e.status() == HAREL_ERR_BUSY);
  CHECK(e.status_value() == -3);
  CHECK(e.status_name() == "HAREL_ERR_BUSY");
  CHECK(std::string_view(e.what()) == "HAREL_ERR_BUSY: the lock was held");
  CHECK(e.code() == harel::make_error_code(HAREL_ERR_BUSY));
  // A status this header does not know (a newer library's) keeps its value.
  std::string what = [] {
    try {
      harel::detail::raise(-42, nullptr);
    } catch (const harel::Error &unknown) {
      CHECK(unknown.status_value() == -42);
      CHECK(unknown.status_name() == "HAREL_UNKNOWN");
      return std::string(unknown.what());
    }
    return std::string();
  }();
  CHECK(what == "HAREL_UNKNOWN: HAREL_UNKNOWN");
  // Caught as what it derives from.
  bool caught = false;
  try {
    harel::Transport::open("");
  } catch (const std::runtime_error &) {
    caught = true;
  }
  CHECK(caught);
}

static void test_options() {
  double now = 1000.0;
  // Every setter, on an lvalue...
  harel::Options o;
  o.prefix("app_q").create_schema(true).sync_url("http://127.0.0.1:9").sync_url(nullptr);
  o.auth_token("secret").auth_token(nullptr).sync_interval(2.5).busy_timeout(0.5);
  o.synchronous_full(false).max_attempts(3).max_attempts(0).clock(fake_clock, &now).clock(nullptr, nullptr);
  o.key_retention(60.0).archive(3600.0);
  CHECK(o.get() != nullptr);
  // ...and chained on a temporary, kept by move.
  std::string prefix = "other_q";
  harel::Options chained = harel::Options().prefix(prefix).busy_timeout(1.0).clock(fake_clock, &now);
  CHECK(chained.get() != nullptr);
  auto t = harel::Transport::open(":memory:", chained);
  t.publish("g", "{}");
  auto lease = t.claim("w", 10.0);
  CHECK(lease && lease->lock_expiry() == 1010.0);  // the moved clock
  // Each setter's error.
  harel::Options bad;
  std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, bad.prefix("1nope"));
  CHECK(what.find("prefix") != std::string::npos);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, bad.prefix(static_cast<const char *>(nullptr)));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, bad.sync_url(""));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, bad.sync_interval(0.0));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, bad.busy_timeout(-1.0));
  // A moved-from Options holds nothing: its setters are refused, open takes the defaults.
  harel::Options moved_to(std::move(bad));
  moved_to.busy_timeout(1.0);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, bad.create_schema(false));        // NOLINT: use after move, on purpose
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, bad.synchronous_full(true));      // NOLINT
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, bad.clock(fake_clock, &now));     // NOLINT
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, bad.auth_token("x"));             // NOLINT
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, bad.max_attempts(2));             // NOLINT
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, bad.archive(60.0));               // NOLINT
  auto defaults = harel::Transport::open(":memory:", bad);           // NOLINT
  CHECK(static_cast<bool>(defaults));
}

static void test_open() {
  TempDir dir;
  {
    auto t = harel::Transport::open(dir.file("q.db"));  // defaults
    CHECK(static_cast<bool>(t) && t.get() != nullptr);
    t.publish("g", "{\"n\":1}");
  }
  {
    std::string path = dir.file("q.db");  // a std::string path; the message survived the close
    auto t = harel::Transport::open(path, harel::Options().create_schema(false));
    CHECK(drain(t, "w") == 1);
  }
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, harel::Transport::open(""));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, harel::Transport::open(static_cast<const char *>(nullptr)));
  // Not a database.
  {
    std::ofstream junk(dir.file("junk.db"), std::ios::binary);
    for (int i = 0; i < 512; i++) junk << "this is not a database file. ";
  }
  EXPECT_ERROR(HAREL_ERR_DATABASE, harel::Transport::open(dir.file("junk.db")));
  // The schema missing with create_schema off.
  EXPECT_ERROR(HAREL_ERR_DATABASE,
               harel::Transport::open(dir.file("fresh.db"), harel::Options().create_schema(false)));
  // A libSQL server that is not there (nothing listens on loopback port 9).
  std::string what = EXPECT_ERROR(HAREL_ERR_CONNECT, harel::Transport::open("http://127.0.0.1:9"));
  CHECK(what.rfind("HAREL_ERR_CONNECT: ", 0) == 0);
  // Adopting a handle opened through the C ABI.
  harel_transport *raw = nullptr;
  CHECK(harel_transport_open(":memory:", nullptr, &raw, nullptr) == HAREL_OK);
  harel::Transport adopted(raw);
  CHECK(adopted.get() == raw);
  adopted.publish("g", "[]");
  CHECK(drain(adopted, "w") == 1);
}

static void test_publish() {
  auto t = harel::Transport::open(":memory:");
  t.publish("plain", "{\"a\":1}");
  t.publish("urgent", "{\"a\":2}", 4);
  std::string group = "routed", key = "eu";
  t.publish(group, std::string("{\"a\":3}"), 1, key);
  t.publish("routed-too", "3", 0, "us");
  t.publish("group-" + std::to_string(7), "null", 0, std::nullopt);  // temporaries live through the call
  // The priority floor and the routing keys see what publish stored.
  auto urgent = t.claim("w", 30.0, 4);
  CHECK(urgent && urgent->group_id() == "urgent" && urgent->event() == "{\"a\":2}");
  auto routed = t.claim("w", 30.0, 0, {"eu"});
  CHECK(routed && routed->group_id() == "routed" && routed->event() == "{\"a\":3}");
  std::vector<const char *> keys{"us", "ap"};
  auto routed_too = t.claim("w", 30.0, 0, keys);
  CHECK(routed_too && routed_too->group_id() == "routed-too");
  CHECK(!t.claim("w", 30.0, 0, {"ap"}));
  // Each error publish maps.
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish("", "{}"));
  std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish("g", "{not json"));
  CHECK(what.rfind("HAREL_ERR_ARGUMENT: ", 0) == 0 && what.find("JSON") != std::string::npos);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish("g", "{}", 5));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish("g", "{}", -1));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish("g", "{}", 0, ""));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish("g", static_cast<const char *>(nullptr)));
}

static void test_publish_many() {
  auto t = harel::Transport::open(":memory:");
  // A braced list, a std::vector, a C array, a std::array, and an empty batch.
  t.publish_many({{"a", "1"}, {"a", "2"}, {"b", "3", 2, "eu"}});
  std::string group = "c";
  std::vector<harel::Message> batch;
  for (int i = 0; i < 3; i++) batch.emplace_back(group, "{}");
  t.publish_many(batch);
  const harel::Message array[] = {{"d", "true"}, {"d", "false"}};
  t.publish_many(array);
  std::array<harel::Message, 1> one{{{"e", "0", 0, "eu"}}};
  t.publish_many(one);
  t.publish_many({});
  t.publish_many(harel::Span<harel::Message>(nullptr, 0));
  // In order within a group.
  auto first = t.claim("w", 30.0, 0, {"eu"});
  CHECK(first && (first->group_id() == "b" || first->group_id() == "e"));
  t.ack(*first);
  CHECK(drain(t, "w") == 8);
  // One bad message rejects the batch, and the error names it.
  std::string what =
      EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_many({{"ok", "{}"}, {"bad", "{oops"}, {"ok", "{}"}}));
  CHECK(what.find("messages[1]") != std::string::npos);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_many({{"ok", "{}"}, {"ok", "{}", 9}}));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_many(harel::Span<harel::Message>(nullptr, 2)));
  CHECK(!t.claim("w", 30.0));  // nothing was written
}

static void test_claim() {
  double now = 5000.0;
  auto t = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now));
  // Nothing deliverable: std::nullopt, not an error.
  std::optional<harel::Lease> none = t.claim("w", 30.0);
  CHECK(!none.has_value());
  t.publish("order-1", "{\"kind\":\"paid\"}", 2);
  auto lease = t.claim("worker-1", 30.0, 1);
  CHECK(lease.has_value() && static_cast<bool>(*lease));
  CHECK(lease->seq() == 1);
  CHECK(lease->group_id() == "order-1");
  CHECK(lease->group_id().size() == lease->get()->group_id_len);
  CHECK(lease->event() == "{\"kind\":\"paid\"}" && lease->event().size() == lease->get()->event_len);
  CHECK(lease->worker_id() == "worker-1");
  CHECK(lease->lock_expiry() == 5030.0);
  CHECK(lease->attempts() == 1);
  // One in flight per group.
  t.publish("order-1", "{\"kind\":\"shipped\"}");
  CHECK(!t.claim("worker-2", 30.0));
  // Each error claim maps.
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.claim("", 30.0));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.claim("__parked__", 30.0));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.claim("w", 0.0));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.claim("w", 30.0, 5));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.claim("w", 30.0, 0, {""}));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.claim("w", 30.0, 0, harel::RoutingKeys(nullptr, 1)));
  // The lease lapses: another worker gets the message, the first one's ack is refused.
  now += 31.0;
  auto again = t.claim("worker-2", 30.0);
  CHECK(again && again->seq() == 1 && again->worker_id() == "worker-2" && again->attempts() == 2);
  std::string what = EXPECT_ERROR(HAREL_ERR_LEASE_LOST, t.ack(*lease));
  CHECK(what.rfind("HAREL_ERR_LEASE_LOST: ", 0) == 0);
  t.ack(*again);
}

static void test_ack_and_nack() {
  double now = 100.0;
  auto t = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now));
  t.publish_many({{"g", "1"}, {"g", "2"}, {"g", "3"}, {"h", "4", 0, "eu"}});
  auto lease = t.claim("w", 30.0, 0, {"eu"});
  CHECK(lease && lease->event() == "4");
  t.ack(*lease);
  EXPECT_ERROR(HAREL_ERR_LEASE_LOST, t.ack(*lease));  // acked already
  EXPECT_ERROR(HAREL_ERR_LEASE_LOST, t.nack(*lease));
  lease = t.claim("w", 30.0);
  CHECK(lease && lease->event() == "1");
  // nack now: claimable at once, the same message.
  t.nack(*lease);
  auto same = t.claim("w", 30.0);
  CHECK(same && same->seq() == lease->seq());
  // nack with a delay parks the group until the clock passes it.
  t.nack(*same, 10.0);
  CHECK(!t.claim("w", 30.0));
  now += 11.0;
  lease = t.claim("w", 30.0);
  CHECK(lease && lease->event() == "1");
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.nack(*lease, -1.0));
  // ack_and_claim: the next one, with the claim's arguments; std::nullopt once empty.
  auto next = t.ack_and_claim(*lease, "w", 30.0, 0, {});
  CHECK(next && next->event() == "2");
  EXPECT_ERROR(HAREL_ERR_LEASE_LOST, t.ack_and_claim(*lease, "w", 30.0));  // acked: nothing claimed
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.ack_and_claim(*next, "w", 0.0));
  auto last = t.ack_and_claim(*next, "w", 30.0, 0);
  CHECK(last && last->event() == "3");
  auto empty = t.ack_and_claim(*last, "w", 30.0);
  CHECK(!empty.has_value());
  CHECK(!t.claim("w", 30.0));
}

static void test_dead_letters() {
  // max_attempts: the claim after the last attempt moves the message to the dead letters.
  auto t = harel::Transport::open(":memory:", harel::Options().max_attempts(2));
  t.publish_many({{"g", "\"poison\""}, {"g", "\"next\""}});
  for (int attempt = 1; attempt <= 2; attempt++) {
    auto lease = t.claim("w", 30.0, 0);
    CHECK(lease && lease->event() == "\"poison\"" && lease->attempts() == attempt);
    if (lease) t.nack(*lease);
  }
  auto after = t.claim("w", 30.0);  // poison is gone: the group goes on
  CHECK(after && after->event() == "\"next\"" && after->attempts() == 1);
  if (after) t.ack(*after);
  // dead_letter by the worker: the group goes on.
  t.publish_many({{"h", "\"doomed\""}, {"h", "\"fine\""}});
  auto doomed = t.claim("w", 30.0);
  CHECK(doomed && doomed->event() == "\"doomed\"");
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.dead_letter(*doomed, ""));
  t.dead_letter(*doomed, std::string("cannot be handled"));
  EXPECT_ERROR(HAREL_ERR_LEASE_LOST, t.dead_letter(*doomed, "again"));
  auto fine = t.claim("w", 30.0);
  CHECK(fine && fine->event() == "\"fine\"");
  if (fine) t.ack(*fine);
  CHECK(!t.claim("w", 30.0));
  harel::Lease moved = std::move(*doomed);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.dead_letter(*doomed, "moved from"));  // NOLINT
  harel::Transport none;
  CHECK(!none);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, none.dead_letter(moved, "no handle"));
}

static void test_lease_moves() {
  auto t = harel::Transport::open(":memory:");
  t.publish_many({{"a", "1"}, {"b", "2"}});
  auto claimed = t.claim("w", 30.0);
  CHECK(claimed.has_value());
  harel::Lease lease = std::move(*claimed);
  CHECK(!*claimed);  // moved from: empty, harmless
  CHECK(claimed->seq() == 0 && claimed->group_id().empty() && claimed->event().empty());
  CHECK(claimed->worker_id().empty() && claimed->lock_expiry() == 0.0 && claimed->get() == nullptr);
  CHECK(claimed->attempts() == 0);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.ack(*claimed));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.nack(*claimed));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.ack_and_claim(*claimed, "w", 30.0));
  CHECK(lease.group_id() == "a");
  // Move-assigning over a lease frees the one it held (LeakSanitizer would see it).
  auto second = t.claim("w", 30.0);
  CHECK(second && second->group_id() == "b");
  harel::Lease kept = std::move(*second);
  t.ack(kept);
  kept = std::move(lease);
  CHECK(kept.group_id() == "a");
  t.ack(kept);
  // release hands the C lease over.
  t.publish("c", "3");
  auto third = t.claim("w", 30.0);
  harel_lease *raw = third->release();
  CHECK(raw != nullptr && !*third);
  CHECK(harel_transport_ack(t.get(), raw, nullptr) == HAREL_OK);
  harel_lease_free(raw);
  harel::Lease empty(nullptr);
  CHECK(!empty);
}

static void test_transport_moves() {
  harel::Transport a = harel::Transport::open(":memory:");
  a.publish("g", "1");
  harel::Transport b(std::move(a));
  CHECK(!a && b);  // NOLINT: use after move, on purpose
  // A moved-from Transport: every call is refused, destroying it does nothing.
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, a.publish("g", "1"));                 // NOLINT
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, a.publish_many({{"g", "1"}}));        // NOLINT
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, a.claim("w", 30.0));                  // NOLINT
  auto lease = b.claim("w", 30.0);
  CHECK(lease && lease->event() == "1");
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, a.ack(*lease));                       // NOLINT
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, a.nack(*lease));                      // NOLINT
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, a.ack_and_claim(*lease, "w", 30.0));  // NOLINT
  b.ack(*lease);
  // Move-assigning over an open transport closes the one it held.
  harel::Transport c = harel::Transport::open(":memory:");
  c = std::move(b);
  CHECK(c && !b);  // NOLINT
  c.publish("g", "2");
  CHECK(drain(c, "w") == 1);
  // close: now, twice, then refused.
  c.close();
  c.close();
  CHECK(!c && c.get() == nullptr);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, c.publish("g", "3"));
  // Assigned later; returned from a function and kept in a container.
  harel::Transport later;
  later = harel::Transport::open(":memory:");
  later.publish("g", "4");
  CHECK(drain(later, "w") == 1);
  std::vector<harel::Transport> many;
  for (int i = 0; i < 3; i++) many.push_back(harel::Transport::open(":memory:"));
  for (auto &t : many) t.publish("g", "{}");
  for (auto &t : many) CHECK(drain(t, "w") == 1);
}

static void test_schema_strings() {
  harel::String sql = harel::schema_sql();
  CHECK(sql.view().find("CREATE TABLE IF NOT EXISTS harel_") != std::string_view::npos);
  harel::String prefixed = harel::schema_sql(std::string("app"));
  std::string_view view = prefixed;
  CHECK(view.find("app_") != std::string_view::npos && std::string_view(prefixed.c_str()) == view);
  harel::String upgrade = harel::schema_upgrade_sql("app");
  CHECK(upgrade.view().find("routing_key") != std::string_view::npos);
  harel::String moved = std::move(upgrade);
  CHECK(upgrade.view().empty() && std::string_view(upgrade.c_str()).empty());  // NOLINT
  CHECK(!moved.view().empty());
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, harel::schema_sql("no spaces"));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, harel::schema_upgrade_sql(static_cast<const char *>(nullptr)));
}

static void test_threads() {
  // One Transport from several threads: each call's own error, never another's.
  TempDir dir;
  auto t = harel::Transport::open(dir.file("threads.db"), harel::Options().synchronous_full(false));
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; k++) {
    threads.emplace_back([&, k] {
      for (int i = 0; i < 25; i++) {
        std::string group = "g" + std::to_string(k);
        try {
          if (k % 2 == 0) {
            t.publish(group, "{}");
          } else {
            t.publish(group, "{bad");
            wrong++;
          }
        } catch (const harel::Error &e) {
          if (k % 2 == 0 || e.status() != HAREL_ERR_ARGUMENT ||
              std::string_view(e.what()).find("JSON") == std::string_view::npos)
            wrong++;
        }
      }
    });
  }
  for (auto &thread : threads) thread.join();
  CHECK(wrong == 0);
  CHECK(drain(t, "w") == 50);
}

// ---- the worker loop: waits, batches, extend, cancel, interrupt, LeaseKeeper ---------------

static double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A fake clock that also notes the threads that read it: a waiting claim reads it once its
// wait has begun (its cancel and its Transport's interrupts are armed by then).
struct WatchedClock {
  double now = 1000.0;
  std::mutex mutex;
  std::set<std::thread::id> readers;
  static double read(void *ctx) {
    auto *c = static_cast<WatchedClock *>(ctx);
    std::lock_guard<std::mutex> lock(c->mutex);
    c->readers.insert(std::this_thread::get_id());
    return c->now;
  }
  bool wait_for_readers(std::size_t n) {
    for (int i = 0; i < 30000; i++) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (readers.size() >= n) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
  }
};

static void test_claim_wait() {
  double now = 2000.0;
  auto t = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now));
  CHECK(!t.claim_wait("w", 30.0, 0.0));
  auto start = std::chrono::steady_clock::now();
  CHECK(!t.claim_wait("w", 30.0, 0.3));
  CHECK(seconds_since(start) >= 0.25);
  t.publish("plain", "1");
  t.publish("keyed", "2", 1, "k");
  harel::Cancel unfired;
  auto lease = t.claim_wait("w1", 30.0, 30.0, &unfired, 1, {"k"});
  CHECK(lease && lease->group_id() == "keyed" && lease->event() == "2" && lease->worker_id() == "w1");
  CHECK(lease && lease->lock_expiry() == 2030.0 && lease->attempts() == 1);
  if (lease) t.ack(*lease);
  // Each error claim_wait maps.
  std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.claim_wait("w", 30.0, -1.0));
  CHECK(what.find("wait") != std::string::npos);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.claim_wait("w", 30.0, std::nan("")));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.claim_wait("", 30.0, 0.0));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.claim_wait("w", 0.0, 0.0));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.claim_wait("w", 30.0, 0.0, nullptr, 5));
  harel::Cancel fired;
  fired.fire();
  fired.fire();
  what = EXPECT_ERROR(HAREL_ERR_INTERRUPTED, t.claim_wait("w", 30.0, 30.0, &fired));
  CHECK(what.rfind("HAREL_ERR_INTERRUPTED: ", 0) == 0 && what.find("cancelled") != std::string::npos);
  // Nothing was claimed: "plain" is there.
  auto plain = t.claim_wait("w", 30.0, 0.0);
  CHECK(plain && plain->event() == "1");
  // A moved-from Cancel is no cancel; a moved-from Transport is refused.
  harel::Cancel moved = std::move(fired);
  CHECK(fired.get() == nullptr);  // NOLINT: use after move, on purpose
  fired.fire();                   // NOLINT: does nothing
  CHECK(!t.claim_wait("w", 30.0, 0.0, &fired));
  harel::Transport none;
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, none.claim_wait("w", 30.0, 0.0));
  none.interrupt();  // an empty Transport: nothing
}

static void test_claim_many() {
  double now = 3000.0;
  auto t = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now));
  CHECK(t.claim_many("w", 30.0, 4).empty());
  auto start = std::chrono::steady_clock::now();
  CHECK(t.claim_many("w", 30.0, 4, 0.3).empty());
  CHECK(seconds_since(start) >= 0.25);
  t.publish_many({{"a", "\"a1\""}, {"b", "\"b1\"", 2}, {"a", "\"a2\""}, {"c", "\"c1\"", 0, "k"}});
  // Distinct groups, as claim would hand them out; each a Lease of its own.
  std::vector<harel::Lease> batch = t.claim_many("w", 30.0, 2);
  CHECK(batch.size() == 2);
  CHECK(batch.size() == 2 && batch[0].group_id() != batch[1].group_id());
  std::vector<harel::Lease> rest = t.claim_many("w", 30.0, 5, 0.0, nullptr, 0, {"k"});
  CHECK(rest.size() == 1 && rest[0].group_id() == "c" && rest[0].lock_expiry() == 3030.0);
  CHECK(t.claim_many("w", 30.0, 5).empty());  // every group in flight
  for (const auto &lease : batch) t.ack(lease);
  t.ack(rest[0]);
  auto last = t.claim_many("w", 30.0, 5);
  CHECK(last.size() == 1 && last[0].event() == "\"a2\"");
  t.ack(last[0]);
  // Each error claim_many maps.
  std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.claim_many("w", 30.0, 0));
  CHECK(what.find("max") != std::string::npos);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.claim_many("w", 30.0, HAREL_MAX_CLAIM + 1));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.claim_many("w", 30.0, SIZE_MAX));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.claim_many("w", 30.0, 2, -1.0));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.claim_many("__parked__", 30.0, 2));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.claim_many("w", 30.0, 2, 0.0, nullptr, 0, {""}));
  harel::Cancel fired;
  fired.fire();
  t.publish("d", "1");
  EXPECT_ERROR(HAREL_ERR_INTERRUPTED, t.claim_many("w", 30.0, 2, 30.0, &fired));
  // A full batch: HAREL_MAX_CLAIM leases, each freed by its Lease (LeakSanitizer checks).
  std::vector<std::string> groups;
  for (int i = 0; i < HAREL_MAX_CLAIM; i++) groups.push_back("g" + std::to_string(i));
  std::vector<harel::Message> messages;
  for (const auto &group : groups) messages.emplace_back(group, "{}");
  t.publish_many(messages);
  auto full = t.claim_many("w", 30.0, HAREL_MAX_CLAIM);
  CHECK(full.size() == HAREL_MAX_CLAIM);  // "d" and 999 of the g's
  auto outcomes = t.ack_many(full);
  CHECK(outcomes.size() == full.size() &&
        std::all_of(outcomes.begin(), outcomes.end(), [](harel_status s) { return s == HAREL_OK; }));
  CHECK(drain(t, "w") == 1);
}

static void test_ack_many_and_ack_and_claim_many() {
  double now = 4000.0;
  auto t = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now));
  t.publish_many({{"a", "\"a1\""}, {"b", "\"b1\""}, {"c", "\"c1\""}, {"a", "\"a2\""}, {"b", "\"b2\""}});
  auto batch = t.claim_many("w", 30.0, 2);
  CHECK(batch.size() == 2);
  if (batch.size() != 2) return;
  t.ack(batch[1]);  // lost to the batch
  // The acks and the next batch in one transaction; the lost one reported.
  now += 1.0;
  harel::AckedAndClaimed done = t.ack_and_claim_many(batch, "w2", 30.0, 4);
  CHECK(done.outcomes.size() == 2 && done.outcomes[0] == HAREL_OK && done.outcomes[1] == HAREL_ERR_LEASE_LOST);
  std::set<std::string> events;
  for (const auto &lease : done.leases) {
    events.insert(std::string(lease.event()));
    CHECK(lease.worker_id() == "w2" && lease.lock_expiry() == 4031.0);
  }
  CHECK(events == std::set<std::string>({"\"a2\"", "\"b2\"", "\"c1\""}));
  // ack_many: the leases stay the caller's; acked twice in one call: the second lost.
  std::vector<harel::Lease> leases = std::move(done.leases);
  auto outcomes = t.ack_many(leases);
  CHECK(outcomes == std::vector<harel_status>(3, HAREL_OK));
  CHECK(leases.size() == 3 && leases[0]);
  outcomes = t.ack_many(leases);
  CHECK(outcomes == std::vector<harel_status>(3, HAREL_ERR_LEASE_LOST));
  CHECK(t.ack_many({}).empty());
  done = t.ack_and_claim_many({}, "w", 30.0, 3);  // no leases: a claim_many that does not wait
  CHECK(done.outcomes.empty() && done.leases.empty());
  // Argument errors: nothing acked.
  t.publish_many({{"x", "1"}, {"y", "2"}});
  auto two = t.claim_many("w", 30.0, 2);
  CHECK(two.size() == 2);
  harel::Lease taken = std::move(two[1]);
  std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.ack_many(two));
  CHECK(what.find("leases[1]") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.ack_and_claim_many(two, "w", 30.0, 2));
  CHECK(what.find("leases[1]") != std::string::npos);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.ack_and_claim_many({}, "w", 30.0, 0));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.ack_and_claim_many({}, "", 30.0, 2));
  two[1] = std::move(taken);
  outcomes = t.ack_many(two);  // both still the worker's
  CHECK(outcomes == std::vector<harel_status>(2, HAREL_OK));
  harel::Transport none;
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, none.ack_many({}));
  CHECK(!t.claim("w", 30.0));
}

static void test_extend() {
  double now = 5000.0;
  auto t = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now));
  t.publish("g", "1");
  auto lease = t.claim("w1", 30.0);
  CHECK(lease && lease->lock_expiry() == 5030.0);
  if (!lease) return;
  now += 10.0;
  t.extend(*lease, 60.0);
  CHECK(lease->lock_expiry() == 5070.0);
  now = 5069.0;
  CHECK(!t.claim("w2", 30.0));  // still w1's
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.extend(*lease, 0.0));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.extend(*lease, std::nan("")));
  CHECK(lease->lock_expiry() == 5070.0);  // unchanged
  now = 5071.0;
  t.extend(*lease, 30.0);  // lapsed, and no one claimed it since: still w1's
  CHECK(lease->lock_expiry() == 5101.0);
  now = 5102.0;
  auto other = t.claim("w2", 30.0);
  CHECK(other && other->seq() == lease->seq());
  std::string what = EXPECT_ERROR(HAREL_ERR_LEASE_LOST, t.extend(*lease, 30.0));
  CHECK(what.rfind("HAREL_ERR_LEASE_LOST: ", 0) == 0);
  CHECK(lease->lock_expiry() == 5101.0);
  harel::Lease empty(nullptr);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.extend(empty, 30.0));
  if (other) t.ack(*other);
  EXPECT_ERROR(HAREL_ERR_LEASE_LOST, t.extend(*other, 30.0));
}

// A Cancel fired on another thread ends a wait; interrupt() ends every wait on its
// Transport (two threads'), not later ones; other calls go ahead meanwhile.
static void test_cancel_and_interrupt_from_other_threads() {
  TempDir dir;
  WatchedClock clock;
  auto t = harel::Transport::open(dir.file("q.db"),
                                  harel::Options().synchronous_full(false).clock(WatchedClock::read, &clock));
  t.publish("g", "1");
  auto held = t.claim("w0", 30.0);  // nothing deliverable while it is held
  std::atomic<int> interrupted{0};
  std::atomic<int> wrong{0};
  auto waits = [&](auto call) {
    return std::thread([&, call] {
      try {
        call();
        wrong++;
      } catch (const harel::Error &e) {
        if (e.status() == HAREL_ERR_INTERRUPTED) interrupted++;
        else wrong++;
      }
    });
  };
  harel::Cancel cancel;
  auto start = std::chrono::steady_clock::now();
  std::thread cancelled = waits([&] { (void)t.claim_wait("w1", 30.0, 30.0, &cancel); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  cancel.fire();
  cancelled.join();
  CHECK(interrupted == 1 && wrong == 0 && seconds_since(start) < 15.0);
  {
    std::lock_guard<std::mutex> lock(clock.mutex);
    clock.readers.clear();
  }
  start = std::chrono::steady_clock::now();
  std::thread one = waits([&] { (void)t.claim_wait("w1", 30.0, 30.0); });
  std::thread many = waits([&] { (void)t.claim_many("w2", 30.0, 3, 30.0); });
  CHECK(clock.wait_for_readers(2));
  t.publish("g", "2");  // into g, in flight: the waiters look, and wait on
  t.interrupt();
  one.join();
  many.join();
  CHECK(interrupted == 3 && wrong == 0 && seconds_since(start) < 15.0);
  start = std::chrono::steady_clock::now();
  CHECK(!t.claim_wait("w1", 30.0, 0.3));  // a later wait waits
  CHECK(seconds_since(start) >= 0.25);
  if (held) t.ack(*held);
  CHECK(drain(t, "w") == 1);
}

// LeaseKeeper: with the system clock, a lease of 1.2 s kept for 2.5 s; stopped, it lapses;
// a lease lost while kept stops the keeper with HAREL_ERR_LEASE_LOST.
static void test_lease_keeper() {
  TempDir dir;
  auto t = harel::Transport::open(dir.file("q.db"), harel::Options().synchronous_full(false));
  t.publish("g", "1");
  auto lease = t.claim("w1", 1.2);
  CHECK(lease.has_value());
  if (!lease) return;
  double first_end = lease->lock_expiry();
  {
    harel::LeaseKeeper keeper(t, *lease, 1.2);  // extended every 0.4 s
    CHECK(keeper.keeping() && !keeper.error() && keeper.lock_expiry() >= first_end);
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    CHECK(!t.claim("w2", 30.0));  // kept past its visibility
    CHECK(keeper.keeping() && keeper.lock_expiry() > first_end + 1.2);
    CHECK(lease->lock_expiry() == first_end);  // the Lease itself is not written
    keeper.stop();
    CHECK(!keeper.keeping());
    keeper.stop();  // twice: nothing more
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  auto other = t.claim("w2", 30.0);  // stopped, it lapsed
  CHECK(other && other->seq() == lease->seq());
  // The constructor's extend throws as extend does.
  EXPECT_ERROR(HAREL_ERR_LEASE_LOST, harel::LeaseKeeper(t, *lease, 0.6));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, harel::LeaseKeeper(t, *other, 0.0));
  harel::Lease empty(nullptr);
  std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, harel::LeaseKeeper(t, empty, 1.0));
  CHECK(what.find("lease is NULL") != std::string::npos);
  // Lost while kept (acked under it): the keeper stops and says so.
  {
    harel::LeaseKeeper keeper(t, *other, 0.6);
    t.ack(*other);
    for (int i = 0; i < 500 && keeper.keeping(); i++) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(!keeper.keeping());
    auto error = keeper.error();
    CHECK(error && error->status() == HAREL_ERR_LEASE_LOST && std::string_view(error->what()).find("extend") != std::string_view::npos);
  }
  // Destroyed at once, not at its next extend (a third of 30 s away).
  auto start = std::chrono::steady_clock::now();
  t.publish("h", "2");
  auto third = t.claim("w3", 30.0);
  CHECK(third.has_value());
  if (third) {
    { harel::LeaseKeeper keeper(t, *third, 30.0); }
    CHECK(seconds_since(start) < 5.0);
    t.ack(*third);
  }
}

static void test_metrics() {
  harel::Transport t = harel::Transport::open(":memory:");
  t.publish_many({{"a", "1"}, {"b", "2"}});
  auto a = t.claim("w", 30.0);
  auto b = t.claim("w", 30.0);
  CHECK(a && b && !t.claim("w", 30.0));
  t.ack(*a);
  EXPECT_ERROR(HAREL_ERR_LEASE_LOST, t.ack(*a));
  t.nack(*b, 5.0);
  harel::Metrics m = t.metrics();
  CHECK(m->published == 2 && m->claimed == 2 && m->acked == 1 && m->nacked == 0 && m->parked == 1);
  CHECK(m->lost_leases == 1 && m->dead_lettered == 0 && m->busy_retries == 0);
  CHECK(m->publish.count == 1 && m->claim.count == 3 && m->ack.count == 2 && m->nack.count == 1);
  CHECK(m->claim.buckets[HAREL_LATENCY_BUCKETS - 1] <= m->claim.count && m->claim.sum > 0.0);
  CHECK(m->bounds[0] == 0.0001 && m->bounds[HAREL_LATENCY_BUCKETS - 1] == 10.0);
  // Moved, then refused on an empty Transport.
  harel::Metrics moved(std::move(m));
  CHECK(moved->published == 2);
  t.close();
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.metrics());
}

// ---- the readiness descriptor -------------------------------------------------------------

// Whether `fd` polls readable within `seconds` (0: now).
static bool readable(int fd, double seconds = 0.0) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    int n = poll(&p, 1, left > 0.0 ? static_cast<int>(left * 1000.0) + 1 : 0);
    if (n > 0) return (p.revents & POLLIN) != 0;
    if (n == 0 && std::chrono::steady_clock::now() >= deadline) return false;
    if (n < 0 && errno != EINTR) return false;
  }
}

// Nothing to claim: rearm is false and the descriptor then clear (a spurious ring between
// the two is allowed: rearm again, each time false).
static bool settles(harel::Transport &t, harel::Watch &w) {
  for (int i = 0; i < 100; i++) {
    if (t.rearm(w)) return false;
    if (!readable(w.fd())) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

static void test_watch() {
  TempDir dir;
  const std::string path = dir.file("watch.db");
  auto t = harel::Transport::open(path, harel::Options().synchronous_full(false));
  auto other = harel::Transport::open(path, harel::Options().synchronous_full(false));
  harel::Watch w = t.watch();
  CHECK(w && w.get() != nullptr);
  const int fd = w.fd();
  CHECK(fd >= 0 && w.fd() == fd && (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
  CHECK(readable(fd));  // new: readable
  CHECK(settles(t, w));
  // another Transport's publish rings it; rearm is true and leaves it readable
  other.publish("g", "\"one\"");
  CHECK(readable(fd, 10.0));
  CHECK(t.rearm(w));
  CHECK(readable(fd));
  std::vector<harel::Lease> batch = t.claim_many("w", 30.0, 8);
  CHECK(batch.size() == 1 && batch[0].event() == "\"one\"");
  CHECK(t.claim_many("w", 30.0, 8).empty());
  CHECK(settles(t, w));  // g in flight
  CHECK(t.ack_many(batch) == std::vector<harel_status>{HAREL_OK});
  CHECK(settles(t, w));
  // a park's end (the system clock: a nack of 0.3 s) rings it, not before
  other.publish("p", "\"parked\"");
  CHECK(readable(fd, 10.0) && t.rearm(w));
  auto lease = t.claim("w", 30.0);
  CHECK(lease.has_value());
  if (lease) {
    auto parked_at = std::chrono::steady_clock::now();
    t.nack(*lease, 0.3);
    bool came = false;
    while (!came && seconds_since(parked_at) < 10.0) {
      if (!readable(fd, 10.0 - seconds_since(parked_at))) break;
      double at = seconds_since(parked_at);
      came = t.rearm(w);
      if (came) CHECK(at >= 0.295);
    }
    CHECK(came);
    auto again = t.claim("w", 30.0);
    CHECK(again && again->seq() == lease->seq() && again->attempts() == 2);
    if (again) t.ack(*again);
  }
  CHECK(settles(t, w));
  // a filter: a floor and keys (copied), a watch of its own; rearm looks with it
  std::vector<std::string> key_strings{"eu"};
  std::vector<const char *> keys{key_strings[0].c_str()};
  harel::Watch eu = t.watch(2, keys);
  key_strings[0] = "xx";
  CHECK(settles(t, eu));
  other.publish("low", "1", 1, "eu");
  other.publish("us", "2", 3, "us");
  CHECK(settles(t, eu));
  CHECK(readable(fd, 10.0) && t.rearm(w));  // the unfiltered watch sees them
  other.publish("hit", "3", 2, "eu");
  CHECK(readable(eu.fd(), 10.0) && t.rearm(eu));
  auto hit = t.claim("w", 30.0, 2, {"eu"});
  CHECK(hit && hit->group_id() == "hit");
  if (hit) t.ack(*hit);
  CHECK(settles(t, eu));
  CHECK(drain(t, "w") == 2);
}

static void test_watch_errors_and_moves() {
  auto t = harel::Transport::open(":memory:");
  auto u = harel::Transport::open(":memory:");
  // a bad filter
  std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.watch(5));
  CHECK(what.find("min_priority") != std::string::npos);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.watch(-1));
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.watch(0, {"k", ""}));
  CHECK(what.find("routing_keys") != std::string::npos);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.watch(0, {"k", nullptr}));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.watch(0, {"\xff"}));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.watch(0, harel::RoutingKeys(nullptr, 1)));
  // a watch of another Transport
  harel::Watch w = t.watch();
  harel::Watch theirs = u.watch();
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, u.rearm(w));
  CHECK(what.rfind("HAREL_ERR_ARGUMENT: ", 0) == 0);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.rearm(theirs));
  CHECK(!t.rearm(w) && !u.rearm(theirs));
  // moves: the moved-from Watch is empty and refused, the moved-to works
  const int fd = w.fd();
  harel::Watch moved(std::move(w));
  CHECK(!w && w.get() == nullptr && moved && moved.fd() == fd);  // NOLINT: use after move, on purpose
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, w.fd());                     // NOLINT
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.rearm(w));                 // NOLINT
  CHECK(!t.rearm(moved));
  harel::Watch assigned = t.watch();
  assigned = std::move(moved);  // frees the one it held
  CHECK(assigned.fd() == fd && !moved);  // NOLINT
  harel::Watch none;
  CHECK(!none);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, none.fd());
  none.reset();
  // release hands the C watch over
  harel_watch *raw = assigned.release();
  CHECK(raw != nullptr && !assigned);
  int raw_fd = -1;
  CHECK(harel_watch_fd(raw, &raw_fd, nullptr) == HAREL_OK && raw_fd == fd);
  harel_watch_free(raw);
  // reset frees now
  harel::Watch short_lived = t.watch();
  short_lived.reset();
  CHECK(!short_lived);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, short_lived.fd());
  // an empty Transport: refused
  harel::Transport empty;
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, empty.watch());
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, empty.rearm(theirs));
  // a closed Transport: its watch readable for good, still freed by its destructor
  harel::Watch outliving = u.watch();
  CHECK(settles(u, outliving));
  u.close();
  CHECK(readable(outliving.fd(), 10.0));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(readable(outliving.fd()) && readable(theirs.fd()));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, u.rearm(outliving));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.rearm(outliving));
}

// ---- producers (issue 24): publish_with, publish_many_with, the key retention, stats ------

static void test_publish_with() {
  double now = 1000.0;
  auto t = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now));
  // No options: a publish that tells its seq.
  harel::Published plain = t.publish_with("a", "\"a1\"");
  CHECK(plain.seq > 0 && !plain.duplicate);
  // A key: stored once; again, in another group with another event: a duplicate, the first's
  // seq, nothing stored.
  harel::Published first = t.publish_with("b", "\"b1\"", {"order-42"}, 3, "eu");
  CHECK(first.seq > plain.seq && !first.duplicate);
  harel::Published again = t.publish_with("c", "\"c1\"", {"order-42"});
  CHECK(again.duplicate && again.seq == first.seq);
  std::string key = "from-a-string";
  harel::Published b2 = t.publish_with("b", "\"b2\"", {key});
  CHECK(!b2.duplicate && b2.seq > first.seq);
  harel::Delivery keyed{key};
  CHECK(t.publish_with("b", "\"b2\"", keyed).seq == b2.seq && t.publish_with("b", "\"b2\"", keyed).duplicate);
  CHECK(t.publish_with("b", "\"b2\"", {std::string(256, 'k')}).seq > b2.seq);  // the longest key
  // priority and routing key reach the group; acked, the key is still seen
  auto b1 = t.claim("w", 30.0, 3, {"eu"});
  CHECK(b1 && b1->seq() == first.seq && b1->event() == "\"b1\"");
  if (b1) t.ack(*b1);
  harel::Published after_ack = t.publish_with("b", "{}", {"order-42"});
  CHECK(after_ack.duplicate && after_ack.seq == first.seq);
  // A delay: the group is delayed until its time, its later messages wait behind it.
  harel::Published later = t.publish_with("d", "\"d1\"", {nullptr, 10.0});
  CHECK(!later.duplicate);
  t.publish("d", "\"d2\"");
  {
    harel::Stats s = t.stats();
    CHECK(s->now == 1000.0 && s->messages == 5 && s->groups == 3);  // a1, b2, b2 (256), d1, d2
    CHECK(s->ready == 2 && s->leased == 0 && s->parked == 0 && s->delayed == 1);
    CHECK(s->next_due_at == 1010.0);
  }
  CHECK(drain(t, "w") == 3);  // a1 and b's two; d waits
  now = 1010.5;
  auto d1 = t.claim("w", 30.0);
  CHECK(d1 && d1->seq() == later.seq && d1->event() == "\"d1\"" && !t.claim("w", 30.0));
  if (d1) t.ack(*d1);
  CHECK(drain(t, "w") == 1);  // d2
  // An instant by the transport's clock; a delay and an instant, the later of the two.
  t.publish_with("e", "1", {nullptr, 0.0, now + 100.0});
  t.publish_with("f", "1", {nullptr, 200.0, now + 100.0});
  t.publish_with("g", "1", {nullptr, 0.0, now - 100.0});  // passed: ready
  t.publish_with("h", "1", {nullptr, 0.0, -1.0});         // none
  {
    harel::Stats s = t.stats();
    CHECK(s->groups == 4 && s->ready == 2 && s->delayed == 2 && s->next_due_at == now + 100.0);
  }
  // The delayed state by its name, in a listing made through get().
  harel_group_page *page = nullptr;
  CHECK(harel_transport_groups(t.get(), static_cast<int32_t>(harel::GroupState::Delayed), nullptr, 10, &page,
                               nullptr) == HAREL_OK);
  if (page) {
    CHECK(page->n_groups == 2 && std::string_view(page->groups[0].group_id) == "e" &&
          static_cast<harel::GroupState>(page->groups[0].state) == harel::GroupState::Delayed &&
          page->groups[1].lock_expiry == now + 200.0);
  }
  harel_group_page_free(page);
  CHECK(drain(t, "w") == 2);  // g and h; e and f wait
  // Each error, as harel::Error; nothing written.
  std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("g", "{}", {""}));
  CHECK(what.rfind("HAREL_ERR_ARGUMENT: ", 0) == 0 && what.find("key") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("g", "{}", {std::string(257, 'k')}));
  CHECK(what.find("key") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("g", "{}", {"\xff"}));
  CHECK(what.find("key") != std::string::npos);
  for (double delay : {std::nan(""), -1.0, 315360000.5, HUGE_VAL}) {
    what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("g", "{}", {"k", delay}));
    CHECK(what.find("delay") != std::string::npos);
  }
  for (double instant : {std::nan(""), HUGE_VAL, now + 315360001.0}) {
    what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("g", "{}", {"k", 0.0, instant}));
    CHECK(what.find("not_before") != std::string::npos);
  }
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("g", "{nope", {"k"}));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("g", "{}", {"k"}, 5));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("", "{}", {"k"}));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("g", "{}", {"k"}, 0, ""));
  harel::Transport empty;
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, empty.publish_with("g", "{}", {"k"}));
  CHECK(what.find("t is NULL") != std::string::npos);
  CHECK(t.stats()->messages == 2);  // e and f, still delayed
  CHECK(!t.publish_with("g", "{}", {"k"}).duplicate);  // the refused calls took no key
}

static void test_publish_many_with() {
  double now = 1000.0;
  auto t = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now));
  harel::Published seen = t.publish_with("z", "0", {"seen"});
  // Each message's outcome, in order: new, none, repeated in the batch, seen before.
  std::vector<harel::Message> batch{{"g", "\"m0\""}, {"g", "\"m1\""}, {"h", "\"m2\"", 1, "k"}, {"i", "\"m3\""}};
  std::vector<harel::Delivery> deliveries{{"a"}, {}, {"a"}, {"seen"}};
  std::vector<harel::Published> out = t.publish_many_with(batch, deliveries);
  CHECK(out.size() == 4);
  if (out.size() == 4) {
    CHECK(!out[0].duplicate && !out[1].duplicate && out[2].duplicate && out[3].duplicate);
    CHECK(seen.seq < out[0].seq && out[0].seq < out[1].seq);
    CHECK(out[2].seq == out[0].seq && out[3].seq == seen.seq);
  }
  CHECK(t.stats()->messages == 3 && t.stats()->groups == 2);  // z, m0, m1; no h, no i
  // No deliveries: plain publishes that tell their seqs.
  std::vector<harel::Published> plain = t.publish_many_with({{"g", "\"m4\""}, {"g", "\"m5\""}});
  CHECK(plain.size() == 2 && plain[0].seq < plain[1].seq && !plain[0].duplicate && !plain[1].duplicate);
  // Braced lists of both; delays and instants per message.
  std::vector<harel::Published> timed = t.publish_many_with({{"p", "1"}, {"q", "2"}, {"r", "3"}},
                                                            {{nullptr, 10.0}, {nullptr, 0.0, now + 20.0}, {"r"}});
  CHECK(timed.size() == 3 && !timed[2].duplicate);
  {
    harel::Stats s = t.stats();
    CHECK(s->delayed == 2 && s->next_due_at == now + 10.0 && s->messages == 8);
  }
  // Empty: nothing written, nothing handed out.
  CHECK(t.publish_many_with({}).empty());
  CHECK(t.publish_many_with({}, {}).empty());
  // Errors, the message named by its index; nothing written, no key taken.
  std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_many_with(batch, {{"x"}, {""}, {}, {}}));
  CHECK(what.find("messages[1].key") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_many_with(batch, {{"x"}, {}, {nullptr, -1.0}, {}}));
  CHECK(what.find("messages[2].delay") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT,
                      t.publish_many_with(batch, {{"x"}, {}, {}, {nullptr, 0.0, now + 315360001.0}}));
  CHECK(what.find("messages[3].not_before") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_many_with({{"g", "1"}, {"g", "{"}}, {{"x"}, {}}));
  CHECK(what.find("messages[1].event_json") != std::string::npos);
  // deliveries neither empty nor one per message: refused before the C call
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_many_with(batch, {{"x"}}));
  CHECK(what.find("deliveries") != std::string::npos);
  harel::Transport empty;
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, empty.publish_many_with(batch, deliveries));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_many_with(harel::Span<harel::Message>(nullptr, 2)));
  CHECK(t.stats()->messages == 8);
  CHECK(!t.publish_with("x", "{}", {"x"}).duplicate);
}

static void test_key_retention() {
  double now = 1000.0;
  auto t = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now).key_retention(60.0));
  harel::Published first = t.publish_with("g", "1", {"k"});
  now = 1059.0;
  CHECK(t.publish_with("g", "2", {"k"}).duplicate);
  now = 1061.0;  // forgotten: stored again, remembered from now
  harel::Published second = t.publish_with("g", "3", {"k"});
  CHECK(!second.duplicate && second.seq > first.seq);
  now = 1062.0;
  CHECK(t.publish_with("g", "4", {"k"}).seq == second.seq);
  CHECK(drain(t, "w") == 2);
  // The default: a day.
  now = 1000.0;
  auto d = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now));
  first = d.publish_with("g", "1", {"k"});
  now = 1000.0 + 86399.0;
  CHECK(d.publish_with("g", "1", {"k"}).duplicate);
  now = 1000.0 + 86401.0;
  CHECK(!d.publish_with("g", "1", {"k"}).duplicate);
  // The setter's errors, and a moved-from Options.
  harel::Options o;
  o.key_retention(315360000.0).key_retention(0.5);
  for (double bad : {0.0, -1.0, std::nan(""), HUGE_VAL, 315360001.0}) {
    std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, o.key_retention(bad));
    CHECK(what.find("key_retention") != std::string::npos);
  }
  harel::Options moved(std::move(o));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, o.key_retention(60.0));  // NOLINT: use after move, on purpose
}

static void test_stats() {
  double now = 1000.0;
  auto t = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now));
  {
    harel::Stats s = t.stats();
    CHECK(s->now == 1000.0 && s->messages == 0 && s->groups == 0 && s->dead == 0);
    CHECK(s->oldest_ready_age == -1.0 && s->oldest_ready_seq == -1 && s->next_release_at == -1.0);
    CHECK(s->delayed == 0 && s->next_due_at == -1.0 && s.by_priority().empty());
  }
  t.publish("ready", "1", 1);
  t.publish("leased", "2");
  t.publish_with("delayed", "3", {nullptr, 50.0}, 1);
  auto leased = t.claim("w", 30.0, 0);
  CHECK(leased && leased->group_id() == "ready");  // first to arrive
  now = 1005.0;
  harel::Stats s = t.stats();
  CHECK(s->now == 1005.0 && s->messages == 3 && s->groups == 3);
  CHECK(s->ready == 1 && s->leased == 1 && s->parked == 0 && s->delayed == 1);
  CHECK(s->next_due_at == 1050.0 && s->oldest_ready_age == 5.0);
  harel::Span<harel_priority_stats> levels = s.by_priority();
  CHECK(levels.size() == 2);
  if (levels.size() == 2) {
    // level 1: ready (leased) and delayed; delayed is in groups, in none of the others
    CHECK(levels.begin()[0].priority == 0 && levels.begin()[0].groups == 1 && levels.begin()[0].ready == 1);
    CHECK(levels.begin()[1].priority == 1 && levels.begin()[1].groups == 2 && levels.begin()[1].leased == 1 &&
          levels.begin()[1].ready == 0 && levels.begin()[1].parked == 0);
  }
  harel::Stats moved(std::move(s));
  CHECK(moved->groups == 3 && (*moved).messages == 3);
  harel::Transport empty;
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, empty.stats());
}

// ---- publishing inside a transaction: Tx, Value, Rows, begin, transaction -----------------

static const char ORDERS[] = "CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT)";
static const char INSERT_ORDER[] = "INSERT INTO orders (id, note) VALUES (?1, ?2)";

// One integer a query returns, in a transaction of its own.
static std::int64_t scalar(harel::Transport &t, const char *sql) {
  auto [rows, published] = t.transaction([&](harel::Tx &tx) { return tx.query(sql); });
  CHECK(published.empty() && rows.size() == 1 && rows[0].size() == 1);
  return rows.size() == 1 && rows[0].size() == 1 ? std::get<std::int64_t>(rows[0][0]) : -1;
}

// Neither an application row nor a message was kept.
static bool nothing_kept(harel::Transport &t) {
  return scalar(t, "SELECT count(*) FROM orders") == 0 && t.stats()->messages == 0;
}

// Every call of an ended transaction throws HAREL_ERR_ARGUMENT saying `why`; rollback does nothing.
static void check_ended(harel::Tx &tx, const char *why) {
  for (const std::string &what :
       {EXPECT_ERROR(HAREL_ERR_ARGUMENT, tx.execute("SELECT 1")),
        EXPECT_ERROR(HAREL_ERR_ARGUMENT, tx.query("SELECT 1")),
        EXPECT_ERROR(HAREL_ERR_ARGUMENT, tx.publish("g", "1")),
        EXPECT_ERROR(HAREL_ERR_ARGUMENT, tx.publish_with("g", "1", {"k"})),
        EXPECT_ERROR(HAREL_ERR_ARGUMENT, tx.commit())})
    CHECK(what.find(why) != std::string::npos);
  tx.rollback();
  tx.rollback();
}

static_assert(!std::is_copy_constructible_v<harel::Tx> && !std::is_copy_assignable_v<harel::Tx> &&
              std::is_nothrow_move_constructible_v<harel::Tx> && std::is_nothrow_move_assignable_v<harel::Tx> &&
              std::is_nothrow_destructible_v<harel::Tx>);
static_assert(std::is_copy_constructible_v<harel::Value> && std::is_nothrow_move_constructible_v<harel::Value>);
static_assert(std::is_base_of_v<harel::Value::Variant, harel::Value>);
static_assert(std::is_same_v<decltype(std::declval<harel::Transport &>().begin()), harel::Tx>);
static_assert(std::is_same_v<decltype(std::declval<harel::Tx &>().query("")), harel::Rows>);
static_assert(std::is_same_v<decltype(std::declval<harel::Tx &>().commit()), std::vector<harel::Published>>);
static void no_value(harel::Tx &) {}
static int a_value(harel::Tx &) { return 1; }
static_assert(std::is_same_v<decltype(std::declval<harel::Transport &>().transaction(no_value)),
                             std::vector<harel::Published>>);
static_assert(std::is_same_v<decltype(std::declval<harel::Transport &>().transaction(a_value)),
                             std::pair<int, std::vector<harel::Published>>>);

static void test_tx_commits_rows_and_messages() {
  TempDir dir;
  double now = 1000.0;
  auto t = harel::Transport::open(dir.file("tx.db"), harel::Options().clock(fake_clock, &now));
  CHECK(t.transaction([](harel::Tx &tx) { tx.execute(ORDERS); }).empty());
  // A row and three messages: one with a routing key, one keyed, one after a query.
  harel::Tx tx = t.begin();
  CHECK(static_cast<bool>(tx) && tx.get() != nullptr);
  tx.execute(INSERT_ORDER, {42, "first order"});
  tx.publish("order-42", R"({"kind":"created"})", 2, "eu");
  tx.publish_with("order-42", R"({"kind":"priced"})", {"order-42-priced"});
  harel::Rows own = tx.query("SELECT note FROM orders WHERE id = ?1", {42});  // its own write
  CHECK(own.size() == 1 && own[0].size() == 1 && std::get<std::string>(own[0][0]) == "first order");
  tx.publish(std::string("order-42"), std::string(R"({"kind":"paid"})"));
  std::vector<harel::Published> published = tx.commit();
  CHECK(published.size() == 3);
  if (published.size() == 3) {
    CHECK(published[0].seq < published[1].seq && published[1].seq < published[2].seq);
    CHECK(!published[0].duplicate && !published[1].duplicate && !published[2].duplicate);
  }
  check_ended(tx, "committed");
  // Read back: the row, and the messages in order by another Transport on the file.
  CHECK(scalar(t, "SELECT count(*) FROM orders WHERE id = 42 AND note = 'first order'") == 1);
  auto other = harel::Transport::open(dir.file("tx.db"));
  for (std::size_t i = 0; i < published.size(); i++) {
    auto lease = other.claim("w", 30.0);
    CHECK(lease && lease->seq() == published[i].seq);
    if (lease) other.ack(*lease);
  }
  CHECK(!other.claim("w", 30.0));
  // The key again: a duplicate with the first message's seq; the row is new.
  harel::Tx again = t.begin();
  again.execute(INSERT_ORDER, {43, nullptr});
  again.publish_with("order-42", R"({"kind":"priced"})", {"order-42-priced"});
  std::vector<harel::Published> retried = again.commit();
  CHECK(retried.size() == 1 && retried[0].duplicate && published.size() == 3 &&
        retried[0].seq == published[1].seq);
  CHECK(scalar(t, "SELECT count(*) FROM orders WHERE id = 43 AND note IS NULL") == 1);
  // Delivery options reach the message: delayed 10 s.
  harel::Tx later = t.begin();
  later.publish_with("later", "1", {nullptr, 10.0});
  CHECK(later.commit().size() == 1);
  CHECK(t.stats()->delayed == 1 && !t.claim("w", 30.0));
  now = 1011.0;
  CHECK(drain(t, "w") == 1);
  // Nothing asked: a commit of nothing.
  CHECK(t.begin().commit().empty());
}

static void test_tx_values_and_rows() {
  auto t = harel::Transport::open(":memory:");
  harel::Tx tx = t.begin();
  const harel::Blob bytes{0, 255, 0, 7};
  const std::string text = "a'\"\xc3\xa9\xf4\x8f\xbf\xbf";  // quotes, U+00E9, U+10FFFF
  // Each kind of parameter, and the type it comes back as.
  harel::Rows rows = tx.query("SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14",
                              {nullptr, harel::Value(), INT64_MIN, std::uint64_t{INT64_MAX}, true, 'A', 2.5, 1.5f,
                               "literal", text, std::string_view("view"), bytes, harel::Blob{}, std::size_t{7}});
  CHECK(rows.size() == 1 && rows[0].size() == 14);
  if (rows.size() == 1 && rows[0].size() == 14) {
    const harel::Row &r = rows[0];
    CHECK(r[0].is_null() && r[1].is_null() && r[0].type() == HAREL_VALUE_NULL &&
          std::holds_alternative<std::monostate>(r[1]));
    CHECK(r[2].type() == HAREL_VALUE_INTEGER && std::get<std::int64_t>(r[2]) == INT64_MIN);
    CHECK(std::get<std::int64_t>(r[3]) == INT64_MAX && std::get<std::int64_t>(r[4]) == 1 &&
          std::get<std::int64_t>(r[5]) == 65);
    CHECK(r[6].type() == HAREL_VALUE_REAL && std::get<double>(r[6]) == 2.5 && std::get<double>(r[7]) == 1.5);
    CHECK(r[8].type() == HAREL_VALUE_TEXT && std::get<std::string>(r[8]) == "literal");
    CHECK(std::get<std::string>(r[9]) == text && std::get<std::string>(r[10]) == "view");
    CHECK(r[11].type() == HAREL_VALUE_BLOB && std::get<harel::Blob>(r[11]) == bytes);
    CHECK(r[12].type() == HAREL_VALUE_BLOB && std::get<harel::Blob>(r[12]).empty());
    CHECK(std::get<std::int64_t>(r[13]) == 7 && !r[13].is_null());
  }
  // Rows row by row; `?` parameters in order; no rows.
  rows = tx.query("SELECT v, v * 2.5, ? || v FROM (SELECT ? AS v UNION ALL SELECT 2) ORDER BY v", {"r", 10});
  CHECK(rows.size() == 2 && rows[0].size() == 3 && rows[1].size() == 3);
  if (rows.size() == 2 && rows[1].size() == 3) {
    CHECK(std::get<std::int64_t>(rows[0][0]) == 2 && std::get<std::int64_t>(rows[1][0]) == 10);
    CHECK(std::get<double>(rows[1][1]) == 25.0 && std::get<std::string>(rows[1][2]) == "r10");
  }
  CHECK(tx.query("SELECT 1 WHERE 0").empty());
  // A text holding a NUL: its bytes as the library hands them out (a local file cuts at the NUL).
  rows = tx.query("SELECT CAST(x'610062' AS TEXT)");
  CHECK(rows.size() == 1 && (std::get<std::string>(rows.at(0).at(0)) == std::string("a", 1) ||
                             std::get<std::string>(rows.at(0).at(0)) == std::string("a\0b", 3)));
  // 64 KiB through a table; a write with RETURNING; parameters from a std::vector.
  harel::Blob big(65536);
  for (std::size_t i = 0; i < big.size(); i++) big[i] = static_cast<std::uint8_t>(i * 7 + 3);
  tx.execute("CREATE TABLE blobs (id INTEGER PRIMARY KEY, data BLOB)");
  std::vector<harel::Value> params{1, big};
  tx.execute("INSERT INTO blobs (id, data) VALUES (?1, ?2)", params);
  rows = tx.query("INSERT INTO blobs (id, data) VALUES (?1, ?2) RETURNING id, length(data)", {2, big});
  CHECK(rows.size() == 1 && std::get<std::int64_t>(rows.at(0).at(1)) == 65536);
  CHECK(tx.commit().empty());
  auto [stored, none] = t.transaction([](harel::Tx &read) { return read.query("SELECT data FROM blobs ORDER BY id"); });
  CHECK(none.empty() && stored.size() == 2 && std::get<harel::Blob>(stored.at(1).at(0)) == big);
  // What a Value cannot hold is refused when it is made.
  std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, harel::Value(std::uint64_t{INT64_MAX} + 1));
  CHECK(what.find("INT64_MAX") != std::string::npos);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, harel::Value(static_cast<const char *>(nullptr)));
}

static void test_tx_rollback_and_destruction_keep_nothing() {
  // A short busy timeout: a connection still held would make the publish below throw.
  auto t = harel::Transport::open(":memory:", harel::Options().busy_timeout(0.2));
  t.transaction([](harel::Tx &tx) { tx.execute(ORDERS); });
  for (int round = 0; round < 4; round++) {
    {
      harel::Tx tx = t.begin();
      tx.execute(INSERT_ORDER, {1, "never"});
      tx.publish_with("g", "\"never\"", {"never"});
      if (round >= 2) CHECK(std::get<std::int64_t>(tx.query("SELECT count(*) FROM orders").at(0).at(0)) == 1);
      if (round % 2 == 0) {
        tx.rollback();
        check_ended(tx, "rolled back");
      }
    }  // destroyed: rolled back unless it ended
    CHECK(nothing_kept(t));
    t.publish("after", "1");
    CHECK(drain(t, "w") == 1);
  }
  CHECK(!t.publish_with("g", "1", {"never"}).duplicate);  // the key was not taken
  // Move-assigning over a live Tx rolls it back.
  harel::Tx tx = t.begin();
  tx.execute(INSERT_ORDER, {2, "replaced"});
  tx = t.begin();
  CHECK(tx.commit().empty());
  CHECK(scalar(t, "SELECT count(*) FROM orders") == 0);
}

static void test_transaction_commits_or_rolls_back() {
  auto t = harel::Transport::open(":memory:", harel::Options().busy_timeout(0.2));
  t.transaction([](harel::Tx &tx) { tx.execute(ORDERS); });
  // Work that returns nothing: the outcomes. Work that returns a value: it and the outcomes.
  std::vector<harel::Published> published = t.transaction([](harel::Tx &tx) {
    tx.execute(INSERT_ORDER, {1, "one"});
    tx.publish("g", "1");
  });
  CHECK(published.size() == 1 && !published[0].duplicate);
  auto [id, with_id] = t.transaction([](harel::Tx &tx) {
    harel::Rows rows = tx.query("INSERT INTO orders (note) VALUES (?1) RETURNING id", {"two"});
    std::int64_t made = std::get<std::int64_t>(rows.at(0).at(0));
    tx.publish("order-" + std::to_string(made), "2");
    return made;
  });
  CHECK(id == 2 && with_id.size() == 1 && published.size() == 1 && with_id[0].seq > published[0].seq);
  std::string moved_out = t.transaction([](harel::Tx &) { return std::string("kept"); }).first;
  CHECK(moved_out == "kept");
  CHECK(scalar(t, "SELECT count(*) FROM orders") == 2 && drain(t, "w") == 2);
  t.transaction([](harel::Tx &tx) { tx.execute("DELETE FROM orders"); });
  // Whatever the work throws goes on to the caller, after the rollback.
  struct Gave : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  bool caught = false;
  try {
    t.transaction([](harel::Tx &tx) {
      tx.execute(INSERT_ORDER, {1, "lost"});
      tx.publish("g", "1");
      tx.query("SELECT 1");  // holding the connection
      throw Gave("the application changed its mind");
    });
  } catch (const Gave &e) {
    caught = std::string_view(e.what()) == "the application changed its mind";
  }
  CHECK(caught && nothing_kept(t));
  // A Tx call's error, a statement failing at the commit, the Transport's own call inside.
  std::string what = EXPECT_ERROR(HAREL_ERR_DATABASE, t.transaction([](harel::Tx &tx) {
    tx.publish("g", "1");
    tx.query("SELECT * FROM no_such_table");
  }));
  CHECK(what.find("no_such_table") != std::string::npos && nothing_kept(t));
  what = EXPECT_ERROR(HAREL_ERR_DATABASE, t.transaction([](harel::Tx &tx) {
    tx.execute(INSERT_ORDER, {1, "a"});
    tx.publish("g", "1");
    tx.execute(INSERT_ORDER, {1, "b"});
  }));
  CHECK(what.find("UNIQUE") != std::string::npos && nothing_kept(t));
  what = EXPECT_ERROR(HAREL_ERR_BUSY, t.transaction([&](harel::Tx &tx) {
    tx.execute(INSERT_ORDER, {1, "a"});
    tx.query("SELECT 1");
    t.publish("g", "\"outside\"");  // waits for the transaction, which waits for it
  }));
  CHECK(what.find("own publish") != std::string::npos && nothing_kept(t));
  what = EXPECT_ERROR(HAREL_ERR_BUSY, t.transaction([&](harel::Tx &tx) {
    tx.query("SELECT 1");
    t.transaction([](harel::Tx &inner) { inner.publish("g", "1"); });  // nested
  }));
  CHECK(what.find("do not nest") != std::string::npos && nothing_kept(t));
  // Committing inside the work is the transaction's to do: its own commit then refuses.
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.transaction([](harel::Tx &tx) {
    tx.publish("g", "\"early\"");
    tx.commit();
  }));
  CHECK(what.find("committed") != std::string::npos && drain(t, "w") == 1);
  harel::Transport empty;
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, empty.begin());
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, empty.transaction([](harel::Tx &) {}));
}

static void test_tx_errors_and_moves() {
  TempDir dir;
  auto t = harel::Transport::open(dir.file("errors.db"), harel::Options().busy_timeout(0.2));
  t.transaction([](harel::Tx &tx) { tx.execute(ORDERS); });
  harel::Tx tx = t.begin();
  // Refused arguments queue nothing, and the transaction goes on.
  std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, tx.execute(""));
  CHECK(what.find("sql") != std::string::npos);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, tx.execute(static_cast<const char *>(nullptr)));
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, tx.execute(INSERT_ORDER, {1, std::nan("")}));
  CHECK(what.find("params[1]") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, tx.query("SELECT ?1", {HUGE_VAL}));
  CHECK(what.find("params[0]") != std::string::npos);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, tx.query(""));
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, tx.publish("", "1"));
  CHECK(what.find("group_id") != std::string::npos);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, tx.publish("g", "{"));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, tx.publish("g", "1", 5));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, tx.publish("g", "1", 0, ""));
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, tx.publish_with("g", "1", {""}));
  CHECK(what.find("key") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, tx.publish_with("g", "1", {nullptr, -1.0}));
  CHECK(what.find("delay") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, tx.publish_with("g", "1", {nullptr, 0.0, std::nan("")}));
  CHECK(what.find("not_before") != std::string::npos);
  tx.execute(INSERT_ORDER, {1, "kept"});
  tx.publish_with("g", "\"kept\"", {"k"});
  std::vector<harel::Published> published = tx.commit();
  CHECK(published.size() == 1);  // the refused publishes are not counted
  CHECK(scalar(t, "SELECT count(*) FROM orders") == 1 && drain(t, "w") == 1);
  // A failure ends it: every call then throws, but rollback.
  harel::Tx broken = t.begin();
  broken.execute("INSERT INTO no_such_table VALUES (1)");
  EXPECT_ERROR(HAREL_ERR_DATABASE, broken.query("SELECT 1"));
  check_ended(broken, "rolled back after an error");
  // A second transaction while the first holds the connection: busy after the busy timeout.
  harel::Tx first = t.begin();
  first.query("SELECT 1");
  harel::Tx second = t.begin();
  second.publish("g", "\"second\"");
  what = EXPECT_ERROR(HAREL_ERR_BUSY, second.commit());
  CHECK(what.find("do not nest") != std::string::npos);
  first.publish("g", "\"first\"");
  CHECK(first.commit().size() == 1);
  // Moved from: empty, every call refused; moved into: the transaction.
  harel::Tx moved = t.begin();
  moved.publish("g", "\"moved\"");
  harel::Tx into(std::move(moved));
  CHECK(!moved && moved.get() == nullptr && into);  // NOLINT: use after move, on purpose
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, moved.execute("SELECT 1"));  // NOLINT
  CHECK(what.find("tx is NULL") != std::string::npos);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, moved.query("SELECT 1"));    // NOLINT
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, moved.publish("g", "1"));    // NOLINT
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, moved.commit());             // NOLINT
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, moved.rollback());           // NOLINT
  CHECK(into.commit().size() == 1);
  harel::Tx later;
  CHECK(!later);
  later = t.begin();
  later.publish("g", "\"later\"");
  CHECK(later.commit().size() == 1);
  std::set<std::string> events;
  for (auto lease = t.claim("w", 30.0); lease; lease = t.ack_and_claim(*lease, "w", 30.0))
    events.insert(std::string(lease->event()));
  CHECK(events == std::set<std::string>({"\"first\"", "\"moved\"", "\"later\""}));
  // Outliving its Transport: the close rolled it back; it refuses, and is destroyed fine.
  harel::Tx holding = t.begin(), queued = t.begin();
  holding.execute(INSERT_ORDER, {2, "holding"});
  holding.query("SELECT 1");
  queued.execute(INSERT_ORDER, {3, "queued"});
  queued.publish("g", "1");
  t.close();
  check_ended(holding, "closed");
  check_ended(queued, "closed");
  auto reopened = harel::Transport::open(dir.file("errors.db"));
  CHECK(scalar(reopened, "SELECT count(*) FROM orders") == 1 && reopened.stats()->messages == 0);
}

// ---- sharded queues: open_shards, shard_count, shard_of ----------------------------------------

// Three group ids on each of `n` shards, shard by shard: ids[s * 3 + k] lives on shard s.
static std::vector<std::string> groups_on_each_shard(std::size_t n) {
  std::vector<std::string> ids(3 * n);
  std::vector<std::size_t> on(n, 0);
  std::size_t found = 0;
  for (int i = 0; found < ids.size() && i < 1000; i++) {
    std::string id = "g" + std::to_string(i);
    std::size_t s = harel::shard_of(id, n);
    if (on[s] == 3) continue;
    ids[s * 3 + on[s]++] = id;
    found++;
  }
  CHECK(found == ids.size());
  return ids;
}

static void test_shard_of() {
  CHECK(harel::shard_of("order-42", 3) == 2);
  CHECK(harel::shard_of("order-42", 4) == 0);
  CHECK(harel::shard_of("order-42", 1) == 0);
  CHECK(harel::shard_of(std::string("order-42"), 3) == 2);
  std::string_view longer = "order-42-and-more";
  CHECK(harel::shard_of(longer.substr(0, 8), 3) == 2);  // a view's bytes only, not what follows
  CHECK(harel::shard_of("order-42", 256) < 256);
  std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, harel::shard_of("", 3));
  CHECK(what.find("group_id") != std::string::npos);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, harel::shard_of("\xff", 3));
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, harel::shard_of("order-42", 0));
  CHECK(what.find("n_shards") != std::string::npos);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, harel::shard_of("order-42", 257));
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, harel::shard_of(std::string_view("a\0b", 3), 3));
  CHECK(what.find("NUL") != std::string::npos);
}

static void test_open_shards() {
  TempDir dir;
  double now = 1000.0;
  const std::vector<std::string> files{dir.file("s0.db"), dir.file("s1.db"), dir.file("s2.db")};
  const std::vector<std::string> ids = groups_on_each_shard(3);
  {
    auto t = harel::Transport::open_shards(files, harel::Options().clock(fake_clock, &now));
    CHECK(static_cast<bool>(t) && t.shard_count() == 3);
    // Groups on every shard, one by one and in a batch (one transaction a shard).
    for (const std::string &id : ids) t.publish(id, "\"first\"");
    std::vector<harel::Message> batch;
    for (const std::string &id : ids) batch.emplace_back(id, "\"second\"");
    t.publish_many(batch);
    CHECK(t.stats()->messages == 18 && t.stats()->groups == 9);
    // The listing gives each group's shard: harel::shard_of's.
    harel_group_page *page = nullptr;
    CHECK(harel_transport_groups(t.get(), -1, nullptr, 100, &page, nullptr) == HAREL_OK);
    CHECK(page && page->n_groups == 9 && page->shards);
    for (std::size_t i = 0; page && page->shards && i < page->n_groups; i++) {
      std::string_view id(page->groups[i].group_id, page->groups[i].group_id_len);
      CHECK(page->shards[i] == harel::shard_of(id, 3));
    }
    harel_group_page_free(page);
    // Claimed and acked through the one Transport, each message exactly once, in its group's order.
    std::set<std::string> seen;
    int claims = 0;
    for (auto batch_of = t.claim_many("w", 30.0, 4); !batch_of.empty() && claims < 40;
         batch_of = t.ack_and_claim_many(batch_of, "w", 30.0, 4).leases) {
      for (const harel::Lease &lease : batch_of) {
        std::string key = std::string(lease.group_id()) + "/" + std::string(lease.event());
        CHECK(seen.insert(key).second);
        if (lease.event() == "\"second\"")
          CHECK(seen.count(std::string(lease.group_id()) + "/\"first\"") == 1);
        claims++;
      }
    }
    CHECK(claims == 18 && seen.size() == 18 && !t.claim("w", 30.0));
    // A dead letter on each shard: the dead letters' page gives its shard.
    for (std::size_t s = 0; s < 3; s++) t.publish(ids[s * 3], "\"doomed\"");
    for (int i = 0; i < 3; i++) {
      auto lease = t.claim("w", 30.0);
      CHECK(lease.has_value());
      if (lease) t.dead_letter(*lease, "poison");
    }
    harel_dead_page *dead = nullptr;
    CHECK(harel_transport_dead_letters(t.get(), nullptr, nullptr, 100, &dead, nullptr) == HAREL_OK);
    CHECK(dead && dead->n_letters == 3 && dead->shards);
    for (std::size_t i = 0; dead && dead->shards && i < dead->n_letters; i++)
      CHECK(dead->shards[i] == harel::shard_of(dead->letters[i].group_id, 3));
    harel_dead_page_free(dead);
    // Redrive by seqs is refused (a seq is one shard's); all of them works.
    const int64_t seq = 1;
    uint64_t moved = 0;
    CHECK(harel_transport_redrive(t.get(), false, nullptr, &seq, 1, &moved, nullptr) == HAREL_ERR_ARGUMENT);
    CHECK(harel_transport_redrive(t.get(), true, nullptr, nullptr, 0, &moved, nullptr) == HAREL_OK && moved == 3);
    t.publish(ids[4], "\"kept\"");
  }
  // Reopened with the same list (the default options): the queue as it was.
  {
    auto t = harel::Transport::open_shards(files);
    CHECK(t.shard_count() == 3);
    CHECK(drain(t, "w") == 4);
  }
  // Each list that does not match is refused with the library's message.
  std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, harel::Transport::open_shards({files[1], files[0], files[2]}));
  CHECK(what.find("databases[0] (" + files[1] + ")") != std::string::npos);
  CHECK(what.find("reordered") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, harel::Transport::open_shards({files[0], files[1]}));
  CHECK(what.find("1 database is missing") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT,
                      harel::Transport::open_shards({files[0], files[1], files[2], dir.file("s3.db")}));
  CHECK(what.find("1 database is extra") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, harel::Transport::open_shards({}));
  CHECK(what.find("databases has 0 entries") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, harel::Transport::open_shards({files[0], files[1], files[0]}));
  CHECK(what.find("databases[2] repeats databases[0]") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, harel::Transport::open_shards({files[0], "", files[2]}, harel::Options()));
  CHECK(what.find("databases[1] is empty") != std::string::npos);
  const std::vector<std::string> too_many(257, files[0]);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, harel::Transport::open_shards(too_many));
  CHECK(what.find("257") != std::string::npos);
  // One database of the set opened alone is refused.
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, harel::Transport::open(files[1]));
  CHECK(what.find("shard 1 of 3") != std::string::npos);
  // A list of one is a queue that is not sharded; so is a queue opened with open.
  auto one = harel::Transport::open_shards({dir.file("one.db")});
  CHECK(one.shard_count() == 1);
  auto plain = harel::Transport::open(":memory:");
  CHECK(plain.shard_count() == 1);
  harel::Transport empty;
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, empty.shard_count());
  // Replica shards: one primary each (reached: servers that are not there fail to connect).
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, harel::Options().sync_urls({"http://127.0.0.1:1", "http://127.0.0.1:1"}));
  CHECK(what.find("urls[1] repeats urls[0]") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, harel::Options().sync_urls({"http://127.0.0.1:1", ""}));
  CHECK(what.find("urls[1] is empty") != std::string::npos);
  const std::vector<std::string> replicas{dir.file("r0.db"), dir.file("r1.db"), dir.file("r2.db")};
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT,
                      harel::Transport::open_shards(replicas, harel::Options().sync_urls({"http://127.0.0.1:1"})));
  CHECK(what.find("sync_urls has 1 URLs and databases 3 paths") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_CONNECT,
                      harel::Transport::open_shards(replicas, harel::Options().sync_urls({"http://127.0.0.1:1/a",
                                                                                          "http://127.0.0.1:1/b",
                                                                                          "http://127.0.0.1:1/c"})));
  CHECK(what.find("databases[0] (" + replicas[0] + ")") != std::string::npos);
  CHECK(harel::Options().sync_urls({}).get() != nullptr);  // empty unsets
}

static void test_a_transaction_on_a_sharded_queue() {
  TempDir dir;
  auto t = harel::Transport::open_shards({dir.file("a.db"), dir.file("b.db"), dir.file("c.db")});
  harel::Tx tx = t.begin();  // handed out; refused at its first call
  std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, tx.execute(ORDERS));
  CHECK(what.find("a transaction runs on one database") != std::string::npos);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, tx.publish("order-42", "1"));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, tx.query("SELECT 1"));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, tx.commit());
  tx.rollback();
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.transaction([](harel::Tx &inner) { inner.publish("order-42", "1"); }));
  CHECK(what.find("a transaction runs on one database") != std::string::npos);
  CHECK(t.stats()->messages == 0);
  t.publish("order-42", "\"after\"");
  CHECK(drain(t, "w") == 1);
}


// ---- headers ------------------------------------------------------------------------------

// Headers a producer sends: a repeated name, an empty value, UTF-8 of 2 to 4 bytes, control
// characters, what a name may not hold, every punctuation a name may hold.
static const std::vector<std::pair<std::string, std::string>> SENT = {
    {"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
    {"empty", ""},
    {"note", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 = , \" \\ \t\n\x01\x7f <script>"},
    {"traceparent", "a repeated name keeps its place"},
    {"!\"#$%&'()*+,-./:;<>?@[\\]^_`{|}~", "punctuation"},
};

// SENT as harel::Headers' elements, borrowing its strings.
static std::vector<harel::Header> sent_headers() {
  std::vector<harel::Header> headers;
  for (const auto &[name, value] : SENT) headers.emplace_back(name, value);
  return headers;
}

static void test_headers_publish_and_lease() {
  auto t = harel::Transport::open(":memory:");
  const std::vector<harel::Header> sent = sent_headers();
  t.publish("a", "1", sent);
  std::string tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
  t.publish("b", "2", {{"traceparent", tp}, {"k", std::string("v")}}, 4, "eu");
  t.publish("c", "3", harel::Headers{});
  t.publish("d", "4");  // the old form: none
  auto a = t.claim("w", 30.0);
  CHECK(a && a->event() == "1");
  if (a) {
    harel::HeaderList h = a->headers();
    CHECK(h.size() == SENT.size() && !h.empty() && h.to_vector() == SENT);
    std::size_t i = 0;
    for (auto [name, value] : h) {  // in order, byte for byte
      CHECK(i < SENT.size() && name == SENT[i].first && value == SENT[i].second);
      i++;
    }
    CHECK(i == SENT.size());
    CHECK(h[2].second == SENT[2].second && h.data() == a->get()->headers);
    CHECK(h.find("traceparent") == SENT[0].second);  // the first of a repeated name
    CHECK(!h.find("absent") && !h.find("traceparen"));
    t.ack(*a);
    CHECK(a->headers().to_vector() == SENT);  // the Lease's until it is destroyed
  }
  auto b = t.claim("w", 30.0, 4, {"eu"});  // its priority and routing key, as publish sets them
  CHECK(b && b->headers().size() == 2 && b->headers().find("traceparent") == tp && b->headers()[1].second == "v");
  for (const char *event : {"3", "4"}) {
    auto none = t.claim("w", 30.0);
    CHECK(none && none->event() == event && none->headers().empty() && none->headers().begin() == none->headers().end());
    if (none) t.ack(*none);
  }
  harel::Lease empty(nullptr);
  CHECK(empty.headers().empty() && empty.headers().size() == 0);
  CHECK(harel::HeaderList().empty() && harel::HeaderList(nullptr, 3).empty());

  // Each refusal names the header; nothing is written.
  std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish("g", "1", {{"ok", "1"}, {"bad name", "2"}}));
  CHECK(what.find("headers[1].name") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish("g", "1", {{"a=b", "1"}}));
  CHECK(what.find("headers[0].name") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish("g", "1", {{"", "1"}}));
  CHECK(what.find("headers[0].name") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish("g", "1", {{"n", static_cast<const char *>(nullptr)}}));
  CHECK(what.find("headers[0].value") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish("g", "1", {{"n", "\xff"}}));
  CHECK(what.find("headers[0].value") != std::string::npos);
  std::vector<std::string> names;
  for (int i = 0; i < 65; i++) names.push_back("h" + std::to_string(i));
  std::vector<harel::Header> many;
  for (const std::string &name : names) many.emplace_back(name, "");
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish("g", "1", many));
  CHECK(what.find("65 pairs") != std::string::npos);
  many.pop_back();
  std::string big(16384 - 2, 'v');  // 64 pairs, one value of 16382 bytes: past 16384 in all
  many[0] = harel::Header("h0", big);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish("g", "1", many));
  CHECK(what.find("bytes") != std::string::npos);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish("g", "1", harel::Headers(nullptr, 1)));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish("", "1", sent));
  CHECK(!t.claim("w", 30.0) && t.stats()->messages == 1);  // b's, still leased
  if (b) t.ack(*b);
  harel::Transport none;
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, none.publish("g", "1", sent));
}

static void test_headers_publish_with_and_batches() {
  double now = 1000.0;
  auto t = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now));
  const std::vector<harel::Header> sent = sent_headers();
  harel::Published first = t.publish_with("g", "\"first\"", {"k"}, sent);
  CHECK(first.seq > 0 && !first.duplicate);
  harel::Published again = t.publish_with("g", "\"again\"", {"k"}, {{"other", "1"}});
  CHECK(again.seq == first.seq && again.duplicate);  // nothing stored, its headers neither
  t.publish_with("late", "\"late\"", {nullptr, 60.0}, {{"when", "later"}}, 2, "eu");
  std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("g", "1", {"k2"}, {{"a b", "1"}}));
  CHECK(what.find("headers[0].name") != std::string::npos);
  CHECK(t.publish_with("g", "\"k2 free\"", {"k2"}).duplicate == false);  // the refusal took no key

  // publish_many with one Headers per message (none: an empty one), and publish_many_with.
  std::vector<harel::Message> batch{{"m1", "1"}, {"m2", "2"}, {"m3", "3"}};
  std::vector<harel::Headers> each{sent, {}, harel::Headers(sent.data() + 2, 1)};
  t.publish_many(batch, each);
  std::vector<harel::Published> out =
      t.publish_many_with({{"n1", "4"}, {"n2", "5"}}, {{"kn"}, {"kn"}}, {{{"x", "1"}}, {{"y", "2"}}});
  CHECK(out.size() == 2 && !out[0].duplicate && out[1].duplicate && out[1].seq == out[0].seq);
  t.publish_many_with({{"o1", "6"}}, {}, {});  // no deliveries, no headers
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_many(batch, {sent, {{"bad=", "v"}}, {}}));
  CHECK(what.find("messages[1].headers[0].name") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_many(batch, {sent}));
  CHECK(what.find("headers has 1 elements and messages 3") != std::string::npos);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_many_with(batch, {}, {sent, harel::Headers(nullptr, 2), {}}));

  std::map<std::string, std::vector<std::pair<std::string, std::string>>> got;
  for (auto batch_out = t.claim_many("w", 30.0, 16); !batch_out.empty();
       batch_out = t.ack_and_claim_many(batch_out, "w", 30.0, 16).leases)
    for (const harel::Lease &lease : batch_out)  // a group's first message only ("g" has two)
      got.try_emplace(std::string(lease.group_id()), lease.headers().to_vector());
  CHECK(got.size() == 6 && got["g"] == SENT && got["m1"] == SENT && got["m2"].empty());
  CHECK(got["m3"] == (std::vector<std::pair<std::string, std::string>>{SENT[2]}));
  CHECK(got["n1"] == (std::vector<std::pair<std::string, std::string>>{{"x", "1"}}) && got["o1"].empty());
  now += 61.0;
  auto late = t.claim_wait("w", 30.0, 1.0);
  CHECK(late && late->group_id() == "late" && late->headers().find("when") == "later");
}

static void test_headers_in_a_transaction() {
  auto t = harel::Transport::open(":memory:");
  const std::vector<harel::Header> sent = sent_headers();
  std::vector<harel::Published> published = t.transaction([&](harel::Tx &tx) {
    tx.publish("g", "1", sent);
    tx.publish_with("g", "2", {"k"}, {{"k", "v"}}, 1, "eu");
    std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, tx.publish("g", "3", {{"bad name", "v"}}));
    CHECK(what.find("headers[0].name") != std::string::npos);  // refused: the transaction goes on
    tx.publish_with("g", "4", {"k"}, {{"dup", "v"}});
  });
  CHECK(published.size() == 3 && published[2].duplicate && published[2].seq == published[1].seq);
  auto first = t.claim("w", 30.0);
  CHECK(first && first->event() == "1" && first->headers().to_vector() == SENT);
  auto second = first ? t.ack_and_claim(*first, "w", 30.0) : std::nullopt;
  CHECK(second && second->event() == "2" && second->headers().size() == 1 && second->headers()[0].first == "k");
  if (second) CHECK(!t.ack_and_claim(*second, "w", 30.0));
}

// A page of peek and of dead_letters, through get(): HeaderList(page->headers[i]).
static void test_headers_on_pages() {
  auto t = harel::Transport::open(":memory:");
  const std::vector<harel::Header> sent = sent_headers();
  t.publish("g", "1", sent);
  t.publish("g", "2");
  harel_message_page *page = nullptr;
  CHECK(harel_transport_peek(t.get(), "g", nullptr, 10, &page, nullptr) == HAREL_OK);
  if (page) {
    CHECK(page->n_messages == 2);
    CHECK(harel::HeaderList(page->headers[0]).to_vector() == SENT);
    CHECK(harel::HeaderList(page->headers[1]).empty());
  }
  harel_message_page_free(page);
  auto lease = t.claim("w", 30.0);
  if (lease) t.dead_letter(*lease, "poison");
  harel_dead_page *dead = nullptr;
  CHECK(harel_transport_dead_letters(t.get(), nullptr, nullptr, 10, &dead, nullptr) == HAREL_OK);
  if (dead) CHECK(dead->n_letters == 1 && harel::HeaderList(dead->headers[0]).to_vector() == SENT);
  harel_dead_page_free(dead);
}

static void test_trace_context() {
  const std::array<std::uint8_t, 16> trace_id{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
                                              0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36};
  const std::array<std::uint8_t, 8> span_id{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7};
  const std::string spec = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  CHECK(harel::format_traceparent(trace_id, span_id) == spec);  // sampled by default
  CHECK(harel::format_traceparent(trace_id, span_id, 0) == spec.substr(0, 53) + "00");
  std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, harel::format_traceparent({}, span_id));
  CHECK(what.find("trace_id") != std::string::npos);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, harel::format_traceparent(trace_id, {}));

  std::optional<harel::TraceParent> parsed = harel::parse_traceparent(spec);
  CHECK(parsed && parsed->trace_id == trace_id && parsed->span_id == span_id && parsed->flags == 1 &&
        parsed->sampled());
  CHECK(parsed && harel::format_traceparent(*parsed) == spec);
  CHECK(harel::parse_traceparent(" \t" + spec + " "));  // spaces around it, as HTTP's
  const std::vector<std::string> not_valid{"", "nope", spec.substr(0, 54),
                                            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                                            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                                            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                                            spec + "\xff", spec + std::string(1, '\0')};
  for (const std::string &bad : not_valid)
    CHECK(!harel::parse_traceparent(bad));  // no error: std::nullopt
  auto newer = harel::parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03-more");
  CHECK(newer && newer->flags == 1);  // a later version: its sampled bit only

  CHECK(harel::tracestate_valid("") && harel::tracestate_valid("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"));
  CHECK(!harel::tracestate_valid("Bad=1") && !harel::tracestate_valid("a=1,a=2"));
  CHECK(!harel::tracestate_valid(std::string("a=1\0", 4)));

  // Through a message: the producer's value, the worker's parse.
  auto t = harel::Transport::open(":memory:");
  std::string tp = harel::format_traceparent(trace_id, span_id);
  t.publish("g", "{}", {{"traceparent", tp}, {"tracestate", "rojo=1"}});
  auto lease = t.claim("w", 30.0);
  std::optional<std::string_view> value = lease ? lease->headers().find("traceparent") : std::nullopt;
  auto context = value ? harel::parse_traceparent(*value) : std::nullopt;
  CHECK(context && context->trace_id == trace_id && context->span_id == span_id);
  CHECK(lease && harel::tracestate_valid(*lease->headers().find("tracestate")));
}

// ---- unique keys (issue 38): harel::Unique, UniqueMode, Published::replaced --------------------

static_assert(static_cast<int32_t>(harel::UniqueMode::Keep) == HAREL_UNIQUE_KEEP &&
              static_cast<int32_t>(harel::UniqueMode::Replace) == HAREL_UNIQUE_REPLACE &&
              static_cast<int32_t>(harel::UniqueMode::Debounce) == HAREL_UNIQUE_DEBOUNCE);
static_assert(std::is_aggregate_v<harel::Delivery> && std::is_aggregate_v<harel::Unique> &&
              std::is_aggregate_v<harel::Published>);
static_assert(std::is_convertible_v<harel::Unique, harel::Delivery>, "a Unique is a Delivery of it alone");
static_assert(std::is_same_v<decltype(harel::Published{}.replaced), bool>);

// The queue's message count.
static std::uint64_t messages_in(const harel::Transport &t) { return t.stats()->messages; }

static void test_unique_keys() {
  double now = 1000.0;
  auto t = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now));
  // Keep: stored once; while pending, a duplicate with its seq, in any group.
  harel::Published first = t.publish_with("a", "\"k1\"", harel::Unique::keep("invoice-42"));
  CHECK(first.seq > 0 && !first.duplicate && !first.replaced);
  harel::Published again = t.publish_with("b", "\"k2\"", harel::Unique::keep("invoice-42"));
  CHECK(again.seq == first.seq && again.duplicate && !again.replaced);
  harel::Delivery zeroed;  // a Unique made as an aggregate: Keep by default
  std::string key = "invoice-42";
  zeroed.unique = harel::Unique{key};
  CHECK(t.publish_with("a", "\"k3\"", zeroed).duplicate && messages_in(t) == 1);
  // Replace: the pending message takes the event and the headers, in its group.
  harel::Published replaced = t.publish_with("b", "\"r1\"", harel::Unique::replace("invoice-42"), {{"v", "2"}});
  CHECK(replaced.seq == first.seq && replaced.duplicate && replaced.replaced);
  CHECK(messages_in(t) == 1 && t.stats()->groups == 1);
  auto lease = t.claim("w", 30.0);
  CHECK(lease && lease->seq() == first.seq && lease->group_id() == "a" && lease->event() == "\"r1\"" &&
        lease->headers().find("v") == "2");
  // Leased: never replaced, a duplicate; acked, the key is free.
  harel::Published held = t.publish_with("a", "\"r2\"", harel::Unique::replace("invoice-42"));
  CHECK(held.seq == first.seq && held.duplicate && !held.replaced);
  if (lease) t.ack(*lease);
  harel::Published after = t.publish_with("a", "\"after\"", harel::Unique::replace("invoice-42"), {}, 2, "eu");
  CHECK(after.seq > first.seq && !after.duplicate && !after.replaced);
  CHECK(drain(t, "w") == 1);
  // Debounce on the transport's clock: due delay after the last publish, capped at max_delay
  // after the first.
  const harel::Unique sync = harel::Unique::debounce("sync-7", 10.0, 30.0);
  harel::Published d1 = t.publish_with("u", "\"e1\"", sync);
  CHECK(!d1.duplicate && t.stats()->delayed == 1 && t.stats()->next_due_at == 1010.0);
  now = 1005.0;
  harel::Published d2 = t.publish_with("u", "\"e2\"", sync);
  CHECK(d2.seq == d1.seq && d2.replaced && t.stats()->next_due_at == 1015.0);
  now = 1025.0;
  CHECK(t.publish_with("u", "\"e3\"", sync).replaced && t.stats()->next_due_at == 1030.0);  // the cap
  now = 1030.0;
  CHECK(!t.claim("w", 30.0));
  now = 1030.5;
  auto debounced = t.claim("w", 30.0);
  CHECK(debounced && debounced->seq() == d1.seq && debounced->event() == "\"e3\"");
  if (debounced) t.ack(*debounced);
  // The other options beside a unique key: a delay.
  harel::Delivery later{nullptr, 50.0, -1.0, harel::Unique::keep("later")};
  CHECK(!t.publish_with("l", "1", later).duplicate && t.publish_with("l", "2", later).duplicate);
  CHECK(t.stats()->delayed == 1 && messages_in(t) == 1);

  // Each error, as harel::Error naming the field; nothing written, no key taken.
  std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("g", "{}", harel::Unique::keep("")));
  CHECK(what.rfind("HAREL_ERR_ARGUMENT: ", 0) == 0 && what.find("unique_key is empty") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("g", "{}", harel::Unique::keep(std::string(257, 'u'))));
  CHECK(what.find("unique_key is 257 bytes") != std::string::npos);
  CHECK(!t.publish_with("g", "{}", harel::Unique::keep(std::string(256, 'u'))).duplicate);  // the longest
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("g", "{}", harel::Unique::keep("\xff")));
  CHECK(what.find("unique_key") != std::string::npos);
  harel::Delivery both{"k", 0.0, -1.0, harel::Unique::keep("u")};
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("g", "{}", both));
  CHECK(what.find("key and unique_key are both given") != std::string::npos);
  const harel::Unique bad_mode{"u", static_cast<harel::UniqueMode>(7)};
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("g", "{}", bad_mode));
  CHECK(what.find("unique_mode is 7") != std::string::npos);
  for (double bad : {std::nan(""), -1.0, HUGE_VAL, 315360000.5}) {
    what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("g", "{}", harel::Unique::debounce("u", bad, 60.0)));
    CHECK(what.find("debounce delay") != std::string::npos);
    what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("g", "{}", harel::Unique::debounce("u", 1.0, bad)));
    CHECK(what.find("debounce max_delay") != std::string::npos);
  }
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("g", "{}", harel::Unique::debounce("u", 10.0, 5.0)));
  CHECK(what.find("max_delay is 5; it must be >= its delay (10)") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("g", "{}", harel::Unique::keep("u"), {{"a b", "1"}}));
  CHECK(what.find("headers[0].name") != std::string::npos);
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("", "{}", harel::Unique::keep("u")));
  harel::Transport empty;
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, empty.publish_with("g", "{}", harel::Unique::keep("u")));
  CHECK(messages_in(t) == 2);                                       // later, and the longest key's
  CHECK(!t.publish_with("g", "{}", harel::Unique::keep("u")).duplicate);  // "u" was not taken
}

static void test_unique_keys_in_batches_and_transactions() {
  double now = 1000.0;
  auto t = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now));
  harel::Published pending = t.publish_with("p", "\"pending\"", harel::Unique::keep("k1"));
  // A batch: none, a key new in it, the same key met earlier in it (replaced), a key pending
  // before it (replaced, then kept), an idempotency key; headers reach the replaced one.
  std::vector<harel::Message> batch{{"a", "\"0\""}, {"a", "\"1\""}, {"b", "\"2\""},
                                    {"c", "\"3\""}, {"d", "\"4\""}, {"d", "\"5\""}};
  std::vector<harel::Delivery> deliveries{{},
                                          harel::Unique::keep("k2"),
                                          harel::Unique::replace("k2"),
                                          harel::Unique::replace("k1"),
                                          {"idem"},
                                          harel::Unique::keep("k1")};
  std::vector<harel::Headers> headers{{}, {}, {{"v", "2"}}, {}, {}, {}};
  std::vector<harel::Published> out = t.publish_many_with(batch, deliveries, headers);
  CHECK(out.size() == 6);
  if (out.size() == 6) {
    CHECK(!out[0].duplicate && !out[1].duplicate && !out[4].duplicate);
    CHECK(out[2].duplicate && out[2].replaced && out[2].seq == out[1].seq);
    CHECK(out[3].duplicate && out[3].replaced && out[3].seq == pending.seq);
    CHECK(out[5].duplicate && !out[5].replaced && out[5].seq == pending.seq);
    CHECK(pending.seq < out[0].seq && out[0].seq < out[1].seq && out[1].seq < out[4].seq);
  }
  CHECK(messages_in(t) == 4);
  std::map<std::string, std::string> events;
  for (auto leases = t.claim_many("w", 30.0, 16); !leases.empty();
       leases = t.ack_and_claim_many(leases, "w", 30.0, 16).leases)
    for (const harel::Lease &lease : leases) {
      events[std::to_string(lease.seq())] = std::string(lease.event());
      if (lease.event() == "\"2\"") CHECK(lease.headers().find("v") == "2");
    }
  CHECK(events.size() == 4 && events[std::to_string(pending.seq)] == "\"3\"");
  if (out.size() == 6) CHECK(events[std::to_string(out[1].seq)] == "\"2\"");
  // Errors by the message's index; nothing written.
  const std::vector<harel::Delivery> empty_second{harel::Unique::keep("x"), harel::Unique::keep("")};
  std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_many_with({{"x", "1"}, {"x", "2"}}, empty_second));
  CHECK(what.find("messages[1].unique_key is empty") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT,
                      t.publish_many_with({{"x", "1"}, {"x", "2"}},
                                          {{}, harel::Unique{"x", static_cast<harel::UniqueMode>(7)}}));
  CHECK(what.find("messages[1].delivery.unique_mode is 7") != std::string::npos);
  CHECK(messages_in(t) == 0);

  // A transaction: commit says what became of each publish; a refused one queues nothing.
  harel::Published k1 = t.publish_with("p", "\"old\"", harel::Unique::replace("k1"));
  harel::Tx tx = t.begin();
  tx.publish_with("p", "\"new\"", harel::Unique::replace("k1"), {{"v", "new"}});
  tx.publish_with("q", "\"fresh\"", harel::Unique::keep("k3"));
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, tx.publish_with("q", "1", harel::Unique::debounce("k4", 10.0, 1.0)));
  CHECK(what.find("max_delay") != std::string::npos);
  tx.publish_with("q", "\"again\"", harel::Unique::keep("k3"));
  tx.publish("q", "\"plain\"");
  std::vector<harel::Published> published = tx.commit();
  CHECK(published.size() == 4);
  if (published.size() == 4) {
    CHECK(published[0].seq == k1.seq && published[0].duplicate && published[0].replaced);
    CHECK(published[1].seq > k1.seq && !published[1].duplicate && !published[1].replaced);
    CHECK(published[2].seq == published[1].seq && published[2].duplicate && !published[2].replaced);
    CHECK(published[3].seq > published[1].seq && !published[3].duplicate);
  }
  CHECK(messages_in(t) == 3);
  // transaction(): a debounce inside one; a throw rolls it back, nothing replaced.
  std::vector<harel::Published> debounced = t.transaction(
      [](harel::Tx &inner) { inner.publish_with("p", "\"debounced\"", harel::Unique::debounce("k1", 5.0, 5.0)); });
  CHECK(debounced.size() == 1 && debounced[0].replaced && debounced[0].seq == k1.seq);
  CHECK(t.stats()->delayed == 1 && t.stats()->next_due_at == 1005.0);
  try {
    t.transaction([](harel::Tx &inner) {
      inner.publish_with("p", "\"gone\"", harel::Unique::replace("k1"));
      throw std::runtime_error("give up");
    });
    CHECK(false);
  } catch (const std::runtime_error &e) {
    CHECK(std::string(e.what()) == "give up");
  }
  now = 1005.5;
  bool seen = false;
  for (const harel::Lease &lease : t.claim_many("w", 30.0, 16))  // p's head, and q's
    if (lease.group_id() == "p")
      seen = lease.seq() == k1.seq && lease.event() == "\"debounced\"" && lease.headers().empty();
  CHECK(seen);
}

// ---- expiry (issue 38): Delivery::ttl and expires_at, stats()->expired -------------------------

static_assert(std::is_same_v<decltype(harel::Delivery{}.ttl), double> &&
              std::is_same_v<decltype(harel::Delivery{}.expires_at), double>);
static_assert(std::is_same_v<decltype(harel_stats{}.expired), std::uint64_t>);

// The reasons of the queue's dead letters, in seq order.
static std::vector<std::string> dead_reasons(const harel::Transport &t) {
  std::vector<std::string> reasons;
  harel_dead_page *page = nullptr;
  CHECK(harel_transport_dead_letters(t.get(), nullptr, nullptr, 100, &page, nullptr) == HAREL_OK && page);
  for (std::size_t i = 0; page && i < page->n_letters; i++) reasons.emplace_back(page->letters[i].reason);
  harel_dead_page_free(page);
  return reasons;
}

// A Delivery that expires after `ttl` seconds or at `expires_at` (0: never).
static harel::Delivery expiring(double ttl, double expires_at) {
  harel::Delivery d;
  d.ttl = ttl;
  d.expires_at = expires_at;
  return d;
}

// A claim that takes nothing (no group has its routing key): it sweeps the expired.
static void sweep(harel::Transport &t) { CHECK(!t.claim("w", 30.0, 0, {"no-such-routing-key"})); }

static void test_expiry() {
  double now = 1000.0;
  auto t = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now));
  CHECK(harel::Delivery{}.ttl == 0.0 && harel::Delivery{}.expires_at == 0.0);  // never, by default
  const harel::Delivery ttl = expiring(10.0, 0.0);
  CHECK(!t.publish_with("g", "\"e1\"", ttl).duplicate);
  t.publish("g", "\"e2\"");
  t.publish_with("a", "\"at\"", harel::Delivery{nullptr, 0.0, -1.0, {}, 0.0, 1005.0});  // the aggregate's order
  CHECK(t.stats()->expired == 0 && messages_in(t) == 3);
  now = 1010.5;
  CHECK(messages_in(t) == 3);  // nothing moves before a claim
  auto lease = t.claim("w", 30.0);
  CHECK(lease && lease->event() == "\"e2\"");  // g's expired head buried, its group went on
  if (lease) t.ack(*lease);
  {
    harel::Stats s = t.stats();
    CHECK(s->messages == 0 && s->dead == 2 && s->expired == 2);
  }
  CHECK((dead_reasons(t) == std::vector<std::string>{"expired", "expired"}));
  // Beside a unique key; with both, the earlier; the expiry frees the key.
  const harel::Delivery both{nullptr, 0.0, -1.0, harel::Unique::keep("u"), 100.0, 1015.0};
  CHECK(!t.publish_with("b", "1", both).duplicate && t.publish_with("b", "2", both).duplicate);
  now = 1016.0;
  sweep(t);
  CHECK(t.stats()->expired == 3);
  // A worker holding it finishes it.
  t.publish_with("h", "\"held\"", expiring(5.0, 0.0));
  auto held = t.claim("w", 30.0);
  CHECK(held && held->event() == "\"held\"");
  now = 1030.0;
  sweep(t);
  if (held) t.ack(*held);
  CHECK(t.stats()->expired == 3 && t.stats()->dead == 3);
  CHECK(!t.publish_with("b", "\"b\"", harel::Unique::keep("u")).duplicate);  // u was freed
  // A batch, each message its own; a transaction, its ttl counted from the commit.
  std::vector<harel::Message> batch{{"c", "\"c\""}, {"d", "\"d\""}};
  std::vector<harel::Delivery> deliveries{ttl, {}};
  CHECK(t.publish_many_with(batch, deliveries).size() == 2);  // c expires at 1040
  harel::Tx tx = t.begin();
  tx.publish_with("e", "\"e\"", ttl);
  now = 1035.0;
  CHECK(tx.commit().size() == 1);  // e expires at 1045
  now = 1041.0;
  sweep(t);
  CHECK(t.stats()->expired == 4 && messages_in(t) == 3);
  now = 1046.0;
  sweep(t);
  CHECK(t.stats()->expired == 5 && messages_in(t) == 2);
  CHECK(drain(t, "w") == 2);  // b and d

  // Each refusal, as harel::Error naming the field (a batch's by its message): nothing written.
  now = 2000.0;
  std::string what;
  for (double bad : {std::nan(""), HUGE_VAL, -HUGE_VAL, -1.0, 315360001.0}) {
    what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("x", "{}", expiring(bad, 0.0)));
    CHECK(what.find("ttl is ") != std::string::npos);
    what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_many_with({{"x", "1"}, {"x", "2"}}, {ttl, expiring(bad, 0.0)}));
    CHECK(what.find("messages[1].ttl is ") != std::string::npos);
  }
  for (double bad : {std::nan(""), HUGE_VAL, -HUGE_VAL, -1.0}) {
    what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("x", "{}", expiring(0.0, bad)));
    CHECK(what.find("expires_at is ") != std::string::npos);
    what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_many_with({{"x", "1"}, {"x", "2"}}, {ttl, expiring(60.0, bad)}));
    CHECK(what.find("messages[1].expires_at is ") != std::string::npos);
  }
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("x", "{}", expiring(-1.0, 0.0)));
  CHECK(what.find("ttl is -1; it must be a finite number of seconds > 0, at most 315360000 (ten years)") !=
        std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("x", "{}", expiring(0.0, std::nan(""))));
  CHECK(what.find("expires_at is NaN; it must be finite epoch seconds >= 0") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("x", "{}", expiring(0.0, 2000.0)));
  CHECK(what.find("expires_at is 2000: not after now (2000)") != std::string::npos);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_many_with({{"x", "1"}, {"x", "2"}}, {ttl, expiring(0.0, 1999.0)}));
  CHECK(what.find("messages[1].expires_at is 1999: not after now (2000)") != std::string::npos);
  const harel::Delivery never_due{nullptr, 60.0, -1.0, {}, 30.0, 0.0};
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("x", "{}", never_due));
  CHECK(what.find("expires_at is 2030: not after the message is due (2060), so it could never be delivered") !=
        std::string::npos);
  // A transaction: refused now (nothing queued, it goes on), or, against the clock, at the
  // latest by the commit, which then keeps nothing.
  {
    harel::Tx refusing = t.begin();
    what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, refusing.publish_with("x", "{}", expiring(std::nan(""), 0.0)));
    CHECK(what.find("ttl is NaN") != std::string::npos);
    refusing.publish_with("x", "\"kept\"", ttl);
    CHECK(refusing.commit().size() == 1);
  }
  {
    harel::Tx late = t.begin();
    bool refused_now = false;
    try {
      late.publish_with("x", "{}", expiring(0.0, 1999.0));
    } catch (const harel::Error &e) {
      refused_now = e.status() == HAREL_ERR_ARGUMENT;
    }
    if (!refused_now) {
      what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, late.commit());
      CHECK(what.find("expires_at is 1999: not after now (2000)") != std::string::npos);
    }
  }
  harel::Transport empty;
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, empty.publish_with("g", "{}", ttl));
  CHECK(messages_in(t) == 1 && t.stats()->expired == 5);  // the transaction's "kept"
}

// ---- pause and resume (issue 38): PauseTarget, PauseKind, Pause, GroupState::Paused ---------

static_assert(static_cast<int32_t>(harel::PauseKind::Queue) == HAREL_PAUSE_QUEUE &&
              static_cast<int32_t>(harel::PauseKind::Group) == HAREL_PAUSE_GROUP &&
              static_cast<int32_t>(harel::PauseKind::RoutingKey) == HAREL_PAUSE_ROUTING_KEY &&
              static_cast<int32_t>(harel::GroupState::Paused) == HAREL_GROUP_PAUSED);
static_assert(std::is_aggregate_v<harel::PauseTarget> && std::is_aggregate_v<harel::Pause>);
static_assert(std::is_same_v<decltype(harel::Pause{}.name), std::string> &&
              std::is_same_v<decltype(harel::Pause{}.paused_at), double>);
static_assert(std::is_same_v<decltype(std::declval<harel::Transport &>().pause(harel::PauseTarget::queue())), bool> &&
              std::is_same_v<decltype(std::declval<harel::Transport &>().resume(harel::PauseTarget::queue())), bool>);
static_assert(std::is_same_v<decltype(std::declval<const harel::Transport &>().pauses()), std::vector<harel::Pause>>);

// The groups in `state` (harel_transport_groups through get()), by id.
static std::vector<std::string> groups_in(const harel::Transport &t, harel::GroupState state) {
  std::vector<std::string> ids;
  harel_group_page *page = nullptr;
  CHECK(harel_transport_groups(t.get(), static_cast<int32_t>(state), nullptr, 100, &page, nullptr) == HAREL_OK);
  if (page) {
    for (std::size_t i = 0; i < page->n_groups; i++) {
      ids.emplace_back(page->groups[i].group_id, page->groups[i].group_id_len);
      CHECK(page->groups[i].state == static_cast<harel_group_state>(state));
    }
  }
  harel_group_page_free(page);
  return ids;
}

// A claim on `key` leases the head of `group`; given back at once.
static bool claims_from(harel::Transport &t, const char *key, std::string_view group) {
  auto lease = t.claim("w", 30.0, 0, {key});
  if (lease) t.nack(*lease);
  return lease && lease->group_id() == group;
}

static void test_pause_and_resume() {
  double now = 1000.0;
  auto t = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now));
  CHECK(t.pauses().empty());
  t.publish("a", "1", 2, "eu");
  t.publish("b", "2", 2, "eu");
  t.publish("c", "3", 2, "us");
  // A group: true when new, false when it was there; a claim passes it over.
  CHECK(t.pause(harel::PauseTarget::group("a")));
  CHECK(!t.pause(harel::PauseTarget::group(std::string("a"))));
  CHECK(groups_in(t, harel::GroupState::Paused) == std::vector<std::string>{"a"});
  CHECK(claims_from(t, "eu", "b"));
  // A routing key: its groups, not the others; a temporary std::string lives through the call.
  now = 1001.0;
  const std::size_t n = 1;
  CHECK(t.pause(harel::PauseTarget::routing_key("e" + std::string(n, 'u'))));
  CHECK((groups_in(t, harel::GroupState::Paused) == std::vector<std::string>{"a", "b"}));
  CHECK(!t.claim("w", 30.0, 0, {"eu"}) && claims_from(t, "us", "c"));
  // The queue: every group, and one made while it lasts.
  now = 1002.0;
  CHECK(t.pause(harel::PauseTarget::queue()));
  CHECK(!t.pause(harel::PauseTarget{}));  // an aggregate's default: the queue
  t.publish("new", "4", 2);
  CHECK(!t.claim("w", 30.0));
  harel::Stats s = t.stats();
  CHECK(s->groups == 4 && s->paused == 4 && s->ready == 0 && s->leased == 0 && s->parked == 0 && s->delayed == 0);
  CHECK(s.by_priority().size() == 1 && s.by_priority().begin()[0].groups == 4 && s.by_priority().begin()[0].ready == 0);
  CHECK(groups_in(t, harel::GroupState::Paused).size() == 4 && groups_in(t, harel::GroupState::Ready).empty());
  // The list: the queue's first, then by kind and name; each as the transport's clock said.
  std::vector<harel::Pause> pauses = t.pauses();
  CHECK(pauses.size() == 3);
  if (pauses.size() == 3) {
    CHECK(pauses[0].kind == harel::PauseKind::Queue && pauses[0].name.empty() && pauses[0].paused_at == 1002.0);
    CHECK(pauses[1].kind == harel::PauseKind::Group && pauses[1].name == "a" && pauses[1].paused_at == 1000.0);
    CHECK(pauses[2].kind == harel::PauseKind::RoutingKey && pauses[2].name == "eu" && pauses[2].paused_at == 1001.0);
  }
  // Resume: true when there was such a pause, false when nothing changed; each pause its own.
  CHECK(t.resume(harel::PauseTarget::queue()));
  CHECK(!t.resume(harel::PauseTarget::queue()));
  CHECK((groups_in(t, harel::GroupState::Paused) == std::vector<std::string>{"a", "b"}));
  CHECK(t.resume(harel::PauseTarget::routing_key("eu")));
  CHECK(groups_in(t, harel::GroupState::Paused) == std::vector<std::string>{"a"});
  CHECK(t.resume(harel::PauseTarget{harel::PauseKind::Group, "a"}));
  CHECK(!t.resume(harel::PauseTarget::group("a")) && !t.resume(harel::PauseTarget::routing_key("none")));
  CHECK(t.pauses().empty() && t.stats()->paused == 0);
  // A lease taken before a pause finishes; the paused group lists its holder; a group with no
  // messages may be paused, and a multi-byte name comes back byte for byte.
  auto held = t.claim("w1", 30.0);
  CHECK(held && held->group_id() == "a");
  CHECK(t.pause(harel::PauseTarget::group("a")) && t.pause(harel::PauseTarget::group("\xc3\xa9t\xc3\xa9")));
  harel_group_page *page = nullptr;
  CHECK(harel_transport_groups(t.get(), static_cast<int32_t>(harel::GroupState::Paused), nullptr, 10, &page,
                               nullptr) == HAREL_OK);
  if (page) CHECK(page->n_groups == 1 && page->groups[0].holder && std::string(page->groups[0].holder) == "w1");
  harel_group_page_free(page);
  if (held) t.ack(*held);
  pauses = t.pauses();
  CHECK(pauses.size() == 2 && pauses[1].name == "\xc3\xa9t\xc3\xa9" && pauses[1].name.size() == 5);
  CHECK(t.resume(harel::PauseTarget::group("a")));
  CHECK(drain(t, "w") == 3);
}

static void test_pause_errors() {
  double now = 1000.0;
  auto t = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now));
  t.publish("g", "1", 0, "eu");
  const std::string kind_must_be = "it must be HAREL_PAUSE_QUEUE, HAREL_PAUSE_GROUP or HAREL_PAUSE_ROUTING_KEY";
  for (auto call : {&harel::Transport::pause, &harel::Transport::resume}) {
    std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, (t.*call)(harel::PauseTarget::group("")));
    CHECK(what == "HAREL_ERR_ARGUMENT: group_id is empty");
    what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, (t.*call)(harel::PauseTarget::routing_key(std::string())));
    CHECK(what == "HAREL_ERR_ARGUMENT: routing_key is empty");
    for (harel::PauseTarget no_name : {harel::PauseTarget::group(nullptr), harel::PauseTarget::routing_key(nullptr)}) {
      what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, (t.*call)(no_name));
      CHECK(what == "HAREL_ERR_ARGUMENT: name is NULL: a group id or routing key to pause");
    }
    for (const char *name : {"g", ""}) {
      what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, (t.*call)(harel::PauseTarget{harel::PauseKind::Queue, name}));
      CHECK(what == "HAREL_ERR_ARGUMENT: name must be NULL with HAREL_PAUSE_QUEUE");
    }
    for (int32_t kind : {7, -1, 3}) {
      const harel::PauseTarget bad{static_cast<harel::PauseKind>(kind), "g"};
      what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, (t.*call)(bad));
      CHECK(what == "HAREL_ERR_ARGUMENT: kind is " + std::to_string(kind) + "; " + kind_must_be);
    }
    for (harel::PauseTarget bad : {harel::PauseTarget::group("\xff"), harel::PauseTarget::routing_key("ab\xc3")}) {
      what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, (t.*call)(bad));
      CHECK(what.rfind("HAREL_ERR_ARGUMENT: name is not valid UTF-8", 0) == 0);
    }
  }
  // Nothing was paused: no pause listed, g served.
  CHECK(t.pauses().empty() && t.stats()->paused == 0);
  // An empty Transport (moved from): every call refused, as the C side refuses a NULL handle.
  harel::Transport moved = std::move(t);
  for (const std::string &what : {EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.pause(harel::PauseTarget::queue())),  // NOLINT
                                  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.resume(harel::PauseTarget::queue())),  // NOLINT
                                  EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.pauses())})                           // NOLINT
    CHECK(what == "HAREL_ERR_ARGUMENT: t is NULL");
  CHECK(drain(moved, "w") == 1);

  // A queue without the pauses table (its triggers dropped too, reopened with create_schema
  // off): pause and resume throw HAREL_ERR_DATABASE naming it; pauses() is empty.
  TempDir dir;
  const std::string path = dir.file("no-pauses.db");
  {
    auto made = harel::Transport::open(path);
    made.transaction([](harel::Tx &tx) {
      tx.execute("DROP TRIGGER harel_transport_groups_paused_at_birth");
      tx.execute("DROP TRIGGER harel_transport_groups_paused_turn");
      tx.execute("DROP TABLE harel_transport_pauses");
    });
  }
  auto old = harel::Transport::open(path, harel::Options().create_schema(false));
  std::string what = EXPECT_ERROR(HAREL_ERR_DATABASE, old.pause(harel::PauseTarget::group("g")));
  CHECK(what.find("the table harel_transport_pauses or its triggers are missing") != std::string::npos);
  EXPECT_ERROR(HAREL_ERR_DATABASE, old.resume(harel::PauseTarget::queue()));
  CHECK(old.pauses().empty());
}

// Threads sharing a Transport pause, resume, list and claim: each thread's own group and
// routing key answer as if it were alone; one thread toggles the queue's pause.
static void test_pause_threads() {
  auto t = harel::Transport::open(":memory:");
  constexpr int kThreads = 4, kRounds = 5;
  for (int k = 0; k < kThreads; k++)
    for (int r = 0; r < kRounds; r++) t.publish("g" + std::to_string(k), "{}", 0, "k" + std::to_string(k));
  std::atomic<int> wrong{0}, claimed{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int k = 0; k < kThreads; k++) {
    threads.emplace_back([&, k] {
      const std::string group = "g" + std::to_string(k), key = "k" + std::to_string(k);
      const char *const key_list[] = {key.c_str()};
      const harel::RoutingKeys keys(key_list);
      try {
        for (int r = 0; r < kRounds; r++) {
          if (!t.pause(harel::PauseTarget::group(group)) || t.pause(harel::PauseTarget::group(group))) wrong++;
          if (t.claim("w", 30.0, 0, keys)) wrong++;
          if (!t.pause(harel::PauseTarget::routing_key(key)) || !t.resume(harel::PauseTarget::group(group))) wrong++;
          if (t.claim("w", 30.0, 0, keys)) wrong++;
          if (!t.resume(harel::PauseTarget::routing_key(key))) wrong++;
          std::optional<harel::Lease> lease;
          for (int tries = 0; !lease && tries < 5000; tries++) {  // the queue's pause may last
            lease = t.claim("w", 30.0, 0, keys);
            if (!lease) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
          if (lease) {
            t.ack(*lease);
            claimed++;
          }
        }
      } catch (const std::exception &e) {
        std::fprintf(stderr, "  thread %d: %s\n", k, e.what());
        wrong++;
      }
    });
  }
  threads.emplace_back([&] {
    try {
      for (int i = 0; i < 20 && !done; i++) {
        if (!t.pause(harel::PauseTarget::queue())) wrong++;
        std::vector<harel::Pause> listed = t.pauses();
        if (listed.empty() || listed[0].kind != harel::PauseKind::Queue) wrong++;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        if (!t.resume(harel::PauseTarget::queue())) wrong++;
      }
    } catch (const std::exception &e) {
      std::fprintf(stderr, "  the queue's thread: %s\n", e.what());
      wrong++;
    }
  });
  for (int k = 0; k < kThreads; k++) threads[static_cast<std::size_t>(k)].join();
  done = true;
  threads.back().join();
  CHECK(wrong == 0 && claimed == kThreads * kRounds);
  CHECK(t.pauses().empty() && t.stats()->messages == 0 && t.stats()->paused == 0);
}

// ---- the archive: Options::archive, Transport::archive, ArchivePage, Archived ---------------

static_assert(!std::is_copy_constructible_v<harel::ArchivePage> && !std::is_copy_assignable_v<harel::ArchivePage> &&
              std::is_nothrow_move_constructible_v<harel::ArchivePage> &&
              std::is_nothrow_move_assignable_v<harel::ArchivePage> &&
              std::is_nothrow_destructible_v<harel::ArchivePage>);
static_assert(std::is_trivially_copyable_v<harel::Archived>, "an Archived is a view");
static_assert(std::is_same_v<decltype(std::declval<const harel::Transport &>().archive()), harel::ArchivePage>);
static_assert(std::is_same_v<decltype(*std::declval<const harel::ArchivePage &>().begin()), harel::Archived>);
static_assert(std::is_same_v<decltype(std::declval<harel::Archived>().published_at()), std::optional<double>> &&
              std::is_same_v<decltype(std::declval<harel::Archived>().claimed_at()), std::optional<double>> &&
              std::is_same_v<decltype(std::declval<harel::Archived>().acked_at()), double>);
static_assert(std::is_same_v<decltype(std::declval<harel::Archived>().headers()), harel::HeaderList>);

static const char ARCHIVE_TP[] = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

// Every archived message `t` lists (`group`'s, or every group's), page after page of
// `limit`, each page's size in `sizes`: copied as (seq, group, event, shard).
struct Listed {
  std::vector<std::tuple<std::int64_t, std::string, std::string, std::size_t>> items;  // seq, group, event, shard
  std::vector<std::size_t> sizes;
};
static Listed list_archive(const harel::Transport &t, const char *group, std::size_t limit) {
  Listed listed;
  for (harel::ArchivePage page = t.archive(group, nullptr, limit);;
       page = t.archive(group, page.next_cursor(), limit)) {
    listed.sizes.push_back(page.size());
    for (const harel::Archived &a : page)
      listed.items.emplace_back(a.seq(), std::string(a.group_id()), std::string(a.event()), a.shard());
    if (!page.next_cursor() || listed.sizes.size() > 100) break;
  }
  return listed;
}

// Published with headers, claimed and nacked, claimed again by a named worker, acked: every
// field of the one Archived, on the moved clock; nothing before the ack; the page's accessors,
// its range, its moves; a message without headers; times a writer did not stamp as std::nullopt.
static void test_archive_every_field() {
  double now = 1000.0;
  auto t = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now).archive(3600.0));
  const std::string group = "order-\xc3\xa9", event = "{\"k\":\"caf\xc3\xa9\",\"n\":[1,2]}";
  const std::vector<std::pair<std::string, std::string>> sent = {
      {"traceparent", ARCHIVE_TP}, {"note", "caf\xc3\xa9"}, {"traceparent", "again"}};
  const std::vector<harel::Header> headers = {
      {"traceparent", ARCHIVE_TP}, {"note", "caf\xc3\xa9"}, {"traceparent", "again"}};
  harel::Published p = t.publish_with(group, event, {}, headers);
  now = 1001.0;
  if (auto first = t.claim("w1", 30.0)) t.nack(*first);
  now = 1002.0;
  auto lease = t.claim("worker-7", 30.0);
  CHECK(lease && lease->attempts() == 2);
  now = 1004.5;
  CHECK(t.archive().empty() && t.archive().next_cursor() == nullptr);  // nothing before the ack
  if (lease) t.ack(*lease);
  now = 1010.0;
  harel::ArchivePage page = t.archive();
  CHECK(page.size() == 1 && !page.empty() && page.next_cursor() == nullptr && page.get() != nullptr);
  if (page.size() == 1) {
    const harel::Archived a = page[0];
    CHECK(a.seq() == p.seq && a.group_id() == group && a.event() == event);
    CHECK(a.attempts() == 2 && a.worker_id() == "worker-7" && a.shard() == 0);
    CHECK(a.published_at() == 1000.0 && a.claimed_at() == 1002.0 && a.acked_at() == 1004.5);
    CHECK(a.headers().to_vector() == sent && a.headers().find("traceparent") == std::string_view(ARCHIVE_TP));
    CHECK(a.get() == &page.get()->messages[0]);
  }
  int n = 0;
  for (const harel::Archived &a : page) n += a.seq() == p.seq ? 1 : 100;
  CHECK(n == 1 && std::distance(page.begin(), page.end()) == 1);
  // The group's own listing, as a std::string; a group with nothing archived.
  CHECK(t.archive(group).size() == 1 && t.archive(std::string("other")).empty());
  // A message without headers, claimed once; published, claimed and acked at 1010.
  harel::Published plain = t.publish_with("plain", "1");
  CHECK(drain(t, "w") == 1);
  harel::ArchivePage second = t.archive("plain", nullptr, 10);
  CHECK(second.size() == 1);
  if (second.size() == 1) {
    CHECK(second[0].seq() == plain.seq && second[0].headers().empty() && second[0].attempts() == 1);
    CHECK(second[0].worker_id() == "w" && second[0].published_at() == 1010.0 && second[0].acked_at() == 1010.0);
  }
  // Moves: the moved-from page is empty, the other holds the messages.
  harel::ArchivePage moved(std::move(page));
  CHECK(page.empty() && page.size() == 0 && page.get() == nullptr && page.next_cursor() == nullptr);  // NOLINT
  CHECK(page.begin() == page.end() && moved.size() == 1 && moved[0].seq() == p.seq);                  // NOLINT
  page = std::move(second);
  CHECK(page.size() == 1 && page[0].seq() == plain.seq);
  // A default-made Archived views nothing.
  const harel::Archived none;
  CHECK(none.seq() == 0 && none.group_id().empty() && none.event().empty() && none.headers().empty());
  CHECK(none.worker_id().empty() && !none.published_at() && !none.claimed_at() && none.acked_at() == 0.0);
  CHECK(none.get() == nullptr && none.shard() == 0 && none.attempts() == 0);
  // Times a writer did not stamp (harel's publishes) and a claim's time unknown: std::nullopt.
  t.publish("unstamped", "2");
  auto held = t.claim("w2", 30.0);
  t.transaction([](harel::Tx &tx) {
    tx.execute("UPDATE harel_transport_messages SET enqueued_at = NULL, claimed_at = NULL");
  });
  now = 1020.0;
  if (held) t.ack(*held);
  harel::ArchivePage unknown = t.archive("unstamped");
  CHECK(unknown.size() == 1);
  if (unknown.size() == 1)
    CHECK(!unknown[0].published_at() && !unknown[0].claimed_at() && unknown[0].acked_at() == 1020.0);
  CHECK(t.stats()->messages == 0 && t.archive(nullptr, nullptr, 10).size() == 3);
}

// Pages by next_cursor: every group's in full pages but the last, each message once in seq
// order; a group's history in order; off by default (nothing archived); beside a Transport
// that keeps it, only its acks, read by either.
static void test_archive_pages_and_off_by_default() {
  double now = 1000.0;
  TempDir dir;
  const std::string path = dir.file("archive.db");
  auto t = harel::Transport::open(path, harel::Options().clock(fake_clock, &now).archive(3600.0));
  std::map<std::string, std::vector<std::int64_t>> published;
  for (int k = 0; k < 5; k++)
    for (const char *g : {"a", "b", "c"})
      published[g].push_back(t.publish_with(g, std::string("\"") + g + std::to_string(k) + "\"").seq);
  for (auto lease = t.claim("w", 30.0); lease; lease = t.claim("w", 30.0)) {
    now += 0.25;
    t.ack(*lease);
  }
  Listed all = list_archive(t, nullptr, 4);
  CHECK((all.sizes == std::vector<std::size_t>{4, 4, 4, 3}));
  for (std::size_t i = 1; i < all.items.size(); i++) CHECK(std::get<0>(all.items[i - 1]) < std::get<0>(all.items[i]));
  for (const char *g : {"a", "b", "c"}) {
    Listed history = list_archive(t, g, 2);
    CHECK((history.sizes == std::vector<std::size_t>{2, 2, 1}) && history.items.size() == 5);
    for (std::size_t k = 0; k < history.items.size() && k < 5; k++) {
      CHECK(std::get<0>(history.items[k]) == published[g][k] && std::get<1>(history.items[k]) == g);
      CHECK(std::get<2>(history.items[k]) == std::string("\"") + g + std::to_string(k) + "\"");
    }
  }
  CHECK(t.archive("b", nullptr, 5).next_cursor() == nullptr);  // an exact fit ends the listing
  CHECK(t.archive(nullptr, nullptr, HAREL_MAX_PAGE).size() == 15);
  // Off by default: a Transport without the option acks and archives nothing...
  auto off = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now));
  off.publish("g", "1");
  CHECK(drain(off, "w") == 1 && off.archive().empty());
  // ...and beside one that keeps it, on the same file, only that one's acks are archived.
  auto beside = harel::Transport::open(path, harel::Options().clock(fake_clock, &now));
  beside.publish("x", "\"by beside\"");
  beside.publish("y", "\"by t\"");
  auto mine = beside.claim("w-beside", 30.0);  // the first to arrive
  CHECK(mine && mine->event() == "\"by beside\"");
  if (mine) beside.ack(*mine);
  CHECK(drain(t, "w-t") == 1);
  Listed both = list_archive(beside, nullptr, 100);
  CHECK(both.items.size() == 16 && list_archive(t, nullptr, 100).items == both.items);
  CHECK(std::get<2>(both.items.back()) == "\"by t\"");
}

// Over three shards: shard after shard, each item's shard harel::shard_of's; a group's from
// its shard.
static void test_archive_sharded() {
  double now = 1000.0;
  TempDir dir;
  auto t = harel::Transport::open_shards({dir.file("s0.db"), dir.file("s1.db"), dir.file("s2.db")},
                                         harel::Options().clock(fake_clock, &now).archive(3600.0));
  std::vector<std::string> groups;
  for (int i = 0; i < 12; i++) groups.push_back("g" + std::to_string(i));
  for (const std::string &g : groups) {
    t.publish(g, "1");
    t.publish(g, "2");
  }
  CHECK(drain(t, "w") == 24);
  Listed all = list_archive(t, nullptr, 5);
  CHECK(all.items.size() == 24 && all.sizes.size() == 5 && all.sizes.back() == 4);
  std::set<std::pair<std::string, std::string>> seen;
  for (std::size_t i = 0; i < all.items.size(); i++) {
    const auto &[seq, group, event, shard] = all.items[i];
    CHECK(shard == harel::shard_of(group, 3) && seen.emplace(group, event).second);
    if (i > 0) CHECK(std::get<3>(all.items[i - 1]) <= shard);
    if (i > 0 && std::get<3>(all.items[i - 1]) == shard) CHECK(std::get<0>(all.items[i - 1]) < seq);
  }
  for (const std::string &g : groups) {
    harel::ArchivePage history = t.archive(g);
    CHECK(history.size() == 2 && history[0].event() == "1" && history[1].event() == "2");
    for (const harel::Archived &a : history) CHECK(a.shard() == harel::shard_of(g, 3) && a.group_id() == g);
  }
}

// Each refusal of the option and of the look, with the library's message: HAREL_ERR_ARGUMENT
// as harel::Error; an empty Transport; a file without the table opened with create_schema off.
static void test_archive_errors() {
  // The option.
  harel::Options o;
  o.archive(315360000.0).archive(1e-3);
  const std::pair<double, const char *> bad[] = {
      {0.0, "archive_retention is 0; it must be a finite number of seconds > 0"},
      {-1.0, "archive_retention is -1; it must be a finite number of seconds > 0"},
      {std::nan(""), "archive_retention is NaN; it must be a finite number of seconds > 0"},
      {HUGE_VAL, "archive_retention is inf; it must be a finite number of seconds > 0"},
      {315360001.0, "archive_retention is 315360001; at most 315360000 (ten years)"},
      {400000000.0, "archive_retention is 400000000; at most 315360000 (ten years)"}};
  for (const auto &[retention, says] : bad) {
    std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, o.archive(retention));
    CHECK(what == std::string("HAREL_ERR_ARGUMENT: ") + says);
  }
  // The look.
  double now = 1000.0;
  auto t = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now).archive(3600.0));
  t.publish("g", "1");
  t.publish("d1", "2");
  t.publish("d2", "3");
  if (auto l = t.claim("w", 30.0)) t.ack(*l);
  for (int i = 0; i < 2; i++)
    if (auto l = t.claim("w", 30.0)) t.dead_letter(*l, "poison");
  std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.archive(""));
  CHECK(what == "HAREL_ERR_ARGUMENT: group_id is empty");
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.archive("\xff"));
  CHECK(what.rfind("HAREL_ERR_ARGUMENT: group_id is not valid UTF-8", 0) == 0);
  for (std::size_t limit : {std::size_t{0}, std::size_t{10001}}) {
    what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.archive(nullptr, nullptr, limit));
    CHECK(what == "HAREL_ERR_ARGUMENT: limit is " + std::to_string(limit) + "; it must be 1..10000");
  }
  harel_dead_page *dead = nullptr;
  CHECK(harel_transport_dead_letters(t.get(), nullptr, nullptr, 1, &dead, nullptr) == HAREL_OK);
  const std::string dead_cursor = dead && dead->next_cursor ? dead->next_cursor : "";
  harel_dead_page_free(dead);
  CHECK(!dead_cursor.empty());
  for (const std::string &cursor : {dead_cursor, std::string("nonsense"), std::string("a1.00")}) {
    what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.archive(nullptr, cursor));
    CHECK(what.find("is not a cursor of this listing") != std::string::npos);
    EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.archive("g", cursor));
  }
  CHECK(t.archive().size() == 1);  // as it was
  // An empty Transport (moved from).
  harel::Transport moved = std::move(t);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.archive());  // NOLINT: use after move, on purpose
  CHECK(what == "HAREL_ERR_ARGUMENT: t is NULL");
  CHECK(moved.archive("g").size() == 1);
  // A file without the archive table, opened with create_schema off: with the option, open
  // throws HAREL_ERR_DATABASE naming the table; without it, it opens and lists nothing.
  TempDir dir;
  const std::string path = dir.file("no-archive.db");
  {
    auto made = harel::Transport::open(path);
    made.transaction([](harel::Tx &tx) { tx.execute("DROP TABLE harel_transport_archive"); });
  }
  what = EXPECT_ERROR(HAREL_ERR_DATABASE,
                      harel::Transport::open(path, harel::Options().create_schema(false).archive(3600.0)));
  CHECK(what.find("the table harel_transport_archive") != std::string::npos);
  auto old = harel::Transport::open(path, harel::Options().create_schema(false));
  old.publish("g", "1");
  CHECK(drain(old, "w") == 1 && old.archive().empty());
}

// ---- limits per routing key: Limit, Rate, set_limit, remove_limit, LimitList, LimitInfo ------

static_assert(!std::is_copy_constructible_v<harel::LimitList> && !std::is_copy_assignable_v<harel::LimitList> &&
              std::is_nothrow_move_constructible_v<harel::LimitList> &&
              std::is_nothrow_move_assignable_v<harel::LimitList> && std::is_nothrow_destructible_v<harel::LimitList>);
static_assert(std::is_trivially_copyable_v<harel::LimitInfo>, "a LimitInfo is a view");
static_assert(std::is_aggregate_v<harel::Limit> && std::is_aggregate_v<harel::Rate>);
static_assert(std::is_same_v<decltype(harel::Limit{}.concurrency), std::optional<uint32_t>> &&
              std::is_same_v<decltype(harel::Limit{}.rate), std::optional<harel::Rate>> &&
              std::is_same_v<decltype(harel::Rate{}.per_second), double> &&
              std::is_same_v<decltype(harel::Rate{}.burst), double>);
static_assert(std::is_convertible_v<harel::Rate, harel::Limit>, "a Rate is a Limit of the rate alone");
static_assert(std::is_same_v<decltype(std::declval<harel::Transport &>().set_limit("k", harel::Limit{})), void> &&
              std::is_same_v<decltype(std::declval<harel::Transport &>().remove_limit("k")), void>);
static_assert(std::is_same_v<decltype(std::declval<const harel::Transport &>().limits()), harel::LimitList>);
static_assert(std::is_same_v<decltype(*std::declval<const harel::LimitList &>().begin()), harel::LimitInfo>);
static_assert(std::is_same_v<decltype(std::declval<harel::LimitInfo>().routing_key()), std::string_view> &&
              std::is_same_v<decltype(std::declval<harel::LimitInfo>().concurrency()), std::optional<uint32_t>> &&
              std::is_same_v<decltype(std::declval<harel::LimitInfo>().rate()), std::optional<harel::Rate>> &&
              std::is_same_v<decltype(std::declval<harel::LimitInfo>().limit()), harel::Limit> &&
              std::is_same_v<decltype(std::declval<harel::LimitInfo>().in_use()), uint64_t> &&
              std::is_same_v<decltype(std::declval<harel::LimitInfo>().tokens()), std::optional<double>> &&
              std::is_same_v<decltype(std::declval<harel::LimitInfo>().held()), uint64_t>);

// A claim of any group hands out the head of `group` (nullptr: nothing); the lease, if any.
static std::optional<harel::Lease> claims_group(harel::Transport &t, const char *group) {
  std::optional<harel::Lease> lease = t.claim("w", 30.0);
  if (group) {
    CHECK(lease && lease->group_id() == group);
  } else {
    CHECK(!lease);
  }
  return lease;
}

// The one limit in force, copied out of its list: key, concurrency (0: none), rate and
// burst (0, 0: none), in_use, tokens (-1: none), held.
struct LimitSeen {
  std::string key;
  uint32_t concurrency = 0;
  double rate = 0.0, burst = 0.0;
  uint64_t in_use = 0;
  double tokens = -1.0;
  uint64_t held = 0;
  bool operator==(const LimitSeen &o) const {
    return key == o.key && concurrency == o.concurrency && rate == o.rate && burst == o.burst &&
           in_use == o.in_use && std::fabs(tokens - o.tokens) < 1e-9 && held == o.held;
  }
};
static LimitSeen seen(const harel::LimitInfo &l) {
  const std::optional<harel::Rate> rate = l.rate();
  return LimitSeen{std::string(l.routing_key()), l.concurrency().value_or(0), rate ? rate->per_second : 0.0,
                   rate ? rate->burst : 0.0, l.in_use(), l.tokens().value_or(-1.0), l.held()};
}
static LimitSeen only_limit(const harel::Transport &t) {
  const harel::LimitList list = t.limits();
  CHECK(list.size() == 1);
  return list.size() == 1 ? seen(list[0]) : LimitSeen{};
}

// A concurrency limit of 1 on a key with three groups lets one claim through, the others pass
// over it (a group without the key served); the list says 1 in use, 2 held; an ack lets the
// next through, a nack too (the held group first). A rate limit's fields and tokens reach the
// list; a set replaces the key's limits; remove serves the held groups at once.
static void test_limits_concurrency_rate_and_remove() {
  double now = 1000.0;
  auto t = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now));
  CHECK(t.limits().empty() && t.limits().size() == 0 && t.limits().begin() == t.limits().end());
  t.set_limit("k", {1});
  CHECK((only_limit(t) == LimitSeen{"k", 1, 0.0, 0.0, 0, -1.0, 0}));
  for (const char *g : {"a", "b", "c"}) t.publish(g, "1", 0, "k");
  t.publish("free", "2");
  std::optional<harel::Lease> a = claims_group(t, "a");
  if (auto free = claims_group(t, "free")) t.ack(*free);  // b and c passed over
  claims_group(t, nullptr);
  CHECK(!t.claim("w", 30.0, 0, {"k"}));
  CHECK((only_limit(t) == LimitSeen{"k", 1, 0.0, 0.0, 1, -1.0, 2}));
  CHECK((groups_in(t, harel::GroupState::Held) == std::vector<std::string>{"b", "c"}));
  CHECK(groups_in(t, harel::GroupState::Ready).empty());  // held, not ready
  if (a) t.ack(*a);  // room for one: b
  std::optional<harel::Lease> b = claims_group(t, "b");
  claims_group(t, nullptr);
  CHECK((only_limit(t) == LimitSeen{"k", 1, 0.0, 0.0, 1, -1.0, 1}));
  if (b) t.nack(*b);  // room again: the held c before the nacked b
  if (auto c = claims_group(t, "c")) t.ack(*c);
  if (auto again = claims_group(t, "b")) t.ack(*again);
  CHECK((only_limit(t) == LimitSeen{"k", 1, 0.0, 0.0, 0, -1.0, 0}));
  t.remove_limit("k");

  // A rate limit, a Rate alone: a full bucket, the burst's claims, then one a half second.
  t.set_limit("r", harel::Rate{2.0, 3.0});
  CHECK((only_limit(t) == LimitSeen{"r", 0, 2.0, 3.0, 0, 3.0, 0}));
  for (int i = 0; i < 5; i++) t.publish("r" + std::to_string(i), "3", 0, "r");
  for (const char *g : {"r0", "r1", "r2"})
    if (auto l = claims_group(t, g)) t.ack(*l);
  claims_group(t, nullptr);
  CHECK((only_limit(t) == LimitSeen{"r", 0, 2.0, 3.0, 0, 0.0, 2}));
  now = 1000.5;
  CHECK((only_limit(t) == LimitSeen{"r", 0, 2.0, 3.0, 0, 1.0, 2}));
  if (auto l = claims_group(t, "r3")) t.ack(*l);
  claims_group(t, nullptr);
  // Both kinds replace it (the bucket kept, refilled at the new rate); then the concurrency
  // alone: the rate off, and the held group served.
  t.set_limit("r", {1, harel::Rate{4.0, 10.0}});
  harel::LimitList list = t.limits();
  CHECK(list.size() == 1);
  if (list.size() == 1) {
    const harel::Limit l = list[0].limit();
    CHECK(l.concurrency == 1u && l.rate && l.rate->per_second == 4.0 && l.rate->burst == 10.0);
    CHECK(list[0].tokens() == 0.0 && list[0].held() == 1 && list[0].in_use() == 0);
  }
  now = 1000.75;
  CHECK((only_limit(t) == LimitSeen{"r", 1, 4.0, 10.0, 0, 1.0, 1}));
  t.set_limit("r", {1});
  CHECK((only_limit(t) == LimitSeen{"r", 1, 0.0, 0.0, 0, -1.0, 1}));
  std::optional<harel::Lease> r4 = claims_group(t, "r4");
  CHECK((only_limit(t) == LimitSeen{"r", 1, 0.0, 0.0, 1, -1.0, 0}));
  if (r4) t.ack(*r4);
  // remove_limit serves the held groups at once; a lease taken before finishes.
  for (const char *g : {"x", "y", "z"}) t.publish(g, "4", 0, "r");
  std::optional<harel::Lease> x = claims_group(t, "x");
  claims_group(t, nullptr);
  CHECK((only_limit(t) == LimitSeen{"r", 1, 0.0, 0.0, 1, -1.0, 2}));
  t.remove_limit(std::string("r"));
  CHECK(t.limits().empty());
  std::optional<harel::Lease> y = claims_group(t, "y"), z = claims_group(t, "z");
  for (auto *l : {&x, &y, &z})
    if (*l) t.ack(**l);
  CHECK(drain(t, "w") == 0);
}

// The list: by routing key in byte order (a multi-byte key last, by its bytes), a range for
// `for` and operator[], its views living as long as the list (past the Transport too);
// moves; a default-made LimitInfo views nothing.
static void test_limits_list_and_moves() {
  double now = 1000.0;
  auto t = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now));
  const std::string ete = "\xc3\xa9t\xc3\xa9";
  t.set_limit("us", {2});
  t.set_limit(ete, {3, harel::Rate{0.5, 1.0}});
  t.set_limit("eu", harel::Rate{0.001, 1.0});
  t.set_limit("a", {1000000u, harel::Rate{1000000.0, 1000000.0}});  // the largest numbers
  t.set_limit("us", {7});                                           // replaces
  harel::LimitList list = t.limits();
  std::vector<LimitSeen> all;
  for (const harel::LimitInfo &l : list) all.push_back(seen(l));
  CHECK((all == std::vector<LimitSeen>{{"a", 1000000, 1000000.0, 1000000.0, 0, 1000000.0, 0},
                                       {"eu", 0, 0.001, 1.0, 0, 1.0, 0},
                                       {"us", 7, 0.0, 0.0, 0, -1.0, 0},
                                       {ete, 3, 0.5, 1.0, 0, 1.0, 0}}));
  CHECK(list.size() == 4 && list[3].routing_key() == ete && list[3].routing_key().size() == 5);
  CHECK(list.get() && list[2].get() == &list.get()->limits[2]);
  // The list outlives the Transport and a remove.
  t.remove_limit("eu");
  { harel::Transport gone = std::move(t); }
  CHECK(list.size() == 4 && list[1].routing_key() == "eu" && list[1].rate()->per_second == 0.001);
  // Moves: the moved-from list is empty, the other holds the limits.
  harel::LimitList moved(std::move(list));
  CHECK(list.empty() && list.size() == 0 && list.get() == nullptr && list.begin() == list.end());  // NOLINT
  CHECK(moved.size() == 4 && moved[0].routing_key() == "a");
  list = std::move(moved);
  CHECK(list.size() == 4 && moved.empty());  // NOLINT: read after move, on purpose
  // A default-made LimitInfo views nothing.
  const harel::LimitInfo none;
  CHECK(none.routing_key().empty() && !none.concurrency() && !none.rate() && !none.tokens());
  CHECK(none.in_use() == 0 && none.held() == 0 && none.get() == nullptr);
  CHECK(!none.limit().concurrency && !none.limit().rate);
  // A Rate converts to a Limit of the rate alone.
  const harel::Limit from_rate = harel::Rate{2.0, 5.0};
  CHECK(!from_rate.concurrency && from_rate.rate && from_rate.rate->per_second == 2.0 && from_rate.rate->burst == 5.0);
}

// Over three shards: set on every shard (a concurrency of 1 lets one lease through on each),
// the list gives the key once with in_use, tokens and held summed; remove on every shard.
static void test_limits_sharded() {
  double now = 1000.0;
  TempDir dir;
  auto t = harel::Transport::open_shards({dir.file("s0.db"), dir.file("s1.db"), dir.file("s2.db")},
                                         harel::Options().clock(fake_clock, &now));
  t.set_limit("k", {1});
  std::set<std::size_t> shards;
  for (int i = 0; i < 12; i++) {
    const std::string g = "g" + std::to_string(i);
    t.publish(g, "1", 0, "k");
    shards.insert(harel::shard_of(g, 3));
  }
  std::vector<harel::Lease> leases;
  for (auto lease = t.claim("w", 30.0); lease; lease = t.claim("w", 30.0)) leases.push_back(std::move(*lease));
  const uint64_t n = leases.size();
  CHECK(n == shards.size() && n == 3);
  CHECK((only_limit(t) == LimitSeen{"k", 1, 0.0, 0.0, n, -1.0, 12 - n}));
  t.set_limit("k", {1, harel::Rate{1.0, 2.0}});  // a full bucket of 2 on each shard, summed
  CHECK((only_limit(t) == LimitSeen{"k", 1, 1.0, 2.0, n, 6.0, 12 - n}));
  t.ack(leases[0]);  // room on its shard: the next claim takes one of its tokens
  if (auto next = t.claim("w", 30.0)) leases[0] = std::move(*next);
  CHECK((only_limit(t) == LimitSeen{"k", 1, 1.0, 2.0, n, 5.0, 11 - n}));
  t.remove_limit("k");
  CHECK(t.limits().empty());
  for (const harel::Lease &l : leases) t.ack(l);
  CHECK(drain(t, "w") == static_cast<int>(11 - n));
  std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.remove_limit("k"));
  CHECK(what == "HAREL_ERR_ARGUMENT: routing key \"k\" has no limit to remove");
}

// Every bad input reaches the caller as harel::Error (HAREL_ERR_ARGUMENT) with the library's
// message, and the limits as they were; what the C side cannot be told (a concurrency of 0, a
// rate and burst both 0) is refused by the wrapper in the library's words; an empty Transport.
static void test_limit_errors() {
  double now = 1000.0;
  auto t = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now));
  t.set_limit("k", {2});
  const std::string rate_must_be = "; it must be a finite number > 0, at most 1000000";
  const std::string burst_must_be = "; it must be a finite number >= 1, at most 1000000";
  const std::pair<harel::Limit, std::string> bad[] = {
      {harel::Limit{}, "the limit has neither a concurrency nor a rate"},
      {{0u}, "concurrency is 0; it must be 1..1000000"},
      {{1000001u}, "concurrency is 1000001; it must be 1..1000000"},
      {{UINT32_MAX, harel::Rate{1.0, 1.0}}, "concurrency is 4294967295; it must be 1..1000000"},
      {harel::Rate{0.0, 0.0}, "rate is 0" + rate_must_be},
      {{5u, harel::Rate{0.0, 0.0}}, "rate is 0" + rate_must_be},
      {harel::Rate{0.0, 1.0}, "rate is 0" + rate_must_be},
      {harel::Rate{-1.0, 1.0}, "rate is -1" + rate_must_be},
      {harel::Rate{std::nan(""), 1.0}, "rate is NaN" + rate_must_be},
      {harel::Rate{HUGE_VAL, 1.0}, "rate is inf" + rate_must_be},
      {{3u, harel::Rate{2000000.0, 1.0}}, "rate is 2000000" + rate_must_be},
      {harel::Rate{1.0, 0.5}, "burst is 0.5" + burst_must_be},
      {harel::Rate{1.0, 0.0}, "burst is 0" + burst_must_be},
      {harel::Rate{1.0, std::nan("")}, "burst is NaN" + burst_must_be},
      {{3u, harel::Rate{1.0, 2000000.0}}, "burst is 2000000" + burst_must_be}};
  for (const auto &[limit, says] : bad) {
    for (const char *key : {"k", "new"}) {
      std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.set_limit(key, limit));
      CHECK(what == "HAREL_ERR_ARGUMENT: " + says);
    }
  }
  std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.set_limit("", {1}));
  CHECK(what == "HAREL_ERR_ARGUMENT: routing_key is empty");
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.set_limit(nullptr, {1}));
  CHECK(what == "HAREL_ERR_ARGUMENT: routing_key is NULL");
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.set_limit("\xff", harel::Rate{1.0, 1.0}));
  CHECK(what.rfind("HAREL_ERR_ARGUMENT: routing_key is not valid UTF-8", 0) == 0);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.remove_limit(""));
  CHECK(what == "HAREL_ERR_ARGUMENT: routing_key is empty");
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.remove_limit(nullptr));
  CHECK(what == "HAREL_ERR_ARGUMENT: routing_key is NULL");
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.remove_limit("ab\xc3"));
  CHECK(what.rfind("HAREL_ERR_ARGUMENT: routing_key is not valid UTF-8", 0) == 0);
  what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.remove_limit("none"));
  CHECK(what == "HAREL_ERR_ARGUMENT: routing key \"none\" has no limit to remove");
  // Nothing changed: k's limit alone, as it was.
  CHECK((only_limit(t) == LimitSeen{"k", 2, 0.0, 0.0, 0, -1.0, 0}));
  // An empty Transport (moved from): every call refused, as the C side refuses a NULL handle.
  harel::Transport moved = std::move(t);
  for (const std::string &refused : {EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.set_limit("k", {1})),  // NOLINT
                                     EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.remove_limit("k")),    // NOLINT
                                     EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.limits())})             // NOLINT
    CHECK(refused == "HAREL_ERR_ARGUMENT: t is NULL");
  moved.remove_limit("k");
  CHECK(moved.limits().empty());
}

// ---- retries (issue 39): Options::retry, Retry and Jitter, Delivery::retry, retry_delay ---------

static_assert(static_cast<int32_t>(harel::Jitter::Full) == HAREL_JITTER_FULL &&
              static_cast<int32_t>(harel::Jitter::Equal) == HAREL_JITTER_EQUAL &&
              static_cast<int32_t>(harel::Jitter::None) == HAREL_JITTER_NONE);
static_assert(std::is_aggregate_v<harel::Retry> && std::is_same_v<decltype(harel::Delivery{}.retry), harel::Retry>);
static_assert(std::is_same_v<decltype(harel::retry_delay(std::declval<const harel_message_page &>(), 0)),
                             std::optional<double>>);
static_assert(std::is_same_v<decltype(harel::Options().retry(harel::Retry{})), harel::Options &&> &&
              std::is_same_v<decltype(std::declval<harel::Options &>().retry(std::nullopt)), harel::Options &>);

// The backoffs peek shows for `group`'s messages, in order (std::nullopt: none), through
// harel::retry_delay; one past the page's end reads std::nullopt too.
static std::vector<std::optional<double>> shown_delays(const harel::Transport &t, const char *group) {
  std::vector<std::optional<double>> delays;
  harel_message_page *page = nullptr;
  CHECK(harel_transport_peek(t.get(), group, nullptr, 100, &page, nullptr) == HAREL_OK && page);
  if (page) {
    for (std::size_t i = 0; i < page->n_messages; i++) delays.push_back(harel::retry_delay(*page, i));
    CHECK(!harel::retry_delay(*page, page->n_messages));
  }
  harel_message_page_free(page);
  return delays;
}

// The head of `group`'s backoff.
static std::optional<double> shown(const harel::Transport &t, const char *group) {
  std::vector<std::optional<double>> delays = shown_delays(t, group);
  return delays.empty() ? std::nullopt : delays[0];
}

// Nothing is claimable until `backoff` seconds from now; then the lease of the message's
// claim number `attempts`.
static std::optional<harel::Lease> waits(harel::Transport &t, double &now, double backoff, int64_t attempts) {
  now += backoff - 0.01;
  CHECK(!t.claim("w", 30.0));
  now += 0.02;
  auto lease = t.claim("w", 30.0);
  CHECK(lease && lease->attempts() == attempts);
  return lease;
}

static void test_retry_options() {
  CHECK(harel::Retry{}.base == 0.0 && harel::Retry{}.factor == 2.0 && harel::Retry{}.cap == 0.0 &&
        harel::Retry{}.jitter == harel::Jitter::Full && harel::Delivery{}.retry.base == 0.0);
  double now = 1000.0;
  // The queue's policy, set on an lvalue: a nack with delay 0 parks for the backoff, growing to its cap.
  harel::Options o;
  o.clock(fake_clock, &now).retry({2.0, 3.0, 20.0, harel::Jitter::None});
  auto t = harel::Transport::open(":memory:", o);
  t.publish("g", "\"m\"");
  CHECK((shown_delays(t, "g") == std::vector<std::optional<double>>{std::nullopt}));  // not claimed yet
  auto lease = t.claim("w", 30.0);
  for (double backoff : {2.0, 6.0, 18.0, 20.0}) {
    if (!lease) break;
    CHECK(shown(t, "g") == backoff);
    t.nack(*lease);
    harel::Stats s = t.stats();
    CHECK(s->ready == 0 && s->parked == 1);
    lease = waits(t, now, backoff, lease->attempts() + 1);
  }
  if (lease) t.nack(*lease, 1.0);  // a worker's delay wins
  lease = waits(t, now, 1.0, 6);
  if (lease) t.ack(*lease);
  // Chained on a temporary; factor and cap as their defaults (2, an hour); std::nullopt removes.
  harel::Retry defaults;  // factor 2, cap 0: an hour
  defaults.base = 1000.0;
  defaults.jitter = harel::Jitter::None;
  auto doubling = harel::Transport::open(":memory:", harel::Options().retry(defaults).clock(fake_clock, &now));
  doubling.publish("g", "\"m\"");
  lease = doubling.claim("w", 30.0);
  for (double backoff : {1000.0, 2000.0, 3600.0}) {
    if (!lease) break;
    CHECK(shown(doubling, "g") == backoff);
    doubling.nack(*lease);
    lease = waits(doubling, now, backoff, lease->attempts() + 1);
  }
  if (lease) doubling.ack(*lease);
  o.retry(std::nullopt);
  auto none = harel::Transport::open(":memory:", o);
  none.publish("g", "\"m\"");
  lease = none.claim("w", 30.0);
  CHECK(lease && !shown(none, "g"));
  if (lease) none.nack(*lease);
  CHECK(none.stats()->ready == 1 && none.claim("w", 30.0));  // free at once
  o.retry({5.0, 1.0, 5.0, harel::Jitter::None}).retry(harel::Retry{});  // a base of 0 removes too
  auto removed = harel::Transport::open(":memory:", o);
  removed.publish("g", "\"m\"");
  lease = removed.claim("w", 30.0);
  if (lease) removed.nack(*lease);
  CHECK(removed.claim("w", 30.0));
  CHECK(static_cast<bool>(harel::Options().retry(std::nullopt).get()));
  // A lapsed lease's group waits its backoff listed as retrying, not ready; then ready.
  auto lapsing = harel::Transport::open(
      ":memory:", harel::Options().clock(fake_clock, &now).retry({5.0, 1.0, 5.0, harel::Jitter::None}));
  lapsing.publish("g", "\"m\"");
  CHECK(lapsing.claim("w", 1.0));
  now += 2.0;
  CHECK(groups_in(lapsing, harel::GroupState::Retrying) == std::vector<std::string>{"g"});
  CHECK(groups_in(lapsing, harel::GroupState::Ready).empty());
  now += 5.0;
  CHECK(groups_in(lapsing, harel::GroupState::Ready) == std::vector<std::string>{"g"});
}

// Each Jitter reaches its spread: Full in [0, d), Equal in [d/2, d), None d.
static void test_retry_jitter() {
  double now = 1000.0;
  for (auto [jitter, low] : {std::pair{harel::Jitter::Full, 0.0}, std::pair{harel::Jitter::Equal, 5.0},
                             std::pair{harel::Jitter::None, 10.0}}) {
    auto t = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now).retry({10.0, 1.0, 10.0, jitter}));
    std::vector<std::string> groups;
    for (int i = 0; i < 20; i++) groups.push_back("g" + std::to_string(i));
    for (const std::string &g : groups) t.publish(g, "1");
    std::vector<harel::Lease> leases = t.claim_many("w", 30.0, 20);
    CHECK(leases.size() == groups.size());
    std::set<double> drawn;
    for (const std::string &g : groups) {
      std::optional<double> d = shown(t, g.c_str());
      CHECK(d && *d >= low && (jitter == harel::Jitter::None ? *d == 10.0 : *d < 10.0));
      if (d) drawn.insert(*d);
    }
    CHECK(jitter == harel::Jitter::None ? drawn.size() == 1 : drawn.size() > 1);
    t.ack_many(leases);
  }
}

// Delivery::retry: a message's own policy wins over the queue's, by publish_with,
// publish_many_with (a default Delivery: the queue's) and a transaction; with no queue
// policy, its own applies; peek shows each message's.
static void test_retry_delivery() {
  double now = 1000.0;
  auto t = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now).retry({50.0, 1.0, 50.0, harel::Jitter::None}));
  harel::Delivery own;
  own.retry = {5.0, 1.0, 5.0, harel::Jitter::None};
  t.publish_with("own", "\"own\"", own);
  t.publish("own", "\"behind\"");
  auto lease = t.claim("w", 30.0);
  CHECK(lease && lease->event() == "\"own\"");
  CHECK((shown_delays(t, "own") == std::vector<std::optional<double>>{5.0, std::nullopt}));
  if (lease) t.nack(*lease);
  lease = waits(t, now, 5.0, 2);
  if (lease) t.ack(*lease);
  lease = t.claim("w", 30.0);
  CHECK(lease && lease->event() == "\"behind\"" && shown(t, "own") == 50.0);  // the queue's
  if (lease) t.ack(*lease);
  // A batch, each message its own; a transaction's.
  CHECK(t.publish_many_with({{"b1", "1"}, {"b2", "2"}}, {own, {}}).size() == 2);
  std::vector<harel::Lease> both = t.claim_many("w", 30.0, 2);
  CHECK(both.size() == 2 && shown(t, "b1") == 5.0 && shown(t, "b2") == 50.0);
  t.ack_many(both);
  harel::Tx tx = t.begin();
  tx.publish_with("tx", "\"tx\"", own);
  CHECK(tx.commit().size() == 1);
  lease = t.claim("w", 30.0);
  CHECK(lease && shown(t, "tx") == 5.0);
  if (lease) t.ack(*lease);
  // No queue policy: a message's own applies, its factor and cap defaults (C++20: {.retry = {.base = 10.0}}).
  auto plain = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now));
  harel::Delivery doubling;
  doubling.retry.base = 10.0;
  doubling.retry.jitter = harel::Jitter::None;
  plain.publish_with("d", "\"d\"", doubling);
  lease = plain.claim("w", 30.0);
  CHECK(shown(plain, "d") == 10.0);
  if (lease) plain.nack(*lease);
  CHECK(plain.stats()->parked == 1);
  lease = waits(plain, now, 10.0, 2);
  CHECK(shown(plain, "d") == 20.0);
  if (lease) plain.ack(*lease);
  plain.publish_with("n", "\"n\"", harel::Delivery{});  // none anywhere
  lease = plain.claim("w", 30.0);
  CHECK(lease && !shown(plain, "n"));
  if (lease) plain.nack(*lease);
  CHECK(plain.claim("w", 30.0));
  // A Unique converts to a Delivery without a policy.
  harel::Delivery unique = harel::Unique::keep("k");
  CHECK(unique.retry.base == 0.0 && unique.retry.jitter == harel::Jitter::Full);
}

// Each refusal: harel::Error with HAREL_ERR_ARGUMENT and the library's message naming the
// field (a batch's by its message); the policy set before stays; nothing written.
static void test_retry_errors() {
  double now = 1000.0;
  harel::Options o;
  o.clock(fake_clock, &now).retry({4.0, 1.0, 4.0, harel::Jitter::None});
  const std::pair<harel::Retry, const char *> bad[] = {
      {{-1.0, 2.0, 60.0, harel::Jitter::Full}, "retry.base is -1; it must be finite seconds, 0.001..315360000 (ten years)"},
      {{std::nan(""), 2.0, 60.0, harel::Jitter::Full}, "retry.base is NaN"},
      {{0.0005, 2.0, 60.0, harel::Jitter::Full}, "retry.base is 0.0005"},
      {{HUGE_VAL, 2.0, 60.0, harel::Jitter::Full}, "retry.base is inf"},
      {{1.0, 17.0, 60.0, harel::Jitter::Full}, "retry.factor is 17; it must be finite, 1..16"},
      {{1.0, 0.5, 60.0, harel::Jitter::Full}, "retry.factor is 0.5"},
      {{1.0, std::nan(""), 60.0, harel::Jitter::Full}, "retry.factor is NaN"},
      {{1.0, 2.0, 0.5, harel::Jitter::Full},
       "retry.cap is 0.5; it must be finite seconds, from base (1) to 315360000 (ten years)"},
      {{1.0, 2.0, HUGE_VAL, harel::Jitter::Full}, "retry.cap is inf"},
      {{1.0, 2.0, 315360001.0, harel::Jitter::Full}, "retry.cap is 315360001"},
      {{1.0, 2.0, 60.0, static_cast<harel::Jitter>(7)},
       "retry.jitter is 7; it must be HAREL_JITTER_FULL (0), _EQUAL (1) or _NONE (2)"},
      {{1.0, 2.0, 60.0, static_cast<harel::Jitter>(-1)}, "retry.jitter is -1"},
  };
  auto t = harel::Transport::open(":memory:", harel::Options().clock(fake_clock, &now));
  t.publish("g", "1");
  for (const auto &[retry, says] : bad) {
    std::string what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, o.retry(retry));
    CHECK(what.find(says) != std::string::npos);
    what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, harel::Options().retry(retry));
    CHECK(what.find(says) != std::string::npos);
    harel::Delivery d;
    d.retry = retry;
    what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_with("x", "{}", d));
    CHECK(what.find(says) != std::string::npos);
    what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, t.publish_many_with({{"x", "1"}, {"x", "2"}}, {harel::Delivery{}, d}));
    CHECK(what.find(std::string("messages[1].") + says) != std::string::npos);
    harel::Tx tx = t.begin();
    what = EXPECT_ERROR(HAREL_ERR_ARGUMENT, tx.publish_with("x", "{}", d));
    CHECK(what.find(says) != std::string::npos);
    CHECK(tx.commit().empty());  // refused now, the transaction goes on
  }
  CHECK(messages_in(t) == 1);
  // The policy set before the refusals stays.
  auto kept = harel::Transport::open(":memory:", o);
  kept.publish("g", "\"m\"");
  auto lease = kept.claim("w", 30.0);
  if (lease) kept.nack(*lease);
  lease = waits(kept, now, 4.0, 2);
  if (lease) kept.ack(*lease);
  // A base of 0 is none, whatever the rest.
  o.retry({0.0, 99.0, -1.0, static_cast<harel::Jitter>(9)});
  harel::Delivery none;
  none.retry = {0.0, 99.0, -1.0, static_cast<harel::Jitter>(9)};
  CHECK(!t.publish_with("none", "1", none).duplicate);
  // A moved-from Options and an empty Transport.
  harel::Options moved_to(std::move(o));
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, o.retry({1.0}));         // NOLINT: use after move, on purpose
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, o.retry(std::nullopt));  // NOLINT
  harel::Transport empty;
  EXPECT_ERROR(HAREL_ERR_ARGUMENT, empty.publish_with("g", "{}", harel::Delivery{nullptr, 0.0, -1.0, {}, 0.0, 0.0, {1.0}}));
}

int main() {
  run("the header's version macros are harel_version()'s", test_version);
  run("status names and the error category", test_status_names_and_category);
  run("harel::Error: status, name, what, code; an unknown status", test_error_type);
  run("Options: every setter, chained; each setter's error; moved from", test_options);
  run("open: a file, options, a C handle adopted; argument, database, connect errors", test_open);
  run("publish: priority, routing key, std::string; each argument error", test_publish);
  run("publish_many: list, vector, array, empty; a bad message rejects the batch", test_publish_many);
  run("claim: std::nullopt when empty, the lease's fields, errors, a lapsed lease", test_claim);
  run("ack, nack (now, parked), ack_and_claim; lease lost and argument errors", test_ack_and_nack);
  run("max_attempts and dead_letter: the dead letters, each error", test_dead_letters);
  run("Lease: move, moved-from, release", test_lease_moves);
  run("Transport: move, moved-from, move-assign, close", test_transport_moves);
  run("schema_sql, schema_upgrade_sql as harel::String", test_schema_strings);
  run("threads sharing a Transport get their own errors", test_threads);
  run("claim_wait: std::nullopt after the wait, the lease, errors, a fired Cancel", test_claim_wait);
  run("claim_many: distinct groups, empty, errors, a full batch freed", test_claim_many);
  run("ack_many and ack_and_claim_many: outcomes, the next batch, errors", test_ack_many_and_ack_and_claim_many);
  run("extend: lock_expiry, a lapsed lease, lease lost, errors", test_extend);
  run("a Cancel and interrupt() end waits on other threads", test_cancel_and_interrupt_from_other_threads);
  run("LeaseKeeper: keeps, stops, lapses, lost while kept, errors", test_lease_keeper);
  run("metrics: the counters and histograms after known calls; refused when closed", test_metrics);
  run("Watch: readable when new, cleared by rearm, rung by a commit and a park's end; a filter", test_watch);
  run("Watch: a bad filter, another Transport's, moves, release, reset, a closed Transport",
      test_watch_errors_and_moves);
  run("publish_with: seq and duplicate, keys, delays and instants, GroupState::Delayed; each error",
      test_publish_with);
  run("publish_many_with: each outcome, no deliveries, braced lists, empty; errors by index", test_publish_many_with);
  run("Options::key_retention: a key forgotten after it, a day by default; its errors", test_key_retention);
  run("stats: every field, delayed groups apart, by_priority; moves; an empty Transport", test_stats);
  run("Tx: a row and messages committed together, read back; outcomes, a key seen, delivery options",
      test_tx_commits_rows_and_messages);
  run("Tx: every Value kind in, Rows out row by row; no rows; a blob through a table; Value's refusals",
      test_tx_values_and_rows);
  run("Tx: rollback and destruction keep nothing and let the connection go; move-assign",
      test_tx_rollback_and_destruction_keep_nothing);
  run("transaction: commits when the work returns (its value too), rolls back and rethrows",
      test_transaction_commits_or_rolls_back);
  run("Tx: refused arguments, an ended transaction, busy, moves, a closed Transport", test_tx_errors_and_moves);
  run("shard_of: the known values, a view's bytes; each error", test_shard_of);
  run("open_shards: three files, each message once, each item's shard, reopened; each list refused",
      test_open_shards);
  run("a transaction on a sharded queue is refused at its first call", test_a_transaction_on_a_sharded_queue);
  run("headers: publish's overload, Lease::headers() in order and byte for byte, find, each refusal named",
      test_headers_publish_and_lease);
  run("headers: publish_with, publish_many and publish_many_with one per message; claim_many's leases",
      test_headers_publish_with_and_batches);
  run("headers: a transaction's publish and publish_with; a refused header, the transaction goes on",
      test_headers_in_a_transaction);
  run("headers: HeaderList over a peek page and a dead page", test_headers_on_pages);
  run("trace context: format_traceparent, parse_traceparent (std::nullopt), tracestate_valid, through a message",
      test_trace_context);
  run("unique keys: keep, replace (not a leased message), debounce on the clock; Published::replaced; each error",
      test_unique_keys);
  run("unique keys: a batch's outcomes, replaced within it; a transaction's commit; transaction()'s rollback",
      test_unique_keys_in_batches_and_transactions);
  run("expiry: Delivery::ttl and expires_at reach the library, reason \"expired\", stats()->expired; each refusal",
      test_expiry);
  run("pause and resume: each PauseTarget, true and false, GroupState::Paused, stats paused, pauses() in order",
      test_pause_and_resume);
  run("pause and resume: each refusal with its message, an empty Transport, a queue without the pauses table",
      test_pause_errors);
  run("pause and resume: threads sharing a Transport pause, resume, list and claim", test_pause_threads);
  run("archive: every Archived field, std::nullopt for unknown times, ArchivePage's range and moves",
      test_archive_every_field);
  run("archive: pages by next_cursor, a group's history in order; off by default, per Transport",
      test_archive_pages_and_off_by_default);
  run("archive: a sharded queue lists shard after shard, each item's shard", test_archive_sharded);
  run("archive: each refusal with its message, an empty Transport, a file without the table", test_archive_errors);
  run("limits: concurrency 1 lets one through, an ack and a nack the next; a Rate's tokens; set replaces; remove",
      test_limits_concurrency_rate_and_remove);
  run("limits: LimitList in key order, its LimitInfo views past the Transport, moves; a Rate as a Limit",
      test_limits_list_and_moves);
  run("limits: a sharded queue sets and removes on every shard, the list summed", test_limits_sharded);
  run("limits: each refusal with its message, the wrapper's for what C cannot say, an empty Transport",
      test_limit_errors);
  run("retry: Options::retry parks a nack without a delay for its backoff, its defaults; std::nullopt removes",
      test_retry_options);
  run("retry: each Jitter reaches its spread", test_retry_jitter);
  run("retry: Delivery::retry wins over the queue's (publish_with, a batch, a transaction); retry_delay of a page",
      test_retry_delivery);
  run("retry: each refusal names its field (a batch's by its message), the policy set stays; moved-from, empty",
      test_retry_errors);
  std::printf("cpp: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
