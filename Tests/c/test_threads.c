// SPDX-License-Identifier: Apache-2.0
/* Every "Thread:" rule of tether.h, from a second thread, while the loop's thread works.
 *
 * The main thread owns a loop with an engine and a login client, both connected to fake
 * servers and heartbeating, so it writes their state all the time. A second thread then:
 *   - calls every function that takes no handle ("Thread: any."), which must answer as
 *     on the loop's thread;
 *   - calls every function of the engine and of the client ("Thread: the engine's.",
 *     "the client's."), destroy included: each is refused with TETHER_ERR_WRONG_THREAD
 *     (the state: DISCONNECTED), changes nothing and calls no callback there;
 *   - makes an engine and a client on a loop of its own ("Thread: the thread that runs
 *     `loop`."), while the main thread makes and destroys engines on its loop: that thread
 *     becomes theirs, and the main thread's calls on them are refused in turn.
 * No callback may run on a thread that is not its connection's.
 *
 * Run under ThreadSanitizer by make test (scripts/sanitize/check-c-sanitizers.sh thread
 * test_threads), against the library built with -sanitize=thread. The second thread hands
 * its first calls over with a relaxed atomic only (no happens-before), and the main thread
 * then destroys the engine and the client: so a refused call that read anything the loop's
 * thread writes (a destroy that looked at its handle's state first, say) is a data race
 * TSan reports, as it reported against the destroy that did. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "tether.h"

/* The app's state of one connection, as an app keeps it: plain fields, which its
   callbacks write on the loop's thread, and the thread they must come on. */
struct owner {
  pthread_t thread;
  int callbacks;
  int connected;
};

/* Counted by a callback that came on another thread than its connection's. Atomic: the
   thread it came on is not the one that reads it. */
static int foreign_callbacks;

/* A callback on another thread would write `callbacks` there while the loop's thread
   writes it too: a data race in the app, which TSan reports, as the functional count. */
static void came(struct owner *o) {
  if (!pthread_equal(pthread_self(), o->thread))
    __atomic_add_fetch(&foreign_callbacks, 1, __ATOMIC_RELAXED);
  o->callbacks++;
}

static void on_state(void *ctx, tether_connection_state s, tether_connection_changed_reason r) {
  struct owner *o = (struct owner *)ctx;
  (void)r;
  came(o);
  if (pthread_equal(pthread_self(), o->thread) && s == TETHER_CONNECTION_STATE_CONNECTED)
    o->connected = 1;
}
static void on_log(void *ctx, tether_log_level level, const char *message) {
  (void)level; (void)message;
  came((struct owner *)ctx);
}
static void on_rtm_state(void *ctx, tether_rtm_connection_state s,
                         tether_rtm_connection_change_reason r) {
  struct owner *o = (struct owner *)ctx;
  (void)r;
  came(o);
  if (pthread_equal(pthread_self(), o->thread) && s == TETHER_RTM_CONNECTION_STATE_CONNECTED)
    o->connected = 1;
}
static void on_login_result(void *ctx, int result) { (void)result; came((struct owner *)ctx); }
static void on_attempt(void *ctx, uint32_t a, uint32_t n, uint32_t g) {
  (void)a; (void)n; (void)g;
  came((struct owner *)ctx);
}
static void on_login_attempt(void *ctx, uint32_t a, uint32_t n) {
  (void)a; (void)n;
  came((struct owner *)ctx);
}

/* An engine and a login client with thresholds scaled down and a heartbeat every 5 ms (the
   loop's thread writes their state all the time), every callback noted in `o`. */
static int make_engine(struct ev_loop *loop, const char *server, struct owner *o,
                       tether_engine **out) {
  tether_engine_config c = engine_config(server);
  tether_engine_handler h;
  tether_engine_handler_init(&h);
  c.heartbeat_interval_ms = 5;
  c.interrupted_after_ms = 400, c.lost_after_ms = c.remote_offline_after_ms = 1000;
  h.on_connection_state_changed = on_state, h.on_log = on_log, h.on_join_attempt = on_attempt;
  return tether_engine_create(loop, &c, &h, o, out);
}

static int make_client(struct ev_loop *loop, const char *server, struct owner *o,
                       tether_rtm_client **out) {
  tether_rtm_config c = rtm_config(server);
  tether_rtm_handler h;
  tether_rtm_handler_init(&h);
  c.heartbeat_interval_ms = 5, c.interrupted_after_ms = 400;
  h.on_connection_state_changed = on_rtm_state, h.on_login_result = on_login_result;
  h.on_log = on_log, h.on_login_attempt = on_login_attempt;
  return tether_rtm_client_create(loop, &c, &h, o, out);
}

static void run_briefly(struct ev_loop *loop) {
  ev_run(loop, EVRUN_NOWAIT);
  ev_sleep(0.001);
}

/* A datagram the engine cannot decode: it logs dropping it (on_log, on its thread). */
static void push_garbage(struct fake_server *srv) { fake_send_bytes(srv, "XX", 2); }

/* Runs `loop` until both owners saw CONNECTED, at most 2 s. */
static void run_until_connected(struct ev_loop *loop, struct owner *a, struct owner *b) {
  for (int i = 0; i < 2000 && !(a->connected && b->connected); i++) run_briefly(loop);
}

/* ---- The second thread ----------------------------------------------------------------- */

/* What the second thread saw; written by it, read by the main thread after pthread_join. */
struct seen {
  /* "Thread: any." */
  int version_ok, config_init_ok, names_ok;
  /* "Thread: the engine's." / "the client's.", on the main thread's engine and client */
  int join, leave, renew, network, server, stats, state, destroy;
  int login, logout, rtm_join, rtm_leave, rtm_renew, rtm_network, rtm_stats, rtm_state,
      rtm_destroy;
  /* "Thread: the thread that runs `loop`.": its own engine and client */
  int own_created, own_connected, own_destroyed;
};

struct shared {
  tether_engine *engine;             /* the main thread's, before the second starts */
  tether_rtm_client *client;
  struct seen seen;
  /* Relaxed on purpose: no happens-before from the second thread's calls to the main
     thread's destroy (see the top). */
  int main_rounds, calls_done, phase_two;
  /* The second thread's own engine and client, handed over with release/acquire, as an
     app must hand a handle to another thread. */
  tether_engine *own_engine;
  tether_rtm_client *own_client;
  int own_ready, own_checked;
};

static int any_thread_functions_answer(struct seen *s) {
  tether_engine_config ec;
  tether_engine_handler eh;
  tether_rtm_config rc;
  tether_rtm_handler rh;
  s->version_ok = tether_version() == TETHER_VERSION_HEX;
  tether_engine_config_init(&ec);
  tether_engine_handler_init(&eh);
  tether_rtm_config_init(&rc);
  tether_rtm_handler_init(&rh);
  tether_engine_config_init(NULL);
  tether_rtm_handler_init(NULL);
  s->config_init_ok = ec.size == sizeof ec && ec.interrupted_after_ms == 4000 &&
                      eh.size == sizeof eh && eh.on_log == NULL && rc.size == sizeof rc &&
                      rc.login_timeout_ms == 6000 && rh.size == sizeof rh;
  s->names_ok =
      strcmp(tether_connection_state_name(3), "CONNECTED") == 0 &&
      strcmp(tether_connection_changed_reason_name(1), "JOIN_SUCCESS") == 0 &&
      strcmp(tether_user_offline_reason_name(1), "DROPPED") == 0 &&
      strcmp(tether_error_name(TETHER_ERR_WRONG_THREAD), "ERR_WRONG_THREAD") == 0 &&
      strcmp(tether_error_message(TETHER_ERR_WRONG_THREAD), "unknown error") != 0 &&
      strcmp(tether_rtm_connection_state_name(5), "ABORTED") == 0 &&
      strcmp(tether_rtm_connection_change_reason_name(8), "REMOTE_LOGIN") == 0 &&
      strcmp(tether_rtm_login_error_name(TETHER_RTM_LOGIN_ERR_TIMEOUT), "LOGIN_ERR_TIMEOUT") == 0 &&
      strcmp(tether_rtm_logout_error_name(TETHER_RTM_LOGOUT_ERR_OK), "LOGOUT_ERR_OK") == 0;
  return s->version_ok && s->config_init_ok && s->names_ok;
}

static void call_the_main_threads(struct shared *sh) {
  struct seen *s = &sh->seen;
  tether_connection_stats stats;
  stats.size = sizeof stats;
  /* Destroy first: before this thread touches anything Tether shares with the loop's
     thread (a handle's reference count synchronizes), so that whatever it does is
     unordered with what that thread does meanwhile. */
  s->destroy = tether_engine_destroy(sh->engine);
  s->join = tether_join_channel(sh->engine, NULL, "other", 2);
  s->leave = tether_leave_channel(sh->engine);
  s->renew = tether_renew_token(sh->engine, "t");
  s->network = tether_network_changed(sh->engine);
  s->server = tether_set_server(sh->engine, "127.0.0.1:1");
  s->stats = tether_engine_get_stats(sh->engine, &stats);
  s->state = (int)tether_get_connection_state(sh->engine);
  s->login = tether_rtm_login(sh->client, "t", "bob");
  s->logout = tether_rtm_logout(sh->client);
  s->rtm_join = tether_rtm_join_channel(sh->client, "lobby");
  s->rtm_leave = tether_rtm_leave_channel(sh->client, "lobby");
  s->rtm_renew = tether_rtm_renew_token(sh->client, "t");
  s->rtm_network = tether_rtm_network_changed(sh->client);
  s->rtm_stats = tether_rtm_client_get_stats(sh->client, &stats);
  s->rtm_state = (int)tether_rtm_get_connection_state(sh->client);
  s->rtm_destroy = tether_rtm_client_destroy(sh->client);
}

/* Its own loop, engine and client: this thread runs them. */
static void own_connections(struct shared *sh) {
  struct fake_server srv, login_srv;
  struct ev_loop *loop = test_loop_new(&srv);
  struct owner engine_owner, client_owner;
  tether_engine *engine = NULL;
  tether_rtm_client *client = NULL;
  memset(&engine_owner, 0, sizeof engine_owner);
  memset(&client_owner, 0, sizeof client_owner);
  engine_owner.thread = client_owner.thread = pthread_self();
  fake_start(loop, &login_srv);
  sh->seen.own_created = make_engine(loop, srv.address, &engine_owner, &engine) == TETHER_OK &&
                         make_client(loop, login_srv.address, &client_owner, &client) == 0 &&
                         tether_join_channel(engine, channel_token("lobby", 0), "lobby", 9) == TETHER_OK &&
                         tether_rtm_login(client, login_token("carol"), "carol") == 0;
  run_until_connected(loop, &engine_owner, &client_owner);
  sh->seen.own_connected = engine_owner.connected && client_owner.connected;
  sh->own_engine = engine;
  __atomic_store_n(&sh->own_client, client, __ATOMIC_RELEASE);
  __atomic_store_n(&sh->own_ready, 1, __ATOMIC_RELEASE);
  /* The main thread calls them meanwhile: refused; this loop goes on. */
  while (!__atomic_load_n(&sh->own_checked, __ATOMIC_ACQUIRE)) run_briefly(loop);
  sh->seen.own_destroyed = tether_engine_destroy(engine) == TETHER_OK &&
                           tether_rtm_client_destroy(client) == 0;
  fake_stop(loop, &login_srv);
  test_loop_destroy(loop, &srv);
}

static void *second_thread(void *arg) {
  struct shared *sh = (struct shared *)arg;
  any_thread_functions_answer(&sh->seen);
  /* Until the loop's thread has been writing its app state for a while since this thread
     started (relaxed: that orders nothing). */
  while (__atomic_load_n(&sh->main_rounds, __ATOMIC_RELAXED) < 5) ev_sleep(0.001);
  call_the_main_threads(sh);
  __atomic_store_n(&sh->calls_done, 1, __ATOMIC_RELAXED);
  while (!__atomic_load_n(&sh->phase_two, __ATOMIC_RELAXED)) ev_sleep(0.001);
  own_connections(sh);
  return NULL;
}

/* ---- The main thread ------------------------------------------------------------------- */

static void test_tether_calls_fromASecondThread_keepEveryThreadRule(void) {
  struct fake_server srv, login_srv;
  struct ev_loop *loop = test_loop_new(&srv);
  struct owner engine_owner, client_owner;
  static struct shared sh;
  pthread_t thread;
  int datagrams_before, churned = 0, logs_before;
  tether_connection_stats stats;
  memset(&engine_owner, 0, sizeof engine_owner);
  memset(&client_owner, 0, sizeof client_owner);
  engine_owner.thread = client_owner.thread = pthread_self();
  fake_start(loop, &login_srv);
  CHECK(make_engine(loop, srv.address, &engine_owner, &sh.engine) == TETHER_OK);
  CHECK(make_client(loop, login_srv.address, &client_owner, &sh.client) == 0);
  CHECK(tether_join_channel(sh.engine, channel_token("lobby", 0), "lobby", 7) == TETHER_OK);
  CHECK(tether_rtm_login(sh.client, login_token("alice"), "alice") == 0);
  run_until_connected(loop, &engine_owner, &client_owner);
  CHECK(engine_owner.connected && client_owner.connected);
  stats.size = sizeof stats;
  CHECK(tether_engine_get_stats(sh.engine, &stats) == TETHER_OK);
  datagrams_before = (int)stats.datagrams_in;
  logs_before = engine_owner.callbacks;

  /* The second thread's calls, while this thread runs the loop: heartbeats out, acks in,
     and a datagram the engine drops and logs, so the app's state is written here all the
     time. */
  CHECK(pthread_create(&thread, NULL, second_thread, &sh) == 0);
  for (int i = 0; i < 20 || !__atomic_load_n(&sh.calls_done, __ATOMIC_RELAXED); i++) {
    push_garbage(&srv);
    run_briefly(loop);
    __atomic_store_n(&sh.main_rounds, i + 1, __ATOMIC_RELAXED);
  }
  /* Refused means unchanged: both still connected, on the same server, and working. */
  CHECK(tether_get_connection_state(sh.engine) == TETHER_CONNECTION_STATE_CONNECTED);
  CHECK(tether_rtm_get_connection_state(sh.client) == TETHER_RTM_CONNECTION_STATE_CONNECTED);
  CHECK(tether_engine_get_stats(sh.engine, &stats) == TETHER_OK);
  CHECK((int)stats.datagrams_in > datagrams_before);
  CHECK(srv.leave_datagrams == 0 && login_srv.logout_datagrams == 0);
  CHECK(engine_owner.callbacks >= logs_before + 20); /* the drops were logged, here */
  /* Written here, with nothing ordering it after the second thread's calls. */
  CHECK(tether_engine_destroy(sh.engine) == TETHER_OK);
  CHECK(tether_rtm_client_destroy(sh.client) == 0);
  __atomic_store_n(&sh.phase_two, 1, __ATOMIC_RELAXED);

  /* The second thread makes its own on its loop, while this one makes and destroys
     engines on this loop: the loops share nothing but the registry of loops. */
  while (!__atomic_load_n(&sh.own_ready, __ATOMIC_ACQUIRE) || churned < 5) {
    tether_engine *e = NULL;
    struct owner o;
    memset(&o, 0, sizeof o);
    o.thread = pthread_self();
    CHECK(make_engine(loop, srv.address, &o, &e) == TETHER_OK);
    run_briefly(loop);
    CHECK(tether_engine_destroy(e) == TETHER_OK);
    churned++;
  }
  {
    tether_engine *own_engine = sh.own_engine;
    tether_rtm_client *own_client = __atomic_load_n(&sh.own_client, __ATOMIC_ACQUIRE);
    tether_connection_stats own_stats;
    own_stats.size = sizeof own_stats;
    /* Its thread is the one that created them: this one is refused. */
    CHECK(tether_leave_channel(own_engine) == TETHER_ERR_WRONG_THREAD);
    CHECK(tether_engine_get_stats(own_engine, &own_stats) == TETHER_ERR_WRONG_THREAD);
    CHECK(tether_get_connection_state(own_engine) == TETHER_CONNECTION_STATE_DISCONNECTED);
    CHECK(tether_engine_destroy(own_engine) == TETHER_ERR_WRONG_THREAD);
    CHECK(tether_rtm_logout(own_client) == TETHER_ERR_WRONG_THREAD);
    CHECK(tether_rtm_client_destroy(own_client) == TETHER_ERR_WRONG_THREAD);
  }
  __atomic_store_n(&sh.own_checked, 1, __ATOMIC_RELEASE);
  pthread_join(thread, NULL);

  CHECK(sh.seen.version_ok && sh.seen.config_init_ok && sh.seen.names_ok);
  CHECK(sh.seen.join == TETHER_ERR_WRONG_THREAD && sh.seen.leave == TETHER_ERR_WRONG_THREAD);
  CHECK(sh.seen.renew == TETHER_ERR_WRONG_THREAD && sh.seen.network == TETHER_ERR_WRONG_THREAD);
  CHECK(sh.seen.server == TETHER_ERR_WRONG_THREAD && sh.seen.stats == TETHER_ERR_WRONG_THREAD);
  CHECK(sh.seen.state == TETHER_CONNECTION_STATE_DISCONNECTED);
  CHECK(sh.seen.destroy == TETHER_ERR_WRONG_THREAD);
  CHECK(sh.seen.login == TETHER_ERR_WRONG_THREAD && sh.seen.logout == TETHER_ERR_WRONG_THREAD);
  CHECK(sh.seen.rtm_join == TETHER_ERR_WRONG_THREAD);
  CHECK(sh.seen.rtm_leave == TETHER_ERR_WRONG_THREAD);
  CHECK(sh.seen.rtm_renew == TETHER_ERR_WRONG_THREAD);
  CHECK(sh.seen.rtm_network == TETHER_ERR_WRONG_THREAD);
  CHECK(sh.seen.rtm_stats == TETHER_ERR_WRONG_THREAD);
  CHECK(sh.seen.rtm_state == TETHER_RTM_CONNECTION_STATE_DISCONNECTED);
  CHECK(sh.seen.rtm_destroy == TETHER_ERR_WRONG_THREAD);
  CHECK(sh.seen.own_created && sh.seen.own_connected && sh.seen.own_destroyed);
  CHECK(__atomic_load_n(&foreign_callbacks, __ATOMIC_RELAXED) == 0);
  CHECK(engine_owner.callbacks > 0 && client_owner.callbacks > 0);
  fake_stop(loop, &login_srv);
  test_loop_destroy(loop, &srv);
}

ONE_CASE_MAIN("threads", test_tether_calls_fromASecondThread_keepEveryThreadRule,
              "every Thread: rule of tether.h, from a second thread")
