/*
 * header_check.c: harel_transport.h compiles cleanly, alone, as C99 and as C++ (`make
 * test-c` builds this file both ways with -Wall -Wextra -Werror -pedantic), and declares
 * exactly the signatures of ABI.md and of the functions the library adds: each function is
 * assigned to a pointer of the type given for it, which fails to compile if the header
 * disagrees. Linked and run, it also shows every function is exported by the library.
 */
#include "harel_transport.h"

#include <stdio.h>

/* ABI.md's types, spelled as a C or C++ user would. */
typedef harel_status (*setter_str)(harel_options *, const char *);
typedef harel_status (*setter_double)(harel_options *, double);
typedef harel_status (*setter_bool)(harel_options *, bool);
typedef harel_status (*schema_fn)(const char *, char **);

int main(void) {
  const char *(*version)(void) = harel_version;
  const char *(*status_name)(int32_t) = harel_status_name;
  const char *(*last_error)(void) = harel_last_error;
  void (*string_free)(char *) = harel_string_free;
  harel_options *(*options_new)(void) = harel_options_new;
  setter_str set_prefix = harel_options_set_prefix;
  setter_bool set_create_schema = harel_options_set_create_schema;
  setter_str set_sync_url = harel_options_set_sync_url;
  setter_str set_auth_token = harel_options_set_auth_token;
  setter_double set_sync_interval = harel_options_set_sync_interval;
  setter_double set_busy_timeout = harel_options_set_busy_timeout;
  setter_bool set_synchronous_full = harel_options_set_synchronous_full;
  harel_status (*set_clock)(harel_options *, double (*)(void *), void *) =
      harel_options_set_clock;
  void (*options_free)(harel_options *) = harel_options_free;
  harel_status (*transport_open)(const char *, const harel_options *, harel_transport **) =
      harel_transport_open;
  harel_status (*publish)(harel_transport *, const char *, const char *, int32_t,
                          const char *) = harel_transport_publish;
  harel_status (*publish_many)(harel_transport *, const harel_message *, size_t) =
      harel_transport_publish_many;
  harel_status (*claim)(harel_transport *, const char *, double, int32_t,
                        const char *const *, size_t, harel_lease **) = harel_transport_claim;
  harel_status (*ack)(harel_transport *, const harel_lease *) = harel_transport_ack;
  harel_status (*nack)(harel_transport *, const harel_lease *, double) = harel_transport_nack;
  harel_status (*transport_close)(harel_transport *) = harel_transport_close;
  const char *(*transport_last_error)(const harel_transport *) = harel_transport_last_error;
  void (*lease_free)(harel_lease *) = harel_lease_free;
  schema_fn schema_sql = harel_schema_sql;
  schema_fn schema_upgrade_sql = harel_schema_upgrade_sql;

  /* the lease's fields, by name and type */
  harel_lease lease = {0, NULL, NULL, NULL, 0.0};
  int64_t *seq = &lease.seq;
  char **strings[3] = {&lease.group_id, &lease.event, &lease.worker_id};
  double *lock_expiry = &lease.lock_expiry;
  /* the message's fields, by name and type */
  harel_message message = {"g", "{}", 0, NULL};
  const char **message_strings[3] = {&message.group_id, &message.event_json, &message.routing_key};
  int32_t *message_priority = &message.priority;
  harel_status statuses[] = {HAREL_OK,         HAREL_EMPTY,          HAREL_ERR_ARGUMENT,
                             HAREL_ERR_DATABASE, HAREL_ERR_BUSY,     HAREL_ERR_LEASE_LOST,
                             HAREL_ERR_CONNECT, HAREL_ERR_PANIC};
  int limits = HAREL_MAX_PRIORITY == 4 && HAREL_MAX_PREFIX_LEN == 30;

  int all = version && status_name && last_error && string_free && options_new &&
            set_prefix && set_create_schema && set_sync_url && set_auth_token &&
            set_sync_interval && set_busy_timeout && set_synchronous_full && set_clock &&
            options_free && transport_open && publish && publish_many && claim && ack &&
            nack && transport_close && transport_last_error && lease_free && schema_sql &&
            schema_upgrade_sql && seq && strings[2] && lock_expiry && message_strings[2] &&
            message_priority && statuses[7] == -99 && limits;
  printf("header_check (%s): harel_transport %s, %s\n",
#ifdef __cplusplus
         "C++",
#else
         "C",
#endif
         version(), all ? "ok" : "MISMATCH");
  return all ? 0 : 1;
}
