/*
 * header_check.c: harel_transport.h compiles cleanly, alone, as C99 and as C++ (`make
 * test-c` builds this file both ways with -Wall -Wextra -Werror -pedantic), and declares
 * exactly the signatures of ABI 1 (docs/abi.md): each function is assigned to a pointer of
 * the type given for it here, which fails to compile if the header disagrees (a fallible
 * function without its last `harel_error **err`, harel_transport_close returning anything
 * but void, a lease field of another type). Linked and run, it also shows every function
 * is exported by the library.
 */
#include "harel_transport.h"

#include <stddef.h>
#include <stdio.h>

/* The types of docs/abi.md, spelled as a C or C++ user would. */
typedef harel_status (*setter_str)(harel_options *, const char *, harel_error **);
typedef harel_status (*setter_double)(harel_options *, double, harel_error **);
typedef harel_status (*setter_bool)(harel_options *, bool, harel_error **);
typedef harel_status (*schema_fn)(const char *, char **, harel_error **);
typedef harel_status (*dead_selection)(harel_transport *, bool, const char *, const int64_t *,
                                       size_t, uint64_t *, harel_error **);

int main(void) {
  /* the static strings and the thread's last error */
  const char *(*version)(void) = harel_version;
  const char *(*status_name)(int32_t) = harel_status_name;
  const char *(*last_error)(void) = harel_last_error;
  /* the call's own error */
  harel_status (*error_status)(const harel_error *) = harel_error_status;
  const char *(*error_message)(const harel_error *) = harel_error_message;
  void (*error_free)(harel_error *) = harel_error_free;
  /* options */
  harel_options *(*options_new)(void) = harel_options_new;
  void (*options_free)(harel_options *) = harel_options_free;
  setter_str set_prefix = harel_options_set_prefix;
  setter_bool set_create_schema = harel_options_set_create_schema;
  setter_str set_sync_url = harel_options_set_sync_url;
  setter_str set_auth_token = harel_options_set_auth_token;
  setter_double set_sync_interval = harel_options_set_sync_interval;
  setter_double set_busy_timeout = harel_options_set_busy_timeout;
  setter_bool set_synchronous_full = harel_options_set_synchronous_full;
  harel_status (*set_clock)(harel_options *, double (*)(void *), void *, harel_error **) =
      harel_options_set_clock;
  harel_status (*set_max_attempts)(harel_options *, uint32_t, harel_error **) =
      harel_options_set_max_attempts;
  setter_double set_key_retention = harel_options_set_key_retention;
  /* the transport */
  harel_status (*transport_open)(const char *, const harel_options *, harel_transport **,
                                 harel_error **) = harel_transport_open;
  harel_status (*publish)(harel_transport *, const char *, const char *, int32_t, const char *,
                          harel_error **) = harel_transport_publish;
  harel_status (*publish_many)(harel_transport *, const harel_message *, size_t,
                               harel_error **) = harel_transport_publish_many;
  /* with delivery options: a key, a delay, a due instant; each message's seq and duplicate */
  harel_status (*publish_with)(harel_transport *, const char *, const char *, int32_t,
                               const char *, const char *, double, double, int64_t *, int *,
                               harel_error **) = harel_transport_publish_with;
  harel_status (*publish_many_with)(harel_transport *, const harel_message *, size_t,
                                    const char *const *, const double *, const double *,
                                    int64_t *, int *, harel_error **) =
      harel_transport_publish_many_with;
  harel_status (*claim)(harel_transport *, const char *, double, int32_t, const char *const *,
                        size_t, harel_lease **, harel_error **) = harel_transport_claim;
  harel_status (*ack)(harel_transport *, const harel_lease *, harel_error **) =
      harel_transport_ack;
  harel_status (*ack_and_claim)(harel_transport *, const harel_lease *, const char *, double,
                                int32_t, const char *const *, size_t, harel_lease **,
                                harel_error **) = harel_transport_ack_and_claim;
  harel_status (*nack)(harel_transport *, const harel_lease *, double, harel_error **) =
      harel_transport_nack;
  void (*close_fn)(harel_transport *) = harel_transport_close; /* closing cannot fail */
  /* the worker loop: waiting claims, batches, extend, and what ends a wait */
  harel_status (*claim_wait)(harel_transport *, const char *, double, int32_t,
                             const char *const *, size_t, double, const harel_cancel *,
                             harel_lease **, harel_error **) = harel_transport_claim_wait;
  harel_status (*claim_many)(harel_transport *, const char *, double, int32_t,
                             const char *const *, size_t, size_t, double, const harel_cancel *,
                             harel_lease **, size_t *, harel_error **) = harel_transport_claim_many;
  harel_status (*ack_many)(harel_transport *, const harel_lease *const *, size_t, harel_status *,
                           harel_error **) = harel_transport_ack_many;
  harel_status (*ack_and_claim_many)(harel_transport *, const harel_lease *const *, size_t,
                                     harel_status *, const char *, double, int32_t,
                                     const char *const *, size_t, size_t, harel_lease **,
                                     size_t *, harel_error **) = harel_transport_ack_and_claim_many;
  harel_status (*extend)(harel_transport *, harel_lease *, double, harel_error **) =
      harel_transport_extend;
  harel_cancel *(*cancel_new)(void) = harel_cancel_new;
  void (*cancel_fire)(const harel_cancel *) = harel_cancel_fire;
  void (*cancel_free)(harel_cancel *) = harel_cancel_free;
  void (*interrupt)(harel_transport *) = harel_transport_interrupt;
  /* when a message keeps failing: dead letters and the operator's calls */
  harel_status (*dead_letter)(harel_transport *, const harel_lease *, const char *,
                              harel_error **) = harel_transport_dead_letter;
  dead_selection redrive = harel_transport_redrive;
  dead_selection purge_dead = harel_transport_purge_dead;
  harel_status (*purge_group)(harel_transport *, const char *, uint64_t *, harel_error **) =
      harel_transport_purge_group;
  harel_status (*purge)(harel_transport *, uint64_t *, harel_error **) = harel_transport_purge;
  harel_status (*release)(harel_transport *, const char *, bool *, harel_error **) =
      harel_transport_release;
  /* the looks, and what frees what they hand out */
  harel_status (*stats)(harel_transport *, harel_stats **, harel_error **) =
      harel_transport_stats;
  harel_status (*groups)(harel_transport *, int32_t, const char *, size_t, harel_group_page **,
                         harel_error **) = harel_transport_groups;
  harel_status (*peek)(harel_transport *, const char *, const char *, size_t,
                       harel_message_page **, harel_error **) = harel_transport_peek;
  harel_status (*dead_letters)(harel_transport *, const char *, const char *, size_t,
                               harel_dead_page **, harel_error **) = harel_transport_dead_letters;
  void (*stats_free)(harel_stats *) = harel_stats_free;
  void (*group_page_free)(harel_group_page *) = harel_group_page_free;
  void (*message_page_free)(harel_message_page *) = harel_message_page_free;
  void (*dead_page_free)(harel_dead_page *) = harel_dead_page_free;
  /* what a handle counted */
  harel_status (*metrics)(harel_transport *, harel_metrics **, harel_error **) =
      harel_transport_metrics;
  void (*metrics_free)(harel_metrics *) = harel_metrics_free;
  /* the readiness descriptor */
  harel_status (*transport_watch)(harel_transport *, int32_t, const char *const *, size_t,
                                  harel_watch **, harel_error **) = harel_transport_watch;
  harel_status (*watch_fd)(const harel_watch *, int *, harel_error **) = harel_watch_fd;
  harel_status (*watch_rearm)(harel_transport *, harel_watch *, harel_error **) =
      harel_watch_rearm;
  void (*watch_free)(harel_watch *) = harel_watch_free;
  /* publishing inside the application's transaction */
  harel_status (*begin)(harel_transport *, harel_tx **, harel_error **) = harel_transport_begin;
  harel_status (*tx_execute)(harel_tx *, const char *, const harel_value *, size_t,
                             harel_error **) = harel_tx_execute;
  harel_status (*tx_query)(harel_tx *, const char *, const harel_value *, size_t, harel_rows **,
                           harel_error **) = harel_tx_query;
  harel_status (*tx_publish)(harel_tx *, const char *, const char *, int32_t, const char *,
                             const char *, double, double, harel_error **) = harel_tx_publish;
  harel_status (*tx_commit)(harel_tx *, int64_t *, int *, size_t, size_t *, harel_error **) =
      harel_tx_commit;
  harel_status (*tx_rollback)(harel_tx *, harel_error **) = harel_tx_rollback;
  void (*tx_free)(harel_tx *) = harel_tx_free;
  void (*rows_free)(harel_rows *) = harel_rows_free;
  /* what the library hands out, freed by its own functions */
  void (*lease_free)(harel_lease *) = harel_lease_free;
  void (*string_free)(char *) = harel_string_free;
  schema_fn schema_sql = harel_schema_sql;
  schema_fn schema_upgrade_sql = harel_schema_upgrade_sql;
  /* a queue sharded over several databases */
  harel_status (*open_shards)(const char *const *, size_t, const harel_options *,
                              harel_transport **, harel_error **) = harel_transport_open_shards;
  harel_status (*shard_count)(const harel_transport *, size_t *, harel_error **) =
      harel_transport_shard_count;
  harel_status (*shard_of)(const char *, size_t, size_t *, harel_error **) = harel_shard_of;
  harel_status (*set_sync_urls)(harel_options *, const char *const *, size_t, harel_error **) =
      harel_options_set_sync_urls;
  /* W3C Trace Context */
  harel_status (*traceparent_format)(const uint8_t *, const uint8_t *, uint8_t, char *,
                                     harel_error **) = harel_traceparent_format;
  harel_status (*traceparent_parse)(const char *, uint8_t *, uint8_t *, uint8_t *, bool *,
                                    harel_error **) = harel_traceparent_parse;
  harel_status (*tracestate_valid)(const char *, bool *, harel_error **) = harel_tracestate_valid;
  /* a message's headers: the publishes that take them */
  harel_status (*publish_headers)(harel_transport *, const char *, const char *, int32_t,
                                  const char *, const harel_header *, size_t, harel_error **) =
      harel_transport_publish_headers;
  harel_status (*publish_with_headers)(harel_transport *, const char *, const char *, int32_t,
                                       const char *, const harel_header *, size_t, const char *,
                                       double, double, int64_t *, int *, harel_error **) =
      harel_transport_publish_with_headers;
  harel_status (*publish_many_with_headers)(harel_transport *, const harel_message *, size_t,
                                            const harel_headers *, const char *const *,
                                            const double *, const double *, int64_t *, int *,
                                            harel_error **) =
      harel_transport_publish_many_with_headers;
  harel_status (*tx_publish_headers)(harel_tx *, const char *, const char *, int32_t, const char *,
                                     const harel_header *, size_t, const char *, double, double,
                                     harel_error **) = harel_tx_publish_headers;
  /* a message's delivery options (unique keys): the publishes that take them */
  harel_status (*publish_delivery)(harel_transport *, const char *, const char *, int32_t,
                                   const char *, const harel_header *, size_t,
                                   const harel_delivery *, int64_t *, int *, harel_error **) =
      harel_transport_publish_delivery;
  harel_status (*publish_many_delivery)(harel_transport *, const harel_message *, size_t,
                                        const harel_headers *, const harel_delivery *const *,
                                        int64_t *, int *, harel_error **) =
      harel_transport_publish_many_delivery;
  harel_status (*tx_publish_delivery)(harel_tx *, const char *, const char *, int32_t,
                                      const char *, const harel_header *, size_t,
                                      const harel_delivery *, harel_error **) =
      harel_tx_publish_delivery;
  /* harel_delivery's fields by name and type, its size first and the rest in this order
   * (fields a later minor version appends may follow them); the modes and outcomes */
  harel_delivery delivery;
  size_t *delivery_size = &delivery.size;
  const char **delivery_strings[2] = {&delivery.key, &delivery.unique_key};
  double *delivery_doubles[4] = {&delivery.delay, &delivery.not_before, &delivery.debounce_delay,
                                 &delivery.debounce_max_delay};
  int32_t *delivery_mode = &delivery.unique_mode;
  int delivery_order =
      offsetof(harel_delivery, size) == 0 &&
      offsetof(harel_delivery, size) < offsetof(harel_delivery, key) &&
      offsetof(harel_delivery, key) < offsetof(harel_delivery, delay) &&
      offsetof(harel_delivery, delay) < offsetof(harel_delivery, not_before) &&
      offsetof(harel_delivery, not_before) < offsetof(harel_delivery, unique_key) &&
      offsetof(harel_delivery, unique_key) < offsetof(harel_delivery, unique_mode) &&
      offsetof(harel_delivery, unique_mode) < offsetof(harel_delivery, debounce_delay) &&
      offsetof(harel_delivery, debounce_delay) < offsetof(harel_delivery, debounce_max_delay);
  harel_unique_mode unique_modes[3] = {HAREL_UNIQUE_KEEP, HAREL_UNIQUE_REPLACE,
                                       HAREL_UNIQUE_DEBOUNCE};
  harel_published outcomes[3] = {HAREL_PUBLISHED_STORED, HAREL_PUBLISHED_DUPLICATE,
                                 HAREL_PUBLISHED_REPLACED};
  int delivery_numbers = unique_modes[0] == 0 && unique_modes[1] == 1 && unique_modes[2] == 2 &&
                         outcomes[0] == 0 && outcomes[1] == 1 && outcomes[2] == 2 &&
                         sizeof delivery >= offsetof(harel_delivery, debounce_max_delay) +
                                                sizeof(double);
  /* a header and a list of them, by name and type; the limits */
  harel_header header = {"name", "value"};
  const char **header_strings[2] = {&header.name, &header.value};
  harel_headers header_list = {&header, 1};
  const harel_header **header_items = &header_list.items;
  size_t *header_count = &header_list.n;
  int header_limits = MAX_HEADERS == 64 && MAX_HEADERS_BYTES == 16384 && MAX_HEADER_NAME_LEN == 128;

  /* the lease's fields by name and type, and in this order (fields a later minor version
   * appends may follow them) */
  harel_lease lease;
  int64_t *seq = &lease.seq;
  char **strings[3] = {&lease.group_id, &lease.event, &lease.worker_id};
  size_t *lengths[2] = {&lease.group_id_len, &lease.event_len};
  double *lock_expiry = &lease.lock_expiry;
  int64_t *attempts = &lease.attempts;
  /* the fields added after 0.4.0, at the end of harel_lease, in this order */
  const harel_header **lease_headers = &lease.headers;
  size_t *lease_n_headers = &lease.n_headers;
  int lease_order = offsetof(harel_lease, attempts) < offsetof(harel_lease, headers) &&
                    offsetof(harel_lease, headers) < offsetof(harel_lease, n_headers) &&
                    offsetof(harel_lease, seq) == 0 &&
                    offsetof(harel_lease, seq) < offsetof(harel_lease, group_id) &&
                    offsetof(harel_lease, group_id) < offsetof(harel_lease, group_id_len) &&
                    offsetof(harel_lease, group_id_len) < offsetof(harel_lease, event) &&
                    offsetof(harel_lease, event) < offsetof(harel_lease, event_len) &&
                    offsetof(harel_lease, event_len) < offsetof(harel_lease, worker_id) &&
                    offsetof(harel_lease, worker_id) < offsetof(harel_lease, lock_expiry) &&
                    offsetof(harel_lease, lock_expiry) < offsetof(harel_lease, attempts);
  /* the looks' structs: the fields by name and type */
  harel_stats st;
  harel_priority_stats ps;
  harel_group_info gi;
  harel_message_info mi;
  harel_dead_letter dl;
  harel_group_page gp;
  harel_message_page mp;
  harel_dead_page dp;
  double *stats_doubles[3] = {&st.now, &st.oldest_ready_age, &st.next_release_at};
  uint64_t *stats_counts[7] = {&st.messages, &st.groups, &st.ready, &st.leased,
                               &st.parked, &st.dead, &ps.groups};
  const harel_priority_stats **levels = &st.by_priority;
  size_t *n_levels = &st.n_priorities;
  /* the fields added after 0.4.0, at the end of harel_stats, in this order */
  int64_t *oldest_ready_seq = &st.oldest_ready_seq;
  uint64_t *delayed = &st.delayed;
  double *next_due_at = &st.next_due_at;
  int stats_order = offsetof(harel_stats, n_priorities) < offsetof(harel_stats, oldest_ready_seq) &&
                    offsetof(harel_stats, oldest_ready_seq) < offsetof(harel_stats, delayed) &&
                    offsetof(harel_stats, delayed) < offsetof(harel_stats, next_due_at);
  int32_t *ints[3] = {&ps.priority, &gi.priority, NULL};
  uint64_t *level_counts[3] = {&ps.ready, &ps.leased, &ps.parked};
  const char **info_strings[8] = {&gi.group_id,   &gi.holder,    &gi.routing_key, &mi.event,
                                  &mi.locked_by,  &dl.group_id,  &dl.event,       &dl.reason};
  const char **more_strings[4] = {&dl.last_worker, &gp.next_cursor, &mp.next_cursor,
                                  &dp.next_cursor};
  size_t *info_lengths[6] = {&gi.group_id_len, &mi.event_len,    &dl.group_id_len,
                             &dl.event_len,    &gp.n_groups,     &mp.n_messages};
  size_t *n_letters = &dp.n_letters;
  int64_t *info_ints[6] = {&gi.head_seq, &gi.head_attempts, &mi.seq, &mi.attempts, &dl.seq,
                           &dl.attempts};
  double *info_doubles[5] = {&gi.head_age, &gi.lock_expiry, &mi.lock_expiry, &mi.published_at,
                             &dl.dead_at};
  harel_group_state *state = &gi.state;
  uint64_t *depth = &gi.depth;
  const harel_group_info **group_items = &gp.groups;
  const harel_message_info **message_items = &mp.messages;
  const harel_dead_letter **dead_items = &dp.letters;
  /* the fields added after 0.4.0 at the end of the two pages: each item's shard */
  const size_t **group_shards = &gp.shards;
  const size_t **dead_shards = &dp.shards;
  /* and the pages' header lists, after them */
  const harel_headers **message_headers = &mp.headers;
  const harel_headers **dead_headers = &dp.headers;
  int page_order = offsetof(harel_message_page, next_cursor) < offsetof(harel_message_page, headers) &&
                   offsetof(harel_dead_page, shards) < offsetof(harel_dead_page, headers) &&
                   offsetof(harel_group_page, groups) < offsetof(harel_group_page, n_groups) &&
                   offsetof(harel_group_page, n_groups) < offsetof(harel_group_page, next_cursor) &&
                   offsetof(harel_group_page, next_cursor) < offsetof(harel_group_page, shards) &&
                   offsetof(harel_dead_page, letters) < offsetof(harel_dead_page, n_letters) &&
                   offsetof(harel_dead_page, n_letters) < offsetof(harel_dead_page, next_cursor) &&
                   offsetof(harel_dead_page, next_cursor) < offsetof(harel_dead_page, shards);
  int group_states = HAREL_GROUP_READY == 0 && HAREL_GROUP_LEASED == 1 &&
                     HAREL_GROUP_PARKED == 2 && HAREL_GROUP_DELAYED == 3 &&
                     HAREL_MAX_PAGE == 10000 && MAX_PAGE == HAREL_MAX_PAGE /* 0.2.0's name */;
  /* the metrics' fields by name and type; the bounds as an initializer */
  harel_metrics mt;
  static const double bounds[HAREL_LATENCY_BUCKETS] = HAREL_LATENCY_BOUNDS;
  uint64_t *metrics_counts[9] = {&mt.published,     &mt.claimed,       &mt.acked,
                                 &mt.nacked,        &mt.parked,        &mt.dead_lettered,
                                 &mt.dead_lettered_by_claim, &mt.lost_leases, &mt.busy_retries};
  double *metrics_bounds = mt.bounds;
  harel_histogram *histograms[8] = {&mt.publish, &mt.claim,  &mt.claim_wait, &mt.ack,
                                    &mt.ack_and_claim, &mt.nack, &mt.extend, &mt.dead_letter};
  uint64_t *histogram_counts[2] = {mt.publish.buckets, &mt.publish.count};
  double *histogram_sum = &mt.publish.sum;
  int metrics_shape = HAREL_LATENCY_BUCKETS == 16 && bounds[15] == 10.0 &&
                      sizeof mt.bounds == sizeof bounds &&
                      sizeof mt.publish.buckets == 16 * sizeof(uint64_t);
  /* a SQL value's and the rows' fields, by name and type, in this order; the value types */
  harel_value value;
  harel_rows rows;
  int32_t *value_type = &value.type;
  int64_t *value_integer = &value.integer;
  double *value_real = &value.real;
  const char **value_text = &value.text;
  const uint8_t **value_blob = &value.blob;
  size_t *row_sizes[3] = {&value.size, &rows.n_rows, &rows.n_columns};
  const harel_value **row_values = &rows.values;
  int value_order = offsetof(harel_value, type) == 0 &&
                    offsetof(harel_value, type) < offsetof(harel_value, integer) &&
                    offsetof(harel_value, integer) < offsetof(harel_value, real) &&
                    offsetof(harel_value, real) < offsetof(harel_value, text) &&
                    offsetof(harel_value, text) < offsetof(harel_value, blob) &&
                    offsetof(harel_value, blob) < offsetof(harel_value, size) &&
                    offsetof(harel_rows, n_rows) == 0 &&
                    offsetof(harel_rows, n_rows) < offsetof(harel_rows, n_columns) &&
                    offsetof(harel_rows, n_columns) < offsetof(harel_rows, values);
  harel_value_type value_types[5] = {HAREL_VALUE_NULL, HAREL_VALUE_INTEGER, HAREL_VALUE_REAL,
                                     HAREL_VALUE_TEXT, HAREL_VALUE_BLOB};
  int value_numbers = value_types[0] == 0 && value_types[1] == 1 && value_types[2] == 2 &&
                      value_types[3] == 3 && value_types[4] == 4;
  const harel_tx *no_tx = NULL;
  /* the message's fields, by name and type */
  harel_message message = {"g", "{}", 0, NULL};
  const char **message_strings[3] = {&message.group_id, &message.event_json, &message.routing_key};
  int32_t *message_priority = &message.priority;
  harel_status statuses[] = {HAREL_OK,         HAREL_EMPTY,          HAREL_ERR_ARGUMENT,
                             HAREL_ERR_DATABASE, HAREL_ERR_BUSY,     HAREL_ERR_LEASE_LOST,
                             HAREL_ERR_CONNECT, HAREL_ERR_INTERRUPTED, HAREL_ERR_PANIC};
  int limits = HAREL_MAX_PRIORITY == 4 && HAREL_MAX_PREFIX_LEN == 30 && HAREL_MAX_CLAIM == 1000 &&
               HAREL_TRACEPARENT_LEN == 55;
  /* an opaque cancel and an opaque watch, declared as a user would */
  const harel_cancel *no_cancel = NULL;
  const harel_watch *no_watch = NULL;
  /* an opaque error, declared as a user would, and the NULL the functions accept */
  harel_error *err = NULL;
  int null_error = error_status(err) == HAREL_OK && error_message(err) == NULL;
  /* pausing and resuming (admin), the pauses in force (looks), and what frees them */
  harel_status (*transport_pause)(harel_transport *, int32_t, const char *, bool *,
                                  harel_error **) = harel_transport_pause;
  harel_status (*transport_resume)(harel_transport *, int32_t, const char *, bool *,
                                   harel_error **) = harel_transport_resume;
  harel_status (*transport_pauses)(harel_transport *, harel_pause_list **, harel_error **) =
      harel_transport_pauses;
  void (*pause_list_free)(harel_pause_list *) = harel_pause_list_free;
  /* a pause's and the list's fields by name and type, in this order; the kinds; the paused
   * state and count (harel_stats.paused, at its end, after next_due_at) */
  harel_pause pause_item;
  harel_pause_list pause_list;
  harel_pause_kind *pause_kind = &pause_item.kind;
  const char **pause_name = &pause_item.name;
  size_t *pause_sizes[2] = {&pause_item.name_len, &pause_list.n_pauses};
  double *paused_at = &pause_item.paused_at;
  const harel_pause **pause_items = &pause_list.pauses;
  uint64_t *stats_paused = &st.paused;
  int pause_order = offsetof(harel_pause, kind) == 0 &&
                    offsetof(harel_pause, kind) < offsetof(harel_pause, name) &&
                    offsetof(harel_pause, name) < offsetof(harel_pause, name_len) &&
                    offsetof(harel_pause, name_len) < offsetof(harel_pause, paused_at) &&
                    offsetof(harel_pause_list, pauses) == 0 &&
                    offsetof(harel_pause_list, pauses) < offsetof(harel_pause_list, n_pauses) &&
                    offsetof(harel_stats, next_due_at) < offsetof(harel_stats, paused);
  int pause_numbers = HAREL_PAUSE_QUEUE == 0 && HAREL_PAUSE_GROUP == 1 &&
                      HAREL_PAUSE_ROUTING_KEY == 2 && HAREL_GROUP_PAUSED == 4;
  /* expiry: harel_delivery's ttl and expires_at, by name and type, appended after
   * debounce_max_delay in this order; harel_stats' expired count, at its end, after
   * paused_by_priority */
  double *delivery_expiry[2] = {&delivery.ttl, &delivery.expires_at};
  const uint64_t **stats_paused_levels = &st.paused_by_priority;
  uint64_t *stats_expired = &st.expired;
  int expiry_order =
      offsetof(harel_delivery, debounce_max_delay) < offsetof(harel_delivery, ttl) &&
      offsetof(harel_delivery, ttl) < offsetof(harel_delivery, expires_at) &&
      sizeof delivery >= offsetof(harel_delivery, expires_at) + sizeof(double) &&
      offsetof(harel_stats, paused) < offsetof(harel_stats, paused_by_priority) &&
      offsetof(harel_stats, paused_by_priority) < offsetof(harel_stats, expired);
  /* the archive: its option, its look and what frees it; an archived message's and the
   * page's fields by name and type, in this order */
  setter_double set_archive = harel_options_set_archive;
  harel_status (*transport_archive)(harel_transport *, const char *, const char *, size_t,
                                    harel_archive_page **, harel_error **) =
      harel_transport_archive;
  void (*archive_page_free)(harel_archive_page *) = harel_archive_page_free;
  harel_archived ar;
  harel_archive_page ap;
  int64_t *archived_ints[3] = {&ar.seq, &ar.attempts, NULL};
  const char **archived_strings[4] = {&ar.group_id, &ar.event, &ar.worker_id, &ap.next_cursor};
  size_t *archived_sizes[4] = {&ar.group_id_len, &ar.event_len, &ar.shard, &ap.n_messages};
  harel_headers *archived_headers = &ar.headers;
  double *archived_doubles[3] = {&ar.published_at, &ar.claimed_at, &ar.acked_at};
  const harel_archived **archived_items = &ap.messages;
  int archive_order =
      offsetof(harel_archived, seq) == 0 &&
      offsetof(harel_archived, seq) < offsetof(harel_archived, group_id) &&
      offsetof(harel_archived, group_id) < offsetof(harel_archived, group_id_len) &&
      offsetof(harel_archived, group_id_len) < offsetof(harel_archived, event) &&
      offsetof(harel_archived, event) < offsetof(harel_archived, event_len) &&
      offsetof(harel_archived, event_len) < offsetof(harel_archived, headers) &&
      offsetof(harel_archived, headers) < offsetof(harel_archived, attempts) &&
      offsetof(harel_archived, attempts) < offsetof(harel_archived, worker_id) &&
      offsetof(harel_archived, worker_id) < offsetof(harel_archived, published_at) &&
      offsetof(harel_archived, published_at) < offsetof(harel_archived, claimed_at) &&
      offsetof(harel_archived, claimed_at) < offsetof(harel_archived, acked_at) &&
      offsetof(harel_archived, acked_at) < offsetof(harel_archived, shard) &&
      offsetof(harel_archive_page, messages) == 0 &&
      offsetof(harel_archive_page, messages) < offsetof(harel_archive_page, n_messages) &&
      offsetof(harel_archive_page, n_messages) < offsetof(harel_archive_page, next_cursor);
  /* limits per routing key: set and remove (admin), the limits in force (looks) and what
   * frees them; a limit's and the list's fields by name and type, in this order */
  harel_status (*transport_set_limit)(harel_transport *, const char *, uint32_t, double, double,
                                      harel_error **) = harel_transport_set_limit;
  harel_status (*transport_remove_limit)(harel_transport *, const char *, harel_error **) =
      harel_transport_remove_limit;
  harel_status (*transport_limits)(harel_transport *, harel_limit_list **, harel_error **) =
      harel_transport_limits;
  void (*limit_list_free)(harel_limit_list *) = harel_limit_list_free;
  harel_limit_info li;
  harel_limit_list ll;
  const char **limit_key = &li.routing_key;
  size_t *limit_sizes[2] = {&li.routing_key_len, &ll.n_limits};
  uint32_t *limit_concurrency = &li.concurrency;
  double *limit_doubles[3] = {&li.rate, &li.burst, &li.tokens};
  uint64_t *limit_counts[2] = {&li.in_use, &li.held};
  const harel_limit_info **limit_items = &ll.limits;
  int limit_order =
      offsetof(harel_limit_info, routing_key) == 0 &&
      offsetof(harel_limit_info, routing_key) < offsetof(harel_limit_info, routing_key_len) &&
      offsetof(harel_limit_info, routing_key_len) < offsetof(harel_limit_info, concurrency) &&
      offsetof(harel_limit_info, concurrency) < offsetof(harel_limit_info, rate) &&
      offsetof(harel_limit_info, rate) < offsetof(harel_limit_info, burst) &&
      offsetof(harel_limit_info, burst) < offsetof(harel_limit_info, in_use) &&
      offsetof(harel_limit_info, in_use) < offsetof(harel_limit_info, tokens) &&
      offsetof(harel_limit_info, tokens) < offsetof(harel_limit_info, held) &&
      offsetof(harel_limit_list, limits) == 0 &&
      offsetof(harel_limit_list, limits) < offsetof(harel_limit_list, n_limits);
  /* the group states of the held and retrying groups, at harel_group_state's end */
  int limit_states = HAREL_GROUP_HELD == 5 && HAREL_GROUP_RETRYING == 6;

  /* retries: the queue's policy (an option), the jitters' numbers; harel_delivery's own policy
   * appended after expires_at, and the message page's backoffs after its headers, by name and
   * type, in this order */
  harel_status (*set_retry)(harel_options *, double, double, double, int32_t, harel_error **) =
      harel_options_set_retry;
  double *delivery_retry[3] = {&delivery.retry_base, &delivery.retry_factor, &delivery.retry_cap};
  int32_t *delivery_jitter = &delivery.retry_jitter;
  const double **message_retry_delays = &mp.retry_delays;
  int retry_order =
      offsetof(harel_delivery, expires_at) < offsetof(harel_delivery, retry_base) &&
      offsetof(harel_delivery, retry_base) < offsetof(harel_delivery, retry_factor) &&
      offsetof(harel_delivery, retry_factor) < offsetof(harel_delivery, retry_cap) &&
      offsetof(harel_delivery, retry_cap) < offsetof(harel_delivery, retry_jitter) &&
      sizeof delivery >= offsetof(harel_delivery, retry_jitter) + sizeof(int32_t) &&
      offsetof(harel_message_page, headers) < offsetof(harel_message_page, retry_delays);
  int retry_numbers = HAREL_JITTER_FULL == 0 && HAREL_JITTER_EQUAL == 1 && HAREL_JITTER_NONE == 2 &&
                      HAREL_MIN_RETRY_BASE == 0.001 && HAREL_MAX_RETRY_FACTOR == 16.0;

  int all = version && status_name && last_error && error_status && error_message &&
            error_free && options_new && options_free && set_prefix && set_create_schema &&
            set_sync_url && set_auth_token && set_sync_interval && set_busy_timeout &&
            set_synchronous_full && set_clock && transport_open && publish && publish_many &&
            claim && ack && ack_and_claim && nack && close_fn && lease_free && string_free &&
            schema_sql && schema_upgrade_sql && seq && strings[2] && lengths[1] &&
            lock_expiry && attempts && lease_order && message_strings[2] && message_priority &&
            set_max_attempts && dead_letter && redrive && purge_dead && purge_group && purge &&
            release && stats && groups && peek && dead_letters && stats_free &&
            group_page_free && message_page_free && dead_page_free && stats_doubles[2] &&
            stats_counts[6] && levels && n_levels && ints[1] && level_counts[2] &&
            info_strings[7] && more_strings[3] && info_lengths[5] && n_letters &&
            info_ints[5] && info_doubles[4] && state && depth && group_items &&
            message_items && dead_items && group_states && claim_wait && claim_many &&
            ack_many && ack_and_claim_many && extend && cancel_new && cancel_fire &&
            cancel_free && interrupt && no_cancel == NULL && statuses[7] == -6 &&
            statuses[8] == -99 && limits && null_error && metrics && metrics_free &&
            metrics_counts[8] && metrics_bounds && histograms[7] && histogram_counts[1] &&
            histogram_sum && metrics_shape && transport_watch && watch_fd && watch_rearm &&
            watch_free && no_watch == NULL && set_key_retention && publish_with &&
            publish_many_with && oldest_ready_seq && delayed && next_due_at && stats_order &&
            begin && tx_execute && tx_query && tx_publish && tx_commit && tx_rollback &&
            tx_free && rows_free && value_type && value_integer && value_real && value_text &&
            value_blob && row_sizes[2] && row_values && value_order && value_numbers &&
            no_tx == NULL && open_shards && shard_count && shard_of && set_sync_urls && group_shards &&
            dead_shards && page_order && traceparent_format && traceparent_parse && tracestate_valid &&
            publish_headers && publish_with_headers && publish_many_with_headers &&
            tx_publish_headers && header_strings[1] && header_items && header_count &&
            header_limits && lease_headers && lease_n_headers && message_headers && dead_headers &&
            publish_delivery && publish_many_delivery && tx_publish_delivery && delivery_size &&
            delivery_strings[1] && delivery_doubles[3] && delivery_mode && delivery_order &&
            delivery_numbers && transport_pause && transport_resume && transport_pauses &&
            pause_list_free && pause_kind && pause_name && pause_sizes[1] && paused_at &&
            pause_items && stats_paused && pause_order && pause_numbers && delivery_expiry[1] &&
            stats_paused_levels && stats_expired && expiry_order && set_archive &&
            transport_archive && archive_page_free && archived_ints[1] && archived_strings[3] &&
            archived_sizes[3] && archived_headers && archived_doubles[2] && archived_items &&
            archive_order && transport_set_limit && transport_remove_limit && transport_limits &&
            limit_list_free && limit_key && limit_sizes[1] && limit_concurrency &&
            limit_doubles[2] && limit_counts[1] && limit_items && limit_order && limit_states &&
            set_retry &&
            delivery_retry[2] && delivery_jitter && message_retry_delays && retry_order &&
            retry_numbers;
  error_free(err);
  printf("header_check (%s): harel_transport %s, %s\n",
#ifdef __cplusplus
         "C++",
#else
         "C",
#endif
         version(), all ? "ok" : "MISMATCH");
  return all ? 0 : 1;
}
