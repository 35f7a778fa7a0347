// SPDX-License-Identifier: Apache-2.0
/* The TETHER_NULL_CRYPTO build of the device library (build/lib-null-crypto/x86_64, for
 * fuzzing; never shipped) does what Sources/TetherSodium/NullCrypto.swift says, through the
 * same seam as the real one, so a fuzzer's fake server can rely on it:
 *   - both AEADs and the data cipher: ciphertext = plaintext, tag = 16 zero bytes, and a
 *     sealed text opens only with a zero tag (whatever the key, nonce or associated data);
 *   - X25519: public key = secret, shared secret = secret XOR public key (so both sides
 *     agree), all zeros refused;
 *   - what is not null stays real: BLAKE2b is libsodium's (an RFC 7693 value), and the
 *     build carries its marker, tether_test_null_crypto. */
#include <string.h>

#include "harness.h"
#include "tether_test_crypto.h"

#define CHECK_BYTES(got, want, n) CHECK(memcmp((got), (want), (n)) == 0)

static const uint8_t text[5] = {'h', 'e', 'l', 'l', 'o'};
static const uint8_t zero_tag[16] = {0};

static void test_nullAEADs_passThePlaintextWithAZeroTag(void) {
  uint8_t key[32], nonce[24], ad[3] = {1, 2, 3}, sealed[sizeof text + 16], opened[sizeof text];
  memset(key, 0xa5, sizeof key);
  memset(nonce, 0x5a, sizeof nonce);
  CHECK(tether_test_aead_seal(sealed, key, nonce, ad, sizeof ad, text, sizeof text) == 0);
  CHECK_BYTES(sealed, text, sizeof text);
  CHECK_BYTES(sealed + sizeof text, zero_tag, 16);
  CHECK(tether_test_aead_open(opened, key, nonce, NULL, 0, sealed, sizeof sealed) == 0);
  CHECK_BYTES(opened, text, sizeof text);
  CHECK(tether_test_xaead_seal(sealed, key, nonce, ad, sizeof ad, text, sizeof text) == 0);
  CHECK_BYTES(sealed, text, sizeof text);
  CHECK_BYTES(sealed + sizeof text, zero_tag, 16);
  CHECK(tether_test_xaead_open(opened, key, nonce, ad, sizeof ad, sealed, sizeof sealed) == 0);
  CHECK(tether_test_cipher_seal(sealed, key, 7, ad, sizeof ad, text, sizeof text) == 0);
  CHECK_BYTES(sealed, text, sizeof text);
  CHECK_BYTES(sealed + sizeof text, zero_tag, 16);
  CHECK(tether_test_cipher_open(opened, key, 8, NULL, 0, sealed, sizeof sealed) == 0);
  CHECK_BYTES(opened, text, sizeof text);
  /* A tag that is not zero does not open, in any of the three. */
  sealed[sizeof sealed - 1] = 1;
  CHECK(tether_test_aead_open(opened, key, nonce, ad, sizeof ad, sealed, sizeof sealed) == -1);
  CHECK(tether_test_xaead_open(opened, key, nonce, ad, sizeof ad, sealed, sizeof sealed) == -1);
  CHECK(tether_test_cipher_open(opened, key, 7, ad, sizeof ad, sealed, sizeof sealed) == -1);
  CHECK(tether_test_aead_open(opened, key, nonce, ad, sizeof ad, sealed, 15) == -1);
}

static void test_nullX25519_isTheSecretAndXOR(void) {
  uint8_t a[32], b[32], a_public[32], b_public[32], ab[32], ba[32];
  int i;
  for (i = 0; i < 32; i++) {
    a[i] = (uint8_t)i;
    b[i] = (uint8_t)(0xf0 ^ (3 * i));
  }
  CHECK(tether_test_x25519_public(a_public, a) == 0);
  CHECK_BYTES(a_public, a, 32);
  CHECK(tether_test_x25519_public(b_public, b) == 0);
  CHECK(tether_test_x25519(ab, a, b_public) == 0);
  CHECK(tether_test_x25519(ba, b, a_public) == 0);
  CHECK_BYTES(ab, ba, 32);
  for (i = 0; i < 32; i++) CHECK(ab[i] == (a[i] ^ b[i]));
  CHECK(tether_test_x25519(ab, a, a_public) == -1); /* all zeros */
}

/* BLAKE2b is not null: RFC 7693 Appendix A, BLAKE2b-512("abc"), needs no salt or
   personalization, and the libsodium call with zero ones is the same function. */
static void test_blake2b_staysReal(void) {
  static const uint8_t want[8] = {0xba, 0x80, 0xa5, 0x3f, 0x98, 0x1c, 0x4d, 0x0d};
  uint8_t digest[64], zero[16];
  memset(zero, 0, sizeof zero);
  CHECK(tether_test_blake2b(digest, 64, (const uint8_t *)"abc", 3, NULL, 0, zero, zero) == 0);
  CHECK_BYTES(digest, want, sizeof want);
  CHECK(tether_test_null_crypto() == 1);
}

int main(void) {
  RUN(test_nullAEADs_passThePlaintextWithAZeroTag);
  RUN(test_nullX25519_isTheSecretAndXOR);
  RUN(test_blake2b_staysReal);
  return harness_report("null-crypto", "the null AEADs and X25519 of the fuzzing build");
}
