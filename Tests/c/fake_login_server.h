/* A fake edge server for the login tests: one non-blocking UDP socket on 127.0.0.1 that
 * answers LOGIN with LOGIN_ACCEPT (or LOGIN_REFUSE `refuse_code`), LOGIN_HEARTBEAT with its
 * ack, CHANNEL_OPERATION with CHANNEL_ACK, counts LOGOUTs, can go silent, and can push a
 * KICK or MEMBER_EVENTS at the client on its own. */
#ifndef TETHER_TEST_FAKE_LOGIN_SERVER_H
#define TETHER_TEST_FAKE_LOGIN_SERVER_H
#include <arpa/inet.h>
#include <ev.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct fake_login_server {
  int fd;
  char address[64];
  int silent;          /* answers nothing when set */
  int refuse_code;     /* answers LOGIN with LOGIN_REFUSE of this code when not 0 */
  int logins, relogins, heartbeats, logouts, operations;
  uint32_t last_operation;   /* sequence of the last CHANNEL_OPERATION */
  char last_channel[64];     /* its channel */
  int last_operation_kind;
  uint32_t events_received;  /* from the last LOGIN_HEARTBEAT */
  uint32_t session;          /* the server session number its answers carry */
  unsigned char cookie[8];   /* of the last LOGIN */
  struct sockaddr_storage peer;
  socklen_t peerlen;
  ev_io io;
};

static void login_put32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8); p[3] = (unsigned char)v;
}

static uint32_t login_get32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void login_send(struct fake_login_server *s, unsigned char type, const unsigned char *body,
                       size_t length) {
  unsigned char out[1200];
  out[0] = 'T'; out[1] = 'H'; out[2] = 1; out[3] = type;
  memcpy(out + 4, s->cookie, 8);
  if (length) memcpy(out + 12, body, length);
  sendto(s->fd, out, 12 + length, 0, (struct sockaddr *)&s->peer, s->peerlen);
}

static void fake_login_readable(struct ev_loop *loop, ev_io *w, int revents) {
  struct fake_login_server *s = (struct fake_login_server *)w->data;
  unsigned char in[1500], body[64];
  struct sockaddr_storage from;
  socklen_t fromlen = sizeof from;
  ssize_t n;
  (void)loop; (void)revents;
  while ((n = recvfrom(s->fd, in, sizeof in, 0, (struct sockaddr *)&from, &fromlen)) > 0) {
    if (n < 12 || in[0] != 'T' || in[1] != 'H' || in[2] != 1) continue;
    memcpy(&s->peer, &from, fromlen);
    s->peerlen = fromlen;
    if (in[3] == 0x05 && n > 12) { /* LOGIN */
      memcpy(s->cookie, in + 4, 8);
      if (in[12] & 1) s->relogins++; else s->logins++;
      if (s->silent) { fromlen = sizeof from; continue; }
      if (s->refuse_code) {
        body[0] = (unsigned char)s->refuse_code;
        login_send(s, 0x8A, body, 1);
      } else {
        memset(body, 0, 17);
        body[12] = (unsigned char)(in[12] & 1); /* a relogin is resumed */
        login_put32(body + 13, s->session);
        login_send(s, 0x89, body, 17);
      }
    } else if (in[3] == 0x06 && n == 20) { /* LOGIN_HEARTBEAT -> HEARTBEAT_ACK */
      s->heartbeats++;
      s->events_received = login_get32(in + 16);
      if (!s->silent) {
        memcpy(body, in + 12, 4);
        memset(body + 4, 0, 8);
        login_send(s, 0x83, body, 12);
      }
    } else if (in[3] == 0x07) {
      s->logouts++;
    } else if (in[3] == 0x08 && n >= 18) { /* CHANNEL_OPERATION -> CHANNEL_ACK */
      s->operations++;
      s->last_operation = login_get32(in + 12);
      s->last_operation_kind = in[16];
      size_t length = in[17] < sizeof s->last_channel ? in[17] : sizeof s->last_channel - 1;
      memcpy(s->last_channel, in + 18, length);
      s->last_channel[length] = 0;
      if (!s->silent) {
        login_put32(body, s->session);
        memcpy(body + 4, in + 12, 4);
        login_send(s, 0x8C, body, 8);
      }
    }
    fromlen = sizeof from;
  }
}

static void fake_login_start(struct ev_loop *loop, struct fake_login_server *s) {
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  memset(s, 0, sizeof *s);
  s->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s->fd, (struct sockaddr *)&a, sizeof a);
  getsockname(s->fd, (struct sockaddr *)&a, &len);
  snprintf(s->address, sizeof s->address, "127.0.0.1:%u", (unsigned)ntohs(a.sin_port));
  ev_io_init(&s->io, fake_login_readable, s->fd, EV_READ);
  s->io.data = s;
  ev_io_start(loop, &s->io);
}

static void fake_login_stop(struct ev_loop *loop, struct fake_login_server *s) {
  ev_io_stop(loop, &s->io);
  close(s->fd);
}

/* KICK with `reason` (1 BANNED, 3 REMOTE_LOGIN) under the last LOGIN's cookie. */
static void fake_login_kick(struct fake_login_server *s, unsigned char reason) {
  login_send(s, 0x85, &reason, 1);
}

/* One MEMBER_EVENTS entry numbered `sequence`: `user` joined (1) or left (2) `channel`. */
static void fake_login_member_event(struct fake_login_server *s, uint32_t sequence, int kind,
                                    const char *channel, const char *user) {
  unsigned char body[200];
  size_t c = strlen(channel), u = strlen(user), at = 0;
  login_put32(body, s->session);
  login_put32(body + 4, sequence);
  body[8] = 1;
  at = 9;
  body[at++] = (unsigned char)kind;
  body[at++] = (unsigned char)c;
  memcpy(body + at, channel, c);
  at += c;
  body[at++] = (unsigned char)u;
  memcpy(body + at, user, u);
  at += u;
  login_send(s, 0x8B, body, at);
}

#endif
