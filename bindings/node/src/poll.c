/* harel_transport_poll.node: watching a descriptor for readability from Node's event loop.
 *
 * koffi can call C but cannot poll, and net.Socket refuses a descriptor that is not a pipe
 * or a socket, so the binding's waiting claims (lib/waiting.js) watch the library's
 * readiness descriptor (harel_watch_fd: an epoll descriptor) through this N-API addon:
 *
 *   const w = watch(fd, (status) => ...);  // status 0: readable; < 0: a libuv error
 *   w.start(); w.stop(); w.ref(); w.unref(); w.close();
 *
 * start() polls for UV_READABLE (level-triggered: the callback comes on every turn of the
 * loop while the descriptor stays readable; stop() while you act on it); stop() and close()
 * remove the descriptor from the loop's poll set at once, so the descriptor may be closed
 * right after either returns. close() is final: after it, start/stop/ref/unref throw. The
 * callback runs through napi_make_callback with the handle's async context, so the
 * promise jobs and nextTicks it queues run right after it, as after any I/O callback.
 * An active handle keeps the process alive unless unref()ed, as a socket does.
 *
 * Built by mk/node.mk with cc (undefined napi_* and uv_* symbols are Node's, resolved when
 * it loads the file); N-API version 8, so one build serves every Node from 20 on. Linked
 * with -z nodelete: a worker thread that ends closes our handles (the cleanup hook below)
 * and unloads its addons before its loop runs the close callbacks, which live here. */
#define NAPI_VERSION 8
#include <node_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <uv.h>

typedef struct {
  uv_poll_t poll;
  napi_env env;
  napi_ref callback;          /* the JS function; deleted at close */
  napi_async_context context; /* destroyed at close */
  int closed;                 /* close(), the object's collection or the env's teardown */
  int owners;                 /* the uv handle until it is closed, the JS object until collected */
} watch_t;

#define CHECK(call)                                                                      \
  do {                                                                                   \
    if ((call) != napi_ok) return NULL;                                                  \
  } while (0)

static napi_value fail(napi_env env, const char *code, const char *message) {
  napi_throw_error(env, code, message);
  return NULL;
}

static napi_value fail_uv(napi_env env, const char *what, int error) {
  char message[160];
  snprintf(message, sizeof message, "%s: %s (%s)", what, uv_strerror(error), uv_err_name(error));
  return fail(env, uv_err_name(error), message);
}

static void release(watch_t *w) {
  if (--w->owners == 0) free(w);
}

static void on_closed(uv_handle_t *handle) {
  release((watch_t *)handle->data);
}

static void teardown(void *data);

/* Stops the poll (uv_close stops it now: the descriptor leaves the loop's epoll set before
 * this returns) and lets go of the callback. The memory goes once both owners are done. */
static void close_watch(watch_t *w) {
  if (w->closed) return;
  w->closed = 1;
  napi_remove_env_cleanup_hook(w->env, teardown, w);
  napi_delete_reference(w->env, w->callback);
  napi_async_destroy(w->env, w->context);
  uv_close((uv_handle_t *)&w->poll, on_closed);
}

/* The environment goes away (a worker thread ends) with the handle open: close it, so the
 * loop closes with no handle of ours on it. */
static void teardown(void *data) {
  close_watch((watch_t *)data);
}

/* The JS object was collected. While open, the callback's reference usually keeps it
 * reachable (the callback holds what holds the handle); one that was not is closed here. */
static void finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  watch_t *w = (watch_t *)data;
  close_watch(w);
  release(w);
}

static void on_poll(uv_poll_t *handle, int status, int events) {
  (void)events;
  watch_t *w = (watch_t *)handle->data;
  if (w->closed) return;
  napi_env env = w->env;
  napi_handle_scope scope;
  if (napi_open_handle_scope(env, &scope) != napi_ok) return;
  napi_value callback, recv, argv[1], result;
  if (napi_get_reference_value(env, w->callback, &callback) == napi_ok && callback &&
      napi_get_global(env, &recv) == napi_ok && napi_create_int32(env, status, &argv[0]) == napi_ok) {
    napi_status s = napi_make_callback(env, w->context, recv, callback, 1, argv, &result);
    bool pending = false;
    if (s != napi_ok && napi_is_exception_pending(env, &pending) == napi_ok && pending) {
      napi_value error;
      if (napi_get_and_clear_last_exception(env, &error) == napi_ok) napi_fatal_exception(env, error);
    }
  }
  napi_close_handle_scope(env, scope);
}

/* The watch_t behind `this`, or NULL with an exception thrown. */
static watch_t *self(napi_env env, napi_callback_info info) {
  napi_value this_;
  void *data = NULL;
  if (napi_get_cb_info(env, info, NULL, NULL, &this_, NULL) != napi_ok) return NULL;
  if (napi_unwrap(env, this_, &data) != napi_ok || !data) {
    fail(env, "ERR_INVALID_THIS", "not a watch handle");
    return NULL;
  }
  watch_t *w = (watch_t *)data;
  if (w->closed) {
    fail(env, "ERR_WATCH_CLOSED", "the watch handle is closed");
    return NULL;
  }
  return w;
}

static napi_value start(napi_env env, napi_callback_info info) {
  watch_t *w = self(env, info);
  if (!w) return NULL;
  int r = uv_poll_start(&w->poll, UV_READABLE, on_poll);
  return r ? fail_uv(env, "uv_poll_start", r) : NULL;
}

static napi_value stop(napi_env env, napi_callback_info info) {
  watch_t *w = self(env, info);
  if (w) uv_poll_stop(&w->poll);
  return NULL;
}

static napi_value ref(napi_env env, napi_callback_info info) {
  watch_t *w = self(env, info);
  if (w) uv_ref((uv_handle_t *)&w->poll);
  return NULL;
}

static napi_value unref(napi_env env, napi_callback_info info) {
  watch_t *w = self(env, info);
  if (w) uv_unref((uv_handle_t *)&w->poll);
  return NULL;
}

static napi_value close_(napi_env env, napi_callback_info info) {
  napi_value this_;
  void *data = NULL;
  CHECK(napi_get_cb_info(env, info, NULL, NULL, &this_, NULL));
  if (napi_unwrap(env, this_, &data) != napi_ok || !data) return fail(env, "ERR_INVALID_THIS", "not a watch handle");
  close_watch((watch_t *)data); /* a second close does nothing */
  return NULL;
}

/* watch(fd, callback) -> handle, stopped. */
static napi_value watch(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], object, name;
  napi_valuetype type;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  int32_t fd;
  if (argc < 2) return fail(env, "ERR_INVALID_ARG_TYPE", "watch(fd, callback): two arguments, got fewer");
  if (napi_typeof(env, argv[0], &type) != napi_ok || type != napi_number ||
      napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0) {
    return fail(env, "ERR_INVALID_ARG_TYPE", "watch(fd, callback): fd must be a descriptor (an integer >= 0)");
  }
  if (napi_typeof(env, argv[1], &type) != napi_ok || type != napi_function) {
    return fail(env, "ERR_INVALID_ARG_TYPE", "watch(fd, callback): callback must be a function");
  }
  uv_loop_t *loop;
  CHECK(napi_get_uv_event_loop(env, &loop));
  watch_t *w = calloc(1, sizeof *w);
  if (!w) return fail(env, "ENOMEM", "watch: out of memory");
  int r = uv_poll_init(loop, &w->poll, fd);
  if (r) {
    free(w);
    return fail_uv(env, "uv_poll_init", r);
  }
  w->poll.data = w;
  w->env = env;
  w->owners = 1; /* the uv handle */
  napi_property_descriptor methods[] = {
    {"start", NULL, start, NULL, NULL, NULL, napi_default, NULL},
    {"stop", NULL, stop, NULL, NULL, NULL, napi_default, NULL},
    {"ref", NULL, ref, NULL, NULL, NULL, napi_default, NULL},
    {"unref", NULL, unref, NULL, NULL, NULL, napi_default, NULL},
    {"close", NULL, close_, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_status s = napi_create_object(env, &object);
  if (s == napi_ok) s = napi_define_properties(env, object, sizeof methods / sizeof methods[0], methods);
  if (s == napi_ok) s = napi_create_string_utf8(env, "harel-transport:watch", NAPI_AUTO_LENGTH, &name);
  if (s == napi_ok) s = napi_async_init(env, object, name, &w->context);
  if (s != napi_ok) {
    w->closed = 1;
    uv_close((uv_handle_t *)&w->poll, on_closed);
    return NULL;
  }
  if (napi_create_reference(env, argv[1], 1, &w->callback) != napi_ok) {
    napi_async_destroy(env, w->context);
    w->closed = 1;
    uv_close((uv_handle_t *)&w->poll, on_closed);
    return NULL;
  }
  napi_add_env_cleanup_hook(env, teardown, w);
  if (napi_wrap(env, object, w, finalize, NULL, NULL) != napi_ok) {
    close_watch(w);
    return NULL;
  }
  w->owners += 1; /* the JS object */
  return object;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  if (napi_create_function(env, "watch", NAPI_AUTO_LENGTH, watch, NULL, &fn) != napi_ok ||
      napi_set_named_property(env, exports, "watch", fn) != napi_ok) {
    return NULL;
  }
  return exports;
}
