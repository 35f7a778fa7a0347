// SPDX-License-Identifier: Apache-2.0
/* edge_v2.h - the edge's half of protocol version 2 (docs/PROTOCOL.md §12.3 - §12.9),
 * written a second time, in C on libsodium alone, for the C tests: what their fake server
 * (harness.c) answers a device with once the library speaks version 2.
 *
 * It shares no code with the library (TetherCore's EdgeHandshake, TetherEdge's front), so
 * a test that runs the library against it checks the two against each other, and
 * test_edge_v2.c checks this one against PyNaCl's vectors (Tests/c/v2_vectors.h). What the
 * device computes the same way (the transcript, DATA and its window, mac2, the resume
 * proof) is wire_v2.c's, which tether-bench's version 2 clients share: link both files.
 *
 * A fake, not an edge: it keeps what it likes (no stateless ticket: the caller gives the
 * ticket's bytes and keeps the session), has no cookies under load, no replay memory of
 * tickets, no caps. Every function checks the sizes it is given and returns a negative
 * EDGE_V2_* code for anything it would drop, never reads or writes past a buffer. */
#ifndef TETHER_TEST_EDGE_V2_H
#define TETHER_TEST_EDGE_V2_H
#include <stddef.h>
#include <stdint.h>

#include "wire_v2.h"

enum {
  EDGE_V2_MALFORMED = WIRE_V2_MALFORMED, /* wrong size, kind or layout: dropped */
  EDGE_V2_NOT_OPENED = -2,               /* the token did not open: REFUSE_CLEAR */
  EDGE_V2_UNOPENED = WIRE_V2_UNOPENED,   /* a tag or sealed part did not verify: dropped */
  EDGE_V2_REPLAYED = WIRE_V2_REPLAYED,   /* a DATA counter already opened, or too old */
  EDGE_V2_BAD_KEY = -5                   /* libsodium refused (an all-zero X25519 result) */
};

enum {
  EDGE_V2_INIT_SIZE = 469, EDGE_V2_RESPONSE_SIZE = 269, EDGE_V2_CONFIRM_SIZE = 201,
  EDGE_V2_REFUSE_CLEAR_SIZE = 18, EDGE_V2_REFUSE_SEALED_SIZE = 59,
  EDGE_V2_COOKIE_REPLY_SIZE = 73, EDGE_V2_RESET_SIZE = 25, EDGE_V2_TICKET_SIZE = 176,
  EDGE_V2_DATA_OVERHEAD = 33 /* header 17, tag 16 */
};

/* The keys of an app certificate (§12.3). */
struct edge_v2_certificate {
  uint8_t token_key[32]; /* K_token */
  uint8_t reset_key[32]; /* K_reset */
  uint8_t key_id[2];
};

/* Computes them from `certificate` (any non-empty bytes). Returns 0 or EDGE_V2_MALFORMED. */
int edge_v2_certificate_keys(struct edge_v2_certificate *out, const void *certificate,
                             size_t length);

/* A version 2 token's text (§12.4, 337 characters and a NUL into `out`, room for 338) for
   `kind` (1 channel, 2 login), app id, channel name or user id (1 ... 64 bytes each), uid
   (0 for a login) and expiry (unix seconds, 0: never), from 56 random bytes (the device
   secret, then the nonce: contrib/python/tether_token.py's order). Returns 0 or
   EDGE_V2_MALFORMED. */
int edge_v2_mint(char *out, const struct edge_v2_certificate *keys, uint8_t kind,
                 const char *app_id, const char *name, uint32_t uid, uint64_t expiry,
                 const uint8_t random[56]);

/* An INIT, opened (rules 1, 3 and 4 of §12.6; the caller judges rule 5). */
struct edge_v2_init {
  uint8_t nonce[16];       /* N_d */
  uint8_t ephemeral[32];   /* e_d, the device's public key */
  uint8_t h1[32];          /* what the resume proof is over */
  uint8_t hash[32];        /* h2 */
  uint8_t chaining[32];    /* ck_e (a secret) */
  uint64_t expiry;         /* the token's public expiry, unix seconds (0: never) */
  uint8_t grant_kind;      /* the token's: 1 channel, 2 login */
  char grant_app[65];      /* NUL-terminated */
  char grant_name[65];
  uint32_t grant_uid;
  uint8_t flags;           /* the request's (bit 0 rejoin/relogin, bit 1 resume) */
  uint8_t versions[4];
  uint32_t uid;            /* asked for */
  char app[65];
  uint8_t kind;            /* 1 channel, 2 login */
  char name[65];
  uint64_t resume_id;
  uint8_t proof[16];
};

/* Opens `init` (`length` bytes) with the certificate's keys. Returns 0; EDGE_V2_MALFORMED
   (size, version, a request that breaks §12.5's layout); EDGE_V2_NOT_OPENED (the token:
   answer edge_v2_refuse_clear); EDGE_V2_UNOPENED (the request did not open: dropped). */
int edge_v2_open_init(struct edge_v2_init *out, const struct edge_v2_certificate *keys,
                      const uint8_t *init, size_t length);

/* Whether the INIT's mac2 is PRF16(cookie, INIT[0 ..< 453], "tether2 mac2"): 1 or 0. */
int edge_v2_mac2_valid(const uint8_t *init, size_t length, const uint8_t cookie[16]);

/* Whether `proof` is the resume proof of the session whose k_resume is `resume_key`. */
int edge_v2_proof_valid(const struct edge_v2_init *init, const uint8_t resume_key[32]);

/* One session's keys and counters, as the fake server keeps them. */
struct edge_v2_session {
  uint64_t id;
  uint8_t secret[32];   /* S */
  uint8_t d2e[32], e2d[32], resume[32];
  uint8_t ticket[EDGE_V2_TICKET_SIZE];
  uint64_t next_counter; /* the next counter sealed under e2d */
  struct wire_v2_window replay; /* what was opened under d2e */
};

/* Writes the RESPONSE (269 bytes) to `init` into `out`, from the edge's random bytes
   (`random`: N_e, then the ephemeral secret), the session id, the ticket lifetime and the
   ticket's bytes; fills `session`. Returns its size, or EDGE_V2_BAD_KEY. */
int edge_v2_respond(uint8_t *out, struct edge_v2_session *session,
                    const struct edge_v2_init *init, const uint8_t random[48], uint64_t id,
                    uint32_t lifetime_ms, const uint8_t ticket[EDGE_V2_TICKET_SIZE]);

/* Checks a CONFIRM against `session`: 0, EDGE_V2_MALFORMED (size, kind, another session id
   or ticket) or EDGE_V2_UNOPENED (its tag). */
int edge_v2_check_confirm(const struct edge_v2_session *session, const uint8_t *confirm,
                          size_t length);

/* Seals `payload` (type byte and body, 1 ... 1167 bytes) as the session's next DATA into
   `out` (room for length + 33). Returns the datagram's size or EDGE_V2_MALFORMED. */
int edge_v2_seal(uint8_t *out, struct edge_v2_session *session, const uint8_t *payload,
                 size_t length);

/* Opens a DATA datagram of the session into `payload` (room for length - 33). Returns the
   payload's size, or EDGE_V2_MALFORMED, EDGE_V2_REPLAYED, EDGE_V2_UNOPENED (nothing of
   the session changed). */
int edge_v2_open(uint8_t *payload, struct edge_v2_session *session, const uint8_t *datagram,
                 size_t length);

/* The session id a datagram of `length` bytes names at bytes 1 ... 8 (DATA, CONFIRM), or
   0 if it is too short. */
uint64_t edge_v2_session_id(const uint8_t *datagram, size_t length);

/* REFUSE_CLEAR (18 bytes) for `init`'s nonce. Returns its size. */
int edge_v2_refuse_clear(uint8_t *out, const uint8_t nonce[16]);

/* REFUSE_SEALED (59 bytes) under k_refuse of `init`, nonce from `random` (24). */
int edge_v2_refuse_sealed(uint8_t *out, const struct edge_v2_init *init, uint8_t reason,
                          uint8_t detail, const uint8_t random[24]);

/* COOKIE_REPLY (73 bytes) under k_cookie of `init`, nonce from `random` (24). */
int edge_v2_cookie_reply(uint8_t *out, const struct edge_v2_init *init,
                         const uint8_t cookie[16], const uint8_t random[24]);

/* RESET (25 bytes) of session `id`: its reset value, PRF16(K_reset, edge id || id,
   "tether2 reset"), into `value` if not NULL. */
int edge_v2_reset(uint8_t *out, const struct edge_v2_certificate *keys, const char *edge_id,
                  uint64_t id, uint8_t value[16]);

/* Wipes what the session and the INIT hold secret. */
void edge_v2_wipe(struct edge_v2_session *session, struct edge_v2_init *init);

#endif
