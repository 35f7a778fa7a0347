// SPDX-License-Identifier: Apache-2.0
/* wire_v2.h - what both halves of protocol version 2 compute the same way
 * (docs/PROTOCOL.md §12), in C on libsodium alone: §12.1's hash and PRF, the handshake's
 * transcript and key schedule (§12.5), the keys of a session, DATA sealed and opened behind
 * the replay window (§12.7), mac2, the resume proof, and a token's text decoded (§12.4).
 *
 * Written once for the two C programs that speak version 2 without the library: the C
 * tests' edge (edge_v2.c: the edge's half) and tether-bench's libev clients
 * (Benchmarks/tether-bench/client_v2.c: the device's half). It shares no code with the
 * library, so a test that runs the library against either checks the two writings against
 * each other; test_edge_v2.c checks this one (through edge_v2.c) against PyNaCl's vectors,
 * and `tether-bench --vectors` checks the client's half against the same vectors.
 *
 * Every primitive is libsodium's; nothing here is cryptography of its own, only §12's
 * bytes put together. Sizes are the callers' to check: every function takes exactly the
 * layout its comment says. */
#ifndef TETHER_TEST_WIRE_V2_H
#define TETHER_TEST_WIRE_V2_H
#include <stddef.h>
#include <stdint.h>

/* The codes a function returns for what it would drop (edge_v2.h's EDGE_V2_* are the same
   numbers). */
enum {
  WIRE_V2_MALFORMED = -1, /* wrong size, kind or layout */
  WIRE_V2_UNOPENED = -3,  /* a tag or sealed part did not verify */
  WIRE_V2_REPLAYED = -4   /* a DATA counter already opened, or too old */
};

enum {
  WIRE_V2_TOKEN_TEXT = 337, /* "2." and 335 characters of base64url */
  WIRE_V2_TOKEN_SIZE = 251, /* the binary token T */
  WIRE_V2_W_SIZE = 219,     /* W = T[0 ..< 11] || T[43 ..< 251]: what an INIT carries */
  WIRE_V2_DATA_HEADER = 17, /* kind, session id, counter */
  WIRE_V2_TAG = 16,
  WIRE_V2_DATA_MAX = 1200
};

static inline void wire_v2_put32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}
static inline uint32_t wire_v2_get32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline void wire_v2_put64(uint8_t *p, uint64_t v) {
  wire_v2_put32(p, (uint32_t)(v >> 32));
  wire_v2_put32(p + 4, (uint32_t)v);
}
static inline uint64_t wire_v2_get64(const uint8_t *p) {
  return (uint64_t)wire_v2_get32(p) << 32 | wire_v2_get32(p + 4);
}

/* ---- §12.1 ---------------------------------------------------------------------------- */

/* PRF(key, input, label) with `out_length` bytes out (16 or 32): keyed BLAKE2b (unkeyed, as
   HASH, with a NULL key), salt 0^16, the label zero-padded to 16 as personalization.
   Returns 0, or WIRE_V2_MALFORMED for a label over 16 bytes or sizes libsodium refuses. */
int wire_v2_prf(uint8_t *out, size_t out_length, const uint8_t *key, size_t key_length,
                const void *input, size_t input_length, const char *label);

/* PRF(key, "", label): a key of one purpose (k_req, k_refuse, k_cookie, k_d2e ...). */
void wire_v2_derive(uint8_t out[32], const uint8_t key[32], const char *label);

/* AEAD(PRF(key, "", label), 0^12, ad, empty): the tag of a key used once (the RESPONSE's
   under ck and "tether2 resp", the CONFIRM's under S and "tether2 confirm"). */
void wire_v2_tag(uint8_t tag[16], const uint8_t key[32], const char *label, const uint8_t *ad,
                 size_t ad_length);

/* ---- The transcript (§12.5) ------------------------------------------------------------ */

/* h = HASH(h || data), for data of at most 224 bytes (every §12.5 layout). */
void wire_v2_mix_hash(uint8_t h[32], const void *data, size_t length);

/* Steps 1 to 5: h1 into `h` and ck_e into `ck`, from the INIT's first 18 bytes (kind,
   version, N_d), W (219 bytes), the device secret (the pre-shared key) and e_d. */
void wire_v2_transcript_start(uint8_t h[32], uint8_t ck[32], const uint8_t *init_head,
                              const uint8_t *w, const uint8_t psk[32], const uint8_t e_d[32]);

/* Step 6's second half: h2 = HASH(h1 || the sealed request, 184 bytes), in place. */
void wire_v2_transcript_request(uint8_t h[32], const uint8_t *sealed_request);

/* Steps 7 to 11, from h2 and ck_e (left as they are), the RESPONSE's first 253 bytes
   (header 0 ..< 45, e_e 45 ..< 77, ticket 77 ..< 253) and the DH of the two ephemeral keys:
   the session secret S and the tag the RESPONSE ends with (the edge writes it, the device
   compares it). */
void wire_v2_transcript_finish(uint8_t secret[32], uint8_t tag[16], const uint8_t h2[32],
                               const uint8_t ck_e[32], const uint8_t *response,
                               const uint8_t shared[32]);

/* The session's keys from S: k_d2e, k_e2d, k_resume (any may be NULL). */
void wire_v2_session_keys(const uint8_t secret[32], uint8_t d2e[32], uint8_t e2d[32],
                          uint8_t resume[32]);

/* mac2 = PRF16(cookie, INIT[0 ..< 453], "tether2 mac2"). */
void wire_v2_mac2(uint8_t mac2[16], const uint8_t cookie[16], const uint8_t *init);

/* The resume proof: PRF16(k_resume, h1, "tether2 proof"). */
void wire_v2_proof(uint8_t proof[16], const uint8_t resume_key[32], const uint8_t h1[32]);

/* ---- DATA (§12.7) ---------------------------------------------------------------------- */

/* One direction's replay window: the highest counter opened and the 128 below it. */
struct wire_v2_window {
  uint64_t highest;
  uint64_t bits[2]; /* bit i: highest - i opened */
  int opened_any;
};

/* `payload` (1 ... 1167 bytes: the type byte and the body) sealed as DATA of session `id`
   under counter `counter` and `key` into `out` (room for length + 33). Returns the
   datagram's size, or WIRE_V2_MALFORMED. */
int wire_v2_seal(uint8_t *out, uint64_t id, uint64_t counter, const uint8_t key[32],
                 const uint8_t *payload, size_t length);

/* Opens a DATA datagram of session `id` under `key` into `payload` (room for length - 33),
   moving `window` only if it opened. Returns the payload's size, or WIRE_V2_MALFORMED (size,
   kind, another session id), WIRE_V2_REPLAYED or WIRE_V2_UNOPENED, with nothing changed. */
int wire_v2_open(uint8_t *payload, struct wire_v2_window *window, uint64_t id,
                 const uint8_t key[32], const uint8_t *datagram, size_t length);

/* ---- Tokens (§12.4) -------------------------------------------------------------------- */

/* The binary token T (251 bytes) of a text: "2.", 337 bytes, every one ASCII, base64url
   without padding to 251 bytes, byte 0 = 2. Returns 0, or WIRE_V2_MALFORMED. */
int wire_v2_token_decode(uint8_t t[WIRE_V2_TOKEN_SIZE], const char *text);

#endif
