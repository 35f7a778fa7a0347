// SPDX-License-Identifier: Apache-2.0
/* The device's half of protocol version 2 for tether-bench's libev designs (client_v2.h says
 * what and why). Every primitive is libsodium's, the shared wire is Tests/c/wire_v2.c's. */
#include "client_v2.h"

#include <sodium.h>
#include <string.h>
#include <time.h>

enum {
  INIT = 0x01, RESPONSE = 0x02, CONFIRM = 0x03, COOKIE_REPLY = 0x04, REFUSE_CLEAR = 0x05,
  REFUSE_SEALED = 0x06, DATA = 0x07, RESET = 0x08
};
enum { HEARTBEAT = 0x02, LEAVE = 0x03, PATH_RESPONSE = 0x09 };
enum { ACCEPT = 0x81, REFUSE = 0x82, HEARTBEAT_ACK = 0x83, PATH_CHALLENGE = 0x8D };

#define COOKIE_LIFETIME ((int64_t)120 * 1000000000) /* ns: §12.6 */
/* §12.7's hard limit, 2^64 - 2^13 - 1 messages under one key: nothing is sealed past it. */
#define HARD_LIMIT (UINT64_MAX - ((uint64_t)1 << 13))

static void wipe_keys(struct v2_client_keys *k) { sodium_memzero(k, sizeof *k); }

/* Ends both attempts (a RESPONSE taken, or a refusal), wiping their secrets. */
static void end_attempts(struct v2_client *c) {
  sodium_memzero(c->attempts, sizeof c->attempts);
}

int v2_client_init(struct v2_client *c, const char *token, const char *app_id,
                   const char *channel, uint32_t uid) {
  uint8_t t[WIRE_V2_TOKEN_SIZE];
  size_t a = app_id ? strlen(app_id) : 0, n = channel ? strlen(channel) : 0;
  memset(c, 0, sizeof *c);
  if (a < 1 || a > 64 || n < 1 || n > 63 || wire_v2_token_decode(t, token) != 0) return -1;
  memcpy(c->w, t, 11);                /* version, key id, expiry */
  memcpy(c->w + 11, t + 43, 208);     /* the nonce and the sealed part */
  memcpy(c->psk, t + 11, 32);         /* the device secret never crosses the wire */
  c->expiry = wire_v2_get64(t + 3);
  sodium_memzero(t, sizeof t);
  /* Q (§12.5): versions {2}, uid, app id, kind 1 (channel), name; flags and resume per INIT. */
  c->request[1] = 0x02;
  wire_v2_put32(c->request + 5, uid);
  c->request[9] = (uint8_t)a;
  memcpy(c->request + 10, app_id, a);
  c->request[74] = 1;
  c->request[75] = (uint8_t)n;
  memcpy(c->request + 76, channel, n);
  return 0;
}

int v2_client_initiate(struct v2_client *c, int rejoin, int64_t now, const uint8_t random[48],
                       uint8_t *out) {
  struct v2_client_attempt *a;
  uint8_t q[168], key[32], h1[32], nonce[12] = {0};
  unsigned long long sealed = 0;
  /* The attempt before the previous one ends; this one becomes the current. */
  c->current ^= 1;
  a = &c->attempts[c->current];
  sodium_memzero(a, sizeof *a);
  memcpy(a->nonce, random, 16);
  memcpy(a->secret, random + 16, 32);
  c->rejoin = rejoin;
  out[0] = INIT;
  out[1] = 0x02;
  memcpy(out + 2, a->nonce, 16);
  if (crypto_scalarmult_base(out + 18, a->secret) != 0) {
    sodium_memzero(a, sizeof *a);
    return -1;
  }
  memcpy(out + 50, c->w, WIRE_V2_W_SIZE);
  wire_v2_transcript_start(a->h2, a->ck, out, c->w, c->psk, out + 18);
  memcpy(h1, a->h2, 32);
  /* The request: flags (rejoin; resume once an ACCEPT confirmed keys, proven with them). */
  memcpy(q, c->request, sizeof q);
  q[0] = rejoin ? 0x01 : 0x00;
  if (c->session.id != 0) {
    q[0] |= 0x02;
    wire_v2_put64(q + 140, c->session.id);
    wire_v2_proof(q + 148, c->session.resume, h1);
  }
  wire_v2_derive(key, a->ck, "tether2 req");
  crypto_aead_chacha20poly1305_ietf_encrypt(out + 269, &sealed, q, sizeof q, h1, 32, NULL, nonce,
                                            key);
  sodium_memzero(key, sizeof key);
  sodium_memzero(q, sizeof q);
  wire_v2_transcript_request(a->h2, out + 269);
  if (c->cookie_until > now) {
    wire_v2_mac2(out + 453, c->cookie, out);
  } else {
    memset(out + 453, 0, 16);
  }
  a->open = 1;
  return 469;
}

int v2_client_join(struct v2_client *c, int rejoin, int64_t now, uint8_t *out) {
  uint8_t random[48];
  int written;
  if (c->confirm_until != 0 && now < c->confirm_until) {
    memcpy(out, c->confirm, sizeof c->confirm);
    return (int)sizeof c->confirm;
  }
  if (c->confirm_until != 0) { /* its ticket has expired: a new INIT, and those keys go */
    c->confirm_until = 0;
    wipe_keys(&c->pending);
  }
  /* Before the first ACCEPT only the public expiry is known; the edge judges the rest. */
  if (c->expiry != 0 && c->session.id == 0 && (uint64_t)time(NULL) >= c->expiry) return 0;
  randombytes_buf(random, sizeof random);
  written = v2_client_initiate(c, rejoin, now, random, out);
  sodium_memzero(random, sizeof random);
  return written;
}

/* The open attempt a handshake answer echoes (bytes 1 ..< 17), or NULL. */
static struct v2_client_attempt *attempt_of(struct v2_client *c, const uint8_t *in) {
  for (int i = 0; i < 2; i++) {
    struct v2_client_attempt *a = &c->attempts[i];
    if (a->open && memcmp(a->nonce, in + 1, 16) == 0) return a;
  }
  return NULL;
}

/* XAEAD(PRF(ck_e, "", label), in[17 ..< 41], ad = in[0 ..< 17]) of a sealed handshake answer
   (COOKIE_REPLY, REFUSE_SEALED) opened into `plain`: 0, or -1. */
static int open_answer(const struct v2_client_attempt *a, const char *label, const uint8_t *in,
                       size_t length, uint8_t *plain, size_t plain_length) {
  uint8_t key[32];
  unsigned long long opened = 0;
  int status;
  wire_v2_derive(key, a->ck, label);
  status = crypto_aead_xchacha20poly1305_ietf_decrypt(plain, &opened, NULL, in + 41, length - 41,
                                                      in, 17, in + 17, key);
  sodium_memzero(key, sizeof key);
  return status == 0 && opened == plain_length ? 0 : -1;
}

/* Steps 7 to 11 on a RESPONSE for attempt `a`, then the CONFIRM into `reply`. */
static enum v2_client_event take_response(struct v2_client *c, struct v2_client_attempt *a,
                                          const uint8_t *in, int64_t now, uint8_t *reply,
                                          size_t *reply_length) {
  uint8_t shared[32], secret[32], tag[16];
  int mismatch;
  if (crypto_scalarmult(shared, a->secret, in + 45) != 0) return V2_CLIENT_DROPPED;
  wire_v2_transcript_finish(secret, tag, a->h2, a->ck, in, shared);
  sodium_memzero(shared, sizeof shared);
  mismatch = sodium_memcmp(tag, in + 253, 16) != 0;
  if (mismatch) {
    sodium_memzero(secret, sizeof secret);
    return V2_CLIENT_DROPPED;
  }
  end_attempts(c);
  wipe_keys(&c->pending);
  c->pending.id = wire_v2_get64(in + 17);
  wire_v2_session_keys(secret, c->pending.d2e, c->pending.e2d, c->pending.resume);
  /* CONFIRM: kind, session id, the ticket unchanged, its tag under k_confirm. */
  c->confirm[0] = CONFIRM;
  memcpy(c->confirm + 1, in + 17, 8);
  memcpy(c->confirm + 9, in + 77, 176);
  wire_v2_tag(c->confirm + 185, secret, "tether2 confirm", c->confirm, 185);
  sodium_memzero(secret, sizeof secret);
  c->confirm_until = now + (int64_t)wire_v2_get32(in + 41) * 1000000;
  if (c->confirm_until == 0) c->confirm_until = 1;
  memcpy(reply, c->confirm, sizeof c->confirm);
  *reply_length = sizeof c->confirm;
  return V2_CLIENT_ANSWERED;
}

static int seal(struct v2_client_keys *k, const uint8_t *payload, size_t length, uint8_t *out) {
  int written;
  if (k->id == 0 || k->next_counter >= HARD_LIMIT) return 0;
  written = wire_v2_seal(out, k->id, k->next_counter, k->d2e, payload, length);
  if (written <= 0) return 0;
  k->next_counter++;
  return written;
}

/* DATA of the CONFIRM's keys or of the joined session's. */
static enum v2_client_event take_data(struct v2_client *c, const uint8_t *in, size_t length,
                                      uint8_t *reply, size_t *reply_length) {
  uint64_t id = wire_v2_get64(in + 1);
  int confirming = c->confirm_until != 0 && id == c->pending.id;
  struct v2_client_keys *k = confirming ? &c->pending : &c->session;
  uint8_t payload[WIRE_V2_DATA_MAX];
  int n;
  if (id == 0 || id != k->id) return V2_CLIENT_DROPPED;
  n = wire_v2_open(payload, &k->window, id, k->e2d, in, length);
  if (n < 1) return V2_CLIENT_DROPPED;
  switch (payload[0]) {
  case ACCEPT: /* uid, server time, token time left, flags, reset value: 34 bytes */
    if (!confirming || n != 34) return V2_CLIENT_DROPPED;
    wipe_keys(&c->session);
    c->session = c->pending; /* the old k_resume goes with the old keys */
    sodium_memzero(&c->pending, sizeof c->pending);
    c->confirm_until = 0;
    memcpy(c->reset, payload + 18, 16);
    return V2_CLIENT_ACCEPTED;
  case REFUSE: /* reason, detail: counts only under the CONFIRM's keys */
    if (!confirming || n != 3 || payload[2] > 2) return V2_CLIENT_DROPPED;
    c->refusal = payload[1];
    c->confirm_until = 0;
    wipe_keys(&c->pending);
    return V2_CLIENT_REFUSED;
  case HEARTBEAT_ACK: /* sequence, server time */
    return !confirming && n == 13 ? V2_CLIENT_ACK : V2_CLIENT_DROPPED;
  case PATH_CHALLENGE: { /* answered at once, under the keys it came under (§12.11) */
    uint8_t answer[9];
    if (n != 9) return V2_CLIENT_DROPPED;
    answer[0] = PATH_RESPONSE;
    memcpy(answer + 1, payload + 1, 8);
    n = seal(k, answer, sizeof answer, reply);
    *reply_length = n > 0 ? (size_t)n : 0;
    return V2_CLIENT_ANSWERED;
  }
  default: return V2_CLIENT_OPENED;
  }
}

enum v2_client_event v2_client_take(struct v2_client *c, const uint8_t *in, size_t length,
                                    int64_t now, uint8_t *reply, size_t *reply_length) {
  struct v2_client_attempt *a;
  uint8_t plain[18];
  *reply_length = 0;
  if (in == NULL || length < 1) return V2_CLIENT_DROPPED;
  switch (in[0]) {
  case RESPONSE:
    if (length != 269 || (a = attempt_of(c, in)) == NULL) return V2_CLIENT_DROPPED;
    return take_response(c, a, in, now, reply, reply_length);
  case COOKIE_REPLY: {
    int written;
    if (length != 73 || (a = attempt_of(c, in)) == NULL || a->cookie_taken ||
        open_answer(a, "tether2 cookiek", in, length, plain, 16) != 0)
      return V2_CLIENT_DROPPED;
    a->cookie_taken = 1; /* a replay of it answers nothing (§12.6) */
    memcpy(c->cookie, plain, 16);
    sodium_memzero(plain, sizeof plain);
    c->cookie_until = now + COOKIE_LIFETIME;
    written = v2_client_join(c, c->rejoin, now, reply); /* a new INIT at once, with mac2 */
    *reply_length = written > 0 ? (size_t)written : 0;
    return V2_CLIENT_ANSWERED;
  }
  case REFUSE_CLEAR:
    if (length != 18 || in[17] != 0x01 || attempt_of(c, in) == NULL) return V2_CLIENT_DROPPED;
    end_attempts(c);
    c->refusal = 3; /* INVALID_TOKEN */
    return V2_CLIENT_REFUSED;
  case REFUSE_SEALED:
    if (length != 59 || (a = attempt_of(c, in)) == NULL ||
        open_answer(a, "tether2 refuse", in, length, plain, 2) != 0 || plain[0] < 1 ||
        plain[0] > 7 || plain[1] > 2)
      return V2_CLIENT_DROPPED;
    end_attempts(c);
    c->refusal = plain[0];
    return V2_CLIENT_REFUSED;
  case DATA:
    if (length < 34 || length > WIRE_V2_DATA_MAX) return V2_CLIENT_DROPPED;
    return take_data(c, in, length, reply, reply_length);
  case RESET:
    if (length != 25 || c->session.id == 0 || wire_v2_get64(in + 1) != c->session.id ||
        sodium_memcmp(in + 9, c->reset, 16) != 0)
      return V2_CLIENT_DROPPED;
    return V2_CLIENT_RESET;
  default: return V2_CLIENT_DROPPED;
  }
}

/* A device payload: the type, then `body` zero-padded to 8 bytes (every device DATA is at
   least 42 bytes, §12.7), under the CONFIRM's keys while one is out, else the session's. */
static int send_payload(struct v2_client *c, uint8_t type, const uint8_t body[8], uint8_t *out) {
  uint8_t payload[9];
  payload[0] = type;
  memcpy(payload + 1, body, 8);
  return seal(c->confirm_until != 0 ? &c->pending : &c->session, payload, sizeof payload, out);
}

int v2_client_heartbeat(struct v2_client *c, uint32_t sequence, uint8_t *out) {
  uint8_t body[8] = {0};
  wire_v2_put32(body, sequence);
  return send_payload(c, HEARTBEAT, body, out);
}

int v2_client_leave(struct v2_client *c, uint8_t *out) {
  static const uint8_t body[8] = {0};
  return send_payload(c, LEAVE, body, out);
}

void v2_client_wipe(struct v2_client *c) { sodium_memzero(c, sizeof *c); }
