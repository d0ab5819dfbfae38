// The C++ face (include/harel_transport.hpp): every wrapper function, each error the
// wrapper maps to harel::Error, move semantics of the owning types, an empty claim as
// std::nullopt, and the header's version macros against harel_version(). Run under
// AddressSanitizer + LeakSanitizer by `make test-cpp`; ends with "cpp: N passed, N failed".

#include "harel_transport.hpp"

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

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
static_assert(std::is_base_of_v<std::runtime_error, harel::Error>);
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
  std::printf("cpp: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
