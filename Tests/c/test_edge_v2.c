// SPDX-License-Identifier: Apache-2.0
/* The C tests' edge of protocol version 2 (edge_v2.c) against PyNaCl's vectors
 * (v2_vectors.h, scripts/test/v2-vectors.py): it opens the vectors' INITs, writes their
 * RESPONSEs byte for byte from the same seeded stream, takes their CONFIRMs, seals their
 * first ACCEPT and opens their first heartbeat; and it refuses what was altered. Run on
 * x86_64, and on aarch64 and armv7 under qemu-user, so the fake server the C tests will
 * use is right on every architecture before any test leans on it. */
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "edge_v2.h"
#include "harness.h"
#include "v2_vectors.h"

static const struct tether_v2_handshake_vector *vector;
static struct edge_v2_certificate keys;

/* The edge's draws of a vector: bytes 48 ..< 96 of its seeded stream (the device drew
   N_d and e_d first). */
static void edge_random(uint8_t out[48]) {
  uint8_t seed[randombytes_SEEDBYTES], stream[96];
  memset(seed, vector->seed, sizeof seed);
  randombytes_buf_deterministic(stream, sizeof stream, seed);
  CHECK(memcmp(stream, vector->initiation + 2, 16) == 0); /* the device's N_d: same stream */
  memcpy(out, stream + 48, 48);
}

static void opensTheInit(void) {
  struct edge_v2_init init;
  CHECK(edge_v2_open_init(&init, &keys, vector->initiation, vector->initiation_length) == 0);
  CHECK(strcmp(init.app, vector->app_id) == 0);
  CHECK(strcmp(init.name, vector->channel_or_user) == 0);
  CHECK(strcmp(init.grant_app, vector->app_id) == 0);
  CHECK(strcmp(init.grant_name, vector->channel_or_user) == 0);
  CHECK(init.kind == vector->kind && init.grant_kind == vector->kind);
  CHECK(init.uid == vector->uid);
  CHECK(init.flags == (vector->flags | (vector->resume_session_id != 0 ? 0x02 : 0)));
  CHECK(init.versions[0] == 2 && init.versions[1] == 0);
  CHECK(init.resume_id == vector->resume_session_id);
  if (vector->resume_key != NULL) {
    uint8_t other[32];
    CHECK(edge_v2_proof_valid(&init, vector->resume_key));
    memcpy(other, vector->resume_key, 32);
    other[31] ^= 1;
    CHECK(!edge_v2_proof_valid(&init, other));
  } else {
    CHECK(!edge_v2_proof_valid(&init, vector->session_secret));
  }
  edge_v2_wipe(NULL, &init);
}

/* The vector's token, minted again from its seeded stream: the same text. */
static void mintsTheToken(void) {
  uint8_t seed[randombytes_SEEDBYTES], random[56];
  char text[338];
  memset(seed, vector->token_seed, sizeof seed);
  randombytes_buf_deterministic(random, sizeof random, seed);
  CHECK(edge_v2_mint(text, &keys, vector->kind, vector->app_id, vector->channel_or_user,
                     vector->kind == 1 ? vector->uid : 0, vector->expiry, random) == 0);
  CHECK(strlen(text) == 337);
  CHECK(strcmp(text, vector->token) == 0);
  CHECK(edge_v2_mint(text, &keys, 2, "app", "alice", 7, 0, random) == EDGE_V2_MALFORMED);
}

static void checksMac2(void) {
  uint8_t cookie[16] = {0};
  if (vector->cookie != NULL) {
    CHECK(edge_v2_mac2_valid(vector->initiation, vector->initiation_length, vector->cookie));
    memcpy(cookie, vector->cookie, 16);
    cookie[0] ^= 0x80;
  }
  CHECK(!edge_v2_mac2_valid(vector->initiation, vector->initiation_length, cookie));
}

static void writesTheResponseAndTakesTheConfirm(void) {
  struct edge_v2_init init;
  struct edge_v2_session session;
  uint8_t random[48], response[EDGE_V2_RESPONSE_SIZE], confirm[EDGE_V2_CONFIRM_SIZE];
  CHECK(edge_v2_open_init(&init, &keys, vector->initiation, vector->initiation_length) == 0);
  edge_random(random);
  CHECK(edge_v2_respond(response, &session, &init, random, vector->session_id,
                        vector->ticket_lifetime_ms, vector->ticket) == EDGE_V2_RESPONSE_SIZE);
  CHECK(memcmp(response, vector->response, sizeof response) == 0);
  CHECK(memcmp(session.secret, vector->session_secret, 32) == 0);
  CHECK(memcmp(session.d2e, vector->device_to_edge_key, 32) == 0);
  CHECK(memcmp(session.e2d, vector->edge_to_device_key, 32) == 0);
  CHECK(memcmp(session.resume, vector->resume_key_of_session, 32) == 0);
  CHECK(edge_v2_check_confirm(&session, vector->confirm, vector->confirm_length) == 0);
  /* Every bit of the CONFIRM flipped: refused. */
  for (size_t bit = 0; bit < 8 * sizeof confirm; bit++) {
    memcpy(confirm, vector->confirm, sizeof confirm);
    confirm[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    CHECK(edge_v2_check_confirm(&session, confirm, sizeof confirm) != 0);
  }
  CHECK(edge_v2_check_confirm(&session, vector->confirm, vector->confirm_length - 1) ==
        EDGE_V2_MALFORMED);
  edge_v2_wipe(&session, &init);
}

static void sealsAndOpensTheFirstData(void) {
  struct edge_v2_init init;
  struct edge_v2_session session, fresh;
  uint8_t random[48], response[EDGE_V2_RESPONSE_SIZE], out[1200], payload[1200];
  int length;
  CHECK(edge_v2_open_init(&init, &keys, vector->initiation, vector->initiation_length) == 0);
  edge_random(random);
  edge_v2_respond(response, &session, &init, random, vector->session_id,
                  vector->ticket_lifetime_ms, vector->ticket);
  length = edge_v2_seal(out, &session, vector->accept_payload, vector->accept_payload_length);
  CHECK(length == (int)vector->first_accept_length);
  CHECK(memcmp(out, vector->first_accept, vector->first_accept_length) == 0);
  CHECK(session.next_counter == 1);
  fresh = session;
  length = edge_v2_open(payload, &session, vector->first_heartbeat,
                        vector->first_heartbeat_length);
  CHECK(length == (int)vector->heartbeat_payload_length);
  CHECK(memcmp(payload, vector->heartbeat_payload, vector->heartbeat_payload_length) == 0);
  CHECK(edge_v2_open(payload, &session, vector->first_heartbeat,
                     vector->first_heartbeat_length) == EDGE_V2_REPLAYED);
  /* Sealed under the edge's key, not the device's: it does not open as the device's. */
  CHECK(edge_v2_open(payload, &fresh, vector->first_accept, vector->first_accept_length) ==
        EDGE_V2_UNOPENED);
  CHECK(!fresh.replay.opened_any); /* and it changed nothing */
  edge_v2_wipe(&session, &init);
  edge_v2_wipe(&fresh, NULL);
}

/* Every bit of the INIT before mac2 flipped: refused (the header malformed, the token not
   opened, or the request not opened); a bit of mac2 changes nothing the open checks. */
static void refusesEveryAlteredInit(void) {
  uint8_t init_bytes[EDGE_V2_INIT_SIZE];
  struct edge_v2_init init;
  int refused = 1, taken = 1;
  for (size_t bit = 0; bit < 8 * sizeof init_bytes; bit++) {
    int status;
    memcpy(init_bytes, vector->initiation, sizeof init_bytes);
    init_bytes[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    status = edge_v2_open_init(&init, &keys, init_bytes, sizeof init_bytes);
    if (bit < 8 * 453) {
      if (status == 0) refused = 0;
    } else if (status != 0) {
      taken = 0;
    }
  }
  CHECK(refused);
  CHECK(taken);
  CHECK(edge_v2_open_init(&init, &keys, vector->initiation, 468) == EDGE_V2_MALFORMED);
}

/* Another certificate's keys: the token does not open (REFUSE_CLEAR's case). */
static void anotherCertificateDoesNotOpenTheToken(void) {
  struct edge_v2_certificate other;
  struct edge_v2_init init;
  uint8_t clear[EDGE_V2_REFUSE_CLEAR_SIZE];
  CHECK(edge_v2_certificate_keys(&other, "another", 7) == 0);
  memcpy(other.key_id, keys.key_id, 2); /* the same id: the seal itself must fail */
  CHECK(edge_v2_open_init(&init, &other, vector->initiation, vector->initiation_length) ==
        EDGE_V2_NOT_OPENED);
  CHECK(edge_v2_refuse_clear(clear, vector->initiation + 2) == EDGE_V2_REFUSE_CLEAR_SIZE);
  CHECK(clear[0] == 0x05 && clear[17] == 0x01 && memcmp(clear + 1, vector->initiation + 2, 16) == 0);
}

/* The replay window against a plain model: every counter of a shuffled run with repeats
   is taken once, and never once it is 128 or more behind the highest taken. */
static void theWindowTakesEachCounterOnce(void) {
  struct edge_v2_init init;
  struct edge_v2_session edge, device;
  uint8_t random[48], response[EDGE_V2_RESPONSE_SIZE], datagram[64], payload[64];
  static uint8_t taken[600];
  uint8_t body[9] = {0x02};
  uint64_t highest = 0;
  int any = 0, agreed = 1;
  CHECK(edge_v2_open_init(&init, &keys, vector->initiation, vector->initiation_length) == 0);
  edge_random(random);
  edge_v2_respond(response, &edge, &init, random, vector->session_id,
                  vector->ticket_lifetime_ms, vector->ticket);
  device = edge; /* the device's side: seals under d2e */
  memcpy(device.e2d, edge.d2e, 32);
  memset(taken, 0, sizeof taken);
  for (int i = 0; i < 3000; i++) {
    uint64_t counter = (uint64_t)(i / 5) + randombytes_uniform(200);
    int length, expected;
    if (counter >= sizeof taken) counter = sizeof taken - 1;
    device.next_counter = counter;
    length = edge_v2_seal(datagram, &device, body, sizeof body);
    expected = !taken[counter] && (!any || counter > highest || highest - counter < 128);
    if ((edge_v2_open(payload, &edge, datagram, (size_t)length) == (int)sizeof body) !=
        expected)
      agreed = 0;
    if (expected) {
      taken[counter] = 1;
      if (!any || counter > highest) highest = counter;
      any = 1;
    }
  }
  CHECK(agreed);
  edge_v2_wipe(&edge, &init);
  edge_v2_wipe(&device, NULL);
}

static void sealedAnswersHaveTheirSizes(void) {
  struct edge_v2_init init;
  uint8_t random[24] = {1}, cookie[16] = {2}, out[80], reset[EDGE_V2_RESET_SIZE], value[16];
  CHECK(edge_v2_open_init(&init, &keys, vector->initiation, vector->initiation_length) == 0);
  CHECK(edge_v2_refuse_sealed(out, &init, 3, 0, random) == EDGE_V2_REFUSE_SEALED_SIZE);
  CHECK(out[0] == 0x06 && memcmp(out + 1, init.nonce, 16) == 0);
  CHECK(edge_v2_cookie_reply(out, &init, cookie, random) == EDGE_V2_COOKIE_REPLY_SIZE);
  CHECK(out[0] == 0x04 && memcmp(out + 17, random, 24) == 0);
  CHECK(edge_v2_reset(reset, &keys, "edge-1", vector->session_id, value) == EDGE_V2_RESET_SIZE);
  CHECK(reset[0] == 0x08 && memcmp(reset + 9, value, 16) == 0);
  CHECK(edge_v2_session_id(reset, sizeof reset) == vector->session_id);
  CHECK(edge_v2_reset(reset, &keys, "", 1, NULL) == EDGE_V2_MALFORMED);
  edge_v2_wipe(NULL, &init);
}

int main(void) {
  static const struct {
    const char *name;
    void (*run)(void);
  } cases[] = {
      {"mintsTheToken", mintsTheToken},
      {"opensTheInit", opensTheInit},
      {"checksMac2", checksMac2},
      {"writesTheResponseAndTakesTheConfirm", writesTheResponseAndTakesTheConfirm},
      {"sealsAndOpensTheFirstData", sealsAndOpensTheFirstData},
      {"refusesEveryAlteredInit", refusesEveryAlteredInit},
      {"anotherCertificateDoesNotOpenTheToken", anotherCertificateDoesNotOpenTheToken},
  };
  char name[96];
  if (sodium_init() < 0) return 1;
  for (int i = 0; i < TETHER_V2_HANDSHAKE_VECTORS; i++) {
    vector = &tether_v2_handshake_vectors[i];
    if (edge_v2_certificate_keys(&keys, vector->certificate, vector->certificate_length) != 0)
      return 1;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      snprintf(name, sizeof name, "%s: %s", vector->name, cases[c].name);
      harness_run(name, cases[c].run);
    }
  }
  RUN(theWindowTakesEachCounterOnce);
  RUN(sealedAnswersHaveTheirSizes);
  return harness_report("test_edge_v2", "the C tests' version 2 edge against PyNaCl's vectors");
}
