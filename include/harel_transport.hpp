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
 *   error).
 * - Every failed call throws harel::Error, a std::runtime_error carrying the call's
 *   harel_status (status()), its name, and the library's message (what() is
 *   "HAREL_ERR_LEASE_LOST: ..."); code() is the same status as a std::error_code of
 *   harel::category(). Each call passes its own harel_error* and frees it after copying
 *   the message, so errors are right on any thread. Decide on status(), not on the text.
 *   Nothing else is thrown, but std::bad_alloc while an Error is built.
 * - No destructor throws, and nothing allocates on the success path beyond what the C
 *   side allocates (the handle, the options, a lease, a schema string): strings go in as
 *   const char* or std::string (harel::CStr, never copied), batches and routing keys as
 *   a pointer and a length (harel::Span, never copied), and harel::Message is laid out as
 *   harel_message so a batch is handed to the C side as it is. An error copies its message
 *   into the exception.
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

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

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
  /// The libSQL server's auth token; NULL unsets it.
  Options &auth_token(CStr token) & { return set(harel_options_set_auth_token, token.c_str()); }
  Options &&auth_token(CStr token) && { return std::move(auth_token(token)); }
  /// How often an embedded replica pulls, in seconds (> 0).
  Options &sync_interval(double seconds) & { return set(harel_options_set_sync_interval, seconds); }
  Options &&sync_interval(double seconds) && { return std::move(sync_interval(seconds)); }
  /// How long a write waits for the write lock before HAREL_ERR_BUSY, in seconds (>= 0).
  Options &busy_timeout(double seconds) & { return set(harel_options_set_busy_timeout, seconds); }
  Options &&busy_timeout(double seconds) && { return std::move(busy_timeout(seconds)); }
  /// fsync at every commit (true, the default) or synchronous NORMAL (false).
  Options &synchronous_full(bool full) & { return set(harel_options_set_synchronous_full, full); }
  Options &&synchronous_full(bool full) && { return std::move(synchronous_full(full)); }
  /// How many times a message may be claimed before a claim moves it to the dead letters
  /// instead (its group goes on); 0, the default: no limit.
  Options &max_attempts(uint32_t attempts) & { return set(harel_options_set_max_attempts, attempts); }
  Options &&max_attempts(uint32_t attempts) && { return std::move(max_attempts(attempts)); }
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

  /// The C lease (NULL when empty); it stays this Lease's.
  const harel_lease *get() const noexcept { return raw_.get(); }
  /// Gives the C lease up: the caller frees it with harel_lease_free.
  harel_lease *release() noexcept { return raw_.release(); }

 private:
  struct Free {
    void operator()(harel_lease *l) const noexcept { harel_lease_free(l); }
  };
  std::unique_ptr<harel_lease, Free> raw_;
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

  /// Appends a batch in one transaction: all of it or none (one bad message rejects the
  /// batch; the error names it, "messages[3].event_json ..."). Empty: nothing happens.
  void publish_many(Span<Message> messages) {
    detail::ErrorSlot slot;
    detail::check(harel_transport_publish_many(raw_.get(), messages.data(), messages.size(), slot.out()), slot);
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

  // The ops calls of the C ABI (harel_transport_stats, _groups, _peek, _dead_letters,
  // _redrive, _purge_dead, _purge_group, _purge, _release) have no wrapper here: call them
  // with get() (the ops CLI, harel-transport, uses them).

 private:
  struct Close {
    void operator()(harel_transport *t) const noexcept { harel_transport_close(t); }
  };

  static Transport open_raw(CStr database, const harel_options *options) {
    harel_transport *out = nullptr;
    detail::ErrorSlot slot;
    detail::check(harel_transport_open(database.c_str(), options, &out, slot.out()), slot);
    return Transport(out);
  }

  static std::optional<Lease> lease_out(harel_status status, harel_lease *out, const detail::ErrorSlot &slot) {
    Lease lease(out);  // owned from here, whatever happens next
    if (status == HAREL_EMPTY) return std::nullopt;
    detail::check(status, slot);
    if (!lease) throw Error(HAREL_ERR_PANIC, "the claim returned HAREL_OK without a lease");
    return std::optional<Lease>(std::move(lease));
  }

  std::unique_ptr<harel_transport, Close> raw_;
};

}  // namespace harel

#endif /* HAREL_TRANSPORT_HPP */
