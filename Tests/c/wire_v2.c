// SPDX-License-Identifier: Apache-2.0
/* What both halves of protocol version 2 compute the same way (wire_v2.h says what and
 * why). Every primitive is libsodium's. */
#include "wire_v2.h"

#include <sodium.h>
#include <string.h>

/* ---- §12.1 ---------------------------------------------------------------------------- */

int wire_v2_prf(uint8_t *out, size_t out_length, const uint8_t *key, size_t key_length,
                const void *input, size_t input_length, const char *label) {
  uint8_t salt[16] = {0}, personal[16] = {0};
  size_t label_length = strlen(label);
  if (label_length > sizeof personal) return WIRE_V2_MALFORMED;
  memcpy(personal, label, label_length);
  return crypto_generichash_blake2b_salt_personal(out, out_length, input, input_length, key,
                                                  key_length, salt, personal) == 0
             ? 0
             : WIRE_V2_MALFORMED;
}

void wire_v2_derive(uint8_t out[32], const uint8_t key[32], const char *label) {
  wire_v2_prf(out, 32, key, 32, NULL, 0, label);
}

void wire_v2_tag(uint8_t tag[16], const uint8_t key[32], const char *label, const uint8_t *ad,
                 size_t ad_length) {
  uint8_t once[32], nonce[12] = {0};
  unsigned long long length = 0;
  wire_v2_derive(once, key, label);
  crypto_aead_chacha20poly1305_ietf_encrypt(tag, &length, NULL, 0, ad, ad_length, NULL, nonce,
                                            once);
  sodium_memzero(once, sizeof once);
}

/* ---- The transcript (§12.5) ------------------------------------------------------------ */

void wire_v2_mix_hash(uint8_t h[32], const void *data, size_t length) {
  uint8_t input[32 + 224];
  if (length > 224) return; /* never with §12.5's layouts; the handshake then fails */
  memcpy(input, h, 32);
  memcpy(input + 32, data, length);
  wire_v2_prf(h, 32, NULL, 0, input, 32 + length, "tether2 hash");
}

/* ck = PRF(ck, data, "tether2 ck"). */
static void mix_key(uint8_t ck[32], const void *data, size_t length) {
  uint8_t next[32];
  wire_v2_prf(next, 32, ck, 32, data, length, "tether2 ck");
  memcpy(ck, next, 32);
  sodium_memzero(next, sizeof next);
}

void wire_v2_transcript_start(uint8_t h[32], uint8_t ck[32], const uint8_t *init_head,
                              const uint8_t *w, const uint8_t psk[32], const uint8_t e_d[32]) {
  static const char protocol[] = "Tether v2 NNpsk0 X25519 ChaChaPoly BLAKE2b";
  wire_v2_prf(h, 32, NULL, 0, protocol, sizeof protocol - 1, "tether2 hash");
  memcpy(ck, h, 32);
  wire_v2_mix_hash(h, init_head, 18);
  wire_v2_mix_hash(h, w, WIRE_V2_W_SIZE);
  mix_key(ck, psk, 32); /* psk0: the pre-shared key first */
  wire_v2_mix_hash(h, e_d, 32);
  mix_key(ck, e_d, 32);
}

void wire_v2_transcript_request(uint8_t h[32], const uint8_t *sealed_request) {
  wire_v2_mix_hash(h, sealed_request, 184);
}

void wire_v2_transcript_finish(uint8_t secret[32], uint8_t tag[16], const uint8_t h2[32],
                               const uint8_t ck_e[32], const uint8_t *response,
                               const uint8_t shared[32]) {
  uint8_t h[32], ck[32];
  memcpy(h, h2, 32);
  memcpy(ck, ck_e, 32);
  wire_v2_mix_hash(h, response, 45);
  wire_v2_mix_hash(h, response + 45, 32);
  mix_key(ck, response + 45, 32);
  mix_key(ck, shared, 32);
  wire_v2_prf(secret, 32, ck, 32, h, 32, "tether2 session");
  wire_v2_mix_hash(h, response + 77, 176);
  wire_v2_tag(tag, ck, "tether2 resp", h, 32);
  sodium_memzero(ck, sizeof ck);
}

void wire_v2_session_keys(const uint8_t secret[32], uint8_t d2e[32], uint8_t e2d[32],
                          uint8_t resume[32]) {
  if (d2e != NULL) wire_v2_derive(d2e, secret, "tether2 d2e");
  if (e2d != NULL) wire_v2_derive(e2d, secret, "tether2 e2d");
  if (resume != NULL) wire_v2_derive(resume, secret, "tether2 resume");
}

void wire_v2_mac2(uint8_t mac2[16], const uint8_t cookie[16], const uint8_t *init) {
  wire_v2_prf(mac2, 16, cookie, 16, init, 453, "tether2 mac2");
}

void wire_v2_proof(uint8_t proof[16], const uint8_t resume_key[32], const uint8_t h1[32]) {
  wire_v2_prf(proof, 16, resume_key, 32, h1, 32, "tether2 proof");
}

/* ---- DATA (§12.7) ---------------------------------------------------------------------- */

static void counter_nonce(uint8_t nonce[12], uint64_t counter) {
  memset(nonce, 0, 4);
  wire_v2_put64(nonce + 4, counter);
}

int wire_v2_seal(uint8_t *out, uint64_t id, uint64_t counter, const uint8_t key[32],
                 const uint8_t *payload, size_t length) {
  uint8_t nonce[12];
  unsigned long long sealed = 0;
  if (out == NULL || payload == NULL || length < 1 ||
      length > WIRE_V2_DATA_MAX - WIRE_V2_DATA_HEADER - WIRE_V2_TAG)
    return WIRE_V2_MALFORMED;
  out[0] = 0x07;
  wire_v2_put64(out + 1, id);
  wire_v2_put64(out + 9, counter);
  counter_nonce(nonce, counter);
  crypto_aead_chacha20poly1305_ietf_encrypt(out + WIRE_V2_DATA_HEADER, &sealed, payload, length,
                                            out, WIRE_V2_DATA_HEADER, NULL, nonce, key);
  return (int)(WIRE_V2_DATA_HEADER + sealed);
}

/* Whether `counter` may be opened: above the highest, or within the 128 below and not
   marked. */
static int is_fresh(const struct wire_v2_window *w, uint64_t counter) {
  uint64_t behind;
  if (!w->opened_any || counter > w->highest) return 1;
  behind = w->highest - counter;
  if (behind >= 128) return 0;
  return !((w->bits[behind / 64] >> (behind % 64)) & 1);
}

static void mark(struct wire_v2_window *w, uint64_t counter) {
  if (!w->opened_any || counter > w->highest) {
    uint64_t shift = w->opened_any ? counter - w->highest : 128;
    if (shift >= 128) {
      w->bits[0] = w->bits[1] = 0;
    } else if (shift >= 64) {
      w->bits[1] = w->bits[0] << (shift - 64);
      w->bits[0] = 0;
    } else if (shift > 0) {
      w->bits[1] = w->bits[1] << shift | w->bits[0] >> (64 - shift);
      w->bits[0] <<= shift;
    }
    w->highest = counter;
    w->opened_any = 1;
    w->bits[0] |= 1;
  } else {
    uint64_t behind = w->highest - counter;
    w->bits[behind / 64] |= (uint64_t)1 << (behind % 64);
  }
}

int wire_v2_open(uint8_t *payload, struct wire_v2_window *window, uint64_t id,
                 const uint8_t key[32], const uint8_t *datagram, size_t length) {
  uint8_t nonce[12];
  unsigned long long opened = 0;
  uint64_t counter;
  if (payload == NULL || window == NULL || datagram == NULL ||
      length < WIRE_V2_DATA_HEADER + WIRE_V2_TAG + 1 || length > WIRE_V2_DATA_MAX ||
      datagram[0] != 0x07 || wire_v2_get64(datagram + 1) != id)
    return WIRE_V2_MALFORMED;
  counter = wire_v2_get64(datagram + 9);
  if (!is_fresh(window, counter)) return WIRE_V2_REPLAYED;
  counter_nonce(nonce, counter);
  if (crypto_aead_chacha20poly1305_ietf_decrypt(payload, &opened, NULL,
                                                datagram + WIRE_V2_DATA_HEADER,
                                                length - WIRE_V2_DATA_HEADER, datagram,
                                                WIRE_V2_DATA_HEADER, nonce, key) != 0)
    return WIRE_V2_UNOPENED;
  mark(window, counter);
  return (int)opened;
}

/* ---- Tokens (§12.4) -------------------------------------------------------------------- */

int wire_v2_token_decode(uint8_t t[WIRE_V2_TOKEN_SIZE], const char *text) {
  size_t length = 0;
  if (text == NULL || strncmp(text, "2.", 2) != 0 || strlen(text) != WIRE_V2_TOKEN_TEXT)
    return WIRE_V2_MALFORMED;
  /* ASCII first: libsodium 1.0.18's decoder reads a character as a signed char, and would
     take 0xDF or 0xAD for '_', so a second text would decode to the same token. */
  for (size_t i = 2; i < WIRE_V2_TOKEN_TEXT; i++)
    if ((unsigned char)text[i] >= 0x80) return WIRE_V2_MALFORMED;
  if (sodium_base642bin(t, WIRE_V2_TOKEN_SIZE, text + 2, WIRE_V2_TOKEN_TEXT - 2, NULL, &length,
                        NULL, sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
      length != WIRE_V2_TOKEN_SIZE || t[0] != 0x02)
    return WIRE_V2_MALFORMED;
  return 0;
}
