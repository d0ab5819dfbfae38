/*
 * harel_transport.hpp: a header-only C++17 face over the C ABI of libharel_transport
 * (harel_transport.h, which it includes; docs/abi.md has the ABI's conventions).
 *
 *   #include <harel_transport.hpp>
 *
 *   auto queue = harel::Transport::open("queue.db", harel::Options().busy_timeout(2.0));
 *   queue.publish("order-42", R"({"kind":"paid"})");
 *   queue.publish_many({{"order-43", R"({"kind":"created"})"}, {"order-43", R"({"kind":"paid"})"}});
 *   for (auto lease = queue.claim("worker-1", 30.0); lease;
 *        lease = queue.ack_and_claim(*lease, "worker-1", 30.0)) {
 *     handle(lease->group_id(), lease->event());  // std::string_view, every byte
 *   }
 *
 *   // A worker loop in batches: wait up to 5 s for work, ack a batch and claim the next in
 *   // one transaction; queue.interrupt() from another thread ends the wait.
 *   for (auto batch = queue.claim_many("worker-1", 30.0, 16, 5.0); !batch.empty();) {
 *     for (const auto &lease : batch) handle(lease.group_id(), lease.event());
 *     batch = queue.ack_and_claim_many(batch, "worker-1", 30.0, 16).leases;
 *     if (batch.empty()) batch = queue.claim_many("worker-1", 30.0, 16, 5.0);
 *   }
 *
 *   // The application's row and its message in one transaction on the queue's database:
 *   // both or neither (a throw rolls back).
 *   queue.transaction([&](harel::Tx &tx) {
 *     tx.execute("INSERT INTO orders (id, total) VALUES (?1, ?2)", {42, 9.5});
 *     tx.publish("order-42", R"({"kind":"created"})");
 *   });
 *
 * What it is:
 * - harel::Transport owns one harel_transport* and closes it when destroyed (RAII); it is
 *   move-only. A moved-from Transport holds no handle: its calls throw harel::Error with
 *   HAREL_ERR_ARGUMENT (the C side's answer to a NULL handle), and destroying it does
 *   nothing. One Transport may be used from several threads at once, like the handle
 *   (docs/abi.md, "Threads"); never close or move it while another thread uses it.
 * - harel::Lease owns one claimed harel_lease* and frees it when destroyed; move-only.
 *   group_id() and event() are std::string_view over the lease's bytes with their lengths
 *   (a group id or event written by another program may hold NUL bytes); they live as
 *   long as the Lease. ack and nack take the Lease by reference: it stays yours.
 * - A claim that finds nothing deliverable returns std::nullopt (HAREL_EMPTY is not an
 *   error); a batch claim, an empty std::vector. A wait ended by a harel::Cancel or by
 *   Transport::interrupt throws harel::Error with HAREL_ERR_INTERRUPTED, nothing claimed.
 * - publish_with and publish_many_with take a harel::Delivery per message (an idempotency
 *   key, a delay, a due instant, a harel::Unique: a unique key and its harel::UniqueMode,
 *   Keep, Replace or Debounce; an expiry, ttl and expires_at; a harel::Retry policy of its
 *   own) and return what became of each, a harel::Published (its seq; duplicate: the key was seen or the unique key's
 *   message is pending, nothing new stored; replaced: that message took the new event and
 *   headers). stats() returns harel::Stats, the queue's counts (delayed groups apart; the
 *   expired dead letters, stats()->expired); harel::GroupState names harel_group_state.
 * - The batch calls take and return std::vector<harel::Lease> (claim_many,
 *   ack_and_claim_many) and give one outcome per lease (ack_many: HAREL_OK or
 *   HAREL_ERR_LEASE_LOST). harel::LeaseKeeper extends a lease on a thread of its own while
 *   it is in scope, for a handler that may outlive its visibility.
 * - harel::Watch owns a readiness descriptor (Transport::watch, harel_watch): a file
 *   descriptor to put in your event loop (poll, epoll, an Asio or libuv reader) instead of a
 *   thread blocked in a waiting claim. When it polls readable, Transport::rearm(watch) says
 *   whether a claim with the watch's filter may find work (true: claim without waiting until
 *   nothing comes, then poll again; false: nothing now, the descriptor is clear until a
 *   commit or a lease's or park's end rings it). Move-only, freed (its descriptor closed)
 *   when destroyed; Linux only. See the example below the class.
 * - harel::Tx is an application's transaction on the queue's database (Transport::begin, or
 *   Transport::transaction, which commits it when your function returns and rolls it back
 *   when it throws): its statements (execute; query, whose harel::Rows are rows of
 *   harel::Value, a std::variant of SQLite's five types) and its publishes, committed
 *   together or not at all; destroyed before its commit, it rolls back. A Transport runs one
 *   transaction at a time: see the class for what that means inside one.
 * - Headers: every publish form has an overload that takes a message's headers, harel::Headers
 *   ((name, value) pairs as harel::Header, borrowed: `{{"traceparent", tp}}`; publish_many and
 *   publish_many_with take one per message), and Lease::headers() hands them back as a
 *   harel::HeaderList, a view of std::string_view pairs in order (a page's, through get():
 *   HeaderList(page->headers[i])). format_traceparent, parse_traceparent (std::nullopt when
 *   not valid) and tracestate_valid wrap the library's W3C Trace Context helpers.
 * - Transport::open_shards opens one queue sharded over a list of databases (the same
 *   Options for each); the Transport is an ordinary one, shard_count() says over how many.
 *   harel::shard_of(group_id, n) names the shard a group lives on, without a Transport.
 * - Pause and resume: Transport::pause and resume take a harel::PauseTarget (queue(),
 *   group(id), routing_key(key)) and say whether they changed anything; pauses() lists the
 *   pauses in force as harel::Pause values (kind, name, paused_at). A paused group is
 *   GroupState::Paused, and stats()->paused counts them.
 * - Retries: Options::retry(harel::Retry{base, factor, cap, harel::Jitter}) gives the queue a
 *   backoff for a nack with delay 0 and a lapsed lease (std::nullopt removes it); a message's
 *   own policy is Delivery::retry. harel::retry_delay(page, i) reads the backoff a peek page
 *   (harel_transport_peek, through get()) shows for its message i: std::nullopt when none.
 * - The archive: Options::archive(retention_seconds) keeps each message the Transport acks
 *   (off by default); Transport::archive(group_id, cursor, limit) pages through them as a
 *   harel::ArchivePage (owned, move-only) of harel::Archived views (seq, group_id, event,
 *   headers, attempts, worker_id, published_at and claimed_at, std::nullopt when unknown,
 *   acked_at, shard), next_cursor() NULL on the last page.
 * - Limits per routing key: Transport::set_limit(key, harel::Limit) sets a concurrency (at
 *   most N of the key's messages leased at once), a harel::Rate (a token bucket: per_second
 *   and burst) or both, std::nullopt for a kind off (a harel::Rate converts to a Limit of the
 *   rate alone); remove_limit(key) ends them; limits() lists them as a harel::LimitList
 *   (owned, move-only) of harel::LimitInfo views (routing_key, concurrency and rate,
 *   std::nullopt when off, in_use, tokens, std::nullopt without a rate, held). A held group
 *   is GroupState::Held; one whose lapsed lease waits its retry backoff, GroupState::Retrying.
 * - Every failed call throws harel::Error, a std::runtime_error carrying the call's
 *   harel_status (status()), its name, and the library's message (what() is
 *   "HAREL_ERR_LEASE_LOST: ..."); code() is the same status as a std::error_code of
 *   harel::category(). Each call passes its own harel_error* and frees it after copying
 *   the message, so errors are right on any thread. Decide on status(), not on the text.
 *   Nothing else is thrown, but std::bad_alloc while an Error or a batch's std::vector is
 *   built, and std::system_error when a LeaseKeeper cannot start its thread.
 * - No destructor throws, and nothing allocates on the success path beyond what the C
 *   side allocates (the handle, the options, a lease, a schema string, a page) and the batch
 *   calls' std::vectors (the leases, the outcomes, the lease pointers passed to the C
 *   side, and those of the string lists of open_shards and Options::sync_urls; publish_many_with's results and the option and header arrays it passes; a copy of the text parse_traceparent and tracestate_valid read, and the strings of format_traceparent and HeaderList::to_vector; a transaction's
 *   Values, its Rows, its commit's outcomes and the parameters passed to the C side; the
 *   Pause values of pauses(), their names):
 *   strings go in as const char* or std::string (harel::CStr, never copied), batches and
 *   routing keys as a pointer and a length (harel::Span, never copied), and harel::Message
 *   is laid out as harel_message so a batch is handed to the C side as it is. An error
 *   copies its message into the exception.
 * - Version: HAREL_TRANSPORT_VERSION_MAJOR/_MINOR/_PATCH (harel_transport.h) are the
 *   header's; harel::version() is the loaded library's; harel::version_matches() compares
 *   them.
 *
 * Build: c++ -std=c++17 app.cpp $(pkg-config --cflags --libs harel_transport), or with
 * CMake: find_package(harel_transport CONFIG REQUIRED) and
 * target_link_libraries(app PRIVATE harel_transport::harel_transport).
 */

#ifndef HAREL_TRANSPORT_HPP
#define HAREL_TRANSPORT_HPP

#if !defined(__cplusplus) || (__cplusplus < 201703L && (!defined(_MSVC_LANG) || _MSVC_LANG < 201703L))
#error "harel_transport.hpp needs C++17 (harel_transport.h is the C interface)"
#endif

#include "harel_transport.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#if !defined(HAREL_TRANSPORT_VERSION_MAJOR) || !defined(HAREL_TRANSPORT_VERSION_MINOR) || \
    !defined(HAREL_TRANSPORT_VERSION_PATCH)
#error "harel_transport.hpp needs a harel_transport.h with the HAREL_TRANSPORT_VERSION_* macros (0.2.0 or later)"
#endif

namespace harel {

// ---- version --------------------------------------------------------------------------------

/// The version of the header this program was compiled with.
inline constexpr unsigned version_major = HAREL_TRANSPORT_VERSION_MAJOR;
inline constexpr unsigned version_minor = HAREL_TRANSPORT_VERSION_MINOR;
inline constexpr unsigned version_patch = HAREL_TRANSPORT_VERSION_PATCH;
static_assert(std::string_view(HAREL_TRANSPORT_VERSION).size() >= 5,
              "HAREL_TRANSPORT_VERSION is \"MAJOR.MINOR.PATCH\"");

/// The loaded library's version, "MAJOR.MINOR.PATCH" (harel_version(); static).
inline std::string_view version() noexcept {
  const char *v = harel_version();
  return v ? std::string_view(v) : std::string_view();
}

/// Whether the loaded library is the version of the header this program was compiled
/// with (its MAJOR.MINOR.PATCH is HAREL_TRANSPORT_VERSION).
inline bool version_matches() noexcept { return version() == HAREL_TRANSPORT_VERSION; }

/// A status's name, e.g. "HAREL_ERR_BUSY"; "HAREL_UNKNOWN" for any other value (static).
inline std::string_view status_name(int32_t status) noexcept {
  const char *name = harel_status_name(status);
  return name ? std::string_view(name) : std::string_view("HAREL_UNKNOWN");
}

// ---- errors ---------------------------------------------------------------------------------

/// The std::error_category of harel_status values ("harel_transport"); message() is the
/// status's name.
class ErrorCategory final : public std::error_category {
 public:
  const char *name() const noexcept override { return "harel_transport"; }
  std::string message(int status) const override { return std::string(status_name(status)); }
};

/// The one ErrorCategory.
inline const std::error_category &category() noexcept {
  static const ErrorCategory instance;
  return instance;
}

/// A status as a std::error_code of harel::category().
inline std::error_code make_error_code(harel_status status) noexcept {
  return std::error_code(static_cast<int>(status), category());
}

/// A failed call: its status (a negative harel_status, or a value this header does not
/// know) and the library's message.
class Error : public std::runtime_error {
 public:
  Error(int32_t status, const std::string &message)
      : std::runtime_error(std::string(harel::status_name(status)) + ": " + message), status_(status) {}

  /// The call's status, e.g. HAREL_ERR_LEASE_LOST. Unknown values may come from a newer
  /// library: treat any negative one as an error.
  harel_status status() const noexcept { return static_cast<harel_status>(status_); }
  /// status() as a plain integer.
  int32_t status_value() const noexcept { return status_; }
  /// The status's name, e.g. "HAREL_ERR_LEASE_LOST".
  std::string_view status_name() const noexcept { return harel::status_name(status_); }
  /// The status as a std::error_code of harel::category().
  std::error_code code() const noexcept { return std::error_code(status_, category()); }

 private:
  int32_t status_;
};

namespace detail {

/// A call's harel_error*, freed when the call's wrapper returns or throws.
struct ErrorSlot {
  harel_error *error = nullptr;
  ErrorSlot() = default;
  ErrorSlot(const ErrorSlot &) = delete;
  ErrorSlot &operator=(const ErrorSlot &) = delete;
  ~ErrorSlot() { harel_error_free(error); }
  harel_error **out() noexcept { return &error; }
};

/// Throws the call's error: its status and message (the status's name when the library
/// gave none).
[[noreturn]] inline void raise(int32_t status, const harel_error *error) {
  const char *message = harel_error_message(error);
  throw Error(status, message ? std::string(message) : std::string(status_name(status)));
}

/// HAREL_OK returns; anything else throws the call's error.
inline void check(harel_status status, const ErrorSlot &slot) {
  if (status != HAREL_OK) raise(static_cast<int32_t>(status), slot.error);
}

}  // namespace detail

// ---- arguments ------------------------------------------------------------------------------

/// A NUL-terminated string argument, borrowed for the call: a const char* or a
/// std::string (its c_str()); never copied. A temporary std::string lives until the call
/// returns, so `publish("group-" + std::to_string(n), ...)` is fine; a Message, though,
/// keeps the pointer, so the strings of a batch must outlive the publish_many. A NULL
/// const char* is passed as NULL (the C side refuses it where a string is required, with
/// HAREL_ERR_ARGUMENT).
class CStr {
 public:
  CStr(const char *s) noexcept : s_(s) {}                 // NOLINT: implicit on purpose
  CStr(const std::string &s) noexcept : s_(s.c_str()) {}  // NOLINT: implicit on purpose
  const char *c_str() const noexcept { return s_; }

 private:
  const char *s_;
};

/// A read-only view of `size` contiguous T: a pointer and a length, never copied. Made
/// from a braced list (for the call's duration), an array, or any container with data()
/// and size() (std::vector, std::array).
template <class T>
class Span {
 public:
  constexpr Span() noexcept = default;
  constexpr Span(const T *data, std::size_t size) noexcept : data_(data), size_(size) {}
  // The list's array lives until the end of the full expression: as a call's argument,
  // through the call (gcc warns of the lifetime of a member kept from it; here that is meant).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  constexpr Span(std::initializer_list<T> list) noexcept : data_(list.begin()), size_(list.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  template <std::size_t N>
  constexpr Span(const T (&array)[N]) noexcept : data_(array), size_(N) {}
  template <class Container,
            class = std::enable_if_t<
                !std::is_same_v<std::decay_t<Container>, Span> &&
                std::is_convertible_v<decltype(std::declval<const Container &>().data()), const T *> &&
                std::is_convertible_v<decltype(std::declval<const Container &>().size()), std::size_t>>>
  constexpr Span(const Container &c) noexcept : data_(c.data()), size_(c.size()) {}

  constexpr const T *data() const noexcept { return data_; }
  constexpr std::size_t size() const noexcept { return size_; }
  constexpr bool empty() const noexcept { return size_ == 0; }
  constexpr const T *begin() const noexcept { return data_; }
  constexpr const T *end() const noexcept { return data_ + size_; }

 private:
  const T *data_ = nullptr;
  std::size_t size_ = 0;
};

/// The routing keys a claim accepts: NUL-terminated strings; empty means any group.
/// E.g. {"eu", "us"}, or a std::vector<const char *> of your strings' c_str().
using RoutingKeys = Span<const char *>;

/// One message of a batch (publish_many): the arguments of publish. It is a
/// harel_message (same layout), so a batch goes to the C side without a copy; the
/// strings are borrowed and must outlive the call.
struct Message : harel_message {
  Message(CStr group, CStr event, int32_t group_priority = 0, std::optional<CStr> group_routing_key = std::nullopt) noexcept
      : harel_message{group.c_str(), event.c_str(), group_priority,
                      group_routing_key ? group_routing_key->c_str() : nullptr} {}
};
static_assert(sizeof(Message) == sizeof(harel_message) && std::is_standard_layout_v<Message>,
              "a harel::Message is a harel_message");

/// What a publish with a unique key does when a message of the queue with that key is
/// pending (harel_unique_mode; docs/queue.md, "Unique keys").
enum class UniqueMode : int32_t {
  /// Keep the pending message: nothing is stored, the publish is its duplicate.
  Keep = HAREL_UNIQUE_KEEP,
  /// Give the pending message this event and these headers, in its place in its group's
  /// FIFO (its group, priority and routing key stay), unless a worker holds its lease: a
  /// leased message is never replaced (the publish is then a duplicate).
  Replace = HAREL_UNIQUE_REPLACE,
  /// As Replace, and make it due Unique::debounce_delay seconds from now, never later than
  /// Unique::debounce_max_delay seconds after its first publish; a new message is due
  /// debounce_delay seconds from now.
  Debounce = HAREL_UNIQUE_DEBOUNCE,
};

struct Delivery;

/// A unique key (1..256 bytes of UTF-8, borrowed as a Message's strings are; nullptr, the
/// default: none) and its mode, for Delivery::unique: while a message of the queue with
/// that key is pending (ready, delayed, leased or parked: not yet acked, dead-lettered or
/// purged), a publish with it stores nothing new; the key is free again once that message
/// is acked, dead-lettered or purged (a redriven dead letter has no key). Made by its
/// factories, or as an aggregate:
///
///   queue.publish_with("user-7", event, harel::Unique::keep("user-7-sync"));
///   queue.publish_with("user-7", event, harel::Unique::replace("user-7-sync"));
///   queue.publish_with("user-7", event, harel::Unique::debounce("user-7-sync", 5.0, 60.0));
///
/// A Unique converts to a Delivery that carries it alone. debounce_delay and
/// debounce_max_delay (seconds, finite, 0..315360000, the cap not below the delay) are read
/// for UniqueMode::Debounce only.
struct Unique {
  CStr key = nullptr;
  UniqueMode mode = UniqueMode::Keep;
  double debounce_delay = 0.0;
  double debounce_max_delay = 0.0;

  /// `key`, UniqueMode::Keep.
  static Unique keep(CStr key) noexcept { return Unique{key, UniqueMode::Keep, 0.0, 0.0}; }
  /// `key`, UniqueMode::Replace.
  static Unique replace(CStr key) noexcept { return Unique{key, UniqueMode::Replace, 0.0, 0.0}; }
  /// `key`, UniqueMode::Debounce: due `delay` seconds after the last publish, at most
  /// `max_delay` after the first.
  static Unique debounce(CStr key, double delay, double max_delay) noexcept {
    return Unique{key, UniqueMode::Debounce, delay, max_delay};
  }

  /// A Delivery with this unique key and nothing else.
  operator Delivery() const noexcept;  // NOLINT: implicit on purpose
};

/// How a retry policy spreads its backoff `d` (harel_jitter; docs/queue.md, "Retries").
enum class Jitter : int32_t {
  /// Uniform in [0, d): the widest spread (the default).
  Full = HAREL_JITTER_FULL,
  /// Uniform in [d/2, d): never less than half.
  Equal = HAREL_JITTER_EQUAL,
  /// `d` exactly.
  None = HAREL_JITTER_NONE,
};

/// A retry policy (docs/queue.md, "Retries"), the queue's (Options::retry) or a message's
/// own (Delivery::retry): a message whose claim number n ends in a nack with delay 0, or in
/// a lease that lapses, waits `min(cap, base * factor^(n-1))` seconds, spread by `jitter`,
/// before its next delivery; each claim draws its backoff (peek shows it: retry_delay); a
/// nack with a delay > 0 waits that delay instead; every claim still counts toward
/// max_attempts. An aggregate, `{base, factor, cap, jitter}` (C++20: `{.base = 1.0}`):
/// - base: the first backoff, seconds (finite, HAREL_MIN_RETRY_BASE (0.001) to ten years);
///   0, the default: no policy (the rest is not read).
/// - factor: the growth from one claim to the next (finite, 1..HAREL_MAX_RETRY_FACTOR (16));
///   2 by default, and 0 reads as 2.
/// - cap: the longest backoff, seconds (finite, base to ten years); 0, the default: an hour,
///   or the base if longer.
/// - jitter: Jitter::Full by default.
/// A bad value throws Error (HAREL_ERR_ARGUMENT) naming it: "retry.factor is 17; it must be
/// finite, 1..16" (Options::retry), "messages[1].retry.base is -1; ..." (a batch).
struct Retry {
  double base = 0.0;
  double factor = 2.0;
  double cap = 0.0;
  Jitter jitter = Jitter::Full;
};

/// How a message is delivered (publish_with, publish_many_with, Tx::publish_with); the
/// default is plain delivery, so set only what you need: `{"order-42-paid"}`, `{nullptr,
/// 30.0}`, `{key, 0.0, due_at}`, a harel::Unique (C++20: `{.delay = 30.0}`, `{.unique =
/// harel::Unique::replace("k")}`, `{.ttl = 300.0}`).
/// - key: an idempotency key, 1..256 bytes of UTF-8; nullptr: none. A key seen within the
///   queue's retention (Options::key_retention, a day by default) stores nothing: the call
///   reports a duplicate with the first message's seq, also after that message was acked.
///   Borrowed, as a Message's strings: it must outlive the call. Not with `unique`.
/// - delay: seconds, finite, 0..315360000 (ten years). not_before: epoch seconds by the
///   transport's clock; 0 or negative: none. The message is not delivered before the later
///   of now + delay and not_before (at most ten years ahead); it keeps its place in its
///   group's FIFO, so the group's later messages wait behind it (docs/queue.md, "Delayed
///   delivery").
/// - unique: a unique key and its mode (harel::Unique); its key nullptr, the default: none.
/// - ttl: seconds from the publish (finite, > 0, at most ten years) and expires_at: epoch
///   seconds by the transport's clock (finite, >= 0); 0, the default: never; with both, the
///   earlier. A message no worker holds when it expires is moved to the dead letters with
///   the reason "expired" by the next claim, its group going on behind it (stats()->expired
///   counts them); a worker holding it finishes it. The expiry must be after now and after
///   the message is due (delay, not_before): otherwise HAREL_ERR_ARGUMENT (docs/queue.md,
///   "Expiry").
/// - retry: a retry policy of its own (harel::Retry), in place of the queue's
///   (Options::retry); its base 0, the default: the queue's, or none.
struct Delivery {
  CStr key = nullptr;
  double delay = 0.0;
  double not_before = -1.0;
  Unique unique = {};
  double ttl = 0.0;
  double expires_at = 0.0;
  Retry retry = {};
};

inline Unique::operator Delivery() const noexcept { return Delivery{nullptr, 0.0, -1.0, *this, 0.0, 0.0, Retry{}}; }

/// What became of a message published with publish_with, publish_many_with or in a
/// transaction (harel_published): its seq; `duplicate`: nothing new was stored, its key was
/// seen within the retention or a message with its unique key is pending, and seq is that
/// message's; `replaced`: that pending message took this publish's event and headers
/// (UniqueMode::Replace or Debounce; duplicate is then true too).
struct Published {
  int64_t seq = 0;
  bool duplicate = false;
  bool replaced = false;
};

namespace detail {

/// The C delivery options of `d`, borrowing its strings for the call.
inline harel_delivery raw_delivery(const Delivery &d) noexcept {
  harel_delivery raw{};
  raw.size = sizeof raw;
  raw.key = d.key.c_str();
  raw.delay = d.delay;
  raw.not_before = d.not_before;
  raw.unique_key = d.unique.key.c_str();
  raw.unique_mode = static_cast<int32_t>(d.unique.mode);
  raw.debounce_delay = d.unique.debounce_delay;
  raw.debounce_max_delay = d.unique.debounce_max_delay;
  raw.ttl = d.ttl;
  raw.expires_at = d.expires_at;
  raw.retry_base = d.retry.base;
  raw.retry_factor = d.retry.factor;
  raw.retry_cap = d.retry.cap;
  raw.retry_jitter = static_cast<int32_t>(d.retry.jitter);
  return raw;
}

/// A harel_published as a Published.
inline Published published_of(int64_t seq, int outcome) noexcept {
  return Published{seq, outcome != HAREL_PUBLISHED_STORED, outcome == HAREL_PUBLISHED_REPLACED};
}

}  // namespace detail

// ---- headers --------------------------------------------------------------------------------

/// One header of a message to publish: a name (1..128 bytes of visible ASCII, 0x21..0x7e,
/// without '=') and a value (UTF-8; the C side reads it up to its first NUL). It is a
/// harel_header (same layout), so a list of them goes to the C side as it is; the strings
/// are borrowed, as a Message's are, and must outlive the call (the library copies them).
struct Header : harel_header {
  Header(CStr header_name, CStr header_value) noexcept : harel_header{header_name.c_str(), header_value.c_str()} {}
};
static_assert(sizeof(Header) == sizeof(harel_header) && std::is_standard_layout_v<Header>,
              "a harel::Header is a harel_header");

/// A message's headers, for a publish: (name, value) pairs, in order (names may repeat), at
/// most 64 pairs and 16384 bytes of names and values (MAX_HEADERS, MAX_HEADERS_BYTES). A
/// braced list, `{{"traceparent", tp}, {"content-type", "application/json"}}`, or a
/// std::vector<Header>. The library checks them and names a bad one ("headers[2].name ...").
using Headers = Span<Header>;

/// A message's headers as the library handed them out (Lease::headers; a page's
/// `headers[i]` through HeaderList(page->headers[i])): a view of its (name, value) pairs in
/// the order they were published, byte for byte, living as long as what they came with.
/// Iterates as std::pair<std::string_view, std::string_view>:
///
///   for (auto [name, value] : lease->headers()) std::printf("%.*s\n", int(name.size()), name.data());
///   if (auto tp = lease->headers().find("traceparent")) use(harel::parse_traceparent(*tp));
class HeaderList {
 public:
  using value_type = std::pair<std::string_view, std::string_view>;

  /// A forward iterator over the pairs (each made when read: no reference to hold).
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = HeaderList::value_type;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = value_type;
    iterator() noexcept = default;
    explicit iterator(const harel_header *at) noexcept : at_(at) {}
    value_type operator*() const noexcept { return pair_of(*at_); }
    iterator &operator++() noexcept {
      ++at_;
      return *this;
    }
    iterator operator++(int) noexcept {
      iterator was = *this;
      ++at_;
      return was;
    }
    bool operator==(const iterator &other) const noexcept { return at_ == other.at_; }
    bool operator!=(const iterator &other) const noexcept { return at_ != other.at_; }

   private:
    const harel_header *at_ = nullptr;
  };

  /// No headers.
  constexpr HeaderList() noexcept = default;
  /// `n` pairs at `items` (NULL: none), the library's.
  HeaderList(const harel_header *items, std::size_t n) noexcept : items_(items), n_(items ? n : 0) {}
  /// A harel_headers the library handed out (a page's `headers[i]`).
  explicit HeaderList(const harel_headers &list) noexcept : HeaderList(list.items, list.n) {}

  std::size_t size() const noexcept { return n_; }
  bool empty() const noexcept { return n_ == 0; }
  /// The i-th pair (i < size()).
  value_type operator[](std::size_t i) const noexcept { return pair_of(items_[i]); }
  iterator begin() const noexcept { return iterator(items_); }
  iterator end() const noexcept { return iterator(items_ ? items_ + n_ : nullptr); }
  /// The value of the first pair named `name` (names compare byte for byte); std::nullopt
  /// when none is.
  std::optional<std::string_view> find(std::string_view name) const noexcept {
    for (value_type pair : *this)
      if (pair.first == name) return pair.second;
    return std::nullopt;
  }
  /// The pairs, copied (to keep them past what they came with).
  std::vector<std::pair<std::string, std::string>> to_vector() const {
    std::vector<std::pair<std::string, std::string>> pairs;
    pairs.reserve(n_);
    for (value_type pair : *this) pairs.emplace_back(pair.first, pair.second);
    return pairs;
  }
  /// The C pairs (NULL when there are none).
  const harel_header *data() const noexcept { return items_; }

 private:
  static value_type pair_of(const harel_header &h) noexcept {
    return {h.name ? std::string_view(h.name) : std::string_view(), h.value ? std::string_view(h.value) : std::string_view()};
  }
  const harel_header *items_ = nullptr;
  std::size_t n_ = 0;
};

// ---- W3C Trace Context ----------------------------------------------------------------------

/// The fields of a W3C `traceparent` (https://www.w3.org/TR/trace-context/, version 00): a
/// trace id (16 bytes), a span id (the spec's parent-id, 8 bytes), the trace flags (bit 0,
/// 0x01: sampled).
struct TraceParent {
  std::array<std::uint8_t, 16> trace_id{};
  std::array<std::uint8_t, 8> span_id{};
  std::uint8_t flags = 0;
  /// Whether the sampled flag is set.
  bool sampled() const noexcept { return (flags & 0x01) != 0; }
};

/// The `traceparent` value of `trace_id`, `span_id` and `flags` (harel_traceparent_format):
/// "00-<32 hex>-<16 hex>-<2 hex>", HAREL_TRACEPARENT_LEN (55) characters, lower-case; publish
/// it as the value of a header named "traceparent". Throws Error (HAREL_ERR_ARGUMENT) when an
/// id is all zero bytes (the spec forbids them).
inline std::string format_traceparent(const std::array<std::uint8_t, 16> &trace_id,
                                      const std::array<std::uint8_t, 8> &span_id, std::uint8_t flags = 0x01) {
  char out[HAREL_TRACEPARENT_LEN + 1] = {};
  detail::ErrorSlot slot;
  detail::check(harel_traceparent_format(trace_id.data(), span_id.data(), flags, out, slot.out()), slot);
  return std::string(out, HAREL_TRACEPARENT_LEN);
}
/// format_traceparent of a TraceParent's fields.
inline std::string format_traceparent(const TraceParent &parent) {
  return format_traceparent(parent.trace_id, parent.span_id, parent.flags);
}

/// Reads a `traceparent` value (a lease's header, say) as a receiver must
/// (harel_traceparent_parse): its fields, or std::nullopt when it is not valid (an id all
/// zero, upper-case hex, version ff, a field of another length, text not UTF-8 or holding a
/// NUL byte...): ignore it and start a new trace. Never an error; spaces and tabs around the
/// value are ignored; a higher version is read as the spec says.
inline std::optional<TraceParent> parse_traceparent(std::string_view value) {
  if (value.find('\0') != std::string_view::npos) return std::nullopt;  // the C side would stop at it
  const std::string text(value);
  TraceParent parent;
  bool valid = false;
  detail::ErrorSlot slot;
  detail::check(harel_traceparent_parse(text.c_str(), parent.trace_id.data(), parent.span_id.data(), &parent.flags,
                                        &valid, slot.out()),
                slot);
  if (!valid) return std::nullopt;
  return parent;
}

/// Whether `value` is a valid W3C `tracestate` (harel_tracestate_valid): at most 32
/// `key=value` members, each key once ("" is valid: an empty one). A producer checks one
/// before it publishes it; a worker drops one that is not valid, whole. A NUL byte: not valid.
inline bool tracestate_valid(std::string_view value) {
  if (value.find('\0') != std::string_view::npos) return false;
  const std::string text(value);
  bool valid = false;
  detail::ErrorSlot slot;
  detail::check(harel_tracestate_valid(text.c_str(), &valid, slot.out()), slot);
  return valid;
}

// ---- options --------------------------------------------------------------------------------

/// Options for Transport::open: a builder over harel_options (the defaults of
/// harel_options_new: prefix "harel", create_schema on, busy timeout 5 s, synchronous
/// FULL, the system clock). Each setter checks its value at once and throws Error
/// (HAREL_ERR_ARGUMENT) for a bad one. open copies what it needs: the Options may be
/// destroyed or reused after it. Move-only: a moved-from Options holds nothing, its setters
/// throw HAREL_ERR_ARGUMENT and open given it takes the defaults.
class Options {
 public:
  /// The defaults. Throws Error (HAREL_ERR_PANIC) if the library could not make them.
  Options() : raw_(harel_options_new()) {
    if (!raw_) throw Error(HAREL_ERR_PANIC, "harel_options_new failed");
  }

  /// Table names start with `prefix` (an identifier of at most HAREL_MAX_PREFIX_LEN).
  Options &prefix(CStr value) & { return set(harel_options_set_prefix, value.c_str()); }
  Options &&prefix(CStr value) && { return std::move(prefix(value)); }
  /// Create (and upgrade) the schema at open (on by default).
  Options &create_schema(bool on) & { return set(harel_options_set_create_schema, on); }
  Options &&create_schema(bool on) && { return std::move(create_schema(on)); }
  /// Make the path an embedded replica of the libSQL server at `url`; NULL unsets it.
  Options &sync_url(CStr url) & { return set(harel_options_set_sync_url, url.c_str()); }
  Options &&sync_url(CStr url) && { return std::move(sync_url(url)); }
  /// Make the paths of Transport::open_shards embedded replicas, `urls[i]` the primary of
  /// shard i (open_shards then takes as many paths as URLs); empty unsets. Throws Error
  /// (HAREL_ERR_ARGUMENT) for a URL empty, not UTF-8 or repeated, or more than 256.
  Options &sync_urls(const std::vector<std::string> &urls) & {
    std::vector<const char *> raw;
    raw.reserve(urls.size());
    for (const std::string &url : urls) raw.push_back(url.c_str());
    detail::ErrorSlot slot;
    detail::check(harel_options_set_sync_urls(raw_.get(), raw.data(), raw.size(), slot.out()), slot);
    return *this;
  }
  Options &&sync_urls(const std::vector<std::string> &urls) && { return std::move(sync_urls(urls)); }
  /// The libSQL server's auth token; NULL unsets it.
  Options &auth_token(CStr token) & { return set(harel_options_set_auth_token, token.c_str()); }
  Options &&auth_token(CStr token) && { return std::move(auth_token(token)); }
  /// How often an embedded replica pulls, in seconds (> 0).
  Options &sync_interval(double seconds) & { return set(harel_options_set_sync_interval, seconds); }
  Options &&sync_interval(double seconds) && { return std::move(sync_interval(seconds)); }
  /// How long a write waits for the write lock before HAREL_ERR_BUSY, in seconds (>= 0).
  Options &busy_timeout(double seconds) & { return set(harel_options_set_busy_timeout, seconds); }
  Options &&busy_timeout(double seconds) && { return std::move(busy_timeout(seconds)); }
  /// fsync at every commit but a claim's (true, the default) or synchronous NORMAL (false).
  Options &synchronous_full(bool full) & { return set(harel_options_set_synchronous_full, full); }
  Options &&synchronous_full(bool full) && { return std::move(synchronous_full(full)); }
  /// How many times a message may be claimed before a claim moves it to the dead letters
  /// instead (its group goes on); 0, the default: no limit.
  Options &max_attempts(uint32_t attempts) & { return set(harel_options_set_max_attempts, attempts); }
  Options &&max_attempts(uint32_t attempts) && { return std::move(max_attempts(attempts)); }
  /// How long an idempotency key is remembered after its publish, in seconds (> 0, at most
  /// ten years; a day by default): within it a publish_with with the same key stores nothing.
  Options &key_retention(double seconds) & { return set(harel_options_set_key_retention, seconds); }
  Options &&key_retention(double seconds) && { return std::move(key_retention(seconds)); }
  /// Keeps each message this Transport acks in the archive (Transport::archive lists it) for
  /// `retention_seconds` after its ack (> 0, at most ten years): its seq, group, event,
  /// headers, claims, the worker, and when it was published, claimed and acked. Each ack
  /// copies its message in its own transaction and prunes at most 100 rows older than the
  /// retention. Not set (the default): an ack deletes, nothing is archived. With
  /// create_schema(false) the archive table must be there, or open throws HAREL_ERR_DATABASE
  /// naming it.
  Options &archive(double retention_seconds) & { return set(harel_options_set_archive, retention_seconds); }
  Options &&archive(double retention_seconds) && { return std::move(archive(retention_seconds)); }
  /// The queue's retry policy (harel::Retry; docs/queue.md, "Retries"), applied by the
  /// claims of the Transports opened with these options to every message without a policy
  /// of its own (Delivery::retry). Not set (the default), or std::nullopt, or a base of 0:
  /// none, a nack with delay 0 frees the message at once and a lapsed lease is claimable at
  /// its end. Throws Error (HAREL_ERR_ARGUMENT) naming a bad value ("retry.base is -1; ...",
  /// "retry.jitter is 7; ..." for a cast that is not a Jitter); the policy set before stays.
  Options &retry(const Retry &policy) & {
    detail::ErrorSlot slot;
    detail::check(harel_options_set_retry(raw_.get(), policy.base, policy.factor, policy.cap,
                                          static_cast<int32_t>(policy.jitter), slot.out()),
                  slot);
    return *this;
  }
  Options &&retry(const Retry &policy) && { return std::move(retry(policy)); }
  Options &retry(std::nullopt_t) & { return retry(Retry{}); }
  Options &&retry(std::nullopt_t) && { return std::move(retry(Retry{})); }
  /// Where "now" comes from: `clock(ctx)`, epoch seconds; NULL: the system clock. The
  /// rules of harel_options_set_clock hold: quick, thread-safe, never calling into the
  /// same transport; `ctx` must outlive every Transport opened with these options.
  Options &clock(double (*now)(void *ctx), void *ctx) & {
    detail::ErrorSlot slot;
    detail::check(harel_options_set_clock(raw_.get(), now, ctx, slot.out()), slot);
    return *this;
  }
  Options &&clock(double (*now)(void *ctx), void *ctx) && { return std::move(clock(now, ctx)); }

  /// The C options, for a call this header does not wrap.
  const harel_options *get() const noexcept { return raw_.get(); }

 private:
  struct Free {
    void operator()(harel_options *o) const noexcept { harel_options_free(o); }
  };
  template <class Setter, class Value>
  Options &set(Setter setter, Value value) {
    detail::ErrorSlot slot;
    detail::check(setter(raw_.get(), value, slot.out()), slot);
    return *this;
  }
  std::unique_ptr<harel_options, Free> raw_;
};

// ---- leases ---------------------------------------------------------------------------------

class Transport;

/// A claimed message, owned: the lease is freed when the Lease is destroyed (after ack or
/// nack, or when giving up on it). Move-only. A moved-from Lease is empty (operator bool
/// false): its accessors return 0 and empty views, and ack/nack refuse it with
/// HAREL_ERR_ARGUMENT.
class Lease {
 public:
  /// Takes ownership of a lease a claim returned (NULL: an empty Lease).
  explicit Lease(harel_lease *raw) noexcept : raw_(raw) {}

  /// Whether this Lease holds a lease.
  explicit operator bool() const noexcept { return raw_ != nullptr; }
  /// The message's seq: FIFO order and the lease's handle.
  int64_t seq() const noexcept { return raw_ ? raw_->seq : 0; }
  /// The group, every byte (group_id_len of them).
  std::string_view group_id() const noexcept {
    return raw_ ? std::string_view(raw_->group_id, raw_->group_id_len) : std::string_view();
  }
  /// The event's JSON text, byte for byte as published (event_len bytes).
  std::string_view event() const noexcept {
    return raw_ ? std::string_view(raw_->event, raw_->event_len) : std::string_view();
  }
  /// The worker that holds the lease.
  std::string_view worker_id() const noexcept {
    return raw_ && raw_->worker_id ? std::string_view(raw_->worker_id) : std::string_view();
  }
  /// Epoch seconds the lease runs to.
  double lock_expiry() const noexcept { return raw_ ? raw_->lock_expiry : 0.0; }
  /// How many times the message has been claimed, this claim included (1 on its first).
  int64_t attempts() const noexcept { return raw_ ? raw_->attempts : 0; }
  /// The headers the message was published with, in order, byte for byte (empty when it
  /// had none, and for an empty Lease); a view that lives as long as the Lease.
  HeaderList headers() const noexcept { return raw_ ? HeaderList(raw_->headers, raw_->n_headers) : HeaderList(); }

  /// The C lease (NULL when empty); it stays this Lease's.
  const harel_lease *get() const noexcept { return raw_.get(); }
  /// Gives the C lease up: the caller frees it with harel_lease_free.
  harel_lease *release() noexcept { return raw_.release(); }

 private:
  friend class Transport;  // extend writes the lease's lock_expiry
  struct Free {
    void operator()(harel_lease *l) const noexcept { harel_lease_free(l); }
  };
  std::unique_ptr<harel_lease, Free> raw_;
};

/// What a Transport counted since it was opened (harel_transport_metrics), owned: the C
/// struct's fields through -> (counters; a harel_histogram per operation, cumulative, with
/// the bounds in `bounds`), freed when the Metrics is destroyed. Move-only.
class Metrics {
 public:
  /// Takes ownership of what harel_transport_metrics handed out.
  explicit Metrics(harel_metrics *raw) noexcept : raw_(raw) {}
  const harel_metrics *operator->() const noexcept { return raw_.get(); }
  const harel_metrics &operator*() const noexcept { return *raw_; }

 private:
  struct Free {
    void operator()(harel_metrics *m) const noexcept { harel_metrics_free(m); }
  };
  std::unique_ptr<harel_metrics, Free> raw_;
};

/// A group's state, from its head (harel_group_state): a harel_group_info's `state`, and the
/// filter of harel_transport_groups (not wrapped here: call it with Transport::get(), the
/// state as static_cast<int32_t>(state)).
enum class GroupState : int32_t {
  Ready = HAREL_GROUP_READY,
  Leased = HAREL_GROUP_LEASED,
  Parked = HAREL_GROUP_PARKED,
  /// Its head was published with a delay or a due instant that has not come (publish_with).
  Delayed = HAREL_GROUP_DELAYED,
  /// A pause names it (Transport::pause): no claim takes its head, whatever the head's state;
  /// the holder of a lease taken before the pause still shows.
  Paused = HAREL_GROUP_PAUSED,
  /// Its head is free, but a limit of its routing key has no room (stats' `held`).
  Held = HAREL_GROUP_HELD,
  /// Its head's lease lapsed and it waits its retry policy's backoff (stats' `retrying`).
  Retrying = HAREL_GROUP_RETRYING,
};

/// The queue's counts at one instant (Transport::stats, harel_transport_stats), owned: the C
/// struct's fields through -> (now; messages; groups, and of them ready, leased, parked,
/// delayed and paused; dead, and of them expired; oldest_ready_age, oldest_ready_seq,
/// next_release_at and next_due_at, -1 when absent), the levels through by_priority(); freed when the Stats is
/// destroyed. Move-only. A delayed or paused group is in `delayed` or `paused` and in its
/// level's `groups`, in none of the ready, leased and parked counts.
class Stats {
 public:
  /// Takes ownership of what harel_transport_stats handed out.
  explicit Stats(harel_stats *raw) noexcept : raw_(raw) {}
  const harel_stats *operator->() const noexcept { return raw_.get(); }
  const harel_stats &operator*() const noexcept { return *raw_; }
  /// One entry per priority level that has groups, lowest first (empty when there are none).
  Span<harel_priority_stats> by_priority() const noexcept {
    if (!raw_ || raw_->n_priorities == 0) return {};
    return Span<harel_priority_stats>(raw_->by_priority, raw_->n_priorities);
  }

 private:
  struct Free {
    void operator()(harel_stats *s) const noexcept { harel_stats_free(s); }
  };
  std::unique_ptr<harel_stats, Free> raw_;
};

/// What ack_and_claim_many did: an outcome per lease acked (as ack_many's) and the leases
/// of the next batch (empty: nothing deliverable).
struct AckedAndClaimed {
  std::vector<harel_status> outcomes;
  std::vector<Lease> leases;
};

// ---- ending a wait --------------------------------------------------------------------------

/// Ends the waits of the calls it is given (harel_cancel), owned: freed when destroyed.
/// fire() may be called from any thread (not from a signal handler); firing is final: a
/// call given a fired Cancel throws Error (HAREL_ERR_INTERRUPTED) at once. Destroy it only
/// once no call given it is still running. Move-only; a moved-from Cancel holds nothing:
/// fire() does nothing, and a call given it waits with no cancel.
class Cancel {
 public:
  /// A new cancel, not fired. Throws Error (HAREL_ERR_PANIC) if the library could not make one.
  Cancel() : raw_(harel_cancel_new()) {
    if (!raw_) throw Error(HAREL_ERR_PANIC, "harel_cancel_new failed");
  }

  /// Ends every wait given this Cancel: each throws Error (HAREL_ERR_INTERRUPTED), having
  /// claimed nothing (a call that had claimed already returns its leases). Idempotent.
  void fire() const noexcept { harel_cancel_fire(raw_.get()); }
  /// The C cancel (NULL when moved from), for a call this header does not wrap.
  const harel_cancel *get() const noexcept { return raw_.get(); }

 private:
  struct Free {
    void operator()(harel_cancel *c) const noexcept { harel_cancel_free(c); }
  };
  std::unique_ptr<harel_cancel, Free> raw_;
};

// ---- the readiness descriptor ---------------------------------------------------------------

/// A readiness descriptor (harel_watch), owned: freed when destroyed, which closes its
/// descriptor. Made by Transport::watch for the claims a claim with its filter would make.
/// Level-triggered, and a wake means "may" (spurious ones happen: rearm decides):
///
///   harel::Watch watch = queue.watch();            // any group; or watch(min_priority, {"eu"})
///   struct pollfd p{watch.fd(), POLLIN, 0};         // or epoll, Asio, libuv: readability
///   while (poll(&p, 1, -1) > 0) {
///     if (!queue.rearm(watch)) continue;            // false: nothing yet, the fd is clear
///     for (auto batch = queue.claim_many("w", 30.0, 16); !batch.empty();
///          batch = queue.ack_and_claim_many(batch, "w", 30.0, 16).leases)
///       for (const auto &lease : batch) handle(lease.event());
///   }
///
/// fd() is the same descriptor for the Watch's life: take it out of your poll set before the
/// Watch is destroyed and never close it yourself; a forked child must not use it
/// (close-on-exec). Any thread may poll it, and one Watch may serve several pollers
/// (Transport::rearm runs one at a time with the Transport's other calls). A Watch may
/// outlive its Transport: once the Transport is closed the descriptor is readable for good
/// and the Watch is only to be destroyed. Move-only; a moved-from Watch holds nothing
/// (operator bool false): fd() and Transport::rearm refuse it with HAREL_ERR_ARGUMENT, and
/// destroying it does nothing.
class Watch {
 public:
  /// No watch (like a moved-from Watch): to be assigned one Transport::watch made.
  Watch() noexcept = default;
  /// Takes ownership of a watch made by harel_transport_watch (NULL: no watch).
  explicit Watch(harel_watch *raw) noexcept : raw_(raw) {}

  /// Whether this Watch holds a watch.
  explicit operator bool() const noexcept { return raw_ != nullptr; }
  /// The descriptor to poll for readability (POLLIN, EPOLLIN), the Watch's own. Throws
  /// Error (HAREL_ERR_ARGUMENT) on an empty Watch.
  int fd() const {
    int out = -1;
    detail::ErrorSlot slot;
    detail::check(harel_watch_fd(raw_.get(), &out, slot.out()), slot);
    return out;
  }
  /// Frees the watch now (its descriptor closed: out of your poll set first); the Watch is
  /// then empty.
  void reset() noexcept { raw_.reset(); }
  /// The C watch (NULL when empty); it stays this Watch's.
  harel_watch *get() const noexcept { return raw_.get(); }
  /// Gives the C watch up: the caller frees it with harel_watch_free.
  harel_watch *release() noexcept { return raw_.release(); }

 private:
  struct Free {
    void operator()(harel_watch *w) const noexcept { harel_watch_free(w); }
  };
  std::unique_ptr<harel_watch, Free> raw_;
};

// ---- strings the library hands out ----------------------------------------------------------

/// A string the library handed out (the schema's SQL), owned and freed with
/// harel_string_free. Move-only.
class String {
 public:
  explicit String(char *raw) noexcept : raw_(raw) {}
  std::string_view view() const noexcept { return raw_ ? std::string_view(raw_.get()) : std::string_view(); }
  const char *c_str() const noexcept { return raw_ ? raw_.get() : ""; }
  operator std::string_view() const noexcept { return view(); }  // NOLINT: implicit on purpose

 private:
  struct Free {
    void operator()(char *s) const noexcept { harel_string_free(s); }
  };
  std::unique_ptr<char, Free> raw_;
};

namespace detail {
inline String string_out(harel_status (*make)(const char *, char **, harel_error **), CStr prefix) {
  char *out = nullptr;
  detail::ErrorSlot slot;
  detail::check(make(prefix.c_str(), &out, slot.out()), slot);
  return String(out);
}
}  // namespace detail

/// The idempotent CREATE statements of a fresh schema under `prefix` (harel_schema_sql).
inline String schema_sql(CStr prefix = "harel") { return detail::string_out(harel_schema_sql, prefix); }

/// The statements that upgrade a harel 0.9 groups table (harel_schema_upgrade_sql); not
/// idempotent.
inline String schema_upgrade_sql(CStr prefix = "harel") {
  return detail::string_out(harel_schema_upgrade_sql, prefix);
}

// ---- publishing inside a transaction --------------------------------------------------------

/// A BLOB's bytes.
using Blob = std::vector<std::uint8_t>;

/// One SQL value, SQLite's five types as a std::variant (use std::get, std::get_if,
/// std::holds_alternative, index()): NULL (std::monostate), INTEGER (std::int64_t), REAL
/// (double), TEXT (std::string, every byte), BLOB (harel::Blob). index() is the C
/// harel_value_type, and type() says so. A statement's parameter converts from what you would
/// write: nullptr or nothing (NULL), any integer type (bool as 0 or 1), a floating point
/// number, a string literal, std::string or std::string_view, a Blob. Copied in; a text
/// parameter is read up to its first NUL. Throws Error (HAREL_ERR_ARGUMENT) for an unsigned
/// integer above INT64_MAX (SQLite's integers are signed 64-bit) and for a NULL const char*.
class Value : public std::variant<std::monostate, std::int64_t, double, std::string, Blob> {
 public:
  using Variant = std::variant<std::monostate, std::int64_t, double, std::string, Blob>;

  /// NULL.
  Value() noexcept = default;
  Value(std::nullptr_t) noexcept {}  // NOLINT: implicit on purpose, as each below
  template <class Integer, std::enable_if_t<std::is_integral_v<Integer>, int> = 0>
  Value(Integer i) : Variant(std::in_place_index<HAREL_VALUE_INTEGER>, integer_of(i)) {}  // NOLINT
  Value(double x) noexcept : Variant(std::in_place_index<HAREL_VALUE_REAL>, x) {}        // NOLINT
  Value(const char *text) : Variant(std::in_place_index<HAREL_VALUE_TEXT>, text_of(text)) {}  // NOLINT
  Value(std::string text) noexcept : Variant(std::in_place_index<HAREL_VALUE_TEXT>, std::move(text)) {}  // NOLINT
  Value(std::string_view text) : Variant(std::in_place_index<HAREL_VALUE_TEXT>, text) {}  // NOLINT
  Value(Blob blob) noexcept : Variant(std::in_place_index<HAREL_VALUE_BLOB>, std::move(blob)) {}  // NOLINT

  /// Its type, the C harel_value_type.
  harel_value_type type() const noexcept { return static_cast<harel_value_type>(index()); }
  /// Whether it is NULL.
  bool is_null() const noexcept { return index() == HAREL_VALUE_NULL; }

 private:
  template <class Integer>
  static std::int64_t integer_of(Integer i) {
    if constexpr (std::is_unsigned_v<Integer> && sizeof(Integer) >= sizeof(std::int64_t)) {
      if (i > static_cast<Integer>(INT64_MAX))
        throw Error(HAREL_ERR_ARGUMENT, "the integer " + std::to_string(i) +
                                            " is above INT64_MAX: SQLite's integers are signed 64-bit");
    }
    return static_cast<std::int64_t>(i);
  }
  static std::string text_of(const char *text) {
    if (!text) throw Error(HAREL_ERR_ARGUMENT, "a text Value made from a NULL const char*");
    return text;
  }
};
static_assert(std::variant_size_v<Value::Variant> == 5 && HAREL_VALUE_NULL == 0 && HAREL_VALUE_INTEGER == 1 &&
                  HAREL_VALUE_REAL == 2 && HAREL_VALUE_TEXT == 3 && HAREL_VALUE_BLOB == 4,
              "a Value's index() is its harel_value_type");

/// A row of a query: a Value per column.
using Row = std::vector<Value>;
/// The rows of a query, copied out of the C rows (which are freed at once): a Row per row,
/// empty when there are none. Texts and blobs hold every byte the library hands out (from a
/// local file a text holding a NUL comes back cut at it).
using Rows = std::vector<Row>;

namespace detail {

/// The C parameters of `params`, borrowing their texts and blobs for the call.
inline std::vector<harel_value> raw_values(Span<Value> params) {
  std::vector<harel_value> raw(params.size(), harel_value{});
  for (std::size_t i = 0; i < params.size(); i++) {
    const Value &v = params.begin()[i];
    harel_value &out = raw[i];
    out.type = static_cast<int32_t>(v.index());
    if (const auto *integer = std::get_if<HAREL_VALUE_INTEGER>(&v)) out.integer = *integer;
    if (const auto *real = std::get_if<HAREL_VALUE_REAL>(&v)) out.real = *real;
    if (const auto *text = std::get_if<HAREL_VALUE_TEXT>(&v)) out.text = text->c_str();
    if (const auto *blob = std::get_if<HAREL_VALUE_BLOB>(&v)) out.blob = blob->data(), out.size = blob->size();
  }
  return raw;
}

/// One value of the C rows, copied (texts and blobs by their sizes: every byte).
inline Value value_of(const harel_value &v) {
  switch (v.type) {
    case HAREL_VALUE_INTEGER:
      return Value(v.integer);
    case HAREL_VALUE_REAL:
      return Value(v.real);
    case HAREL_VALUE_TEXT:
      return Value(std::string(v.text, v.size));
    case HAREL_VALUE_BLOB:
      return Value(Blob(v.blob, v.blob + v.size));
    default:  // HAREL_VALUE_NULL
      return Value();
  }
}

}  // namespace detail

/// An application's transaction on the queue's database (harel_tx), owned: its own
/// statements and its publishes, committed together or not at all. Made by
/// Transport::begin (or Transport::transaction, which commits it for you):
///
///   harel::Tx tx = queue.begin();
///   tx.execute("INSERT INTO orders (id, total) VALUES (?1, ?2)", {42, 9.5});
///   tx.publish("order-42", R"({"kind":"created"})");
///   std::vector<harel::Published> published = tx.commit();  // the row and the message, or neither
///
/// - execute and publish queue their work: nothing is sent, no lock taken. It is sent, in
///   order, with the next query or with commit. Without a query the transaction is one write
///   transaction made by commit (on a libSQL server one request).
/// - The first query begins it: from then it holds the Transport's connection and the
///   database's write lock until commit or rollback. Keep it short; on a server the lock is
///   held across the network, and the server rolls back a transaction that holds it for 5 s
///   while another writer waits (the next call throws HAREL_ERR_DATABASE, nothing kept).
/// - A Transport runs one transaction at a time. While one holds its connection, the
///   Transport's other calls and another Tx's query or commit wait up to the busy timeout,
///   then throw HAREL_ERR_BUSY: inside a transaction publish with its own publish, never with
///   Transport::publish, and do not nest transactions of one Transport.
/// - Any error of a statement, a publish or the commit ends it, rolled back, and so do
///   rollback and the Transport's close. Once ended, every call throws HAREL_ERR_ARGUMENT
///   saying why ("the transaction was committed: begin a new one"), but rollback, which does
///   nothing. A refused argument (HAREL_ERR_ARGUMENT: empty SQL, a NaN parameter, a publish's
///   bad field) queues nothing and the transaction goes on.
/// - Destroyed before its commit, it is rolled back (the destructor never throws). It may
///   outlive its Transport: closed, the Transport rolled it back, and it is only to be
///   destroyed. Use a Tx from one thread at a time. Move-only; a moved-from Tx holds nothing
///   (operator bool false): its calls throw HAREL_ERR_ARGUMENT.
class Tx {
 public:
  /// No transaction (like a moved-from Tx): to be assigned one Transport::begin made.
  Tx() noexcept = default;

  /// Queues the statement `sql` (one statement, no rows wanted: `?1`, `?2`... or `?` take
  /// `params` in order). Its error, if it has one, is thrown by the next query or the commit,
  /// which it ends. Throws Error: HAREL_ERR_ARGUMENT (empty SQL, a REAL not finite, an empty
  /// Tx, an ended transaction; nothing queued).
  void execute(CStr sql, Span<Value> params = {}) {
    const std::vector<harel_value> raw = detail::raw_values(params);
    detail::ErrorSlot slot;
    detail::check(harel_tx_execute(raw_.get(), sql.c_str(), raw.data(), raw.size(), slot.out()), slot);
  }

  /// Sends what was queued and runs `sql` (a SELECT, or a write with RETURNING) inside the
  /// transaction; its rows. The first query begins the transaction: it holds the connection
  /// and the write lock from then on. Throws Error: HAREL_ERR_ARGUMENT (as execute; the
  /// transaction goes on), HAREL_ERR_DATABASE (this statement's error or a queued one's),
  /// HAREL_ERR_BUSY (the write lock, or the connection held by another transaction of the
  /// Transport, not had within the busy timeout), HAREL_ERR_CONNECT; after these three the
  /// transaction is ended, rolled back.
  Rows query(CStr sql, Span<Value> params = {}) {
    const std::vector<harel_value> raw = detail::raw_values(params);
    harel_rows *out = nullptr;
    detail::ErrorSlot slot;
    const harel_status status = harel_tx_query(raw_.get(), sql.c_str(), raw.data(), raw.size(), &out, slot.out());
    const std::unique_ptr<harel_rows, RowsFree> owned(out);  // freed whatever happens next
    detail::check(status, slot);
    Rows rows(out->n_rows);
    for (std::size_t r = 0; r < out->n_rows; r++) {
      rows[r].reserve(out->n_columns);
      for (std::size_t c = 0; c < out->n_columns; c++)
        rows[r].push_back(detail::value_of(out->values[r * out->n_columns + c]));
    }
    return rows;
  }

  /// Queues a publish, as Transport::publish takes it; its seq comes back from commit.
  /// Throws Error as publish_with does.
  void publish(CStr group_id, CStr event_json, int32_t priority = 0, std::optional<CStr> routing_key = std::nullopt) {
    publish_with(group_id, event_json, Delivery{}, priority, routing_key);
  }

  /// Queues a publish with delivery options, as Transport::publish_with takes them (an
  /// idempotency key, a delay, a due instant, a unique key, an expiry, whose ttl counts from
  /// the commit; harel_tx_publish_delivery). Checked now (an expiry not after now at the
  /// latest by the commit, which then keeps nothing); what became of it (its seq, whether it
  /// was a duplicate or replaced the pending message of its unique key) comes back from
  /// commit, in the order published: a unique key's duplicate is an outcome, not an error.
  /// Throws Error: HAREL_ERR_ARGUMENT (an argument Transport::publish_with refuses, an empty
  /// Tx, an ended transaction; nothing queued, the transaction goes on), HAREL_ERR_DATABASE
  /// (a key, on a queue without the keys table opened with create_schema off).
  void publish_with(CStr group_id, CStr event_json, const Delivery &delivery = {}, int32_t priority = 0,
                    std::optional<CStr> routing_key = std::nullopt) {
    publish_with(group_id, event_json, delivery, Headers{}, priority, routing_key);
  }

  /// Queues a publish with headers, as Transport::publish(group_id, event_json, headers)
  /// takes them. Throws Error as publish_with does, and HAREL_ERR_ARGUMENT for a bad header
  /// (named; nothing queued, the transaction goes on).
  void publish(CStr group_id, CStr event_json, Headers headers, int32_t priority = 0,
               std::optional<CStr> routing_key = std::nullopt) {
    publish_with(group_id, event_json, Delivery{}, headers, priority, routing_key);
  }

  /// Queues a publish with delivery options and headers (harel_tx_publish_delivery), as
  /// Transport::publish_with takes them; checked now. Throws Error as publish_with does, and
  /// HAREL_ERR_ARGUMENT for a bad header (named; nothing queued, the transaction goes on).
  void publish_with(CStr group_id, CStr event_json, const Delivery &delivery, Headers headers, int32_t priority = 0,
                    std::optional<CStr> routing_key = std::nullopt) {
    const harel_delivery raw = detail::raw_delivery(delivery);
    detail::ErrorSlot slot;
    detail::check(harel_tx_publish_delivery(raw_.get(), group_id.c_str(), event_json.c_str(), priority,
                                            routing_key ? routing_key->c_str() : nullptr, headers.data(),
                                            headers.size(), &raw, slot.out()),
                  slot);
    published_++;
  }

  /// Sends what was queued and commits: the statements and the messages, all of them or
  /// none. What became of each publish, in order (a duplicate: its key was seen or its
  /// unique key's message is pending, nothing new stored, that message's seq; replaced: the
  /// pending message took its event and headers). This process's waiting claims wake for
  /// the messages. The transaction is ended either way. Throws Error: HAREL_ERR_ARGUMENT
  /// (an empty Tx, an ended transaction), HAREL_ERR_DATABASE (a statement, a publish or the
  /// COMMIT failed: nothing kept), HAREL_ERR_BUSY (nothing kept), HAREL_ERR_CONNECT (nothing
  /// kept, or the COMMIT's answer was lost and the message says it may have been applied:
  /// publish with keys to make a retry safe).
  std::vector<Published> commit() {
    std::vector<int64_t> seqs(published_, 0);
    std::vector<int> duplicates(published_, 0);
    std::size_t n = 0;
    detail::ErrorSlot slot;
    detail::check(harel_tx_commit(raw_.get(), seqs.data(), duplicates.data(), published_, &n, slot.out()), slot);
    // n is published_: the library counts the publishes this Tx queued (min: reads in bounds).
    std::vector<Published> published(std::min(n, published_));
    for (std::size_t i = 0; i < published.size(); i++) published[i] = detail::published_of(seqs[i], duplicates[i]);
    return published;
  }

  /// Ends the transaction keeping nothing of it; nothing to do once it ended (committed,
  /// failed, rolled back, its Transport closed). Throws Error (HAREL_ERR_ARGUMENT) only on an
  /// empty Tx.
  void rollback() {
    detail::ErrorSlot slot;
    detail::check(harel_tx_rollback(raw_.get(), slot.out()), slot);
  }

  /// Whether this Tx holds a transaction.
  explicit operator bool() const noexcept { return raw_ != nullptr; }
  /// The C transaction (NULL when empty); it stays this Tx's.
  harel_tx *get() const noexcept { return raw_.get(); }

 private:
  friend class Transport;  // begin makes them
  explicit Tx(harel_tx *raw) noexcept : raw_(raw) {}

  struct Free {
    void operator()(harel_tx *tx) const noexcept { harel_tx_free(tx); }  // rolls back unless ended
  };
  struct RowsFree {
    void operator()(harel_rows *rows) const noexcept { harel_rows_free(rows); }
  };
  std::unique_ptr<harel_tx, Free> raw_;
  std::size_t published_ = 0;  // the publishes queued: the length of commit's outcomes
};

// ---- sharded queues -------------------------------------------------------------------------

/// The shard (0..n_shards-1) that holds `group_id` in a queue sharded over `n_shards`
/// databases (harel_shard_of: FNV-1a, 64-bit, over the id's UTF-8 bytes, modulo n_shards;
/// docs/queue.md, "Sharded queues"). Needs no Transport. Throws Error (HAREL_ERR_ARGUMENT):
/// group_id empty, not UTF-8 or holding a NUL byte (the C side would read up to it and name
/// another group's shard), n_shards 0 or above 256.
inline std::size_t shard_of(std::string_view group_id, std::size_t n_shards) {
  if (group_id.find('\0') != std::string_view::npos)
    throw Error(HAREL_ERR_ARGUMENT, "group_id holds a NUL byte at " + std::to_string(group_id.find('\0')) +
                                        ": harel_shard_of reads a NUL-terminated string");
  const std::string id(group_id);
  std::size_t shard = 0;
  detail::ErrorSlot slot;
  detail::check(harel_shard_of(id.c_str(), n_shards, &shard, slot.out()), slot);
  return shard;
}

// ---- pause and resume -----------------------------------------------------------------------

/// What a pause names (harel_pause_kind; docs/queue.md, "Pause and resume").
enum class PauseKind : int32_t {
  /// The whole queue: every group, and every group made while the pause lasts.
  Queue = HAREL_PAUSE_QUEUE,
  /// One group, by its id, whether or not it has messages now.
  Group = HAREL_PAUSE_GROUP,
  /// Every group published with the routing key.
  RoutingKey = HAREL_PAUSE_ROUTING_KEY,
};

/// What Transport::pause and resume act on: a kind and, for a group or a routing key, its
/// name (borrowed for the call, as a CStr; nullptr for the queue). Made by its factories:
///
///   queue.pause(harel::PauseTarget::group("order-42"));
///   queue.pause(harel::PauseTarget::routing_key("eu"));
///   queue.resume(harel::PauseTarget::queue());
///
/// or as an aggregate, `{harel::PauseKind::Group, id}`; the library checks the pair (a group
/// id or routing key not empty and UTF-8, no name for the queue) and throws for a bad one.
struct PauseTarget {
  PauseKind kind = PauseKind::Queue;
  CStr name = nullptr;

  /// The whole queue.
  static PauseTarget queue() noexcept { return PauseTarget{PauseKind::Queue, nullptr}; }
  /// The group `group_id`.
  static PauseTarget group(CStr group_id) noexcept { return PauseTarget{PauseKind::Group, group_id}; }
  /// Every group of the routing key `key`.
  static PauseTarget routing_key(CStr key) noexcept { return PauseTarget{PauseKind::RoutingKey, key}; }
};

/// A pause in force, as Transport::pauses lists it (harel_pause), copied: its kind, its name
/// (the group id or routing key, every byte; empty for the queue) and when it was paused
/// (epoch seconds, by the transport's clock).
struct Pause {
  PauseKind kind = PauseKind::Queue;
  std::string name;
  double paused_at = 0.0;
};

// ---- a page of messages (peek) --------------------------------------------------------------

/// The backoff the last claim of message `i` of a page of harel_transport_peek (called with
/// Transport::get()) drew under a retry policy, seconds: what its nack with delay 0 or its
/// lapsed lease waits (page.retry_delays[i]); std::nullopt when none (no policy, or never
/// claimed: the C side's -1) or when `i` is not below page.n_messages.
///
///   harel_message_page *page = nullptr;
///   if (harel_transport_peek(queue.get(), "order-42", nullptr, 100, &page, nullptr) == HAREL_OK) {
///     for (std::size_t i = 0; i < page->n_messages; i++)
///       if (auto d = harel::retry_delay(*page, i)) log(page->messages[i].seq, *d);
///     harel_message_page_free(page);
///   }
inline std::optional<double> retry_delay(const harel_message_page &page, std::size_t i) noexcept {
  if (i >= page.n_messages || !page.retry_delays || page.retry_delays[i] < 0.0) return std::nullopt;
  return page.retry_delays[i];
}

// ---- the archive ----------------------------------------------------------------------------

/// An acked message as the archive keeps it (harel_archived; docs/queue.md, "The archive"),
/// from an ArchivePage: a view of the page's item, living as long as the page (copy what you
/// keep beyond it). A default-made Archived views nothing: its accessors return 0, empty
/// views and std::nullopt.
class Archived {
 public:
  constexpr Archived() noexcept = default;
  /// A view of `raw`, the library's (an item of a harel_archive_page).
  explicit Archived(const harel_archived &raw) noexcept : raw_(&raw) {}

  /// Its seq in the queue (on a sharded queue, its shard's): a group's history reads in seq
  /// order.
  int64_t seq() const noexcept { return raw_ ? raw_->seq : 0; }
  /// Its group, every byte (group_id_len of them).
  std::string_view group_id() const noexcept {
    return raw_ && raw_->group_id ? std::string_view(raw_->group_id, raw_->group_id_len) : std::string_view();
  }
  /// Its event's JSON text, byte for byte as published (event_len bytes).
  std::string_view event() const noexcept {
    return raw_ && raw_->event ? std::string_view(raw_->event, raw_->event_len) : std::string_view();
  }
  /// The headers it was published with, in order, byte for byte (empty when it had none).
  HeaderList headers() const noexcept { return raw_ ? HeaderList(raw_->headers) : HeaderList(); }
  /// How many times it had been claimed, the acked claim included.
  int64_t attempts() const noexcept { return raw_ ? raw_->attempts : 0; }
  /// The worker that acked it.
  std::string_view worker_id() const noexcept {
    return raw_ && raw_->worker_id ? std::string_view(raw_->worker_id) : std::string_view();
  }
  /// When it was published, epoch seconds; std::nullopt when its writer did not stamp the
  /// time (the C side's -1: harel's own publishes).
  std::optional<double> published_at() const noexcept { return known(raw_ ? raw_->published_at : -1.0); }
  /// When the claim that was acked took it, epoch seconds; std::nullopt for a claim made
  /// before the archive existed (the C side's -1).
  std::optional<double> claimed_at() const noexcept { return known(raw_ ? raw_->claimed_at : -1.0); }
  /// When it was acked, epoch seconds, by the acking transport's clock.
  double acked_at() const noexcept { return raw_ ? raw_->acked_at : 0.0; }
  /// The shard it is on (Transport::open_shards); 0 when the queue is not sharded.
  std::size_t shard() const noexcept { return raw_ ? raw_->shard : 0; }

  /// The C item (NULL for a default-made Archived); the page's.
  const harel_archived *get() const noexcept { return raw_; }

 private:
  static std::optional<double> known(double at) noexcept {
    return at < 0.0 ? std::nullopt : std::optional<double>(at);
  }
  const harel_archived *raw_ = nullptr;
};

namespace detail {
/// A forward iterator over an array the library handed out, each item read as a `View`
/// (made from the C item when read: no reference to hold): a page's or a list's.
template <class Raw, class View>
class ViewIterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = View;
  using difference_type = std::ptrdiff_t;
  using pointer = void;
  using reference = View;
  ViewIterator() noexcept = default;
  explicit ViewIterator(const Raw *at) noexcept : at_(at) {}
  View operator*() const noexcept { return View(*at_); }
  ViewIterator &operator++() noexcept {
    ++at_;
    return *this;
  }
  ViewIterator operator++(int) noexcept {
    ViewIterator was = *this;
    ++at_;
    return was;
  }
  bool operator==(const ViewIterator &other) const noexcept { return at_ == other.at_; }
  bool operator!=(const ViewIterator &other) const noexcept { return at_ != other.at_; }

 private:
  const Raw *at_ = nullptr;
};
}  // namespace detail

/// A page of the archive (Transport::archive, harel_transport_archive), owned: freed when
/// destroyed. Move-only. Its messages in seq order, as Archived views living as long as the
/// page: size(), operator[], and a range for `for`; next_cursor() for the next page (NULL on
/// the last). A moved-from page is empty and its next_cursor() NULL.
///
///   for (harel::ArchivePage page = queue.archive("order-42");;
///        page = queue.archive("order-42", page.next_cursor())) {
///     for (const harel::Archived &a : page) log(a.seq(), a.event(), a.worker_id(), a.acked_at());
///     if (!page.next_cursor()) break;
///   }
class ArchivePage {
 public:
  using value_type = Archived;

  /// A forward iterator over the page's messages (each Archived made when read).
  using iterator = detail::ViewIterator<harel_archived, Archived>;

  /// Takes ownership of what harel_transport_archive handed out (NULL: an empty page).
  explicit ArchivePage(harel_archive_page *raw) noexcept : raw_(raw) {}

  /// How many messages the page holds.
  std::size_t size() const noexcept { return raw_ && raw_->messages ? raw_->n_messages : 0; }
  bool empty() const noexcept { return size() == 0; }
  /// The i-th message (i < size()).
  Archived operator[](std::size_t i) const noexcept { return Archived(raw_->messages[i]); }
  iterator begin() const noexcept { return iterator(size() ? raw_->messages : nullptr); }
  iterator end() const noexcept { return iterator(size() ? raw_->messages + raw_->n_messages : nullptr); }
  /// The cursor of the next page, to pass to Transport::archive with the same group; NULL
  /// when this page is the last. The page's: copy it to keep it beyond the page (the call
  /// copies what it is given, so `page = queue.archive(group, page.next_cursor())` is fine).
  const char *next_cursor() const noexcept { return raw_ ? raw_->next_cursor : nullptr; }

  /// The C page (NULL when empty from a move); it stays this ArchivePage's.
  const harel_archive_page *get() const noexcept { return raw_.get(); }

 private:
  struct Free {
    void operator()(harel_archive_page *p) const noexcept { harel_archive_page_free(p); }
  };
  std::unique_ptr<harel_archive_page, Free> raw_;
};

// ---- limits per routing key ----------------------------------------------------------------

struct Limit;

/// A rate limit (docs/queue.md, "Limits"): a token bucket that gains `per_second` tokens a
/// second (finite, > 0, at most 1000000) and keeps at most `burst` (finite, >= 1, at most
/// 1000000), full when set; each lease of the key's messages takes a token. A Rate converts
/// to a Limit that carries it alone: `queue.set_limit("sms", harel::Rate{10.0, 20.0})`.
struct Rate {
  double per_second = 0.0;
  double burst = 0.0;

  /// A Limit of this rate and no concurrency limit.
  operator Limit() const noexcept;  // NOLINT: implicit on purpose
};

/// A routing key's limits, for Transport::set_limit (docs/queue.md, "Limits"), either or
/// both:
/// - concurrency: at most that many messages of the key's groups leased at once
///   (1..1000000), across every worker of every process;
/// - rate: a harel::Rate, each lease taking a token of its bucket.
/// std::nullopt, the default: that kind off. A set replaces the key's limits, so a kind not
/// given is off after it. As an aggregate:
///
///   queue.set_limit("eu", {2});                                // 2 leases at once
///   queue.set_limit("sms", harel::Rate{10.0, 20.0});           // 10 a second, 20 at once
///   queue.set_limit("api", {4, harel::Rate{10.0, 20.0}});      // both
///   queue.set_limit("api", {.concurrency = 4});                // C++20
struct Limit {
  std::optional<uint32_t> concurrency = std::nullopt;
  std::optional<Rate> rate = std::nullopt;
};

inline Rate::operator Limit() const noexcept { return Limit{std::nullopt, *this}; }

/// A limit in force and its use now, as Transport::limits lists it (harel_limit_info): a
/// view of the list's item, living as long as the LimitList (copy what you keep beyond
/// it). On a sharded queue each shard holds the limit for its own groups, and in_use,
/// tokens and held are the sums over the shards. A default-made LimitInfo views nothing:
/// its accessors return an empty view, std::nullopt and 0.
class LimitInfo {
 public:
  constexpr LimitInfo() noexcept = default;
  /// A view of `raw`, the library's (an item of a harel_limit_list).
  explicit LimitInfo(const harel_limit_info &raw) noexcept : raw_(&raw) {}

  /// The routing key, every byte (routing_key_len of them).
  std::string_view routing_key() const noexcept {
    return raw_ && raw_->routing_key ? std::string_view(raw_->routing_key, raw_->routing_key_len)
                                     : std::string_view();
  }
  /// At most this many of the key's messages leased at once; std::nullopt without a
  /// concurrency limit (the C side's 0).
  std::optional<uint32_t> concurrency() const noexcept {
    return raw_ && raw_->concurrency != 0 ? std::optional<uint32_t>(raw_->concurrency) : std::nullopt;
  }
  /// The rate limit; std::nullopt without one (the C side's rate and burst 0).
  std::optional<Rate> rate() const noexcept {
    if (!raw_ || (raw_->rate == 0.0 && raw_->burst == 0.0)) return std::nullopt;
    return Rate{raw_->rate, raw_->burst};
  }
  /// Both kinds, as Transport::set_limit takes them.
  Limit limit() const noexcept { return Limit{concurrency(), rate()}; }
  /// The leases of the key's messages running now (counted with a concurrency limit; else 0).
  uint64_t in_use() const noexcept { return raw_ ? raw_->in_use : 0; }
  /// The bucket's tokens now; std::nullopt without a rate limit (the C side's -1).
  std::optional<double> tokens() const noexcept {
    return raw_ && raw_->tokens >= 0.0 ? std::optional<double>(raw_->tokens) : std::nullopt;
  }
  /// How many of the key's groups claims hold until the key has room.
  uint64_t held() const noexcept { return raw_ ? raw_->held : 0; }

  /// The C item (NULL for a default-made LimitInfo); the list's.
  const harel_limit_info *get() const noexcept { return raw_; }

 private:
  const harel_limit_info *raw_ = nullptr;
};

/// The limits in force (Transport::limits, harel_transport_limits), owned: freed when
/// destroyed. Move-only. By routing key, in byte order, as LimitInfo views living as long
/// as the list: size(), operator[], and a range for `for`. A moved-from list is empty.
///
///   for (const harel::LimitInfo &l : queue.limits())
///     log(l.routing_key(), l.concurrency().value_or(0), l.in_use(), l.tokens().value_or(-1), l.held());
class LimitList {
 public:
  using value_type = LimitInfo;

  /// A forward iterator over the list's limits (each LimitInfo made when read).
  using iterator = detail::ViewIterator<harel_limit_info, LimitInfo>;

  /// Takes ownership of what harel_transport_limits handed out (NULL: an empty list).
  explicit LimitList(harel_limit_list *raw) noexcept : raw_(raw) {}

  /// How many limits are in force.
  std::size_t size() const noexcept { return raw_ && raw_->limits ? raw_->n_limits : 0; }
  bool empty() const noexcept { return size() == 0; }
  /// The i-th limit (i < size()).
  LimitInfo operator[](std::size_t i) const noexcept { return LimitInfo(raw_->limits[i]); }
  iterator begin() const noexcept { return iterator(size() ? raw_->limits : nullptr); }
  iterator end() const noexcept { return iterator(size() ? raw_->limits + raw_->n_limits : nullptr); }

  /// The C list (NULL when empty from a move); it stays this LimitList's.
  const harel_limit_list *get() const noexcept { return raw_.get(); }

 private:
  struct Free {
    void operator()(harel_limit_list *l) const noexcept { harel_limit_list_free(l); }
  };
  std::unique_ptr<harel_limit_list, Free> raw_;
};

// ---- the transport --------------------------------------------------------------------------

/// An open queue, owned: closed when destroyed (closing cannot fail). Move-only.
class Transport {
 public:
  /// Opens the queue at `database`: a file path, ":memory:", a libSQL server's URL, or a
  /// path with Options::sync_url (harel_transport_open). Throws Error: HAREL_ERR_ARGUMENT,
  /// HAREL_ERR_DATABASE, HAREL_ERR_BUSY, HAREL_ERR_CONNECT.
  static Transport open(CStr database, const Options &options) { return open_raw(database, options.get()); }
  /// Opens with the default options.
  static Transport open(CStr database) { return open_raw(database, nullptr); }

  /// Opens one queue sharded over `databases` (1..256 file paths or URLs, each as open
  /// takes it, or paths of embedded replicas with Options::sync_urls naming each one's
  /// primary; `options` for each otherwise), in their shard order
  /// (harel_transport_open_shards). Each group lives on the shard harel::shard_of names:
  /// its publishes, acks and nacks go there; claims serve the shards in turn (a group's
  /// order holds, not the order across shards); publish_many is one transaction per shard;
  /// stats and the listings add the shards up. The first open of empty databases makes them
  /// a set (each records the queue, its index and the number of shards): every later open
  /// must give the same list in the same order. A list of one is a queue that is not
  /// sharded, as open opens it. The Transport is an ordinary one, but a transaction (begin,
  /// transaction) is refused at its first call, and so are harel_transport_redrive and
  /// _purge_dead by seqs (by group or all work). Throws Error: HAREL_ERR_ARGUMENT (an empty
  /// list or one above 256, an element empty, not UTF-8 or repeated; a list that does not
  /// match the databases' records: one missing, one extra, the order changed, another
  /// queue's database, a database holding messages that belongs to no set; the message
  /// names it, "databases[i] (its text)"), and as open, naming the database that failed.
  /// On error nothing is left open. Opening one database of a set with open is refused.
  static Transport open_shards(const std::vector<std::string> &databases, const Options &options) {
    return open_shards_raw(databases, options.get());
  }
  /// Opens a sharded queue with the default options.
  static Transport open_shards(const std::vector<std::string> &databases) {
    return open_shards_raw(databases, nullptr);
  }

  /// How many databases the queue is sharded over (harel_transport_shard_count): 1 when it
  /// is not sharded. Throws Error (HAREL_ERR_ARGUMENT) on an empty Transport.
  std::size_t shard_count() const {
    std::size_t n = 0;
    detail::ErrorSlot slot;
    detail::check(harel_transport_shard_count(raw_.get(), &n, slot.out()), slot);
    return n;
  }

  /// No handle (like a moved-from Transport): to be assigned an opened one.
  Transport() noexcept = default;
  /// Takes ownership of a handle made by harel_transport_open (NULL: no handle).
  explicit Transport(harel_transport *raw) noexcept : raw_(raw) {}

  /// Closes the handle now (harel_transport_close); the Transport is then empty. Never
  /// while another thread uses it.
  void close() noexcept { raw_.reset(); }
  /// Whether this Transport holds an open handle.
  explicit operator bool() const noexcept { return raw_ != nullptr; }
  /// The C handle (NULL when empty); it stays this Transport's.
  harel_transport *get() const noexcept { return raw_.get(); }

  /// Appends `event_json` (valid JSON text) to the FIFO of `group_id`; the first publish
  /// into a group fixes its priority (0..HAREL_MAX_PRIORITY) and routing key.
  void publish(CStr group_id, CStr event_json, int32_t priority = 0,
               std::optional<CStr> routing_key = std::nullopt) {
    detail::ErrorSlot slot;
    detail::check(harel_transport_publish(raw_.get(), group_id.c_str(), event_json.c_str(), priority,
                                          routing_key ? routing_key->c_str() : nullptr, slot.out()),
                  slot);
  }

  /// publish with `headers` (harel_transport_publish_headers): (name, value) pairs stored
  /// beside the message and handed back, in order and byte for byte, with every lease of it
  /// (Lease::headers), by harel_transport_peek and with its dead letter (a redrive keeps
  /// them). Shares commits as publish does. Throws Error as publish, and HAREL_ERR_ARGUMENT
  /// for a header that breaks the rules (Headers), named ("headers[2].name holds byte 0x3d:
  /// ..."); nothing written.
  void publish(CStr group_id, CStr event_json, Headers headers, int32_t priority = 0,
               std::optional<CStr> routing_key = std::nullopt) {
    detail::ErrorSlot slot;
    detail::check(harel_transport_publish_headers(raw_.get(), group_id.c_str(), event_json.c_str(), priority,
                                                  routing_key ? routing_key->c_str() : nullptr, headers.data(),
                                                  headers.size(), slot.out()),
                  slot);
  }

  /// Appends a batch in one transaction: all of it or none (one bad message rejects the
  /// batch; the error names it, "messages[3].event_json ..."). Empty: nothing happens. On a
  /// sharded queue (open_shards), one transaction per shard: each shard's part all or none,
  /// and an error names the shards whose parts were stored before it.
  void publish_many(Span<Message> messages) {
    detail::ErrorSlot slot;
    detail::check(harel_transport_publish_many(raw_.get(), messages.data(), messages.size(), slot.out()), slot);
  }

  /// publish_many with each message's headers: `headers` is empty (none for any message) or
  /// one Headers per message, in order (an empty one: none), e.g. a std::vector<Headers>
  /// (harel_transport_publish_many_delivery; one transaction, not shared with other
  /// threads' publishes). Throws Error as publish_many, naming the message and the header
  /// ("messages[1].headers[0].name ..."), and HAREL_ERR_ARGUMENT when `headers` is neither
  /// empty nor as long as `messages`.
  void publish_many(Span<Message> messages, Span<Headers> headers) { publish_many_with(messages, {}, headers); }

  /// publish with delivery options (an idempotency key, a delay, a due instant, a unique
  /// key, an expiry; harel_transport_publish_delivery): the message's seq, whether it was a
  /// duplicate (nothing new stored: its key seen, or a message with its unique key pending,
  /// whose seq it is) and whether it replaced that pending message (UniqueMode::Replace,
  /// Debounce; a message a worker holds is never replaced). Its own transaction: it does not
  /// share commits with other threads' publishes. Throws Error: HAREL_ERR_ARGUMENT (as
  /// publish, and a key or unique key empty, over 256 bytes or not UTF-8, both given, a mode
  /// not a UniqueMode, a delay or a debounce delay or cap not finite, negative or over ten
  /// years, the cap below the delay, a not_before NaN, infinite or more than ten years
  /// ahead, a ttl NaN, infinite, negative or over ten years, an expires_at NaN, infinite or
  /// negative, an expiry not after now or not after the message is due; nothing written),
  /// HAREL_ERR_BUSY, HAREL_ERR_DATABASE (also: a key, on a queue without the keys table
  /// opened with create_schema off), HAREL_ERR_CONNECT (it may have been applied: retry
  /// with the same key).
  Published publish_with(CStr group_id, CStr event_json, const Delivery &delivery = {}, int32_t priority = 0,
                         std::optional<CStr> routing_key = std::nullopt) {
    return publish_with(group_id, event_json, delivery, Headers{}, priority, routing_key);
  }

  /// publish_with and `headers`: as publish_with, the headers as publish(group_id,
  /// event_json, headers) takes them. A duplicate (its key seen, or its unique key's message
  /// pending and kept) stores nothing, its headers neither; a replace gives the pending
  /// message these headers. Throws Error as both.
  Published publish_with(CStr group_id, CStr event_json, const Delivery &delivery, Headers headers,
                         int32_t priority = 0, std::optional<CStr> routing_key = std::nullopt) {
    const harel_delivery raw = detail::raw_delivery(delivery);
    int64_t seq = 0;
    int outcome = HAREL_PUBLISHED_STORED;
    detail::ErrorSlot slot;
    detail::check(harel_transport_publish_delivery(raw_.get(), group_id.c_str(), event_json.c_str(), priority,
                                                   routing_key ? routing_key->c_str() : nullptr, headers.data(),
                                                   headers.size(), &raw, &seq, &outcome, slot.out()),
                  slot);
    return detail::published_of(seq, outcome);
  }

  /// publish_many with delivery options per message (harel_transport_publish_many_delivery),
  /// in one transaction: every message stored, found a duplicate or replacing a pending one,
  /// or nothing written. `deliveries` is empty (plain delivery for every message) or one per
  /// message, in order; a key met earlier in the batch makes the later message a duplicate
  /// of the earlier one, and a unique key met earlier finds that message pending (kept or
  /// replaced, as its mode says). What became of each message, in
  /// order (empty for an empty batch, which writes nothing). `headers`, empty (none for any
  /// message) or one Headers per message, as publish_many(messages, headers) takes them.
  /// Throws Error as publish_with does, naming the message by its index ("messages[3].key
  /// is empty", "messages[1].headers[0].name ..."), and HAREL_ERR_ARGUMENT when
  /// `deliveries` or `headers` is neither empty nor as long as `messages`.
  std::vector<Published> publish_many_with(Span<Message> messages, Span<Delivery> deliveries = {},
                                           Span<Headers> headers = {}) {
    const std::size_t n = messages.size();
    if (!deliveries.empty() && deliveries.size() != n)
      throw Error(HAREL_ERR_ARGUMENT, "deliveries has " + std::to_string(deliveries.size()) +
                                          " elements and messages " + std::to_string(n) +
                                          ": give one per message, or none");
    if (!headers.empty() && headers.size() != n)
      throw Error(HAREL_ERR_ARGUMENT, "headers has " + std::to_string(headers.size()) + " elements and messages " +
                                          std::to_string(n) + ": give one Headers per message, or none");
    std::vector<harel_headers> lists;
    lists.reserve(headers.size());
    for (const Headers &h : headers) lists.push_back(harel_headers{h.data(), h.size()});
    std::vector<harel_delivery> raw;
    std::vector<const harel_delivery *> each;
    raw.reserve(deliveries.size());
    each.reserve(deliveries.size());
    for (const Delivery &d : deliveries) raw.push_back(detail::raw_delivery(d));
    for (const harel_delivery &d : raw) each.push_back(&d);  // reserved: the pointers stay
    std::vector<int64_t> seqs(n, 0);
    std::vector<int> outcomes(n, HAREL_PUBLISHED_STORED);
    detail::ErrorSlot slot;
    detail::check(harel_transport_publish_many_delivery(raw_.get(), messages.data(), n,
                                                        lists.empty() ? nullptr : lists.data(),
                                                        each.empty() ? nullptr : each.data(), seqs.data(),
                                                        outcomes.data(), slot.out()),
                  slot);
    std::vector<Published> published(n);
    for (std::size_t i = 0; i < n; i++) published[i] = detail::published_of(seqs[i], outcomes[i]);
    return published;
  }

  /// Leases the next deliverable group head to `worker_id` for `visibility` seconds, from
  /// the groups of priority >= `min_priority` and, when `routing_keys` is not empty, a
  /// routing key among them. std::nullopt: nothing deliverable now.
  std::optional<Lease> claim(CStr worker_id, double visibility, int32_t min_priority = 0,
                             RoutingKeys routing_keys = {}) {
    harel_lease *out = nullptr;
    detail::ErrorSlot slot;
    harel_status status = harel_transport_claim(raw_.get(), worker_id.c_str(), visibility, min_priority,
                                                routing_keys.data(), routing_keys.size(), &out, slot.out());
    return lease_out(status, out, slot);
  }

  /// Finishes `lease` (deletes its message). Throws Error: HAREL_ERR_LEASE_LOST when the
  /// lease is no longer this worker's (nothing changed), and the rest as the C call.
  void ack(const Lease &lease) {
    detail::ErrorSlot slot;
    detail::check(harel_transport_ack(raw_.get(), lease.get(), slot.out()), slot);
  }

  /// Acks `lease` and claims the next message in one transaction. std::nullopt: acked,
  /// nothing deliverable. If the ack fails (Error, e.g. HAREL_ERR_LEASE_LOST), nothing is
  /// claimed.
  std::optional<Lease> ack_and_claim(const Lease &lease, CStr worker_id, double visibility,
                                     int32_t min_priority = 0, RoutingKeys routing_keys = {}) {
    harel_lease *out = nullptr;
    detail::ErrorSlot slot;
    harel_status status =
        harel_transport_ack_and_claim(raw_.get(), lease.get(), worker_id.c_str(), visibility, min_priority,
                                      routing_keys.data(), routing_keys.size(), &out, slot.out());
    return lease_out(status, out, slot);
  }

  /// claim, waiting up to `wait` seconds (>= 0; 0 looks once) for something deliverable:
  /// it returns as soon as a lease is had, std::nullopt once the wait passed with nothing.
  /// While it waits it holds no database lock and other threads' calls on this Transport
  /// go ahead; a commit to the queue wakes it (harel_transport_claim_wait says when).
  /// Throws Error: HAREL_ERR_INTERRUPTED (nothing claimed) when `cancel` fires or
  /// interrupt() is called meanwhile, and the rest as claim.
  std::optional<Lease> claim_wait(CStr worker_id, double visibility, double wait, const Cancel *cancel = nullptr,
                                  int32_t min_priority = 0, RoutingKeys routing_keys = {}) {
    harel_lease *out = nullptr;
    detail::ErrorSlot slot;
    harel_status status =
        harel_transport_claim_wait(raw_.get(), worker_id.c_str(), visibility, min_priority, routing_keys.data(),
                                   routing_keys.size(), wait, cancel ? cancel->get() : nullptr, &out, slot.out());
    return lease_out(status, out, slot);
  }

  /// Up to `max` (1..HAREL_MAX_CLAIM) leases, each the head of a different group, in the
  /// order claim would hand them out one after another, in one transaction; while nothing
  /// is deliverable it waits as claim_wait does (`wait` 0: not at all). Empty: nothing came
  /// within the wait. Throws Error as claim_wait does (HAREL_ERR_ARGUMENT for a max outside
  /// 1..HAREL_MAX_CLAIM).
  std::vector<Lease> claim_many(CStr worker_id, double visibility, std::size_t max, double wait = 0.0,
                                const Cancel *cancel = nullptr, int32_t min_priority = 0,
                                RoutingKeys routing_keys = {}) {
    // The library refuses a max above HAREL_MAX_CLAIM before it writes anything, so an
    // array that long serves every call (on the stack: no allocation for it).
    harel_lease *out[HAREL_MAX_CLAIM];
    std::size_t n = 0;
    detail::ErrorSlot slot;
    harel_status status = harel_transport_claim_many(
        raw_.get(), worker_id.c_str(), visibility, min_priority, routing_keys.data(), routing_keys.size(), max, wait,
        cancel ? cancel->get() : nullptr, out, &n, slot.out());
    return leases_out(status, out, n, slot);
  }

  /// Acks `leases` in one transaction (one commit), in order, with an outcome per lease:
  /// HAREL_OK (acked) or HAREL_ERR_LEASE_LOST (no longer this worker's; nothing of it
  /// changed), the others acked all the same; sharded, a lease of a shard whose transaction
  /// failed has that error's status (HAREL_ERR_BUSY, ...: not acked, still held;
  /// HAREL_ERR_CONNECT: unreachable or its answer lost, so it may have been acked: ack it
  /// again, and HAREL_ERR_LEASE_LOST then says it was). The leases stay yours. Throws Error for the call as a whole, nothing acked: HAREL_ERR_ARGUMENT (a
  /// lease named by its index, "leases[2] is NULL" for an empty one), HAREL_ERR_BUSY,
  /// HAREL_ERR_DATABASE, HAREL_ERR_CONNECT. No leases: nothing is written.
  std::vector<harel_status> ack_many(Span<Lease> leases) {
    std::vector<const harel_lease *> raw = raw_leases(leases);
    std::vector<harel_status> outcomes(leases.size(), HAREL_OK);
    detail::ErrorSlot slot;
    detail::check(harel_transport_ack_many(raw_.get(), raw.data(), raw.size(), outcomes.data(), slot.out()), slot);
    return outcomes;
  }

  /// ack_many, then claim_many without waiting, in one transaction: a batch worker's loop
  /// with one commit per batch. A lost lease is reported in its outcome and does not stop
  /// the claim. Throws Error as both calls do (nothing acked or claimed).
  AckedAndClaimed ack_and_claim_many(Span<Lease> leases, CStr worker_id, double visibility, std::size_t max,
                                     int32_t min_priority = 0, RoutingKeys routing_keys = {}) {
    std::vector<const harel_lease *> raw = raw_leases(leases);
    AckedAndClaimed done{std::vector<harel_status>(leases.size(), HAREL_OK), {}};
    harel_lease *out[HAREL_MAX_CLAIM];  // as in claim_many
    std::size_t n = 0;
    detail::ErrorSlot slot;
    harel_status status = harel_transport_ack_and_claim_many(
        raw_.get(), raw.data(), raw.size(), done.outcomes.data(), worker_id.c_str(), visibility, min_priority,
        routing_keys.data(), routing_keys.size(), max, out, &n, slot.out());
    done.leases = leases_out(status, out, n, slot);
    return done;
  }

  /// The lease now runs to now + `visibility` seconds, and lease.lock_expiry() says so: a
  /// handler that runs longer than its visibility extends its lease while it works (or
  /// keeps a LeaseKeeper). Throws Error: HAREL_ERR_LEASE_LOST when the lease is no longer
  /// this worker's (acked, nacked, or lapsed and claimed by another; a lapsed lease no one
  /// claimed since is still yours, and is extended), HAREL_ERR_ARGUMENT (a visibility not
  /// finite or <= 0, an empty Lease), and the rest as ack; the lease is then unchanged.
  void extend(Lease &lease, double visibility) {
    detail::ErrorSlot slot;
    detail::check(harel_transport_extend(raw_.get(), lease.raw_.get(), visibility, slot.out()), slot);
  }

  /// Ends every wait in progress on this Transport (claim_wait, claim_many): each throws
  /// Error (HAREL_ERR_INTERRUPTED). Later calls wait as usual. Unlike close and moves, safe
  /// from any thread while others use the Transport: interrupt a Transport whose calls may
  /// be waiting, join those threads, then close it.
  void interrupt() noexcept { harel_transport_interrupt(raw_.get()); }

  /// A readiness descriptor for the claims a claim with this filter would make (priority
  /// >= `min_priority`; a routing key among `routing_keys` unless empty; the keys are
  /// copied): poll its fd(), then rearm. New, it is readable. Throws Error:
  /// HAREL_ERR_ARGUMENT (a min_priority outside 0..HAREL_MAX_PRIORITY, a NULL, empty or
  /// non-UTF-8 routing key, an empty Transport), HAREL_ERR_DATABASE (no descriptor: the
  /// process's limit of open files reached).
  Watch watch(int32_t min_priority = 0, RoutingKeys routing_keys = {}) {
    harel_watch *out = nullptr;
    detail::ErrorSlot slot;
    const harel_status status =
        harel_transport_watch(raw_.get(), min_priority, routing_keys.data(), routing_keys.size(), &out, slot.out());
    Watch made(out);  // owned from here, whatever happens next
    detail::check(status, slot);
    return made;
  }

  /// Clears `w`'s descriptor and looks, as a claim with its filter would (a read: no write
  /// lock). true: a claim may find work now; the descriptor stays readable: claim without
  /// waiting (claim, claim_many with wait 0) until nothing comes, then poll again. false:
  /// nothing to claim now; the descriptor is clear and becomes readable when a claim may
  /// find work (a commit by any Transport of this process on the queue, another process's
  /// commit to a local file, a lease's or a park's end; on a server, its polling). Always
  /// rearm before claiming: a commit after the rearm rings again, so no wake is lost.
  /// Throws Error: HAREL_ERR_ARGUMENT (an empty Watch, one made by another Transport, an
  /// empty Transport), HAREL_ERR_BUSY, HAREL_ERR_DATABASE, HAREL_ERR_CONNECT; after such an
  /// error the descriptor becomes readable again within a second, so a loop retries.
  bool rearm(Watch &w) {
    detail::ErrorSlot slot;
    const harel_status status = harel_watch_rearm(raw_.get(), w.get(), slot.out());
    if (status == HAREL_EMPTY) return false;
    detail::check(status, slot);
    return true;
  }

  /// Gives `lease` back: `delay` 0 makes it claimable at once, > 0 parks its group for
  /// `delay` seconds. Throws Error as ack does (and HAREL_ERR_ARGUMENT for a delay < 0).
  void nack(const Lease &lease, double delay = 0.0) {
    detail::ErrorSlot slot;
    detail::check(harel_transport_nack(raw_.get(), lease.get(), delay, slot.out()), slot);
  }

  /// Moves the leased message to the dead letters with `reason` (not empty), for a message
  /// that will never succeed; its group goes on with the next one. Throws Error as ack does
  /// (and HAREL_ERR_ARGUMENT for an empty reason).
  void dead_letter(const Lease &lease, CStr reason) {
    detail::ErrorSlot slot;
    detail::check(harel_transport_dead_letter(raw_.get(), lease.get(), reason.c_str(), slot.out()), slot);
  }

  /// Pauses `target` (harel_transport_pause): no claim takes a message of the groups it names
  /// (theirs stay in order; a lease taken before finishes: ack, nack, extend and dead_letter
  /// work; publishes go on), for every process on the queue and across restarts, until
  /// resume; on a sharded queue, on every shard. true: the pause is new; false: it was there
  /// already. Throws Error: HAREL_ERR_ARGUMENT (a kind not a PauseKind, a name for the queue
  /// or none for a group or routing key, a name empty or not UTF-8, an empty Transport;
  /// nothing changed), HAREL_ERR_BUSY, HAREL_ERR_DATABASE (also: a queue opened with
  /// create_schema off that lacks the pauses table), HAREL_ERR_CONNECT.
  bool pause(const PauseTarget &target) { return pause_call(harel_transport_pause, target); }

  /// Ends the pause `target` names (harel_transport_resume): the groups it paused that no
  /// other pause names are served again, each from its head, at once (a group paused on its
  /// own stays paused when the queue is resumed, and the other way round). true: there was
  /// such a pause; false: nothing changed. Throws Error as pause does.
  bool resume(const PauseTarget &target) { return pause_call(harel_transport_resume, target); }

  /// The pauses in force (harel_transport_pauses), copied: the queue's first, then by kind
  /// and name; on a sharded queue each once. Empty when there are none (and on a queue opened
  /// with create_schema off that lacks the pauses table). Throws Error: HAREL_ERR_ARGUMENT
  /// (an empty Transport), HAREL_ERR_DATABASE, HAREL_ERR_CONNECT.
  std::vector<Pause> pauses() const {
    harel_pause_list *out = nullptr;
    detail::ErrorSlot slot;
    const harel_status status = harel_transport_pauses(raw_.get(), &out, slot.out());
    const std::unique_ptr<harel_pause_list, PauseListFree> list(out);  // owned from here
    detail::check(status, slot);
    if (!list) throw Error(HAREL_ERR_PANIC, "harel_transport_pauses returned HAREL_OK without a list");
    std::vector<Pause> pauses;
    pauses.reserve(list->n_pauses);
    for (std::size_t i = 0; i < list->n_pauses; i++) {
      const harel_pause &p = list->pauses[i];
      pauses.push_back(Pause{static_cast<PauseKind>(p.kind), p.name ? std::string(p.name, p.name_len) : std::string(),
                             p.paused_at});
    }
    return pauses;
  }

  /// A page of the archive (harel_transport_archive): the messages acked by a Transport that
  /// keeps it (Options::archive), for its retention, in seq order; `group_id`'s history, or
  /// every group's for nullptr (a sharded queue's shard after shard, each with its shard()).
  /// `cursor`: nullptr for the first page, else the next_cursor() of the page before (copied:
  /// that page may go). `limit`: 1..HAREL_MAX_PAGE (10000). It reads the table whoever wrote
  /// it, this Transport with the option or without; an empty page when nothing is archived
  /// (and on a queue opened with create_schema(false) that lacks the table). One read that
  /// takes no write lock. Throws Error: HAREL_ERR_ARGUMENT (group_id empty or not UTF-8, a
  /// limit 0 or above 10000, a cursor not of this listing: another listing's, the dead
  /// letters' among them, or a sharded queue's given to one that is not, or the other way
  /// round; an empty Transport), HAREL_ERR_DATABASE, HAREL_ERR_CONNECT.
  ArchivePage archive(CStr group_id = nullptr, CStr cursor = nullptr, std::size_t limit = 100) const {
    harel_archive_page *out = nullptr;
    detail::ErrorSlot slot;
    const harel_status status =
        harel_transport_archive(raw_.get(), group_id.c_str(), cursor.c_str(), limit, &out, slot.out());
    ArchivePage page(out);  // owned from here, whatever happens next
    detail::check(status, slot);
    if (!page.get()) throw Error(HAREL_ERR_PANIC, "harel_transport_archive returned HAREL_OK without a page");
    return page;
  }

  /// Limits the groups of `routing_key` (harel_transport_set_limit; docs/queue.md,
  /// "Limits"): at most `limit.concurrency` of their messages leased at once, leases taken at
  /// most at `limit.rate`, across every worker of every process (not harel 0.9's Python
  /// workers, which know nothing of limits). Replaces the key's limits: a kind not given is
  /// off. In force at every process's next claim, stored in the database. A claim passes
  /// over a group whose key has no room, holds it, and serves the others; when the key has
  /// room again the next claims give the held groups back. On a sharded queue each shard
  /// holds the limit for its own groups (a key's ceiling over the fleet is the limit times
  /// the shards). Throws Error: HAREL_ERR_ARGUMENT (routing_key empty or not UTF-8, neither
  /// kind given, a number out of range, each named in the library's words, an empty
  /// Transport; nothing changed), HAREL_ERR_BUSY, HAREL_ERR_DATABASE, HAREL_ERR_CONNECT. The C
  /// side reads a concurrency of 0, and a rate and burst both 0, as that kind off: a Limit
  /// that gives them so is refused here (HAREL_ERR_ARGUMENT, "concurrency is 0; ...", "rate
  /// is 0; ..."), not set as another limit.
  void set_limit(CStr routing_key, const Limit &limit) {
    if (limit.concurrency == 0u) throw Error(HAREL_ERR_ARGUMENT, "concurrency is 0; it must be 1..1000000");
    if (limit.rate && limit.rate->per_second == 0.0 && limit.rate->burst == 0.0)
      throw Error(HAREL_ERR_ARGUMENT, "rate is 0; it must be a finite number > 0, at most 1000000");
    const double rate = limit.rate ? limit.rate->per_second : 0.0;
    const double burst = limit.rate ? limit.rate->burst : 0.0;
    detail::ErrorSlot slot;
    detail::check(harel_transport_set_limit(raw_.get(), routing_key.c_str(), limit.concurrency.value_or(0u), rate,
                                            burst, slot.out()),
                  slot);
  }

  /// Removes the limits of `routing_key` (harel_transport_remove_limit; on a sharded queue,
  /// on every shard): its held groups are served again at once; leases taken before finish.
  /// Throws Error: HAREL_ERR_ARGUMENT (routing_key empty or not UTF-8; the key has no limit:
  /// `routing key "k" has no limit to remove`; an empty Transport), HAREL_ERR_BUSY,
  /// HAREL_ERR_DATABASE, HAREL_ERR_CONNECT.
  void remove_limit(CStr routing_key) {
    detail::ErrorSlot slot;
    detail::check(harel_transport_remove_limit(raw_.get(), routing_key.c_str(), slot.out()), slot);
  }

  /// The limits in force (harel_transport_limits), by routing key, each with its use now:
  /// leases running, tokens, groups held (on a sharded queue each key once, its use summed
  /// over the shards). An empty list when there are none. Throws Error: HAREL_ERR_ARGUMENT
  /// (an empty Transport), HAREL_ERR_DATABASE, HAREL_ERR_CONNECT.
  LimitList limits() const {
    harel_limit_list *out = nullptr;
    detail::ErrorSlot slot;
    const harel_status status = harel_transport_limits(raw_.get(), &out, slot.out());
    LimitList list(out);  // owned from here, whatever happens next
    detail::check(status, slot);
    if (!list.get()) throw Error(HAREL_ERR_PANIC, "harel_transport_limits returned HAREL_OK without a list");
    return list;
  }

  /// Exact counts of the queue now (harel_transport_stats): one read that takes no write
  /// lock. Throws Error: HAREL_ERR_ARGUMENT (an empty Transport), HAREL_ERR_DATABASE,
  /// HAREL_ERR_CONNECT.
  Stats stats() const {
    harel_stats *out = nullptr;
    detail::ErrorSlot slot;
    const harel_status status = harel_transport_stats(raw_.get(), &out, slot.out());
    Stats stats(out);  // owned from here, whatever happens next
    detail::check(status, slot);
    return stats;
  }

  /// What this Transport counted since it was opened: messages published, claimed, acked,
  /// nacked, parked and dead-lettered, lost leases, busy retries, a latency histogram per
  /// operation. Reads memory only. Throws Error (HAREL_ERR_ARGUMENT) on an empty Transport.
  Metrics metrics() const {
    harel_metrics *out = nullptr;
    detail::ErrorSlot slot;
    const harel_status status = harel_transport_metrics(raw_.get(), &out, slot.out());
    Metrics metrics(out);  // owned from here, whatever happens next
    detail::check(status, slot);
    return metrics;
  }

  /// Begins a transaction on this Transport (harel_transport_begin): its statements and its
  /// publishes, committed together or not at all (see Tx). Nothing is sent, and no lock taken,
  /// before its first query or its commit. Throws Error (HAREL_ERR_ARGUMENT) on an empty
  /// Transport.
  Tx begin() {
    harel_tx *out = nullptr;
    detail::ErrorSlot slot;
    detail::check(harel_transport_begin(raw_.get(), &out, slot.out()), slot);
    return Tx(out);
  }

  /// Runs `work(tx)` on a new transaction and commits it when `work` returns: what became of
  /// each publish, in order (std::vector<Published>), or, when `work` returns a value, a
  /// std::pair of that value and those outcomes. When `work` throws, the transaction is rolled
  /// back and the exception goes on to you: throw to give up. Leave the commit and the
  /// rollback to this call. Throws Error as begin and Tx::commit do, and whatever `work`
  /// throws (a Tx call's Error among them: the transaction is then ended).
  ///
  ///   auto [id, published] = queue.transaction([&](harel::Tx &tx) {
  ///     harel::Rows rows = tx.query("INSERT INTO orders (total) VALUES (?1) RETURNING id", {9.5});
  ///     std::int64_t id = std::get<std::int64_t>(rows.at(0).at(0));
  ///     tx.publish("order-" + std::to_string(id), R"({"kind":"created"})");
  ///     return id;
  ///   });
  template <class Work>
  auto transaction(Work &&work) {
    using Result = std::decay_t<std::invoke_result_t<Work, Tx &>>;
    Tx tx = begin();
    if constexpr (std::is_void_v<Result>) {
      std::invoke(std::forward<Work>(work), tx);
      return tx.commit();
    } else {
      Result value = std::invoke(std::forward<Work>(work), tx);
      std::vector<Published> published = tx.commit();
      return std::pair<Result, std::vector<Published>>(std::move(value), std::move(published));
    }
  }

  // The other ops calls of the C ABI (harel_transport_groups, _peek, _dead_letters,
  // _redrive, _purge_dead, _purge_group, _purge, _release) have no wrapper here: call them
  // with get() (the ops CLI, harel-transport, uses them). On a sharded queue a page of
  // groups or of dead letters gives each item's shard in its `shards` array (shards[i] is
  // the shard of groups[i] / letters[i]; all 0 when not sharded). A page of messages or of
  // dead letters gives each item's headers in its `headers` array: read them with
  // HeaderList(page->headers[i]), which lives as long as the page. A page of messages gives
  // each one's retry backoff: harel::retry_delay(*page, i).

 private:
  struct Close {
    void operator()(harel_transport *t) const noexcept { harel_transport_close(t); }
  };

  struct PauseListFree {
    void operator()(harel_pause_list *l) const noexcept { harel_pause_list_free(l); }
  };

  bool pause_call(harel_status (*call)(harel_transport *, int32_t, const char *, bool *, harel_error **),
                  const PauseTarget &target) {
    bool changed = false;
    detail::ErrorSlot slot;
    detail::check(call(raw_.get(), static_cast<int32_t>(target.kind), target.name.c_str(), &changed, slot.out()), slot);
    return changed;
  }

  static Transport open_raw(CStr database, const harel_options *options) {
    harel_transport *out = nullptr;
    detail::ErrorSlot slot;
    detail::check(harel_transport_open(database.c_str(), options, &out, slot.out()), slot);
    return Transport(out);
  }

  static Transport open_shards_raw(const std::vector<std::string> &databases, const harel_options *options) {
    std::vector<const char *> raw;
    raw.reserve(databases.size());
    for (const std::string &database : databases) raw.push_back(database.c_str());
    harel_transport *out = nullptr;
    detail::ErrorSlot slot;
    detail::check(harel_transport_open_shards(raw.data(), raw.size(), options, &out, slot.out()), slot);
    return Transport(out);
  }

  static std::optional<Lease> lease_out(harel_status status, harel_lease *out, const detail::ErrorSlot &slot) {
    Lease lease(out);  // owned from here, whatever happens next
    if (status == HAREL_EMPTY) return std::nullopt;
    detail::check(status, slot);
    if (!lease) throw Error(HAREL_ERR_PANIC, "the claim returned HAREL_OK without a lease");
    return std::optional<Lease>(std::move(lease));
  }

  /// The first `n` leases of `out`, owned: each freed by its Lease, or here if the vector
  /// cannot be made.
  static std::vector<Lease> leases_out(harel_status status, harel_lease *const *out, std::size_t n,
                                       const detail::ErrorSlot &slot) {
    struct Unowned {  // the leases not yet in the vector
      harel_lease *const *out;
      std::size_t from, to;
      ~Unowned() {
        for (std::size_t i = from; i < to; i++) harel_lease_free(out[i]);
      }
    } unowned{out, 0, n};
    if (status == HAREL_EMPTY) return {};
    detail::check(status, slot);
    if (n == 0) throw Error(HAREL_ERR_PANIC, "the claim returned HAREL_OK without a lease");
    std::vector<Lease> leases;
    leases.reserve(n);
    for (; unowned.from < n; unowned.from++) leases.emplace_back(out[unowned.from]);  // reserved: no throw
    return leases;
  }

  /// The C leases of a batch, in order (NULL for an empty Lease: the C side names it).
  static std::vector<const harel_lease *> raw_leases(Span<Lease> leases) {
    std::vector<const harel_lease *> raw;
    raw.reserve(leases.size());
    for (const Lease &lease : leases) raw.push_back(lease.get());
    return raw;
  }

  std::unique_ptr<harel_transport, Close> raw_;
};

// ---- keeping a lease ------------------------------------------------------------------------

/// Keeps a lease while it is in scope, for a handler that may run longer than its
/// visibility: the constructor extends it to now + `visibility` (throwing as
/// Transport::extend does), then a thread of its own extends it again every third of
/// `visibility` (at most every minute). It extends a copy of the lease's seq, group and
/// worker, so the Lease given is not written: lock_expiry() is the lease's latest end. The
/// thread goes on after HAREL_ERR_BUSY and HAREL_ERR_CONNECT (the next extend tries again)
/// and stops at any other error, HAREL_ERR_LEASE_LOST above all (another worker has the
/// message: stop working on it); keeping() and error() tell. stop() or the destructor ends
/// the thread: do that before ack or nack. The Transport and the Lease must outlive the
/// LeaseKeeper. Neither copied nor moved (its thread holds `this`).
class LeaseKeeper {
 public:
  LeaseKeeper(Transport &transport, const Lease &lease, double visibility)
      : transport_(transport.get()), lease_(lease.get() ? *lease.get() : harel_lease{}), visibility_(visibility) {
    detail::ErrorSlot slot;
    detail::check(harel_transport_extend(transport_, lease.get() ? &lease_ : nullptr, visibility_, slot.out()), slot);
    lock_expiry_ = lease_.lock_expiry;
    thread_ = std::thread([this] { keep(); });
  }
  LeaseKeeper(const LeaseKeeper &) = delete;
  LeaseKeeper &operator=(const LeaseKeeper &) = delete;
  ~LeaseKeeper() { stop(); }

  /// Ends the extending (the lease then runs to lock_expiry()); waits for the thread.
  void stop() noexcept {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  /// Whether the thread still extends the lease (false after stop() or an error that
  /// stopped it).
  bool keeping() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return !stopping_ && !stopped_;
  }
  /// Epoch seconds the lease runs to, after the last extend that succeeded.
  double lock_expiry() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return lock_expiry_;
  }
  /// The last extend's error, if it failed (HAREL_ERR_LEASE_LOST: the lease is lost).
  std::optional<Error> error() const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (status_ == HAREL_OK) return std::nullopt;
    return Error(status_, message_);
  }

 private:
  void keep() noexcept {
    const std::chrono::duration<double> every(std::min(visibility_ / 3.0, 60.0));
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, every, [this] { return stopping_; })) {
      lock.unlock();
      detail::ErrorSlot slot;
      harel_status status = harel_transport_extend(transport_, &lease_, visibility_, slot.out());
      lock.lock();
      status_ = status;
      if (status == HAREL_OK) {
        lock_expiry_ = lease_.lock_expiry;
        continue;
      }
      try {
        const char *message = harel_error_message(slot.error);
        message_ = message ? message : std::string(status_name(status));
      } catch (...) {  // no memory for the text: the status is kept
        message_.clear();
      }
      if (status != HAREL_ERR_BUSY && status != HAREL_ERR_CONNECT) {
        stopped_ = true;
        return;
      }
    }
  }

  harel_transport *const transport_;
  harel_lease lease_;  // the Lease's fields; its strings stay the Lease's
  const double visibility_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false, stopped_ = false;
  double lock_expiry_ = 0.0;
  harel_status status_ = HAREL_OK;
  std::string message_;
  std::thread thread_;  // started last, once the rest is set
};

}  // namespace harel

#endif /* HAREL_TRANSPORT_HPP */
