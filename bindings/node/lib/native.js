'use strict';
// The library: finding and loading libharel_transport, and its C functions and types as
// koffi declares them (see include/harel_transport.h).

const fs = require('node:fs');
const path = require('node:path');
const koffi = require('koffi');
const { HarelError } = require('./errors');

// The package's directory: index.js and this lib/.
const PACKAGE = path.join(__dirname, '..');

// Rust code runs on koffi's own stack for the call; koffi's default for async calls is
// 128 KiB. A claim needs well under 64 KiB today; give it room. koffi only accepts this
// before its first library load in the process: if another module got there first, the
// default stays (and still suffices).
const ASYNC_STACK = 512 * 1024;
try {
  const config = koffi.config();
  if (config.async_stack_size < ASYNC_STACK) koffi.config({ ...config, async_stack_size: ASYNC_STACK });
} catch {
  // koffi is already in use by another module; keep its settings.
}

/** Where the library is looked for, in order (see README "Finding the library"). */
function libraryCandidates() {
  const env = process.env.HAREL_TRANSPORT_LIB;
  if (env) return [env];
  const candidates = [];
  // The npm package's own copy (scripts/prebuild.js stages it when packing): linux-x64-gnu only.
  const prebuilt = path.join(PACKAGE, 'prebuilds', `${process.platform}-${process.arch}-gnu`, 'libharel_transport.so.1');
  if (fs.existsSync(prebuilt)) candidates.push(prebuilt);
  const repoBuild = path.join(PACKAGE, '..', '..', 'target', 'release', 'libharel_transport.so');
  if (fs.existsSync(repoBuild)) candidates.push(repoBuild);
  candidates.push('libharel_transport.so.1'); // installed (ABI 1): the dynamic loader's search path
  return candidates;
}

let native = null;

function load() {
  if (native) return native;
  const failures = [];
  for (const candidate of libraryCandidates()) {
    let lib;
    try {
      lib = koffi.load(candidate);
    } catch (e) {
      failures.push(`${candidate}: ${e.message}`);
      continue;
    }
    try {
      native = bind(lib, candidate);
    } catch (e) {
      failures.push(`${candidate}: ${e.message} (a libharel_transport older than this binding?)`);
      continue;
    }
    return native;
  }
  throw new HarelError(
    'HAREL_ERR_LOAD',
    'libharel_transport could not be loaded (set HAREL_TRANSPORT_LIB to the path of ' +
      'libharel_transport.so, build it with `make lib`, or install it): ' + failures.join('; '),
  );
}

// The C types, anonymous: koffi's type names are global to the process, and another copy of
// this package (or another binding of the same library) may declare its own. The lease's
// group id and event are raw pointers, read with their lengths (they may hold NUL bytes);
// in a lease the binding fills for ack and nack, group_id is a Buffer of its UTF-8 bytes.
// harel_header: a message header's name and value, NUL-terminated (lib/headers.js); the
// binding passes arrays of them (koffi copies a JS array of { name, value } in) and reads
// the library's by their offsets. harel_headers: a message's list, in publish_many's
// parallel array and in the pages.
const HeaderType = koffi.struct({ name: 'const char *', value: 'const char *' });
const HeadersType = koffi.struct({ items: koffi.pointer(HeaderType), n: 'size_t' });
const LeaseType = koffi.struct({
  seq: 'int64_t',
  group_id: 'void *',
  group_id_len: 'size_t',
  event: 'void *',
  event_len: 'size_t',
  worker_id: 'const char *',
  lock_expiry: 'double',
  attempts: 'int64_t',
  headers: koffi.pointer(HeaderType), // added after 0.4.0, at the end: n_headers of them (NULL for none)
  n_headers: 'size_t',
});
// The looks: the stats and the pages. Strings read by length are raw pointers, as in the
// lease; the others are NUL-terminated (koffi copies them into JS strings), NULL for none.
const PriorityStatsType = koffi.struct({
  priority: 'int32_t',
  groups: 'uint64_t',
  ready: 'uint64_t',
  leased: 'uint64_t',
  parked: 'uint64_t',
});
const StatsType = koffi.struct({
  now: 'double',
  messages: 'uint64_t',
  groups: 'uint64_t',
  ready: 'uint64_t',
  leased: 'uint64_t',
  parked: 'uint64_t',
  dead: 'uint64_t',
  oldest_ready_age: 'double',
  next_release_at: 'double',
  by_priority: 'void *',
  n_priorities: 'size_t',
  oldest_ready_seq: 'int64_t',
  delayed: 'uint64_t', // added after 0.4.0, at the end (the library allocates the struct)
  next_due_at: 'double',
  paused: 'uint64_t', // added with pause and resume, at the end
  paused_by_priority: 'void *', // n_priorities uint64_t: each level's paused groups
  expired: 'uint64_t', // added with expiry, at the end: of dead, those with the reason "expired"
  held: 'uint64_t', // added with limits and retries, at the end: groups a limit holds
  retrying: 'uint64_t', // and groups whose head's lapsed lease waits its retry backoff
});
const GroupInfoType = koffi.struct({
  group_id: 'void *',
  group_id_len: 'size_t',
  state: 'int', // enum harel_group_state
  depth: 'uint64_t',
  head_seq: 'int64_t',
  head_age: 'double',
  holder: 'const char *',
  lock_expiry: 'double',
  priority: 'int32_t',
  routing_key: 'const char *',
  head_attempts: 'int64_t',
});
// harel_pause_list (harel_transport_pauses): `n_pauses` harel_pause at `pauses`, each a
// kind (enum harel_pause_kind), its name by length ("" for the queue) and when it was paused.
const PauseType = koffi.struct({ kind: 'int', name: 'void *', name_len: 'size_t', paused_at: 'double' });
const PauseListType = koffi.struct({ pauses: 'void *', n_pauses: 'size_t' });
// harel_limit_list (harel_transport_limits): `n_limits` harel_limit_info at `limits`, each a
// routing key by length, its limits (concurrency 0: none; rate and burst 0: none) and its
// use now (tokens -1 without a rate limit).
const LimitInfoType = koffi.struct({
  routing_key: 'void *',
  routing_key_len: 'size_t',
  concurrency: 'uint32_t',
  rate: 'double',
  burst: 'double',
  in_use: 'uint64_t',
  tokens: 'double',
  held: 'uint64_t',
});
const LimitListType = koffi.struct({ limits: 'void *', n_limits: 'size_t' });
const MessageInfoType = koffi.struct({
  seq: 'int64_t',
  event: 'void *',
  event_len: 'size_t',
  attempts: 'int64_t',
  locked_by: 'const char *',
  lock_expiry: 'double',
  published_at: 'double',
});
const DeadLetterType = koffi.struct({
  seq: 'int64_t',
  group_id: 'void *',
  group_id_len: 'size_t',
  event: 'void *',
  event_len: 'size_t',
  attempts: 'int64_t',
  last_worker: 'const char *',
  reason: 'const char *',
  dead_at: 'double',
});
// harel_archived (harel_transport_archive): one acked message as the archive keeps it,
// its headers inline (a harel_headers, not a pointer to one); published_at and claimed_at
// -1 when unknown. harel_archive_page: `n_messages` of them at `messages`, next_cursor.
const ArchivedType = koffi.struct({
  seq: 'int64_t',
  group_id: 'void *',
  group_id_len: 'size_t',
  event: 'void *',
  event_len: 'size_t',
  headers: HeadersType,
  attempts: 'int64_t',
  worker_id: 'const char *',
  published_at: 'double',
  claimed_at: 'double',
  acked_at: 'double',
  shard: 'size_t',
});
const ArchivePageType = koffi.struct({ messages: 'void *', n_messages: 'size_t', next_cursor: 'const char *' });
// The metrics: nine counters, the buckets' bounds, then a harel_histogram per operation
// (METRICS_OPERATIONS, in the struct's order), then the counters added after 0.4.0, at the
// end (METRICS_COUNTERS_AT_END: limit_holds, with limits). Arrays decode as JS arrays, not
// typed ones.
const LATENCY_BUCKETS = 16; // HAREL_LATENCY_BUCKETS
const METRICS_COUNTERS = [
  'published', 'claimed', 'acked', 'nacked', 'parked', 'dead_lettered', 'dead_lettered_by_claim', 'lost_leases',
  'busy_retries',
];
const METRICS_COUNTERS_AT_END = ['limit_holds'];
const METRICS_OPERATIONS = ['publish', 'claim', 'claim_wait', 'ack', 'ack_and_claim', 'nack', 'extend', 'dead_letter'];
const HistogramType = koffi.struct({
  buckets: koffi.array('uint64_t', LATENCY_BUCKETS, 'Array'),
  count: 'uint64_t',
  sum: 'double',
});
const MetricsType = koffi.struct({
  ...Object.fromEntries(METRICS_COUNTERS.map((name) => [name, 'uint64_t'])),
  bounds: koffi.array('double', LATENCY_BUCKETS, 'Array'),
  ...Object.fromEntries(METRICS_OPERATIONS.map((name) => [name, HistogramType])),
  ...Object.fromEntries(METRICS_COUNTERS_AT_END.map((name) => [name, 'uint64_t'])),
});
// harel_group_page, harel_message_page and harel_dead_page: items, count, next_cursor.
// A page of groups and a page of dead letters carry, after them, the shard of each item
// (`const size_t *shards`: added for sharded queues, at the end; the library allocates the
// struct); a page of messages and a page of dead letters, at their end, each item's
// headers (`const harel_headers *headers`, n_items of them: added after 0.4.0); a page of
// messages, after those, each message's backoff (`const double *retry_delays`, n_items of
// them, -1 for none: added with retries, at the end).
const GroupPageType = koffi.struct({ items: 'void *', n_items: 'size_t', next_cursor: 'const char *', shards: 'void *' });
const MessagePageType = koffi.struct({
  items: 'void *', n_items: 'size_t', next_cursor: 'const char *', headers: koffi.pointer(HeadersType),
  retry_delays: 'void *',
});
const DeadPageType = koffi.struct({
  items: 'void *', n_items: 'size_t', next_cursor: 'const char *', shards: 'void *', headers: koffi.pointer(HeadersType),
});
const MessageType = koffi.struct({
  group_id: 'const char *',
  event_json: 'const char *',
  priority: 'int32_t',
  routing_key: 'const char *',
});
// Publishing inside a transaction (lib/tx.js): harel_value, a parameter the binding fills
// (a text as a Buffer of its UTF-8 bytes and a NUL, a blob as its Buffer or Uint8Array) or
// a column of a row the library hands out (a text read by its size: it may hold a NUL);
// and harel_rows, its values row by row.
const ValueType = koffi.struct({
  type: 'int32_t', // harel_value_type
  integer: 'int64_t',
  real: 'double',
  text: 'void *',
  blob: 'void *',
  size: 'size_t',
});
const RowsType = koffi.struct({ n_rows: 'size_t', n_columns: 'size_t', values: 'void *' });
// harel_delivery: a message's delivery options (lib/message.js fills it), in the header's
// field order; it begins with its own size, sizeof(harel_delivery) as declared here.
const DeliveryType = koffi.struct({
  size: 'size_t',
  key: 'const char *',
  delay: 'double',
  not_before: 'double',
  unique_key: 'const char *',
  unique_mode: 'int32_t', // harel_unique_mode
  debounce_delay: 'double',
  debounce_max_delay: 'double',
  ttl: 'double', // added with expiry, at the end: seconds, 0 for never
  expires_at: 'double', // epoch seconds, 0 for never
  retry_base: 'double', // added with retries, at the end: seconds, 0 for no policy of its own
  retry_factor: 'double', // 0 reads as 2
  retry_cap: 'double', // seconds, 0 reads as an hour (or the base, if longer)
  retry_jitter: 'int32_t', // harel_jitter
});
const DELIVERY_SIZE = koffi.sizeof(DeliveryType);
const T = koffi.pointer(koffi.opaque()); // harel_transport *
const O = koffi.pointer(koffi.opaque()); // harel_options *
const E = koffi.pointer(koffi.opaque()); // harel_error *
const L = koffi.pointer(LeaseType); // harel_lease *
const M = koffi.pointer(MessageType); // const harel_message *: koffi copies a JS array in
const C = koffi.pointer(koffi.opaque()); // harel_cancel * (the binding passes NULL)
const W = koffi.pointer(koffi.opaque()); // harel_watch *
const X = koffi.pointer(koffi.opaque()); // harel_tx *
const HEADERS = koffi.pointer(HeaderType); // const harel_header *headers: koffi copies a JS array in
const HEADER_LISTS = koffi.pointer(HeadersType); // const harel_headers *headers: one per message
// const harel_delivery *delivery: koffi copies a JS object in; const harel_delivery *const
// *deliveries: a JS array of them, each behind its pointer.
const DELIVERY = koffi.pointer(DeliveryType);
const DELIVERIES = koffi.pointer(DELIVERY);
const BYTES = koffi.pointer('uint8_t'); // a trace id (16 bytes) or span id (8): a Buffer, read or filled
const VALUES = koffi.pointer(ValueType); // const harel_value *params: koffi copies a JS array in
// const harel_lease *const *leases: koffi copies a JS array of lease structs in, each
// behind its pointer. LEASES_OUT, harel_lease **leases_out: a JS array of `max` elements
// that koffi fills with the leases handed out.
const LEASES = koffi.pointer(L);
const LEASES_OUT = koffi.out(koffi.pointer(L));
const OUTCOMES = koffi.out(koffi.pointer('int32_t')); // harel_status *outcomes: an Int32Array
const SIZE_OUT = koffi.out(koffi.pointer('size_t')); // size_t *n_out
// publish_delivery's outcome: int64_t *seq and int *outcome, a harel_published (a
// one-element JS array each), and publish_many_delivery's, int64_t *seqs and int *outcomes
// (a BigInt64Array and an Int32Array).
const SEQ_OUT = koffi.out(koffi.pointer('int64_t'));
const FLAG_OUT = koffi.out(koffi.pointer('int'));
// harel_error **err: in-out, so that koffi writes the NULL the library requires on entry.
const ERR = koffi.inout(koffi.pointer(E));
const COUNT = koffi.out(koffi.pointer('uint64_t')); // uint64_t *moved, *purged
const OUT = koffi.out(koffi.pointer('void *')); // harel_stats **, harel_*_page **, harel_metrics **

function bind(lib, where) {
  const status = 'int32_t';
  const fn = (name, ret, params) => lib.func(name, ret, params);

  return {
    where,
    // The C clock of a Transport with a JS clock: the C library's atof (a dependency of
    // libharel_transport, found through it) reading the text of "now" (see ClockCell).
    atof: lib.symbol('atof'),
    version: fn('harel_version', 'const char *', []),
    statusName: fn('harel_status_name', 'const char *', ['int32_t']),
    errorStatus: fn('harel_error_status', status, [E]),
    errorMessage: fn('harel_error_message', 'const char *', [E]),
    errorFree: fn('harel_error_free', 'void', [E]),
    stringFree: fn('harel_string_free', 'void', ['void *']),
    optionsNew: fn('harel_options_new', O, []),
    optionsFree: fn('harel_options_free', 'void', [O]),
    setPrefix: fn('harel_options_set_prefix', status, [O, 'const char *', ERR]),
    setCreateSchema: fn('harel_options_set_create_schema', status, [O, 'bool', ERR]),
    setSyncUrl: fn('harel_options_set_sync_url', status, [O, 'const char *', ERR]),
    setSyncUrls: fn('harel_options_set_sync_urls', status, [O, 'const char **', 'size_t', ERR]),
    setAuthToken: fn('harel_options_set_auth_token', status, [O, 'const char *', ERR]),
    setSyncInterval: fn('harel_options_set_sync_interval', status, [O, 'double', ERR]),
    setBusyTimeout: fn('harel_options_set_busy_timeout', status, [O, 'double', ERR]),
    setSynchronousFull: fn('harel_options_set_synchronous_full', status, [O, 'bool', ERR]),
    setClock: fn('harel_options_set_clock', status, [O, 'void *', 'void *', ERR]),
    open: fn('harel_transport_open', status, ['const char *', O, koffi.out(koffi.pointer(T)), ERR]),
    publish: fn('harel_transport_publish', status, [T, 'const char *', 'const char *', 'int32_t', 'const char *', ERR]),
    publishMany: fn('harel_transport_publish_many', status, [T, M, 'size_t', ERR]),
    claim: fn('harel_transport_claim', status, [
      T, 'const char *', 'double', 'int32_t', 'const char **', 'size_t', koffi.out(koffi.pointer(L)), ERR,
    ]),
    ack: fn('harel_transport_ack', status, [T, L, ERR]),
    ackAndClaim: fn('harel_transport_ack_and_claim', status, [
      T, L, 'const char *', 'double', 'int32_t', 'const char **', 'size_t', koffi.out(koffi.pointer(L)), ERR,
    ]),
    nack: fn('harel_transport_nack', status, [T, L, 'double', ERR]),
    close: fn('harel_transport_close', 'void', [T]),
    leaseFree: fn('harel_lease_free', 'void', [L]),
    schemaSql: fn('harel_schema_sql', status, ['const char *', koffi.out(koffi.pointer('void *')), ERR]),
    schemaUpgradeSql: fn('harel_schema_upgrade_sql', status, ['const char *', koffi.out(koffi.pointer('void *')), ERR]),
    // when a message keeps failing (issue #14)
    setMaxAttempts: fn('harel_options_set_max_attempts', status, [O, 'uint32_t', ERR]),
    deadLetter: fn('harel_transport_dead_letter', status, [T, L, 'const char *', ERR]),
    redrive: fn('harel_transport_redrive', status, [T, 'bool', 'const char *', 'const int64_t *', 'size_t', COUNT, ERR]),
    purgeDead: fn('harel_transport_purge_dead', status, [T, 'bool', 'const char *', 'const int64_t *', 'size_t', COUNT, ERR]),
    purgeGroup: fn('harel_transport_purge_group', status, [T, 'const char *', COUNT, ERR]),
    purge: fn('harel_transport_purge', status, [T, COUNT, ERR]),
    release: fn('harel_transport_release', status, [T, 'const char *', koffi.out(koffi.pointer('bool')), ERR]),
    stats: fn('harel_transport_stats', status, [T, OUT, ERR]),
    groups: fn('harel_transport_groups', status, [T, 'int32_t', 'const char *', 'size_t', OUT, ERR]),
    peek: fn('harel_transport_peek', status, [T, 'const char *', 'const char *', 'size_t', OUT, ERR]),
    deadLetters: fn('harel_transport_dead_letters', status, [T, 'const char *', 'const char *', 'size_t', OUT, ERR]),
    statsFree: fn('harel_stats_free', 'void', ['void *']),
    groupPageFree: fn('harel_group_page_free', 'void', ['void *']),
    messagePageFree: fn('harel_message_page_free', 'void', ['void *']),
    deadPageFree: fn('harel_dead_page_free', 'void', ['void *']),
    // the worker loop (issue #15)
    claimWait: fn('harel_transport_claim_wait', status, [
      T, 'const char *', 'double', 'int32_t', 'const char **', 'size_t', 'double', C, koffi.out(koffi.pointer(L)), ERR,
    ]),
    claimMany: fn('harel_transport_claim_many', status, [
      T, 'const char *', 'double', 'int32_t', 'const char **', 'size_t', 'size_t', 'double', C, LEASES_OUT, SIZE_OUT, ERR,
    ]),
    ackMany: fn('harel_transport_ack_many', status, [T, LEASES, 'size_t', OUTCOMES, ERR]),
    ackAndClaimMany: fn('harel_transport_ack_and_claim_many', status, [
      T, LEASES, 'size_t', OUTCOMES, 'const char *', 'double', 'int32_t', 'const char **', 'size_t', 'size_t',
      LEASES_OUT, SIZE_OUT, ERR,
    ]),
    extend: fn('harel_transport_extend', status, [T, koffi.inout(L), 'double', ERR]),
    // process metrics (issue 25)
    metrics: fn('harel_transport_metrics', status, [T, OUT, ERR]),
    metricsFree: fn('harel_metrics_free', 'void', ['void *']),
    // the readiness descriptor of waiting claims (issue 26; lib/waiting.js)
    transportWatch: fn('harel_transport_watch', status, [T, 'int32_t', 'const char **', 'size_t', koffi.out(koffi.pointer(W)), ERR]),
    watchFd: fn('harel_watch_fd', status, [W, koffi.out(koffi.pointer('int')), ERR]),
    watchRearm: fn('harel_watch_rearm', status, [T, W, ERR]),
    watchFree: fn('harel_watch_free', 'void', [W]),
    // producers: idempotency keys and delayed delivery (issue 24)
    setKeyRetention: fn('harel_options_set_key_retention', status, [O, 'double', ERR]),
    // publishing inside the application's transaction (issue 24; lib/tx.js; its publishes
    // are txPublishDelivery, below). commit's seqs and duplicates (each a harel_published):
    // a BigInt64Array and an Int32Array.
    begin: fn('harel_transport_begin', status, [T, koffi.out(koffi.pointer(X)), ERR]),
    txExecute: fn('harel_tx_execute', status, [X, 'const char *', VALUES, 'size_t', ERR]),
    txQuery: fn('harel_tx_query', status, [X, 'const char *', VALUES, 'size_t', OUT, ERR]),
    txCommit: fn('harel_tx_commit', status, [X, SEQ_OUT, FLAG_OUT, 'size_t', SIZE_OUT, ERR]),
    txRollback: fn('harel_tx_rollback', status, [X, ERR]),
    txFree: fn('harel_tx_free', 'void', [X]),
    rowsFree: fn('harel_rows_free', 'void', ['void *']),
    // a queue sharded over several databases (issue 28): databases, a JS array of strings
    openShards: fn('harel_transport_open_shards', status, [
      'const char **', 'size_t', O, koffi.out(koffi.pointer(T)), ERR,
    ]),
    shardCount: fn('harel_transport_shard_count', status, [T, SIZE_OUT, ERR]),
    shardOf: fn('harel_shard_of', status, ['const char *', 'size_t', SIZE_OUT, ERR]),
    // message headers (issue 37): each publish with the message's headers (an array of
    // harel_header and its length; publish_many_with's, one harel_headers per message)
    publishHeaders: fn('harel_transport_publish_headers', status, [
      T, 'const char *', 'const char *', 'int32_t', 'const char *', HEADERS, 'size_t', ERR,
    ]),
    publishManyWithHeaders: fn('harel_transport_publish_many_with_headers', status, [
      T, M, 'size_t', HEADER_LISTS, 'const char **', 'const double *', 'const double *', SEQ_OUT, FLAG_OUT, ERR,
    ]),
    // delivery options as a struct, with unique keys (issue 38): every publish with options
    // (publishWith, publishManyWith, a transaction's publish and publishWith) and its outcome
    publishDelivery: fn('harel_transport_publish_delivery', status, [
      T, 'const char *', 'const char *', 'int32_t', 'const char *', HEADERS, 'size_t', DELIVERY, SEQ_OUT, FLAG_OUT, ERR,
    ]),
    publishManyDelivery: fn('harel_transport_publish_many_delivery', status, [
      T, M, 'size_t', HEADER_LISTS, DELIVERIES, SEQ_OUT, FLAG_OUT, ERR,
    ]),
    txPublishDelivery: fn('harel_tx_publish_delivery', status, [
      X, 'const char *', 'const char *', 'int32_t', 'const char *', HEADERS, 'size_t', DELIVERY, ERR,
    ]),
    // W3C Trace Context (lib/tracing.js): the library writes and reads traceparent and
    // checks tracestate; the binding never parses them itself. out: a Buffer of 56 bytes.
    traceparentFormat: fn('harel_traceparent_format', status, [BYTES, BYTES, 'uint8_t', 'char *', ERR]),
    traceparentParse: fn('harel_traceparent_parse', status, [
      'const char *', BYTES, BYTES, koffi.out(koffi.pointer('uint8_t')), koffi.out(koffi.pointer('bool')), ERR,
    ]),
    tracestateValid: fn('harel_tracestate_valid', status, ['const char *', koffi.out(koffi.pointer('bool')), ERR]),
    // pause and resume (issue 38): kind a harel_pause_kind, name NULL for the queue; the
    // pauses in force, a harel_pause_list handed out
    pause: fn('harel_transport_pause', status, [T, 'int32_t', 'const char *', koffi.out(koffi.pointer('bool')), ERR]),
    resume: fn('harel_transport_resume', status, [T, 'int32_t', 'const char *', koffi.out(koffi.pointer('bool')), ERR]),
    pauses: fn('harel_transport_pauses', status, [T, OUT, ERR]),
    pauseListFree: fn('harel_pause_list_free', 'void', ['void *']),
    // the archive of acked messages (issue 38): its retention, and its pages
    setArchive: fn('harel_options_set_archive', status, [O, 'double', ERR]),
    archive: fn('harel_transport_archive', status, [T, 'const char *', 'const char *', 'size_t', OUT, ERR]),
    archivePageFree: fn('harel_archive_page_free', 'void', ['void *']),
    // retries (issue 39): the queue's policy, base 0 for none; jitter a harel_jitter
    setRetry: fn('harel_options_set_retry', status, [O, 'double', 'double', 'double', 'int32_t', ERR]),
    // limits per routing key (issue 39): concurrency 0 for none, rate and burst both 0 for
    // none; the limits in force, a harel_limit_list handed out
    setLimit: fn('harel_transport_set_limit', status, [T, 'const char *', 'uint32_t', 'double', 'double', ERR]),
    removeLimit: fn('harel_transport_remove_limit', status, [T, 'const char *', ERR]),
    limits: fn('harel_transport_limits', status, [T, OUT, ERR]),
    limitListFree: fn('harel_limit_list_free', 'void', ['void *']),
  };
}

module.exports = {
  load,
  HeaderType,
  DeliveryType,
  DELIVERY_SIZE,
  LeaseType,
  PriorityStatsType,
  StatsType,
  GroupInfoType,
  MessageInfoType,
  DeadLetterType,
  ArchivedType,
  ArchivePageType,
  PauseType,
  PauseListType,
  LimitInfoType,
  LimitListType,
  GroupPageType,
  MessagePageType,
  DeadPageType,
  MetricsType,
  ValueType,
  RowsType,
  METRICS_COUNTERS,
  METRICS_COUNTERS_AT_END,
  METRICS_OPERATIONS,
};
