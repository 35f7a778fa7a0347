// SPDX-License-Identifier: Apache-2.0
/* Calls made from inside the engine's callbacks: for every callback of tether_engine_handler
 * that a session can be driven to, tether_leave_channel inside it, then (separately)
 * tether_engine_destroy inside it. The rules of tether.h ("Calls from inside a callback"):
 * after leave, no callback but the leave's own (DISCONNECTED/LEAVE_CHANNEL, then
 * on_leave_channel) until the next join; after destroy, no callback at all, and the engine
 * is not touched again. Thresholds are scaled to tens of milliseconds; loopback only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tether.h"

enum kind {
  K_STATE, K_JOIN, K_REJOIN, K_LOST, K_LEAVE, K_USER_JOINED, K_USER_OFFLINE, K_WILL_EXPIRE,
  K_REQUEST_TOKEN, K_LOG, K_ATTEMPT, K_REMOTE_INTERRUPTED, K_REMOTE_RESUMED, K_COUNT
};
static const char *const kind_names[K_COUNT] = {
  "on_connection_state_changed", "on_join_channel_success", "on_rejoin_channel_success",
  "on_connection_lost", "on_leave_channel", "on_user_joined", "on_user_offline",
  "on_token_privilege_will_expire", "on_request_token", "on_log", "on_join_attempt",
  "on_remote_member_interrupted", "on_remote_member_resumed"};

enum action { A_LEAVE, A_DESTROY, A_COUNT };
static const char *const action_names[A_COUNT] = {"leave_channel", "engine_destroy"};

struct probe {
  tether_engine *engine;
  enum kind act_in;
  enum action action;
  int acted;
  int left_state, left_callback; /* the leave's own callbacks, after acting */
  int after;                     /* any other callback after acting: a broken rule */
  enum kind first_after;         /* the first of those, and its state and reason */
  int first_after_state, first_after_reason;
  int seen[K_COUNT];
  int rc;                        /* what the call inside the callback returned */
  int destroy_rc, again_rc;      /* destroy inside it, and again on the same handle */
  enum kind wait_for;            /* what run_until_seen waits for: */
  int wait_count;                /* this many callbacks of that kind */
};

/* Every callback comes here first. Returns 0 when the callback must do nothing more. */
static int hit(struct probe *p, enum kind k, int state, int reason) {
  if (p->acted) {
    int own_leave = p->action == A_LEAVE &&
                    ((k == K_STATE && state == TETHER_CONNECTION_STATE_DISCONNECTED &&
                      reason == TETHER_CONNECTION_CHANGED_LEAVE_CHANNEL) ||
                     k == K_LEAVE);
    if (own_leave && k == K_STATE) p->left_state++;
    else if (own_leave) p->left_callback++;
    else if (p->after++ == 0) {
      p->first_after = k, p->first_after_state = state, p->first_after_reason = reason;
    }
    return 0;
  }
  p->seen[k]++;
  if (k != p->act_in) return 1;
  p->acted = 1;
  if (p->action == A_LEAVE) {
    p->rc = tether_leave_channel(p->engine);
  } else {
    p->destroy_rc = tether_engine_destroy(p->engine);
    p->rc = tether_leave_channel(p->engine); /* refused: the handle is no longer live */
    p->again_rc = tether_engine_destroy(p->engine); /* destroyed already: 0, nothing */
    p->engine = NULL;
  }
  return 0;
}

static void on_state(void *c, tether_connection_state s, tether_connection_changed_reason r) {
  hit(c, K_STATE, (int)s, (int)r);
}
static void on_join(void *c, const char *ch, uint32_t uid, uint32_t e) {
  (void)ch; (void)uid; (void)e; hit(c, K_JOIN, 0, 0);
}
static void on_rejoin(void *c, const char *ch, uint32_t uid, uint32_t e) {
  (void)ch; (void)uid; (void)e; hit(c, K_REJOIN, 0, 0);
}
static void on_lost(void *c) { hit(c, K_LOST, 0, 0); }
static void on_leave(void *c) { hit(c, K_LEAVE, 0, 0); }
static void on_user_joined(void *c, uint32_t uid, uint32_t e) { (void)uid; (void)e; hit(c, K_USER_JOINED, 0, 0); }
static void on_user_offline(void *c, uint32_t uid, tether_user_offline_reason r) {
  (void)uid; (void)r; hit(c, K_USER_OFFLINE, 0, 0);
}
static void on_will_expire(void *c, const char *t) { (void)t; hit(c, K_WILL_EXPIRE, 0, 0); }
static void on_request_token(void *c) { hit(c, K_REQUEST_TOKEN, 0, 0); }
static void on_log(void *c, tether_log_level l, const char *m) { (void)l; (void)m; hit(c, K_LOG, 0, 0); }
static void on_attempt(void *c, uint32_t a, uint32_t n, uint32_t g) {
  (void)a; (void)n; (void)g; hit(c, K_ATTEMPT, 0, 0);
}
static void on_remote_interrupted(void *c, uint32_t uid) { (void)uid; hit(c, K_REMOTE_INTERRUPTED, 0, 0); }
static void on_remote_resumed(void *c, uint32_t uid) { (void)uid; hit(c, K_REMOTE_RESUMED, 0, 0); }

static int acted_or_seen(void *ctx) {
  const struct probe *p = (const struct probe *)ctx;
  return p->acted || p->seen[p->wait_for] >= p->wait_count;
}

/* Runs the loop until the probe has acted or seen `count` callbacks of `k`, at most `ms`. */
static void run_until_seen(struct ev_loop *loop, struct probe *p, enum kind k, int count,
                           double ms) {
  p->wait_for = k;
  p->wait_count = count;
  run_until(loop, acted_or_seen, p, ms);
}

/* Drives one engine through a story that reaches every callback, acting in `kind`. */
static void story(enum kind kind, enum action action) {
  struct fake_server srv;
  struct ev_loop *loop = test_loop_new(&srv);
  struct probe p;
  tether_engine_config c = engine_config(srv.address);
  tether_engine_handler h;
  unsigned char garbage[2] = {'X', 'X'};
  memset(&p, 0, sizeof p);
  p.act_in = kind;
  p.action = action;
  /* The timeline in tens of milliseconds, the token's warning 50 ms before its expiry, and
     no giving up within the story. */
  c.heartbeat_interval_ms = 10, c.interrupted_after_ms = 60, c.lost_after_ms = 150;
  c.remote_offline_after_ms = 200, c.token_will_expire_before_ms = 50;
  c.give_up_after_ms = 5000, c.retry_base_ms = 10, c.retry_cap_ms = 40;
  /* Each retry is a new handshake attempt, and only the last two attempts' answers are
     taken (docs/PROTOCOL.md §12.5): under valgrind a handshake's round trip passes 40 ms,
     so there the retries wait longer. */
  if (getenv("TETHER_TEST_NO_TIMING")) c.retry_base_ms = 50, c.retry_cap_ms = 250;
  tether_engine_handler_init(&h);
  h.on_connection_state_changed = on_state;
  h.on_join_channel_success = on_join;
  h.on_rejoin_channel_success = on_rejoin;
  h.on_connection_lost = on_lost;
  h.on_leave_channel = on_leave;
  h.on_user_joined = on_user_joined;
  h.on_user_offline = on_user_offline;
  h.on_token_privilege_will_expire = on_will_expire;
  h.on_request_token = on_request_token;
  h.on_log = on_log;
  h.on_join_attempt = on_attempt;
  h.on_remote_member_interrupted = on_remote_interrupted;
  h.on_remote_member_resumed = on_remote_resumed;
  if (tether_engine_create(loop, &c, &h, &p, &p.engine) != TETHER_OK) {
    CHECK(!"create");
    return;
  }
  /* CONNECTING, a join attempt, CONNECTED and the join's success. */
  tether_join_channel(p.engine, channel_token("lobby", 0), "lobby", 7);
  run_until_seen(loop, &p, K_JOIN, 1, 2000);
  /* Members 7, 8, 9 join; a datagram that does not decode is logged. */
  if (!p.acted) fake_push_presence(&srv);
  run_until_seen(loop, &p, K_USER_JOINED, 3, 500);
  if (!p.acted) fake_send_bytes(&srv, garbage, sizeof garbage);
  run_until_seen(loop, &p, K_LOG, 1, 500);
  /* The members fall silent (the server's acks go on): interrupted, heard again: resumed,
     silent again: offline. */
  run_until_seen(loop, &p, K_REMOTE_INTERRUPTED, 3, 2000);
  if (!p.acted) fake_push_presence(&srv);
  run_until_seen(loop, &p, K_REMOTE_RESUMED, 3, 500);
  run_until_seen(loop, &p, K_USER_OFFLINE, 3, 2000);
  /* The server falls silent: INTERRUPTED, LOST; it answers again, with a token that has
     100 ms left: the rejoin's success, the warning, then the expiry. */
  srv.silent = 1;
  run_until_seen(loop, &p, K_LOST, 1, 2000);
  srv.silent = 0;
  srv.token_ms = 100;
  run_until_seen(loop, &p, K_REJOIN, 1, 2000);
  run_until_seen(loop, &p, K_WILL_EXPIRE, 1, 2000);
  run_until_seen(loop, &p, K_REQUEST_TOKEN, 1, 2000);
  /* The app leaves. */
  if (!p.acted) tether_leave_channel(p.engine);
  run_for(loop, 50); /* anything that would still come, comes now */

  CHECK(p.acted);
  CHECK(p.after == 0);
  if (p.after) {
    fprintf(stderr, "  %d callbacks after acting in %s, the first %s (state %d, reason %d)\n",
            p.after, kind_names[kind], kind_names[p.first_after], p.first_after_state,
            p.first_after_reason);
  }
  if (action == A_LEAVE) {
    CHECK(p.rc == TETHER_OK);
    if (kind == K_LEAVE) { /* leaving again inside on_leave_channel: nothing more */
      CHECK(p.left_state == 0 && p.left_callback == 0);
    } else {
      CHECK(p.left_state == 1 && p.left_callback == 1);
    }
    CHECK(tether_get_connection_state(p.engine) == TETHER_CONNECTION_STATE_DISCONNECTED);
    /* A new join works after a leave made inside a callback. */
    p.acted = 0;
    p.act_in = K_COUNT;
    memset(p.seen, 0, sizeof p.seen);
    srv.token_ms = 0;
    CHECK(tether_join_channel(p.engine, channel_token("lobby", 0), "lobby", 7) == TETHER_OK);
    run_until_seen(loop, &p, K_JOIN, 1, 2000);
    CHECK(p.seen[K_JOIN] == 1);
  } else {
    CHECK(p.rc == TETHER_ERR_NOT_INITIALIZED);
    CHECK(p.destroy_rc == TETHER_OK && p.again_rc == TETHER_OK);
    CHECK(p.engine == NULL);
  }
  tether_engine_destroy(p.engine);
  test_loop_destroy(loop, &srv);
}

/* One case per callback and action: test_tether_<action>_inside_<callback>. */
int main(void) {
  static char names[K_COUNT][A_COUNT][96];
  for (int k = 0; k < K_COUNT; k++) {
    for (int a = 0; a < A_COUNT; a++) {
      snprintf(names[k][a], sizeof names[k][a], "test_tether_%s_inside_%s", action_names[a],
               kind_names[k]);
      harness_begin(names[k][a]);
      story((enum kind)k, (enum action)a);
      harness_end();
    }
  }
  return harness_report("c-reentry", NULL);
}
