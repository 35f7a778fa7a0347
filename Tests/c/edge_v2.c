// SPDX-License-Identifier: Apache-2.0
/* The edge's half of protocol version 2 for the C tests (edge_v2.h says what and why).
 * Every primitive is libsodium's; what the device computes the same way (the transcript,
 * DATA, mac2, the proof) is wire_v2.c's, shared with tether-bench's clients; this file only
 * puts the edge's side of docs/PROTOCOL.md §12's bytes together. */
#include "edge_v2.h"

#include <sodium.h>
#include <string.h>

/* A length-prefixed name of a layout (`max` bytes of room, zero-filled past its length)
   into a C string; -1 if the length is out of 1 ... max or a byte past it is not zero. */
static int take_name(char out[65], uint8_t length, const uint8_t *field, size_t max) {
  if (length < 1 || length > max) return -1;
  for (size_t i = length; i < max; i++)
    if (field[i] != 0) return -1;
  memcpy(out, field, length);
  out[length] = 0;
  return 0;
}

/* ---- Keys of a certificate (§12.3) ----------------------------------------------------- */

int edge_v2_certificate_keys(struct edge_v2_certificate *out, const void *certificate,
                             size_t length) {
  uint8_t master[32], id[16];
  if (out == NULL || certificate == NULL || length == 0) return EDGE_V2_MALFORMED;
  if (sodium_init() < 0) return EDGE_V2_BAD_KEY;
  wire_v2_prf(master, 32, NULL, 0, certificate, length, "tether2 cert");
  crypto_kdf_derive_from_key(out->token_key, 32, 1, "tether02", master);
  crypto_kdf_derive_from_key(out->reset_key, 32, 2, "tether02", master);
  crypto_kdf_derive_from_key(id, sizeof id, 4, "tether02", master);
  memcpy(out->key_id, id, 2);
  sodium_memzero(master, sizeof master);
  return 0;
}

/* ---- Tokens (§12.4) ------------------------------------------------------------------- */

int edge_v2_mint(char *out, const struct edge_v2_certificate *keys, uint8_t kind,
                 const char *app_id, const char *name, uint32_t uid, uint64_t expiry,
                 const uint8_t random[56]) {
  uint8_t t[251], p[168] = {0};
  size_t app_length, name_length;
  unsigned long long sealed = 0;
  if (out == NULL || keys == NULL || app_id == NULL || name == NULL || random == NULL ||
      (kind != 1 && kind != 2) || (kind == 2 && uid != 0))
    return EDGE_V2_MALFORMED;
  app_length = strlen(app_id);
  name_length = strlen(name);
  if (app_length < 1 || app_length > 64 || name_length < 1 || name_length > 64)
    return EDGE_V2_MALFORMED;
  t[0] = 0x02;
  memcpy(t + 1, keys->key_id, 2);
  wire_v2_put64(t + 3, expiry);
  memcpy(t + 11, random, 32);      /* the device secret */
  memcpy(t + 43, random + 32, 24); /* the nonce */
  memcpy(p, random, 32);
  p[32] = kind;
  p[33] = (uint8_t)app_length;
  memcpy(p + 34, app_id, app_length);
  p[98] = (uint8_t)name_length;
  memcpy(p + 99, name, name_length);
  wire_v2_put32(p + 163, uid);
  crypto_aead_xchacha20poly1305_ietf_encrypt(t + 67, &sealed, p, sizeof p, t, 11, NULL, t + 43,
                                             keys->token_key);
  sodium_memzero(p, sizeof p);
  out[0] = '2';
  out[1] = '.';
  sodium_bin2base64(out + 2, 336, t, sizeof t, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  sodium_memzero(t, sizeof t);
  return 0;
}

/* ---- INIT (§12.5, §12.6 rules 1, 3, 4) ------------------------------------------------- */

/* The request Q (168 bytes), checked with §8's strictness as §12.5 lists. */
static int take_request(struct edge_v2_init *out, const uint8_t *q) {
  int i, seen_zero = 0;
  out->flags = q[0];
  if (q[0] & ~0x03) return EDGE_V2_MALFORMED;
  memcpy(out->versions, q + 1, 4);
  for (i = 0; i < 4; i++) {
    if (q[1 + i] == 0) {
      seen_zero = 1;
    } else if (seen_zero || (i > 0 && q[1 + i] >= q[i])) {
      return EDGE_V2_MALFORMED;
    }
  }
  if (q[1] == 0) return EDGE_V2_MALFORMED;
  out->uid = wire_v2_get32(q + 5);
  if (take_name(out->app, q[9], q + 10, 64) != 0) return EDGE_V2_MALFORMED;
  out->kind = q[74];
  if (out->kind != 1 && out->kind != 2) return EDGE_V2_MALFORMED;
  if (take_name(out->name, q[75], q + 76, out->kind == 1 ? 63 : 64) != 0) return EDGE_V2_MALFORMED;
  if (out->kind == 1 && q[76 + 63] != 0) return EDGE_V2_MALFORMED;
  if (out->kind == 2 && out->uid != 0) return EDGE_V2_MALFORMED;
  out->resume_id = wire_v2_get64(q + 140);
  memcpy(out->proof, q + 148, 16);
  if (((q[0] & 0x02) != 0) != (out->resume_id != 0)) return EDGE_V2_MALFORMED;
  if (out->resume_id == 0)
    for (i = 0; i < 16; i++)
      if (out->proof[i] != 0) return EDGE_V2_MALFORMED;
  for (i = 164; i < 168; i++)
    if (q[i] != 0) return EDGE_V2_MALFORMED;
  return 0;
}

/* The token's private fields P (168 bytes): the grant. */
static int take_grant(struct edge_v2_init *out, const uint8_t *p) {
  out->grant_kind = p[32];
  if (out->grant_kind != 1 && out->grant_kind != 2) return EDGE_V2_NOT_OPENED;
  if (take_name(out->grant_app, p[33], p + 34, 64) != 0) return EDGE_V2_NOT_OPENED;
  if (take_name(out->grant_name, p[98], p + 99, 64) != 0) return EDGE_V2_NOT_OPENED;
  out->grant_uid = wire_v2_get32(p + 163);
  return 0;
}

int edge_v2_open_init(struct edge_v2_init *out, const struct edge_v2_certificate *keys,
                      const uint8_t *init, size_t length) {
  const uint8_t *w = init + 50;
  uint8_t p[168], q[168], key[32], nonce[12] = {0};
  unsigned long long opened = 0;
  int status;
  if (out == NULL || keys == NULL || init == NULL) return EDGE_V2_MALFORMED;
  memset(out, 0, sizeof *out);
  if (length != EDGE_V2_INIT_SIZE || init[0] != 0x01 || init[1] != 0x02) return EDGE_V2_MALFORMED;
  memcpy(out->nonce, init + 2, 16);
  memcpy(out->ephemeral, init + 18, 32);
  /* W: version, key id, expiry (the associated data), nonce (24), sealed part (184). */
  if (w[0] != 0x02 || memcmp(w + 1, keys->key_id, 2) != 0) return EDGE_V2_NOT_OPENED;
  if (crypto_aead_xchacha20poly1305_ietf_decrypt(p, &opened, NULL, w + 35, 184, w, 11, w + 11,
                                                 keys->token_key) != 0 ||
      opened != sizeof p)
    return EDGE_V2_NOT_OPENED;
  out->expiry = wire_v2_get64(w + 3);
  status = take_grant(out, p);
  if (status != 0) {
    sodium_memzero(p, sizeof p);
    return status;
  }
  /* Steps 1 to 5 (h1 and ck_e, the device secret as pre-shared key), then step 6: the
     request under k_req with ad = h1, and h2. */
  wire_v2_transcript_start(out->hash, out->chaining, init, w, p, out->ephemeral);
  sodium_memzero(p, sizeof p);
  memcpy(out->h1, out->hash, 32);
  wire_v2_derive(key, out->chaining, "tether2 req");
  status = crypto_aead_chacha20poly1305_ietf_decrypt(q, &opened, NULL, init + 269, 184,
                                                     out->hash, 32, nonce, key);
  sodium_memzero(key, sizeof key);
  if (status != 0 || opened != sizeof q) return EDGE_V2_UNOPENED;
  wire_v2_transcript_request(out->hash, init + 269);
  return take_request(out, q);
}

int edge_v2_mac2_valid(const uint8_t *init, size_t length, const uint8_t cookie[16]) {
  uint8_t mac2[16];
  if (init == NULL || cookie == NULL || length != EDGE_V2_INIT_SIZE) return 0;
  wire_v2_mac2(mac2, cookie, init);
  return sodium_memcmp(mac2, init + 453, 16) == 0;
}

int edge_v2_proof_valid(const struct edge_v2_init *init, const uint8_t resume_key[32]) {
  uint8_t proof[16];
  if (init == NULL || resume_key == NULL || init->resume_id == 0) return 0;
  wire_v2_proof(proof, resume_key, init->h1);
  return sodium_memcmp(proof, init->proof, 16) == 0;
}

/* ---- RESPONSE and CONFIRM -------------------------------------------------------------- */

int edge_v2_respond(uint8_t *out, struct edge_v2_session *session,
                    const struct edge_v2_init *init, const uint8_t random[48], uint64_t id,
                    uint32_t lifetime_ms, const uint8_t ticket[EDGE_V2_TICKET_SIZE]) {
  uint8_t shared[32], secret[32];
  if (out == NULL || session == NULL || init == NULL || random == NULL || ticket == NULL)
    return EDGE_V2_MALFORMED;
  memset(session, 0, sizeof *session);
  /* Header: kind, N_d, session id, N_e, lifetime; then e_e, the ticket and the tag. */
  out[0] = 0x02;
  memcpy(out + 1, init->nonce, 16);
  wire_v2_put64(out + 17, id);
  memcpy(out + 25, random, 16);
  wire_v2_put32(out + 41, lifetime_ms);
  memcpy(secret, random + 16, 32);
  crypto_scalarmult_base(out + 45, secret);
  memcpy(out + 77, ticket, EDGE_V2_TICKET_SIZE);
  if (crypto_scalarmult(shared, secret, init->ephemeral) != 0) {
    sodium_memzero(secret, sizeof secret);
    return EDGE_V2_BAD_KEY;
  }
  sodium_memzero(secret, sizeof secret);
  /* Steps 7 to 11: S and the tag. */
  wire_v2_transcript_finish(session->secret, out + 253, init->hash, init->chaining, out, shared);
  sodium_memzero(shared, sizeof shared);
  session->id = id;
  memcpy(session->ticket, ticket, EDGE_V2_TICKET_SIZE);
  wire_v2_session_keys(session->secret, session->d2e, session->e2d, session->resume);
  return EDGE_V2_RESPONSE_SIZE;
}

int edge_v2_check_confirm(const struct edge_v2_session *session, const uint8_t *confirm,
                          size_t length) {
  uint8_t tag[16];
  if (session == NULL || confirm == NULL || length != EDGE_V2_CONFIRM_SIZE || confirm[0] != 0x03 ||
      wire_v2_get64(confirm + 1) != session->id ||
      sodium_memcmp(confirm + 9, session->ticket, EDGE_V2_TICKET_SIZE) != 0)
    return EDGE_V2_MALFORMED;
  wire_v2_tag(tag, session->secret, "tether2 confirm", confirm, 185);
  return sodium_memcmp(tag, confirm + 185, 16) == 0 ? 0 : EDGE_V2_UNOPENED;
}

/* ---- DATA (§12.7) ---------------------------------------------------------------------- */

int edge_v2_seal(uint8_t *out, struct edge_v2_session *session, const uint8_t *payload,
                 size_t length) {
  int sealed;
  if (session == NULL) return EDGE_V2_MALFORMED;
  sealed = wire_v2_seal(out, session->id, session->next_counter, session->e2d, payload, length);
  if (sealed > 0) session->next_counter++;
  return sealed;
}

int edge_v2_open(uint8_t *payload, struct edge_v2_session *session, const uint8_t *datagram,
                 size_t length) {
  if (session == NULL) return EDGE_V2_MALFORMED;
  return wire_v2_open(payload, &session->replay, session->id, session->d2e, datagram, length);
}

uint64_t edge_v2_session_id(const uint8_t *datagram, size_t length) {
  return datagram != NULL && length >= 9 ? wire_v2_get64(datagram + 1) : 0;
}

/* ---- Refusals, cookie, reset (§12.6, §12.9) -------------------------------------------- */

int edge_v2_refuse_clear(uint8_t *out, const uint8_t nonce[16]) {
  if (out == NULL || nonce == NULL) return EDGE_V2_MALFORMED;
  out[0] = 0x05;
  memcpy(out + 1, nonce, 16);
  out[17] = 0x01;
  return EDGE_V2_REFUSE_CLEAR_SIZE;
}

/* kind, N_d, nonce (24), XAEAD(PRF(ck_e, "", label), nonce, ad = bytes 0 ..< 17, plain). */
static int sealed_answer(uint8_t *out, uint8_t kind, const struct edge_v2_init *init,
                         const char *label, const uint8_t *plain, size_t plain_length,
                         const uint8_t random[24]) {
  uint8_t key[32];
  unsigned long long sealed = 0;
  if (out == NULL || init == NULL || random == NULL) return EDGE_V2_MALFORMED;
  out[0] = kind;
  memcpy(out + 1, init->nonce, 16);
  memcpy(out + 17, random, 24);
  wire_v2_derive(key, init->chaining, label);
  crypto_aead_xchacha20poly1305_ietf_encrypt(out + 41, &sealed, plain, plain_length, out, 17,
                                             NULL, out + 17, key);
  sodium_memzero(key, sizeof key);
  return (int)(41 + sealed);
}

int edge_v2_refuse_sealed(uint8_t *out, const struct edge_v2_init *init, uint8_t reason,
                          uint8_t detail, const uint8_t random[24]) {
  uint8_t plain[2];
  plain[0] = reason;
  plain[1] = detail;
  return sealed_answer(out, 0x06, init, "tether2 refuse", plain, 2, random);
}

int edge_v2_cookie_reply(uint8_t *out, const struct edge_v2_init *init,
                         const uint8_t cookie[16], const uint8_t random[24]) {
  if (cookie == NULL) return EDGE_V2_MALFORMED;
  return sealed_answer(out, 0x04, init, "tether2 cookiek", cookie, 16, random);
}

int edge_v2_reset(uint8_t *out, const struct edge_v2_certificate *keys, const char *edge_id,
                  uint64_t id, uint8_t value[16]) {
  uint8_t input[255 + 8];
  size_t length;
  if (out == NULL || keys == NULL || edge_id == NULL) return EDGE_V2_MALFORMED;
  length = strlen(edge_id);
  if (length < 1 || length > 255) return EDGE_V2_MALFORMED;
  memcpy(input, edge_id, length);
  wire_v2_put64(input + length, id);
  out[0] = 0x08;
  wire_v2_put64(out + 1, id);
  wire_v2_prf(out + 9, 16, keys->reset_key, 32, input, length + 8, "tether2 reset");
  if (value != NULL) memcpy(value, out + 9, 16);
  return EDGE_V2_RESET_SIZE;
}

void edge_v2_wipe(struct edge_v2_session *session, struct edge_v2_init *init) {
  if (session != NULL) sodium_memzero(session, sizeof *session);
  if (init != NULL) sodium_memzero(init->chaining, sizeof init->chaining);
}
