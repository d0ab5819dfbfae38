package harel

// The C calls of open: a transport opened with its options and closed; the schema's SQL,
// the version and the status names.

/*
#include <stdint.h>
#include "harel_transport.h"

// The clock: a C function pointer for the Go clock; ctx carries a cgo.Handle (an integer,
// never a Go pointer) to the Go function.
extern double harelGoClock(uintptr_t handle);
static double hgo_clock(void *ctx) { return harelGoClock((uintptr_t)ctx); }
static enum harel_status hgo_set_clock(harel_options *o, uintptr_t handle, harel_error **err) {
	return harel_options_set_clock(o, hgo_clock, (void *)handle, err);
}
*/
import "C"

import (
	"runtime/cgo"
	"strconv"
)

// cOpen builds the C options from cfg, opens database with them and frees them. A clock
// handle of 0 means the system clock.
func cOpen(database string, cfg *config, clock cgo.Handle) (cTransport, error) {
	var strs cStrings
	defer strs.free()
	db, err := strs.add("database", database)
	if err != nil {
		return cTransport{}, err
	}
	return withOptions(cfg, clock, &strs, func(o *C.harel_options, t **C.harel_transport, cerr errOut) C.enum_harel_status {
		return C.harel_transport_open(db, o, t, cerr)
	})
}

// cOpenShards opens one queue over databases, in their order, as cOpen opens one: the
// list goes to C as a Go array of C copies (no Go pointers in it); an empty list is NULL
// with 0, which the library refuses, as it does an empty or repeated element.
func cOpenShards(databases []string, cfg *config, clock cgo.Handle) (cTransport, error) {
	var strs cStrings
	defer strs.free()
	dbs := make([]*C.char, len(databases))
	for i, d := range databases {
		var err error
		if dbs[i], err = strs.add("databases["+strconv.Itoa(i)+"]", d); err != nil {
			return cTransport{}, err
		}
	}
	return withOptions(cfg, clock, &strs, func(o *C.harel_options, t **C.harel_transport, cerr errOut) C.enum_harel_status {
		return C.harel_transport_open_shards(firstOf(dbs), C.size_t(len(dbs)), o, t, cerr)
	})
}

// withOptions builds the C options from cfg, opens with them (open's status and error are
// checked here) and frees them.
func withOptions(cfg *config, clock cgo.Handle, strs *cStrings,
	open func(*C.harel_options, **C.harel_transport, errOut) C.enum_harel_status) (cTransport, error) {
	o := C.harel_options_new()
	if o == nil {
		return cTransport{}, &Error{Status: StatusPanic, Message: "harel_options_new failed"}
	}
	defer C.harel_options_free(o)
	if err := setOptions(o, cfg, clock, strs); err != nil {
		return cTransport{}, err
	}
	var t *C.harel_transport
	var cerr *C.harel_error
	if err := check(open(o, &t, &cerr), &cerr); err != nil {
		return cTransport{}, err
	}
	return cTransport{t}, nil
}

// setOptions hands each field cfg sets to its C setter; the first refusal is the error,
// its message led by the Option's name (the C message names the setter's parameter).
func setOptions(o *C.harel_options, cfg *config, clock cgo.Handle, strs *cStrings) (err error) {
	set := func(option string, call func(errOut) C.enum_harel_status) {
		if err == nil {
			var cerr *C.harel_error
			err = optionError(option, check(call(&cerr), &cerr))
		}
	}
	text := func(option, param string, value *string, call func(*C.char, errOut) C.enum_harel_status) {
		if value == nil || err != nil {
			return
		}
		p, e := strs.add(param, *value)
		if e != nil {
			err = optionError(option, e)
			return
		}
		set(option, func(ce errOut) C.enum_harel_status { return call(p, ce) })
	}
	text("WithPrefix", "prefix", cfg.prefix,
		func(p *C.char, ce errOut) C.enum_harel_status { return C.harel_options_set_prefix(o, p, ce) })
	text("WithSyncURL", "url", cfg.syncURL,
		func(p *C.char, ce errOut) C.enum_harel_status { return C.harel_options_set_sync_url(o, p, ce) })
	if cfg.syncURLs != nil && err == nil {
		urls := make([]*C.char, len(cfg.syncURLs))
		for i, u := range cfg.syncURLs {
			if urls[i], err = strs.add("urls["+strconv.Itoa(i)+"]", u); err != nil {
				return optionError("WithSyncURLs", err)
			}
		}
		set("WithSyncURLs", func(ce errOut) C.enum_harel_status {
			return C.harel_options_set_sync_urls(o, firstOf(urls), C.size_t(len(urls)), ce)
		})
	}
	text("WithAuthToken", "token", cfg.authToken,
		func(p *C.char, ce errOut) C.enum_harel_status { return C.harel_options_set_auth_token(o, p, ce) })
	if v := cfg.createSchema; v != nil {
		set("WithCreateSchema",
			func(ce errOut) C.enum_harel_status { return C.harel_options_set_create_schema(o, C.bool(*v), ce) })
	}
	if v := cfg.syncInterval; v != nil {
		set("WithSyncInterval",
			func(ce errOut) C.enum_harel_status { return C.harel_options_set_sync_interval(o, seconds(*v), ce) })
	}
	if v := cfg.busyTimeout; v != nil {
		set("WithBusyTimeout",
			func(ce errOut) C.enum_harel_status { return C.harel_options_set_busy_timeout(o, seconds(*v), ce) })
	}
	if v := cfg.synchronousFull; v != nil {
		set("WithSynchronousFull",
			func(ce errOut) C.enum_harel_status { return C.harel_options_set_synchronous_full(o, C.bool(*v), ce) })
	}
	if v := cfg.maxAttempts; v != nil {
		set("WithMaxAttempts",
			func(ce errOut) C.enum_harel_status { return C.harel_options_set_max_attempts(o, C.uint32_t(*v), ce) })
	}
	if v := cfg.keyRetention; v != nil {
		set("WithKeyRetention",
			func(ce errOut) C.enum_harel_status { return C.harel_options_set_key_retention(o, seconds(*v), ce) })
	}
	if v := cfg.archive; v != nil {
		set("WithArchive",
			func(ce errOut) C.enum_harel_status { return C.harel_options_set_archive(o, seconds(*v), ce) })
	}
	if v := cfg.retry; v != nil && err == nil {
		base, factor, longest, jitter, e := retryFields("retry", v)
		if e != nil {
			return optionError("WithRetry", e)
		}
		set("WithRetry", func(ce errOut) C.enum_harel_status {
			return C.harel_options_set_retry(o, base, factor, longest, jitter, ce)
		})
	}
	if clock != 0 {
		set("WithClock", func(ce errOut) C.enum_harel_status { return C.hgo_set_clock(o, C.uintptr_t(clock), ce) })
	}
	return err
}

// optionError leads err's message with the name of the Option that caused it.
func optionError(option string, err error) error {
	if e, ok := err.(*Error); ok {
		return &Error{Status: e.Status, Message: option + ": " + e.Message}
	}
	return err
}

func (t cTransport) close() { C.harel_transport_close(t.p) }

func cSchemaSQL(prefix string, upgrade bool) (string, error) {
	var strs cStrings
	defer strs.free()
	p, err := strs.add("prefix", prefix)
	if err != nil {
		return "", err
	}
	var out *C.char
	var cerr *C.harel_error
	var s C.enum_harel_status
	if upgrade {
		s = C.harel_schema_upgrade_sql(p, &out, &cerr)
	} else {
		s = C.harel_schema_sql(p, &out, &cerr)
	}
	defer C.harel_string_free(out)
	if err := check(s, &cerr); err != nil {
		return "", err
	}
	return C.GoString(out), nil
}

func cVersion() string { return C.GoString(C.harel_version()) }

// cStatusName is the C library's name of a status (tests compare Status.String with it).
func cStatusName(s Status) string { return C.GoString(C.harel_status_name(C.int32_t(s))) }
