// SPDX-License-Identifier: Apache-2.0
/* Address and route changes, in a network namespace this test makes for itself (it needs
 * root; nothing outside the namespace is touched and no datagram leaves it). The engine
 * talks to 10.9.9.1 through a veth whose other end answers nothing, so it stays CONNECTING
 * and each JOIN it sends is one on_join_attempt. It must send a new JOIN when the route to
 * its server leaves from another source address, once per burst of changes, and not for
 * changes that do not touch that route: another interface with IPv4 and IPv6 addresses
 * coming up, a secondary address on its own interface. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tether.h"

static int attempts;
static void on_attempt(void *ctx, uint32_t attempt, uint32_t next, uint32_t give_up) {
  (void)ctx; (void)attempt; (void)next; (void)give_up;
  attempts++;
}

#define sh(command) CHECK(system(command) == 0)

static void test_tether_engine_rejoins_whenItsRouteLeavesFromAnotherAddress(void) {
  struct ev_loop *loop;
  tether_engine_config c = engine_config("10.9.9.1:7000");
  tether_engine_handler h;
  tether_engine *engine = NULL;
  sh("ip link set lo up && ip link add v0 type veth peer name v1 && ip link set v0 up && "
     "ip link set v1 up && ip addr add 10.9.9.2/24 dev v0");
  loop = ev_loop_new(0);
  c.retry_base_ms = 60000; /* no retry of its own during the test */
  c.retry_cap_ms = 60000;
  c.give_up_after_ms = 600000;
  tether_engine_handler_init(&h);
  h.on_join_attempt = on_attempt;
  CHECK(tether_engine_create(loop, &c, &h, NULL, &engine) == TETHER_OK);
  CHECK(tether_join_channel(engine, channel_token("lobby", 0), "lobby", 7) == TETHER_OK);
  run_for(loop, 300);
  CHECK(attempts == 1);

  /* Another interface with addresses of both families: the route to 10.9.9.1 is the same. */
  sh("ip link add w0 type veth peer name w1 && ip link set w0 up && "
     "ip addr add 10.8.8.8/24 dev w0 && ip -6 addr add fd00::8/64 dev w0 nodad");
  run_for(loop, 400);
  CHECK(attempts == 1);
  /* A secondary address on the engine's own interface: the source stays 10.9.9.2. */
  sh("ip addr add 10.9.9.3/24 dev v0");
  run_for(loop, 400);
  CHECK(attempts == 1);

  /* The route now leaves from 10.9.9.3: one JOIN at once, through a fresh socket. */
  sh("ip route replace 10.9.9.0/24 dev v0 src 10.9.9.3");
  run_for(loop, 400);
  CHECK(attempts == 2);

  /* A burst: the source moves back and more addresses come and go: one JOIN. */
  sh("ip route replace 10.9.9.0/24 dev v0 src 10.9.9.2 && ip addr add 10.8.8.9/24 dev w0 && "
     "ip addr del 10.8.8.8/24 dev w0 && ip -6 addr add fd00::9/64 dev w0 nodad");
  run_for(loop, 400);
  CHECK(attempts == 3);

  tether_engine_destroy(engine);
  ev_loop_destroy(loop);
}

int main(void) {
  static char note[80];
  if (unshare(CLONE_NEWNET) != 0) {
    snprintf(note, sizeof note, "cannot make a network namespace (%s): run as root",
             strerror(errno));
    return harness_skip("netns", note);
  }
  RUN(test_tether_engine_rejoins_whenItsRouteLeavesFromAnotherAddress);
  snprintf(note, sizeof note, "%d JOINs for 2 route changes out of 5 kinds of change",
           attempts - 1);
  return harness_report("netns", note);
}
