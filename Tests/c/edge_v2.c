// SPDX-License-Identifier: Apache-2.0
/* The edge's half of protocol version 2 for the C tests (edge_v2.h says what and why).
 * Every primitive is libsodium's; this file only puts docs/PROTOCOL.md §12's bytes
 * together. */
#include "edge_v2.h"

#include <sodium.h>
#include <string.h>

/* ---- §12.1's primitives ---------------------------------------------------------------- */

/* PRF(key, input, label) with `out_length` bytes out: keyed BLAKE2b (unkeyed with a NULL
   key), salt 0^16, the label zero-padded to 16 as personalization. */
static int prf(uint8_t *out, size_t out_length, const uint8_t *key, size_t key_length,
               const void *input, size_t input_length, const char *label) {
  uint8_t salt[16] = {0}, personal[16] = {0};
  size_t label_length = strlen(label);
  if (label_length > sizeof personal) return EDGE_V2_MALFORMED;
  memcpy(personal, label, label_length);
  return crypto_generichash_blake2b_salt_personal(out, out_length, input, input_length, key,
                                                  key_length, salt, personal) == 0
             ? 0
             : EDGE_V2_MALFORMED;
}

/* h = HASH(h || data). */
static void mix_hash(uint8_t h[32], const void *data, size_t length) {
  uint8_t input[32 + 224];
  if (length > 224) return; /* never with §12.5's layouts; the handshake then fails */
  memcpy(input, h, 32);
  memcpy(input + 32, data, length);
  prf(h, 32, NULL, 0, input, 32 + length, "tether2 hash");
}

/* ck = PRF(ck, data, "tether2 ck"). */
static void mix_key(uint8_t ck[32], const void *data, size_t length) {
  uint8_t next[32];
  prf(next, 32, ck, 32, data, length, "tether2 ck");
  memcpy(ck, next, 32);
  sodium_memzero(next, sizeof next);
}

/* PRF(key, "", label): a key of one purpose. */
static void derive(uint8_t out[32], const uint8_t key[32], const char *label) {
  prf(out, 32, key, 32, NULL, 0, label);
}

/* AEAD(PRF(key, "", label), 0^12, ad, empty): a tag under a key used once. */
static void tag_once(uint8_t tag[16], const uint8_t key[32], const char *label,
                     const uint8_t *ad, size_t ad_length) {
  uint8_t once[32], nonce[12] = {0};
  unsigned long long length = 0;
  derive(once, key, label);
  crypto_aead_chacha20poly1305_ietf_encrypt(tag, &length, NULL, 0, ad, ad_length, NULL, nonce,
                                            once);
  sodium_memzero(once, sizeof once);
}

static void put64(uint8_t *out, uint64_t value) {
  for (int i = 7; i >= 0; i--, value >>= 8) out[i] = (uint8_t)value;
}
static uint64_t get64(const uint8_t *in) {
  uint64_t value = 0;
  for (int i = 0; i < 8; i++) value = value << 8 | in[i];
  return value;
}
static uint32_t get32(const uint8_t *in) {
  return (uint32_t)in[0] << 24 | (uint32_t)in[1] << 16 | (uint32_t)in[2] << 8 | in[3];
}

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
  prf(master, 32, NULL, 0, certificate, length, "tether2 cert");
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
  put64(t + 3, expiry);
  memcpy(t + 11, random, 32);      /* the device secret */
  memcpy(t + 43, random + 32, 24); /* the nonce */
  memcpy(p, random, 32);
  p[32] = kind;
  p[33] = (uint8_t)app_length;
  memcpy(p + 34, app_id, app_length);
  p[98] = (uint8_t)name_length;
  memcpy(p + 99, name, name_length);
  p[163] = (uint8_t)(uid >> 24);
  p[164] = (uint8_t)(uid >> 16);
  p[165] = (uint8_t)(uid >> 8);
  p[166] = (uint8_t)uid;
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
  out->uid = get32(q + 5);
  if (take_name(out->app, q[9], q + 10, 64) != 0) return EDGE_V2_MALFORMED;
  out->kind = q[74];
  if (out->kind != 1 && out->kind != 2) return EDGE_V2_MALFORMED;
  if (take_name(out->name, q[75], q + 76, out->kind == 1 ? 63 : 64) != 0) return EDGE_V2_MALFORMED;
  if (out->kind == 1 && q[76 + 63] != 0) return EDGE_V2_MALFORMED;
  if (out->kind == 2 && out->uid != 0) return EDGE_V2_MALFORMED;
  out->resume_id = get64(q + 140);
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
  out->grant_uid = get32(p + 163);
  return 0;
}

int edge_v2_open_init(struct edge_v2_init *out, const struct edge_v2_certificate *keys,
                      const uint8_t *init, size_t length) {
  static const char protocol[] = "Tether v2 NNpsk0 X25519 ChaChaPoly BLAKE2b";
  const uint8_t *w = init + 50;
  uint8_t p[168], q[168], key[32];
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
  out->expiry = get64(w + 3);
  status = take_grant(out, p);
  if (status != 0) {
    sodium_memzero(p, sizeof p);
    return status;
  }
  /* Steps 1 to 5: h1 and ck_e. */
  prf(out->hash, 32, NULL, 0, protocol, sizeof protocol - 1, "tether2 hash");
  memcpy(out->chaining, out->hash, 32);
  mix_hash(out->hash, init, 18);
  mix_hash(out->hash, w, 219);
  mix_key(out->chaining, p, 32); /* the device secret */
  sodium_memzero(p, sizeof p);
  mix_hash(out->hash, out->ephemeral, 32);
  mix_key(out->chaining, out->ephemeral, 32);
  /* Step 6: the request under k_req with ad = h1, then h2. */
  memcpy(out->h1, out->hash, 32);
  derive(key, out->chaining, "tether2 req");
  {
    uint8_t nonce[12] = {0};
    status = crypto_aead_chacha20poly1305_ietf_decrypt(q, &opened, NULL, init + 269, 184,
                                                       out->hash, 32, nonce, key);
  }
  sodium_memzero(key, sizeof key);
  if (status != 0 || opened != sizeof q) return EDGE_V2_UNOPENED;
  mix_hash(out->hash, init + 269, 184);
  return take_request(out, q);
}

int edge_v2_mac2_valid(const uint8_t *init, size_t length, const uint8_t cookie[16]) {
  uint8_t mac2[16];
  if (init == NULL || cookie == NULL || length != EDGE_V2_INIT_SIZE) return 0;
  prf(mac2, 16, cookie, 16, init, 453, "tether2 mac2");
  return sodium_memcmp(mac2, init + 453, 16) == 0;
}

int edge_v2_proof_valid(const struct edge_v2_init *init, const uint8_t resume_key[32]) {
  uint8_t proof[16];
  if (init == NULL || resume_key == NULL || init->resume_id == 0) return 0;
  prf(proof, 16, resume_key, 32, init->h1, 32, "tether2 proof");
  return sodium_memcmp(proof, init->proof, 16) == 0;
}

/* ---- RESPONSE and CONFIRM -------------------------------------------------------------- */

int edge_v2_respond(uint8_t *out, struct edge_v2_session *session,
                    const struct edge_v2_init *init, const uint8_t random[48], uint64_t id,
                    uint32_t lifetime_ms, const uint8_t ticket[EDGE_V2_TICKET_SIZE]) {
  uint8_t h[32], ck[32], shared[32], secret[32];
  if (out == NULL || session == NULL || init == NULL || random == NULL || ticket == NULL)
    return EDGE_V2_MALFORMED;
  memset(session, 0, sizeof *session);
  /* Header: kind, N_d, session id, N_e, lifetime; then e_e, the ticket and the tag. */
  out[0] = 0x02;
  memcpy(out + 1, init->nonce, 16);
  put64(out + 17, id);
  memcpy(out + 25, random, 16);
  out[41] = (uint8_t)(lifetime_ms >> 24);
  out[42] = (uint8_t)(lifetime_ms >> 16);
  out[43] = (uint8_t)(lifetime_ms >> 8);
  out[44] = (uint8_t)lifetime_ms;
  memcpy(secret, random + 16, 32);
  crypto_scalarmult_base(out + 45, secret);
  memcpy(out + 77, ticket, EDGE_V2_TICKET_SIZE);
  /* Steps 7 to 11. */
  memcpy(h, init->hash, 32);
  memcpy(ck, init->chaining, 32);
  mix_hash(h, out, 45);
  mix_hash(h, out + 45, 32);
  mix_key(ck, out + 45, 32);
  if (crypto_scalarmult(shared, secret, init->ephemeral) != 0) {
    sodium_memzero(secret, sizeof secret);
    sodium_memzero(ck, sizeof ck);
    return EDGE_V2_BAD_KEY;
  }
  sodium_memzero(secret, sizeof secret);
  mix_key(ck, shared, 32);
  sodium_memzero(shared, sizeof shared);
  prf(session->secret, 32, ck, 32, h, 32, "tether2 session");
  mix_hash(h, ticket, EDGE_V2_TICKET_SIZE);
  tag_once(out + 253, ck, "tether2 resp", h, 32);
  sodium_memzero(ck, sizeof ck);
  session->id = id;
  memcpy(session->ticket, ticket, EDGE_V2_TICKET_SIZE);
  derive(session->d2e, session->secret, "tether2 d2e");
  derive(session->e2d, session->secret, "tether2 e2d");
  derive(session->resume, session->secret, "tether2 resume");
  return EDGE_V2_RESPONSE_SIZE;
}

int edge_v2_check_confirm(const struct edge_v2_session *session, const uint8_t *confirm,
                          size_t length) {
  uint8_t tag[16];
  if (session == NULL || confirm == NULL || length != EDGE_V2_CONFIRM_SIZE || confirm[0] != 0x03 ||
      get64(confirm + 1) != session->id ||
      sodium_memcmp(confirm + 9, session->ticket, EDGE_V2_TICKET_SIZE) != 0)
    return EDGE_V2_MALFORMED;
  tag_once(tag, session->secret, "tether2 confirm", confirm, 185);
  return sodium_memcmp(tag, confirm + 185, 16) == 0 ? 0 : EDGE_V2_UNOPENED;
}

/* ---- DATA (§12.7) ---------------------------------------------------------------------- */

static void counter_nonce(uint8_t nonce[12], uint64_t counter) {
  memset(nonce, 0, 4);
  put64(nonce + 4, counter);
}

int edge_v2_seal(uint8_t *out, struct edge_v2_session *session, const uint8_t *payload,
                 size_t length) {
  uint8_t nonce[12];
  unsigned long long sealed = 0;
  if (out == NULL || session == NULL || payload == NULL || length < 1 || length > 1167)
    return EDGE_V2_MALFORMED;
  out[0] = 0x07;
  put64(out + 1, session->id);
  put64(out + 9, session->next_counter);
  counter_nonce(nonce, session->next_counter);
  crypto_aead_chacha20poly1305_ietf_encrypt(out + 17, &sealed, payload, length, out, 17, NULL,
                                            nonce, session->e2d);
  session->next_counter++;
  return (int)(17 + sealed);
}

/* Whether `counter` may be opened: above the highest, or within the 128 below and not
   marked. */
static int is_fresh(const struct edge_v2_session *s, uint64_t counter) {
  uint64_t behind;
  if (!s->opened_any || counter > s->highest) return 1;
  behind = s->highest - counter;
  if (behind >= 128) return 0;
  return !((s->window[behind / 64] >> (behind % 64)) & 1);
}

static void mark(struct edge_v2_session *s, uint64_t counter) {
  if (!s->opened_any || counter > s->highest) {
    uint64_t shift = s->opened_any ? counter - s->highest : 128;
    if (shift >= 128) {
      s->window[0] = s->window[1] = 0;
    } else if (shift >= 64) {
      s->window[1] = s->window[0] << (shift - 64);
      s->window[0] = 0;
    } else if (shift > 0) {
      s->window[1] = s->window[1] << shift | s->window[0] >> (64 - shift);
      s->window[0] <<= shift;
    }
    s->highest = counter;
    s->opened_any = 1;
    s->window[0] |= 1;
  } else {
    uint64_t behind = s->highest - counter;
    s->window[behind / 64] |= (uint64_t)1 << (behind % 64);
  }
}

int edge_v2_open(uint8_t *payload, struct edge_v2_session *session, const uint8_t *datagram,
                 size_t length) {
  uint8_t nonce[12];
  unsigned long long opened = 0;
  uint64_t counter;
  if (payload == NULL || session == NULL || datagram == NULL || length < 17 + 16 + 1 ||
      length > 1200 || datagram[0] != 0x07 || get64(datagram + 1) != session->id)
    return EDGE_V2_MALFORMED;
  counter = get64(datagram + 9);
  if (!is_fresh(session, counter)) return EDGE_V2_REPLAYED;
  counter_nonce(nonce, counter);
  if (crypto_aead_chacha20poly1305_ietf_decrypt(payload, &opened, NULL, datagram + 17,
                                                length - 17, datagram, 17, nonce,
                                                session->d2e) != 0)
    return EDGE_V2_UNOPENED;
  mark(session, counter);
  return (int)opened;
}

uint64_t edge_v2_session_id(const uint8_t *datagram, size_t length) {
  return datagram != NULL && length >= 9 ? get64(datagram + 1) : 0;
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
  derive(key, init->chaining, label);
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
  put64(input + length, id);
  out[0] = 0x08;
  put64(out + 1, id);
  prf(out + 9, 16, keys->reset_key, 32, input, length + 8, "tether2 reset");
  if (value != NULL) memcpy(value, out + 9, 16);
  return EDGE_V2_RESET_SIZE;
}

void edge_v2_wipe(struct edge_v2_session *session, struct edge_v2_init *init) {
  if (session != NULL) sodium_memzero(session, sizeof *session);
  if (init != NULL) sodium_memzero(init->chaining, sizeof init->chaining);
}
