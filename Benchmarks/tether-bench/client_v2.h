// SPDX-License-Identifier: Apache-2.0
/* client_v2.h - the device's half of protocol version 2 (docs/PROTOCOL.md §12), as a C
 * programmer writes it on libsodium for a small client of its own: what tether-bench's two
 * libev designs ("previous" and "naive") speak, so that they cost what a hand-written
 * version 2 client costs, beside the library.
 *
 * One value per session, sans-IO: it writes the datagrams to send into the caller's buffer
 * and takes the datagrams that arrive; the caller owns the socket and every timer (the
 * designs differ only in their timers). It does what a channel session of the bench needs:
 * - the token's text parsed once (§12.4: W, the device secret, the public expiry);
 * - the handshake (§12.5): each attempt a new INIT with a fresh N_d and ephemeral X25519
 *   key, the current and the previous attempt answerable; a RESPONSE answered with the
 *   CONFIRM at once, the same CONFIRM repeated at each retry until its ticket lifetime; a
 *   COOKIE_REPLY kept 120 s and answered with a new INIT (with mac2) at once; REFUSE_CLEAR
 *   and REFUSE_SEALED taken for an open attempt; every rejoin a resume (§12.10: the old
 *   session named and proven with its k_resume) once an ACCEPT confirmed keys;
 * - DATA (§12.7): HEARTBEAT and LEAVE sealed under the direction's key and the next
 *   counter, the header as associated data; the edge's DATA opened behind the 128-counter
 *   replay window; ACCEPT, REFUSE, HEARTBEAT_ACK and PATH_CHALLENGE (answered at once)
 *   read, every other type opened and left to the caller;
 * - RESET (§12.9) taken only with the confirmed session's id and reset value.
 * Not done (the bench never needs them): renewal, rekey at §12.7's soft limits (at a few
 * datagrams a second they are centuries away; the hard limit is kept: nothing is sealed
 * past it), login sessions.
 *
 * The wire and key schedule are Tests/c/wire_v2.c's, the same code the C tests' edge is
 * written on (edge_v2.c); `tether-bench --vectors` checks this file against PyNaCl's
 * vectors (Tests/c/v2_vectors.h), which shares nothing with either. */
#ifndef TETHER_BENCH_CLIENT_V2_H
#define TETHER_BENCH_CLIENT_V2_H
#include <stddef.h>
#include <stdint.h>

#include "../../Tests/c/wire_v2.h"

enum { V2_CLIENT_OUT = 469 }; /* room for the largest datagram the client writes (INIT) */

/* What a datagram from the edge did (v2_client_take). */
enum v2_client_event {
  V2_CLIENT_DROPPED,  /* not this session's, did not open, a replay, or malformed */
  V2_CLIENT_ANSWERED, /* a handshake step or a PATH_CHALLENGE: send the reply written */
  V2_CLIENT_ACCEPTED, /* the ACCEPT of this join's CONFIRM: the session is joined */
  V2_CLIENT_REFUSED,  /* the edge refused this join (v2_client.refusal says why) */
  V2_CLIENT_ACK,      /* a HEARTBEAT_ACK of the joined session */
  V2_CLIENT_OPENED,   /* other DATA of the session, opened (PRESENCE, KICK, ...) */
  V2_CLIENT_RESET     /* the joined session's RESET: the edge lost it; join again */
};

/* One handshake's keys. */
struct v2_client_keys {
  uint64_t id; /* the edge's session id; 0: none */
  uint8_t d2e[32], e2d[32], resume[32];
  uint64_t next_counter; /* sealed under d2e */
  struct wire_v2_window window; /* opened under e2d */
};

struct v2_client_attempt {
  uint8_t nonce[16], secret[32]; /* N_d and the ephemeral secret */
  uint8_t h2[32], ck[32];        /* the transcript where the INIT left it */
  int open, cookie_taken;
};

struct v2_client {
  uint8_t w[WIRE_V2_W_SIZE], psk[32]; /* the token: W, and the device secret */
  uint64_t expiry;                    /* the token's public expiry, unix s; 0: never */
  uint8_t request[168];               /* Q without flags and resume fields */
  struct v2_client_attempt attempts[2];
  int current, rejoin;
  uint8_t confirm[201];      /* the CONFIRM to repeat */
  int64_t confirm_until;     /* ns; 0: no CONFIRM out */
  struct v2_client_keys pending, session; /* the CONFIRM's keys; the ones an ACCEPT confirmed */
  uint8_t reset[16];         /* the session's reset value */
  uint8_t cookie[16];
  int64_t cookie_until;      /* ns; 0: no cookie */
  int refusal;               /* the last refusal's reason (REFUSE_CLEAR: 3, invalid token) */
};

/* Parses `token` (a version 2 token's text) and the request it will make: a channel join
   of `app_id` (1 ... 64 bytes), `channel` (1 ... 63) and `uid`. 0, or -1 (nothing kept). */
int v2_client_init(struct v2_client *c, const char *token, const char *app_id,
                   const char *channel, uint32_t uid);

/* A join's next datagram into `out` (V2_CLIENT_OUT bytes) at `now` (ns, monotonic): the
   CONFIRM again while one is out and its ticket lives, else a new INIT (`rejoin`: the
   request's rejoin flag). Returns its size; 0 when nothing may be sent (the token's public
   expiry has passed on this machine's clock); -1 if libsodium refused a key. */
int v2_client_join(struct v2_client *c, int rejoin, int64_t now, uint8_t *out);

/* A new INIT from the attempt's 48 random bytes (N_d, then the ephemeral secret): what
   v2_client_join does after drawing them (the vectors give their own). Returns 469 or -1. */
int v2_client_initiate(struct v2_client *c, int rejoin, int64_t now, const uint8_t random[48],
                       uint8_t *out);

/* Takes a datagram of `length` bytes; a reply to send at once goes into `reply`
   (V2_CLIENT_OUT bytes) and its size into `*reply_length` (0: none). */
enum v2_client_event v2_client_take(struct v2_client *c, const uint8_t *in, size_t length,
                                    int64_t now, uint8_t *reply, size_t *reply_length);

/* HEARTBEAT (`sequence`) or LEAVE of the session into `out` (42 bytes), under the keys of
   the CONFIRM out, else of the joined session. Returns 42, or 0 (no keys, or past the hard
   limit: nothing sealed). */
int v2_client_heartbeat(struct v2_client *c, uint32_t sequence, uint8_t *out);
int v2_client_leave(struct v2_client *c, uint8_t *out);

/* Wipes every secret the client holds. */
void v2_client_wipe(struct v2_client *c);

#endif
