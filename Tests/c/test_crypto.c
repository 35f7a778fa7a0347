// SPDX-License-Identifier: Apache-2.0
/* The crypto seam of the device library (Sources/TetherSodium, the SessionCrypto on
 * libsodium) through the test-only build's exports (tether_test_crypto.h, TETHER_TEST_CRYPTO:
 * build/lib-test-crypto/ARCH), natively on x86_64 and under qemu-user on aarch64 and armv7:
 *   - RFC 8439 §2.8.2 (ChaCha20-Poly1305) and RFC 7748 §6.1 (X25519): the RFCs' own bytes;
 *   - the seeded random stream: after tether_test_random_seed, draws of several sizes give
 *     the bytes PyNaCl's randombytes_deterministic gives (crypto_vectors.h, written by
 *     scripts/test/crypto-vectors.py), and a new seed starts the stream again;
 *   - X25519 keys, the data cipher under a counter nonce, XChaCha20-Poly1305 and BLAKE2b
 *     with salt and personalization, over bytes drawn from that stream, against PyNaCl's;
 *   - every refusal the seam owes: a flipped bit, other associated data, another counter,
 *     a low-order point, a digest size out of range, a NULL pointer;
 *   - the device's half of the version 2 handshake (v2_vectors.h, PyNaCl's): from the
 *     vector's seeded stream, the INIT byte for byte (a channel join with mac2, a login
 *     resume), the CONFIRM for the vector's RESPONSE, the first heartbeat sealed and the
 *     first ACCEPT opened. */
#include <stdio.h>
#include <string.h>

#include "crypto_vectors.h"
#include "harness.h"
#include "tether_test_crypto.h"
#include "v2_vectors.h"

#define CHECK_BYTES(got, want, n) CHECK(memcmp((got), (want), (n)) == 0)

/* Hex to bytes: n bytes of `hex` into out. */
static void unhex(const char *hex, uint8_t *out, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) {
    unsigned byte = 0;
    sscanf(hex + 2 * i, "%2x", &byte);
    out[i] = (uint8_t)byte;
  }
}

/* The stream of crypto_vector_seed from its start, with its first `skip` bytes drawn. */
static void seed_and_skip(size_t skip) {
  uint8_t scratch[256];
  CHECK(tether_test_random_seed(crypto_vector_seed) == 0);
  while (skip > 0) {
    size_t n = skip < sizeof scratch ? skip : sizeof scratch;
    CHECK(tether_test_random_bytes(scratch, n) == 0);
    skip -= n;
  }
}

/* Before any seed: libsodium's own generator (two draws differ). */
static void test_unseeded_drawsAreLibsodiums(void) {
  uint8_t a[32], b[32];
  CHECK(tether_test_random_bytes(a, sizeof a) == 0);
  CHECK(tether_test_random_bytes(b, sizeof b) == 0);
  CHECK(memcmp(a, b, sizeof a) != 0);
  CHECK(tether_test_random_bytes(NULL, 0) == 0);
  CHECK(tether_test_random_bytes(NULL, 1) == -2);
}

static const char rfc8439_plaintext[] =
    "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the "
    "future, sunscreen would be it.";
static const char rfc8439_sealed[] =
    "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb69"
    "da92728b1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad675"
    "945585808b4831d7bc3ff4def08e4b7a9de576d26586cec64b61161ae10b594f09e26a7e902ecbd0600691";

/* RFC 8439 §2.8.2: the seam's AEAD gives the RFC's ciphertext and tag and opens them; a
   flipped bit anywhere, or other associated data, does not open. */
static void test_rfc8439_aead(void) {
  uint8_t key[32], nonce[12] = {0x07, 0, 0, 0, 0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47};
  uint8_t ad[12] = {0x50, 0x51, 0x52, 0x53, 0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7};
  const size_t n = sizeof rfc8439_plaintext - 1;
  uint8_t want[sizeof rfc8439_plaintext - 1 + 16], sealed[sizeof want], opened[sizeof want];
  size_t i;
  for (i = 0; i < sizeof key; i++) key[i] = (uint8_t)(0x80 + i);
  unhex(rfc8439_sealed, want, sizeof want);
  CHECK(tether_test_aead_seal(sealed, key, nonce, ad, sizeof ad,
                              (const uint8_t *)rfc8439_plaintext, n) == 0);
  CHECK_BYTES(sealed, want, sizeof want);
  CHECK(tether_test_aead_open(opened, key, nonce, ad, sizeof ad, sealed, sizeof sealed) == 0);
  CHECK_BYTES(opened, rfc8439_plaintext, n);
  for (i = 0; i < sizeof sealed; i++) {
    sealed[i] ^= 0x01;
    CHECK(tether_test_aead_open(opened, key, nonce, ad, sizeof ad, sealed, sizeof sealed) == -1);
    sealed[i] ^= 0x01;
  }
  CHECK(tether_test_aead_open(opened, key, nonce, ad, sizeof ad - 1, sealed, sizeof sealed) == -1);
  CHECK(tether_test_aead_open(opened, key, nonce, ad, sizeof ad, sealed, 15) == -1);
  CHECK(tether_test_aead_seal(sealed, NULL, nonce, ad, sizeof ad, sealed, 1) == -2);
}

/* RFC 7748 §6.1: Alice's and Bob's public keys and their shared secret, from both sides;
   the all-zero point is refused. */
static void test_rfc7748_x25519(void) {
  uint8_t alice[32], bob[32], alice_public[32], bob_public[32], want[32], got[32];
  uint8_t zero[32];
  unhex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a", alice, 32);
  unhex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb", bob, 32);
  CHECK(tether_test_x25519_public(alice_public, alice) == 0);
  unhex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a", want, 32);
  CHECK_BYTES(alice_public, want, 32);
  CHECK(tether_test_x25519_public(bob_public, bob) == 0);
  unhex("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f", want, 32);
  CHECK_BYTES(bob_public, want, 32);
  unhex("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742", want, 32);
  CHECK(tether_test_x25519(got, alice, bob_public) == 0);
  CHECK_BYTES(got, want, 32);
  CHECK(tether_test_x25519(got, bob, alice_public) == 0);
  CHECK_BYTES(got, want, 32);
  memset(zero, 0, sizeof zero);
  CHECK(tether_test_x25519(got, alice, zero) == -1);
  CHECK(tether_test_x25519(got, NULL, zero) == -2);
}

/* The seeded stream: draws of several sizes, one after another, are PyNaCl's bytes in
   order; a new seed starts the stream again from its first byte. */
static void test_seededStream_isPyNaClsStream(void) {
  uint8_t got[sizeof crypto_vector_stream];
  size_t at = 0, i;
  CHECK(tether_test_random_seed(crypto_vector_seed) == 0);
  for (i = 0; i < sizeof crypto_vector_draws / sizeof crypto_vector_draws[0]; i++) {
    CHECK(tether_test_random_bytes(got + at, crypto_vector_draws[i]) == 0);
    at += crypto_vector_draws[i];
  }
  CHECK(at == sizeof crypto_vector_stream);
  CHECK_BYTES(got, crypto_vector_stream, sizeof crypto_vector_stream);
  /* Seeded again: from the start, whatever sizes the draws have now. */
  CHECK(tether_test_random_seed(crypto_vector_seed) == 0);
  CHECK(tether_test_random_bytes(got, 100) == 0);
  CHECK(tether_test_random_bytes(got + 100, sizeof got - 100) == 0);
  CHECK_BYTES(got, crypto_vector_stream, sizeof crypto_vector_stream);
  CHECK(tether_test_random_seed(NULL) == -2);
}

/* Keys drawn from the stream after it, as a handshake draws them: PyNaCl's X25519 public
   keys and shared secret. */
static void test_seededKeys_givePyNaClsX25519(void) {
  uint8_t secret[32], peer_secret[32], public_key[32], peer_public[32], shared[32];
  seed_and_skip(sizeof crypto_vector_stream);
  CHECK(tether_test_random_bytes(secret, 32) == 0);
  CHECK(tether_test_random_bytes(peer_secret, 32) == 0);
  CHECK_BYTES(secret, crypto_vector_secret, 32);
  CHECK_BYTES(peer_secret, crypto_vector_peer_secret, 32);
  CHECK(tether_test_x25519_public(public_key, secret) == 0);
  CHECK(tether_test_x25519_public(peer_public, peer_secret) == 0);
  CHECK_BYTES(public_key, crypto_vector_public, 32);
  CHECK_BYTES(peer_public, crypto_vector_peer_public, 32);
  CHECK(tether_test_x25519(shared, secret, peer_public) == 0);
  CHECK_BYTES(shared, crypto_vector_shared, 32);
  CHECK(tether_test_x25519(shared, peer_secret, public_key) == 0);
  CHECK_BYTES(shared, crypto_vector_shared, 32);
}

/* The data cipher under the nonce of a counter: PyNaCl's bytes, the same as the seam's AEAD
   with the nonce 0^4 ‖ counter (big-endian); another counter or header does not open. */
static void test_dataCipher_givesPyNaClsBytes(void) {
  uint8_t key[32], nonce[12], sealed[sizeof crypto_vector_cipher_sealed];
  uint8_t again[sizeof sealed], opened[sizeof crypto_vector_plaintext], ad[sizeof crypto_vector_ad];
  const uint64_t counter = CRYPTO_VECTOR_COUNTER;
  int i;
  seed_and_skip(sizeof crypto_vector_stream + 64);
  CHECK(tether_test_random_bytes(key, 32) == 0);
  CHECK_BYTES(key, crypto_vector_cipher_key, 32);
  CHECK(tether_test_cipher_seal(sealed, key, counter, crypto_vector_ad, sizeof crypto_vector_ad,
                                crypto_vector_plaintext, sizeof crypto_vector_plaintext) == 0);
  CHECK_BYTES(sealed, crypto_vector_cipher_sealed, sizeof sealed);
  memset(nonce, 0, sizeof nonce);
  for (i = 0; i < 8; i++) nonce[4 + i] = (uint8_t)(counter >> (56 - 8 * i));
  CHECK(tether_test_aead_seal(again, key, nonce, crypto_vector_ad, sizeof crypto_vector_ad,
                              crypto_vector_plaintext, sizeof crypto_vector_plaintext) == 0);
  CHECK_BYTES(again, sealed, sizeof sealed);
  CHECK(tether_test_cipher_open(opened, key, counter, crypto_vector_ad, sizeof ad, sealed,
                                sizeof sealed) == 0);
  CHECK_BYTES(opened, crypto_vector_plaintext, sizeof opened);
  CHECK(tether_test_cipher_open(opened, key, counter + 1, crypto_vector_ad, sizeof ad, sealed,
                                sizeof sealed) == -1);
  memcpy(ad, crypto_vector_ad, sizeof ad);
  ad[0] ^= 0x80;
  CHECK(tether_test_cipher_open(opened, key, counter, ad, sizeof ad, sealed, sizeof sealed) == -1);
}

/* XChaCha20-Poly1305 with a key and a nonce from the stream: PyNaCl's bytes. */
static void test_xaead_givesPyNaClsBytes(void) {
  uint8_t key[32], nonce[24], sealed[sizeof crypto_vector_xaead_sealed];
  uint8_t opened[sizeof crypto_vector_plaintext];
  seed_and_skip(sizeof crypto_vector_stream + 96);
  CHECK(tether_test_random_bytes(key, 32) == 0);
  CHECK(tether_test_random_bytes(nonce, 24) == 0);
  CHECK_BYTES(key, crypto_vector_xaead_key, 32);
  CHECK_BYTES(nonce, crypto_vector_xaead_nonce, 24);
  CHECK(tether_test_xaead_seal(sealed, key, nonce, crypto_vector_ad, sizeof crypto_vector_ad,
                               crypto_vector_plaintext, sizeof crypto_vector_plaintext) == 0);
  CHECK_BYTES(sealed, crypto_vector_xaead_sealed, sizeof sealed);
  CHECK(tether_test_xaead_open(opened, key, nonce, crypto_vector_ad, sizeof crypto_vector_ad,
                               sealed, sizeof sealed) == 0);
  CHECK_BYTES(opened, crypto_vector_plaintext, sizeof opened);
  sealed[sizeof sealed - 1] ^= 0x40;
  CHECK(tether_test_xaead_open(opened, key, nonce, crypto_vector_ad, sizeof crypto_vector_ad,
                               sealed, sizeof sealed) == -1);
}

/* BLAKE2b with salt and personalization, keyed from the stream and unkeyed: PyNaCl's
   bytes; sizes outside 16..64 are refused. */
static void test_blake2b_givesPyNaClsBytes(void) {
  uint8_t key[32], digest[64], zero_salt[16];
  memset(zero_salt, 0, sizeof zero_salt);
  seed_and_skip(sizeof crypto_vector_stream + 152);
  CHECK(tether_test_random_bytes(key, 32) == 0);
  CHECK_BYTES(key, crypto_vector_blake2b_key, 32);
  CHECK(tether_test_blake2b(digest, 32, crypto_vector_plaintext, sizeof crypto_vector_plaintext,
                            key, 32, crypto_vector_salt, crypto_vector_personal) == 0);
  CHECK_BYTES(digest, crypto_vector_blake2b_keyed, 32);
  CHECK(tether_test_blake2b(digest, 64, crypto_vector_plaintext, sizeof crypto_vector_plaintext,
                            NULL, 0, zero_salt, crypto_vector_personal) == 0);
  CHECK_BYTES(digest, crypto_vector_blake2b_unkeyed, 64);
  CHECK(tether_test_blake2b(digest, 15, crypto_vector_plaintext, 1, NULL, 0, zero_salt,
                            crypto_vector_personal) == -1);
  CHECK(tether_test_blake2b(digest, 65, crypto_vector_plaintext, 1, NULL, 0, zero_salt,
                            crypto_vector_personal) == -1);
  CHECK(tether_test_blake2b(digest, 32, crypto_vector_plaintext, 1, NULL, 0, NULL,
                            crypto_vector_personal) == -2);
}

/* Each handshake vector through the library's own DeviceHandshake on the seeded stream. */
static void test_v2Handshake_givesPyNaClsBytes(void) {
  for (int i = 0; i < TETHER_V2_HANDSHAKE_VECTORS; i++) {
    const struct tether_v2_handshake_vector *v = &tether_v2_handshake_vectors[i];
    uint8_t seed[32], init[469], confirm[201], out[1200];
    memset(seed, v->seed, sizeof seed);
    CHECK(tether_test_random_seed(seed) == 0);
    CHECK(tether_test_v2_initiate(init, v->token, v->flags, v->uid, v->app_id, v->kind,
                                  v->channel_or_user, v->resume_session_id, v->resume_key,
                                  v->cookie) == 0);
    CHECK_BYTES(init, v->initiation, sizeof init);
    CHECK(tether_test_v2_receive(confirm, v->response, v->response_length) == 0);
    CHECK_BYTES(confirm, v->confirm, sizeof confirm);
    CHECK(tether_test_v2_seal(out, v->heartbeat_payload, v->heartbeat_payload_length) ==
          (int)v->first_heartbeat_length);
    CHECK_BYTES(out, v->first_heartbeat, v->first_heartbeat_length);
    CHECK(tether_test_v2_open(out, v->first_accept, v->first_accept_length) ==
          (int)v->accept_payload_length);
    CHECK_BYTES(out, v->accept_payload, v->accept_payload_length);
    /* Opened once: again, it is a replay. */
    CHECK(tether_test_v2_open(out, v->first_accept, v->first_accept_length) == -1);
    /* The RESPONSE again: the handshake is over, it answers nothing. */
    CHECK(tether_test_v2_receive(confirm, v->response, v->response_length) == -1);
  }
  CHECK(tether_test_v2_initiate(NULL, "2.x", 0, 0, "app", 1, "room", 0, NULL, NULL) == -2);
  {
    uint8_t init[469];
    CHECK(tether_test_v2_initiate(init, "not a token", 0, 0, "app", 1, "room", 0, NULL, NULL) ==
          -1);
  }
}

int main(void) {
  RUN(test_unseeded_drawsAreLibsodiums);
  RUN(test_rfc8439_aead);
  RUN(test_rfc7748_x25519);
  RUN(test_seededStream_isPyNaClsStream);
  RUN(test_seededKeys_givePyNaClsX25519);
  RUN(test_dataCipher_givesPyNaClsBytes);
  RUN(test_xaead_givesPyNaClsBytes);
  RUN(test_blake2b_givesPyNaClsBytes);
  RUN(test_v2Handshake_givesPyNaClsBytes);
  return harness_report("crypto", "RFC 8439, RFC 7748, PyNaCl's seeded bytes and version 2 handshakes");
}
