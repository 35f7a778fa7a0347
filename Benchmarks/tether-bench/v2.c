// SPDX-License-Identifier: Apache-2.0
/* The bench's own edge, protocol version 2 (docs/PROTOCOL.md §12.5 - §12.9): what the peer
 * answers a Tether engine with when no tether-edge is behind it, and what cost_per_ack plays.
 * The cryptography is Tests/c/edge_v2.c's (libsodium, sharing no code with the library);
 * this file only keeps each session's state and writes the few answers a bench needs:
 * RESPONSE to an INIT, ACCEPT to a CONFIRM, HEARTBEAT_ACK to a HEARTBEAT. */
#include "bench.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../Tests/c/edge_v2.h"

const char *const bench_certificate = "bench-certificate";

static struct edge_v2_certificate keys;
static uint32_t epoch, serial;

int v2_setup(void) {
  if (sodium_init() < 0) return -1;
  if (edge_v2_certificate_keys(&keys, bench_certificate, strlen(bench_certificate)) != 0)
    return -1;
  while (epoch == 0) randombytes_buf(&epoch, sizeof epoch);
  return 0;
}

int v2_mint(char out[V2_TOKEN_TEXT], const char *app_id, const char *channel) {
  uint8_t random[56];
  randombytes_buf(random, sizeof random);
  return edge_v2_mint(out, &keys, 1, app_id, channel, 0, 0, random);
}

uint64_t v2_token_key(const char *text) {
  uint8_t binary[WIRE_V2_TOKEN_SIZE];
  uint64_t key = wire_v2_token_decode(binary, text) == 0 ? wire_v2_get64(binary + 43) : 0;
  sodium_memzero(binary, sizeof binary);
  return key; /* the token's nonce: random per token */
}

struct v2_link {
  struct edge_v2_session sessions[2]; /* the last two RESPONSEs' (the device keeps two) */
  uint32_t uid[2];                    /* the uid each one's INIT asked for */
  int newest;
};

struct v2_link *v2_links(int count) { return calloc((size_t)count, sizeof(struct v2_link)); }

struct v2_link *v2_link_at(struct v2_link *links, int index) { return &links[index]; }

void v2_links_free(struct v2_link *links, int count) {
  if (links == NULL) return;
  for (int i = 0; i < count; i++) {
    edge_v2_wipe(&links[i].sessions[0], NULL);
    edge_v2_wipe(&links[i].sessions[1], NULL);
  }
  free(links);
}

static struct edge_v2_session *session_of(struct v2_link *l, uint64_t id) {
  for (int i = 0; i < 2; i++)
    if (id != 0 && l->sessions[i].id == id) return &l->sessions[i];
  return NULL;
}

/* `type` and `body` sealed as the session's next DATA into `out`. */
static int seal(uint8_t *out, struct edge_v2_session *s, uint8_t type, const uint8_t *body,
                size_t length) {
  uint8_t payload[64];
  payload[0] = type;
  memcpy(payload + 1, body, length);
  return edge_v2_seal(out, s, payload, 1 + length);
}

int v2_answer(struct v2_link *l, const uint8_t *in, size_t n, uint8_t *out) {
  struct edge_v2_session *s;
  uint8_t body[33], payload[64], random[48], ticket[EDGE_V2_TICKET_SIZE];
  if (n == EDGE_V2_INIT_SIZE && in[0] == 0x01) {
    struct edge_v2_init init;
    int status = edge_v2_open_init(&init, &keys, in, n), written = 0;
    if (status == EDGE_V2_NOT_OPENED) return edge_v2_refuse_clear(out, in + 2);
    if (status != 0) return 0;
    randombytes_buf(random, sizeof random);
    randombytes_buf(ticket, sizeof ticket); /* a fake's ticket: the session is kept here */
    l->newest ^= 1;
    s = &l->sessions[l->newest];
    edge_v2_wipe(s, NULL);
    if (++serial == 0) serial = 1;
    written = edge_v2_respond(out, s, &init, random, (uint64_t)epoch << 32 | serial, 3000, ticket);
    l->uid[l->newest] = init.uid; /* for the ACCEPT: the token grants any uid */
    edge_v2_wipe(NULL, &init);
    return written > 0 ? written : 0;
  }
  if (n == EDGE_V2_CONFIRM_SIZE && in[0] == 0x03) {
    int which;
    s = session_of(l, edge_v2_session_id(in, n));
    if (s == NULL || edge_v2_check_confirm(s, in, n) != 0) return 0;
    which = (int)(s - l->sessions);
    /* ACCEPT: uid, server time 0, token time left 0 (never expires), not resumed, the
       session's reset value. A repeated CONFIRM gets it again, sealed afresh. */
    memset(body, 0, sizeof body);
    wire_v2_put32(body, l->uid[which]);
    edge_v2_reset(random, &keys, "bench", s->id, body + 17);
    return seal(out, s, 0x81, body, sizeof body);
  }
  if (n > EDGE_V2_DATA_OVERHEAD && in[0] == 0x07 &&
      (s = session_of(l, edge_v2_session_id(in, n))) != NULL &&
      n - EDGE_V2_DATA_OVERHEAD <= sizeof payload) {
    int opened = edge_v2_open(payload, s, in, n);
    if (opened == 9 && payload[0] == 0x02) { /* HEARTBEAT: its sequence, server time 0 */
      memset(body, 0, 12);
      memcpy(body, payload + 1, 4);
      return seal(out, s, 0x83, body, 12);
    }
  }
  return 0;
}

int v2_seal_ack(struct v2_link *l, uint32_t sequence, uint8_t *out) {
  uint8_t body[12] = {0};
  wire_v2_put32(body, sequence);
  return seal(out, &l->sessions[l->newest], 0x83, body, sizeof body);
}
