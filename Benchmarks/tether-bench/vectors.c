// SPDX-License-Identifier: Apache-2.0
/* tether-bench --vectors: the libev designs' version 2 client (client_v2.c) against
 * PyNaCl's vectors (Tests/c/v2_vectors.h, scripts/test/v2-vectors.py), which share no code
 * with it nor with the C tests' edge it is otherwise run against (both are written on
 * Tests/c/wire_v2.c): the channel vector's INIT byte for byte from the same seeded draws
 * and cookie, its CONFIRM from the RESPONSE, the keys, the first ACCEPT taken and the first
 * heartbeat sealed byte for byte, the session's RESET taken; a RESPONSE or a RESET altered
 * anywhere, and the ACCEPT again, dropped. Runs anywhere the bench runs (under qemu-user too). */
#include "bench.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "../../Tests/c/v2_vectors.h"
#include "client_v2.h"

static int failures;

static void check(int ok, const char *what, const char *vector) {
  if (ok) return;
  failures++;
  fprintf(stderr, "tether-bench --vectors: %s: %s\n", vector, what);
}

static void channel_vector(const struct tether_v2_handshake_vector *v) {
  struct v2_client c;
  uint8_t seed[randombytes_SEEDBYTES], stream[48], out[V2_CLIENT_OUT], reply[V2_CLIENT_OUT];
  uint8_t response[269];
  size_t reply_length = 0;
  int64_t now = 1000000000; /* any monotonic time: the cookie and the ticket live from it */
  check(v2_client_init(&c, v->token, v->app_id, v->channel_or_user, v->uid) == 0, "token parsed",
        v->name);
  memcpy(c.cookie, v->cookie, 16); /* the cookie a COOKIE_REPLY would have given */
  c.cookie_until = now + 1;
  memset(seed, v->seed, sizeof seed);
  randombytes_buf_deterministic(stream, sizeof stream, seed); /* N_d, then e_d */
  check(v2_client_initiate(&c, v->flags & 1, now, stream, out) == 469 &&
            memcmp(out, v->initiation, v->initiation_length) == 0,
        "INIT byte for byte", v->name);
  /* Every bit of the RESPONSE flipped: dropped, and the attempt still answerable. */
  for (size_t bit = 0; bit < 8 * sizeof response; bit += 7) {
    memcpy(response, v->response, sizeof response);
    response[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    check(v2_client_take(&c, response, sizeof response, now, reply, &reply_length) ==
                  V2_CLIENT_DROPPED &&
              reply_length == 0,
          "an altered RESPONSE dropped", v->name);
  }
  check(v2_client_take(&c, v->response, v->response_length, now, reply, &reply_length) ==
                V2_CLIENT_ANSWERED &&
            reply_length == v->confirm_length && memcmp(reply, v->confirm, reply_length) == 0,
        "CONFIRM byte for byte", v->name);
  check(c.pending.id == v->session_id && memcmp(c.pending.d2e, v->device_to_edge_key, 32) == 0 &&
            memcmp(c.pending.e2d, v->edge_to_device_key, 32) == 0 &&
            memcmp(c.pending.resume, v->resume_key_of_session, 32) == 0,
        "session keys", v->name);
  check(v2_client_take(&c, v->response, v->response_length, now, reply, &reply_length) ==
            V2_CLIENT_DROPPED,
        "the RESPONSE again dropped (the attempts ended)", v->name);
  check(v2_client_join(&c, 0, now + 1, out) == 201 && memcmp(out, v->confirm, 201) == 0,
        "the CONFIRM repeated at a retry", v->name);
  check(v2_client_take(&c, v->first_accept, v->first_accept_length, now, reply, &reply_length) ==
            V2_CLIENT_ACCEPTED,
        "first ACCEPT taken", v->name);
  check(memcmp(c.reset, v->accept_payload + 18, 16) == 0, "reset value kept", v->name);
  check(v2_client_take(&c, v->first_accept, v->first_accept_length, now, reply, &reply_length) ==
            V2_CLIENT_DROPPED,
        "the ACCEPT again dropped", v->name);
  /* The session's RESET (§12.9: kind, id, the ACCEPT's reset value) taken; altered, not. */
  out[0] = 0x08;
  wire_v2_put64(out + 1, v->session_id);
  memcpy(out + 9, v->accept_payload + 18, 16);
  for (size_t bit = 0; bit < 8 * 25; bit++) {
    memcpy(response, out, 25);
    response[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    check(v2_client_take(&c, response, 25, now, reply, &reply_length) == V2_CLIENT_DROPPED,
          "an altered RESET dropped", v->name);
  }
  check(v2_client_take(&c, out, 25, now, reply, &reply_length) == V2_CLIENT_RESET,
        "the session's RESET taken", v->name);
  check(v2_client_heartbeat(&c, wire_v2_get32(v->heartbeat_payload + 1), out) ==
                (int)v->first_heartbeat_length &&
            memcmp(out, v->first_heartbeat, v->first_heartbeat_length) == 0,
        "first heartbeat byte for byte", v->name);
  v2_client_wipe(&c);
}

int vectors_check(void) {
  int checked = 0;
  if (sodium_init() < 0) return 1;
  for (int i = 0; i < TETHER_V2_HANDSHAKE_VECTORS; i++) {
    const struct tether_v2_handshake_vector *v = &tether_v2_handshake_vectors[i];
    if (v->kind != 1) continue; /* the bench's clients join channels only */
    channel_vector(v);
    checked++;
  }
  if (checked == 0) check(0, "no channel vector", "v2_vectors.h");
  printf("tether-bench --vectors: the libev designs' v2 client against %d PyNaCl vector%s: %s\n",
         checked, checked == 1 ? "" : "s", failures ? "FAILED" : "byte for byte");
  return failures ? 1 : 0;
}
