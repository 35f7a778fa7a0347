// SPDX-License-Identifier: Apache-2.0
/* Lifetimes under load, for `make check` (valgrind memcheck: no error, no leak) and
 * `make test`: 1,000 create/join/leave/destroy cycles of one engine against the fake edge
 * server on loopback, each one connected before it leaves, then engines on two loops in
 * two threads at once, each thread creating, joining, exchanging heartbeats and presence,
 * leaving and destroying, several rounds. Every cycle must reach CONNECTED/JOIN_SUCCESS and
 * DISCONNECTED/LEAVE_CHANNEL, the server must see each JOIN and LEAVE, and no descriptor
 * may be left behind. Thresholds are scaled down; time bounds are generous (valgrind). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tether.h"

/* What one engine's callbacks saw. */
struct seen {
  int connected, joined, left_state, left, interrupted, users;
};

static void on_state(void *ctx, tether_connection_state state, tether_connection_changed_reason r) {
  struct seen *s = (struct seen *)ctx;
  if (state == TETHER_CONNECTION_STATE_CONNECTED && r == TETHER_CONNECTION_CHANGED_JOIN_SUCCESS)
    s->connected++;
  if (state == TETHER_CONNECTION_STATE_DISCONNECTED && r == TETHER_CONNECTION_CHANGED_LEAVE_CHANNEL)
    s->left_state++;
  if (r == TETHER_CONNECTION_CHANGED_INTERRUPTED) s->interrupted++;
}
static void on_join(void *ctx, const char *channel, uint32_t uid, uint32_t elapsed_ms) {
  struct seen *s = (struct seen *)ctx;
  (void)elapsed_ms;
  if (strcmp(channel, "lobby") == 0 && uid == 4242) s->joined++;
}
static void on_leave(void *ctx) { ((struct seen *)ctx)->left++; }
static void on_user_joined(void *ctx, uint32_t uid, uint32_t elapsed_ms) {
  (void)uid; (void)elapsed_ms;
  ((struct seen *)ctx)->users++;
}

static tether_engine_config config_for(const char *server) {
  tether_engine_config c = engine_config(server);
  /* Scaled down, but wide enough for valgrind's slowness: nothing must interrupt. */
  c.heartbeat_interval_ms = 10, c.interrupted_after_ms = 1000;
  c.lost_after_ms = c.remote_offline_after_ms = 2000, c.give_up_after_ms = 10000;
  /* A retry is a new handshake attempt and only the last two attempts' answers are taken
     (docs/PROTOCOL.md §12.5), so retries wait longer than a handshake takes under valgrind
     on a loaded machine. */
  c.retry_base_ms = 200, c.retry_cap_ms = 1000;
  return c;
}

static tether_engine_handler handler(void) {
  tether_engine_handler h;
  tether_engine_handler_init(&h);
  h.on_connection_state_changed = on_state;
  h.on_join_channel_success = on_join;
  h.on_leave_channel = on_leave;
  h.on_user_joined = on_user_joined;
  return h;
}

/* One create/join/leave/destroy cycle on `loop` against `srv`. Returns 1 when the engine
   connected and left as it should. */
static int cycle(struct ev_loop *loop, struct fake_server *srv) {
  tether_engine_config c = config_for(srv->address);
  tether_engine_handler h = handler();
  tether_engine *e = NULL;
  struct seen s;
  int leaves = srv->leaves;
  memset(&s, 0, sizeof s);
  if (tether_engine_create(loop, &c, &h, &s, &e) != TETHER_OK) return 0;
  if (tether_join_channel(e, channel_token("lobby", 0), "lobby", 7) != TETHER_OK) {
    tether_engine_destroy(e);
    return 0;
  }
  run_until_count(loop, &s.joined, 1, 5000);
  if (tether_leave_channel(e) != TETHER_OK) s.left = -1;
  tether_engine_destroy(e);
  run_until_count(loop, &srv->leaves, leaves + 1, 5000); /* the LEAVE reaches the server */
  return s.connected == 1 && s.joined == 1 && s.left_state == 1 && s.left == 1 &&
         s.interrupted == 0 && srv->leaves == leaves + 1;
}

/* How many cycles: 1,000 unless the command line says (fewer for the slower tools). */
static int cycles = 1000;

static void test_tether_engine_lifetime_aThousandCreateJoinLeaveDestroyCycles(void) {
  int before = open_descriptors(), good = 0;
  double start = now_ms();
  struct fake_server srv;
  struct ev_loop *loop = test_loop_new(&srv);
  for (int i = 0; i < cycles; i++) good += cycle(loop, &srv);
  CHECK(good == cycles);
  CHECK(srv.joins >= cycles); /* a retry may go out before the ACCEPT is read */
  CHECK(srv.leaves == cycles);
  test_loop_destroy(loop, &srv);
  CHECK(open_descriptors() == before);
  printf("%s: %d of %d cycles connected and left (%d JOINs, %d LEAVEs seen) in %.1f s\n",
         good == cycles ? "ok" : "FAIL", good, cycles, srv.joins, srv.leaves,
         (now_ms() - start) / 1000.0);
}

/* One thread: its own loop and fake server; `rounds` times, two engines created, joined,
   kept CONNECTED through heartbeats and a presence digest for a while, left, destroyed. */
struct worker {
  int rounds, good, heartbeats, users;
  int failed_create;
};

#define ENGINES_PER_THREAD 2

static void *worker_thread(void *arg) {
  struct worker *w = (struct worker *)arg;
  struct fake_server srv;
  struct ev_loop *loop = test_loop_new(&srv);
  for (int round = 0; round < w->rounds; round++) {
    tether_engine_config c = config_for(srv.address);
    tether_engine_handler h = handler();
    tether_engine *e[ENGINES_PER_THREAD];
    struct seen s[ENGINES_PER_THREAD];
    int joined = 0, ok = 1, heartbeats, leaves = srv.leaves;
    memset(s, 0, sizeof s);
    for (int i = 0; i < ENGINES_PER_THREAD; i++) {
      e[i] = NULL;
      if (tether_engine_create(loop, &c, &h, &s[i], &e[i]) != TETHER_OK) w->failed_create++;
      if (tether_join_channel(e[i], channel_token("lobby", 0), "lobby", (uint32_t)(7 + i)) != TETHER_OK) ok = 0;
    }
    for (double end = now_ms() + 5000; joined < ENGINES_PER_THREAD && now_ms() < end;) {
      ev_run(loop, EVRUN_ONCE);
      joined = 0;
      for (int i = 0; i < ENGINES_PER_THREAD; i++) joined += s[i].joined;
    }
    /* Traffic: heartbeats (10 ms apart) and their acks, five per engine at least (valgrind
       takes a while over the first round), and a presence digest. */
    heartbeats = srv.heartbeats;
    fake_push_presence(&srv); /* to the last engine that joined */
    run_until_count(loop, &srv.heartbeats, heartbeats + 5 * ENGINES_PER_THREAD, 5000);
    heartbeats = srv.heartbeats - heartbeats;
    w->heartbeats += heartbeats;
    for (int i = 0; i < ENGINES_PER_THREAD; i++) {
      w->users += s[i].users;
      if (tether_leave_channel(e[i]) != TETHER_OK) ok = 0;
      tether_engine_destroy(e[i]);
    }
    run_until_count(loop, &srv.leaves, leaves + ENGINES_PER_THREAD, 5000);
    for (int i = 0; i < ENGINES_PER_THREAD; i++) {
      ok = ok && s[i].connected == 1 && s[i].joined == 1 && s[i].left == 1 &&
           s[i].interrupted == 0;
    }
    ok = ok && heartbeats >= 5 * ENGINES_PER_THREAD && srv.leaves == leaves + ENGINES_PER_THREAD;
    if (!ok) {
      for (int i = 0; i < ENGINES_PER_THREAD; i++) {
        fprintf(stderr, "round %d engine %d: connected %d, joined %d, left %d, interrupted %d\n",
                round, i, s[i].connected, s[i].joined, s[i].left, s[i].interrupted);
      }
      fprintf(stderr, "round %d: %d heartbeats, %d of %d LEAVEs\n", round, heartbeats,
              srv.leaves - leaves, ENGINES_PER_THREAD);
    }
    w->good += ok;
  }
  test_loop_destroy(loop, &srv);
  return NULL;
}

static void test_tether_engines_onTwoLoops_onTwoThreads_atOnce(void) {
  struct worker w[2];
  pthread_t t[2];
  int before = open_descriptors();
  double start = now_ms();
  memset(w, 0, sizeof w);
  for (int i = 0; i < 2; i++) {
    w[i].rounds = 10;
    CHECK(pthread_create(&t[i], NULL, worker_thread, &w[i]) == 0);
  }
  for (int i = 0; i < 2; i++) CHECK(pthread_join(t[i], NULL) == 0);
  for (int i = 0; i < 2; i++) {
    CHECK(w[i].failed_create == 0);
    CHECK(w[i].good == w[i].rounds);
    CHECK(w[i].users == 3 * w[i].rounds); /* members 7, 8, 9, once per round */
  }
  CHECK(open_descriptors() == before);
  printf("%s: 2 threads x %d rounds x %d engines: %d + %d rounds clean, %d + %d heartbeats "
         "answered, in %.1f s\n",
         w[0].good + w[1].good == w[0].rounds + w[1].rounds ? "ok" : "FAIL", w[0].rounds,
         ENGINES_PER_THREAD, w[0].good, w[1].good, w[0].heartbeats, w[1].heartbeats,
         (now_ms() - start) / 1000.0);
}

/* Usage: test_cycles [CYCLES] */
int main(int argc, char **argv) {
  if (argc > 1 && atoi(argv[1]) > 0) cycles = atoi(argv[1]);
  RUN(test_tether_engine_lifetime_aThousandCreateJoinLeaveDestroyCycles);
  RUN(test_tether_engines_onTwoLoops_onTwoThreads_atOnce);
  return harness_report("c-cycles", NULL);
}
