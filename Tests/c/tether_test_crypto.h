// SPDX-License-Identifier: Apache-2.0
/*
 * tether_test_crypto.h - the exports of the two test-only builds of the device library,
 * for the C tests of Tests/c. Never installed, never in the shipped library: `make
 * abi-check` fails if libtether.so or libtether.a exports any tether_test_* function.
 *
 *   TETHER_TEST_CRYPTO  build/lib-test-crypto/ARCH (scripts/build/build-lib.sh ARCH
 *                       test-crypto): libsodium as shipped, but every random draw of the
 *                       crypto seam comes from one seeded stream once
 *                       tether_test_random_seed has been called (test_crypto.c)
 *   TETHER_NULL_CRYPTO  build/lib-null-crypto/ARCH: the null AEAD and X25519 of
 *                       Sources/TetherSodium/NullCrypto.swift, for fuzzing (test_null_crypto.c)
 *
 * A program defines the macro of the build it links before it includes this header; the
 * build's exports are the functions declared under it (scripts/build/build-lib.sh reads
 * them from here). Each function calls the seam (SessionCrypto, as the library's own code
 * does: Sources/Tether/Exports/TestCryptoExports.swift) and returns 0, -1 when the seam
 * refused (a size it does not take, a sealed text that does not open, an all-zero X25519
 * secret), or -2 when a pointer that must not be NULL is NULL.
 */
#ifndef TETHER_TEST_CRYPTO_H
#define TETHER_TEST_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(TETHER_TEST_CRYPTO) || defined(TETHER_NULL_CRYPTO)
/* `length` random bytes from the seam (randombytes_buf, or the seeded stream). */
int tether_test_random_bytes(uint8_t *out, size_t length);

/* ChaCha20-Poly1305 (IETF) through the seam's aeadSeal: out gets plaintext_length + 16
   bytes (ciphertext, then tag). ad and plaintext may be NULL when their length is 0. */
int tether_test_aead_seal(uint8_t *out, const uint8_t key[32], const uint8_t nonce[12],
                          const uint8_t *ad, size_t ad_length, const uint8_t *plaintext,
                          size_t plaintext_length);
/* The seam's aeadOpen: out gets sealed_length - 16 bytes if the text opens. */
int tether_test_aead_open(uint8_t *out, const uint8_t key[32], const uint8_t nonce[12],
                          const uint8_t *ad, size_t ad_length, const uint8_t *sealed,
                          size_t sealed_length);
/* XChaCha20-Poly1305 (IETF), nonce 24 bytes: as the two above. */
int tether_test_xaead_seal(uint8_t *out, const uint8_t key[32], const uint8_t nonce[24],
                           const uint8_t *ad, size_t ad_length, const uint8_t *plaintext,
                           size_t plaintext_length);
int tether_test_xaead_open(uint8_t *out, const uint8_t key[32], const uint8_t nonce[24],
                           const uint8_t *ad, size_t ad_length, const uint8_t *sealed,
                           size_t sealed_length);
/* The data cipher (the seam's Cipher, what seals every DATA datagram): plaintext sealed
   under the nonce of `counter` (0^4 then the counter big-endian) with ad as associated
   data; out gets the ciphertext and the tag, plaintext_length + 16 bytes. */
int tether_test_cipher_seal(uint8_t *out, const uint8_t key[32], uint64_t counter,
                            const uint8_t *ad, size_t ad_length, const uint8_t *plaintext,
                            size_t plaintext_length);
/* The data cipher's open: out gets sealed_length - 16 bytes if the text opens. */
int tether_test_cipher_open(uint8_t *out, const uint8_t key[32], uint64_t counter,
                            const uint8_t *ad, size_t ad_length, const uint8_t *sealed,
                            size_t sealed_length);
/* X25519: the public key of `secret` (crypto_scalarmult_base). */
int tether_test_x25519_public(uint8_t out[32], const uint8_t secret[32]);
/* X25519: the shared secret of `secret` and `public_key` (crypto_scalarmult); -1 when it
   is all zeros. */
int tether_test_x25519(uint8_t out[32], const uint8_t secret[32], const uint8_t public_key[32]);
/* BLAKE2b with salt and personalization: out_length (16..64) bytes of input, keyed with
   key (key_length 0: unkeyed; key may then be NULL). */
int tether_test_blake2b(uint8_t *out, size_t out_length, const uint8_t *input,
                        size_t input_length, const uint8_t *key, size_t key_length,
                        const uint8_t salt[16], const uint8_t personal[16]);
#endif

#ifdef TETHER_TEST_CRYPTO
/* Every random draw of the seam from now on comes from the stream of `seed`: the bytes of
   libsodium's randombytes_buf_deterministic(size, seed), in order from the start, draw
   after draw (scripts/test/v2-vectors.py's SeededStream). A later call starts the stream
   of its seed again from its first byte. */
int tether_test_random_seed(const uint8_t seed[32]);

/* The device's half of the version 2 handshake (TetherCore's DeviceHandshake, as the
   library's layer runs it; docs/PROTOCOL.md §12.5): a new attempt for `token` (a version 2
   token's text) and the request (flags, uid, app id, kind 1 channel or 2 login, channel
   name or user id), resuming session `resume_id` with `resume_key` (32 bytes) unless it is
   0, with mac2 under `cookie` (16 bytes) unless it is NULL. out gets the INIT, 469 bytes.
   -1 if the token does not parse. One handshake at a time, for the calling test. */
int tether_test_v2_initiate(uint8_t out[469], const char *token, uint8_t flags, uint32_t uid,
                            const char *app_id, uint8_t kind, const char *name,
                            uint64_t resume_id, const uint8_t *resume_key,
                            const uint8_t *cookie);
/* The edge's RESPONSE (269 bytes) to that attempt: out gets the CONFIRM (201 bytes) and the
   session's DATA keys are kept for the two calls below. -1 if it does not open. */
int tether_test_v2_receive(uint8_t out[201], const uint8_t *answer, size_t length);
/* `payload` sealed as the device's next DATA under the kept keys: returns the datagram's
   size (length + 33), -1 without keys. */
int tether_test_v2_seal(uint8_t *out, const uint8_t *payload, size_t length);
/* A DATA datagram from the edge opened under the kept keys: returns the payload's size, -1
   if it does not open (or repeats). */
int tether_test_v2_open(uint8_t *out, const uint8_t *datagram, size_t length);
#endif

#ifdef TETHER_NULL_CRYPTO
/* Returns 1: the null build's marker, which the symbol check looks for. */
int tether_test_null_crypto(void);
#endif

#ifdef __cplusplus
}
#endif

#endif /* TETHER_TEST_CRYPTO_H */
