// SPDX-License-Identifier: Apache-2.0
/* Datagrams from another source than the server never reach the session: the engine's
 * socket is connected to the server, so the kernel drops them before the engine reads.
 * A KICK carrying the session's own cookie is sent to the device's socket from another
 * loopback address and from another port of the server's address: nothing changes, not
 * even the engine's receive counters. The same KICK from the server's socket ends the
 * session (BANNED), so the datagram itself is one the engine would act on. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "tether.h"

struct seen {
  int changes, join_success;
  int last_state, last_reason;
};

static void on_state(void *ctx, tether_connection_state state, tether_connection_changed_reason r) {
  struct seen *s = (struct seen *)ctx;
  s->changes++;
  s->last_state = (int)state;
  s->last_reason = (int)r;
}
static void on_join(void *ctx, const char *channel, uint32_t uid, uint32_t elapsed) {
  (void)channel; (void)uid; (void)elapsed;
  ((struct seen *)ctx)->join_success++;
}

/* Sends `bytes` to the device's socket from a fresh socket bound to `host` (any port). */
static int send_from(const char *host, const struct fake_server *srv, const unsigned char *bytes,
                     size_t n) {
  struct sockaddr_in a;
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  ssize_t sent;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  inet_pton(AF_INET, host, &a.sin_addr);
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  sent = sendto(fd, bytes, n, 0, (const struct sockaddr *)&srv->peer, srv->peerlen);
  close(fd);
  return sent == (ssize_t)n ? 0 : -1;
}

static tether_engine_stats stats(tether_engine *e) {
  tether_engine_stats st;
  memset(&st, 0, sizeof st);
  st.size = sizeof st;
  tether_engine_get_stats(e, &st);
  return st;
}

static void test_tether_engine_takesDatagramsOnlyFromItsServer(void) {
  struct fake_server srv;
  struct ev_loop *loop = test_loop_new(&srv);
  struct seen seen;
  tether_engine *e = NULL;
  tether_engine_config c = engine_config(srv.address);
  tether_engine_handler h;
  tether_engine_stats before, after;
  unsigned char kick[64], ack[64], body[12];
  size_t kick_length, ack_length;
  unsigned char banned = 1;
  int changes;

  memset(&seen, 0, sizeof seen);
  c.heartbeat_interval_ms = 10;
  c.interrupted_after_ms = 2000;
  c.lost_after_ms = c.remote_offline_after_ms = c.give_up_after_ms = 4000;
  tether_engine_handler_init(&h);
  h.on_connection_state_changed = on_state;
  h.on_join_channel_success = on_join;
  CHECK(tether_engine_create(loop, &c, &h, &seen, &e) == TETHER_OK);
  CHECK(tether_join_channel(e, channel_token("lobby", 0), "lobby", 7) == TETHER_OK);
  run_for(loop, 200);
  CHECK(seen.join_success == 1);

  /* The server goes quiet, so whatever the engine receives from now on is the test's. */
  srv.silent = 1;
  run_for(loop, 50);
  before = stats(e);
  changes = seen.changes;
  kick_length = fake_datagram(&srv, WIRE_KICK, &banned, 1, kick); /* sealed: 35 bytes */
  memset(body, 0, sizeof body);
  ack_length = fake_datagram(&srv, WIRE_HEARTBEAT_ACK, body, sizeof body, ack);
  CHECK(kick_length == 35 && ack_length == 46);
  CHECK(send_from("127.0.0.2", &srv, kick, kick_length) == 0); /* another address */
  CHECK(send_from("127.0.0.1", &srv, kick, kick_length) == 0); /* the server's, another port */
  CHECK(send_from("127.0.0.3", &srv, ack, ack_length) == 0);
  CHECK(send_from("127.0.0.1", &srv, (const unsigned char *)"XX", 2) == 0);
  run_for(loop, 50);
  after = stats(e);
  CHECK(seen.changes == changes);
  CHECK(tether_get_connection_state(e) == TETHER_CONNECTION_STATE_CONNECTED);
  CHECK(after.datagrams_in == before.datagrams_in);
  CHECK(after.datagrams_foreign == before.datagrams_foreign);
  CHECK(after.datagrams_malformed == before.datagrams_malformed);

  /* Control: the same KICK from the server's own socket is taken. */
  fake_send_bytes(&srv, kick, kick_length);
  run_for(loop, 50);
  after = stats(e);
  CHECK(after.datagrams_in == before.datagrams_in + 1);
  CHECK(tether_get_connection_state(e) == TETHER_CONNECTION_STATE_FAILED);
  CHECK(seen.last_reason == TETHER_CONNECTION_CHANGED_BANNED_BY_SERVER);

  tether_engine_destroy(e);
  test_loop_destroy(loop, &srv);
}

ONE_CASE_MAIN("source", test_tether_engine_takesDatagramsOnlyFromItsServer,
              "a KICK under the session's cookie from 3 other sources and from the server")
