/* A fake edge server for the C tests: one non-blocking UDP socket on 127.0.0.1 that answers
 * JOIN with ACCEPT (uid 4242, token time left `token_ms`) and HEARTBEAT with its ack, can go silent,
 * and can push acks and presence digests at the engine on its own. */
#ifndef TETHER_TEST_FAKE_SERVER_H
#define TETHER_TEST_FAKE_SERVER_H
#include <arpa/inet.h>
#include <ev.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct fake_server {
  int fd;
  char address[64];
  int silent; /* answers nothing when set */
  uint32_t token_ms; /* the token time left its ACCEPTs give (0: no expiry) */
  int joins, heartbeats;
  int leaves, leave_datagrams; /* sessions that left; their LEAVEs (each is sent twice) */
  unsigned char left_cookie[8];      /* of the last session counted in `leaves` */
  unsigned char cookie[8];           /* of the last JOIN */
  struct sockaddr_storage peer;      /* where it came from */
  socklen_t peerlen;
  ev_io io;
};

static void put32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8); p[3] = (unsigned char)v;
}

static void fake_readable(struct ev_loop *loop, ev_io *w, int revents) {
  struct fake_server *s = (struct fake_server *)w->data;
  unsigned char in[1500], out[64];
  struct sockaddr_storage from;
  socklen_t fromlen = sizeof from;
  ssize_t n;
  (void)loop; (void)revents;
  while ((n = recvfrom(s->fd, in, sizeof in, 0, (struct sockaddr *)&from, &fromlen)) > 0) {
    if (n < 12 || in[0] != 'T' || in[1] != 'H' || in[2] != 1) continue;
    memcpy(out, in, 12); /* magic, version, type (replaced), cookie */
    memcpy(s->cookie, in + 4, 8);
    memcpy(&s->peer, &from, fromlen);
    s->peerlen = fromlen;
    if (in[3] == 0x01) { /* JOIN -> ACCEPT uid 4242, no token expiry */
      s->joins++;
      if (s->silent) continue;
      out[3] = 0x81;
      put32(out + 12, 4242);
      memset(out + 16, 0, 8 + 4 + 1);
      put32(out + 24, s->token_ms);
      sendto(s->fd, out, 12 + 17, 0, (struct sockaddr *)&from, fromlen);
    } else if (in[3] == 0x02 && n == 16) { /* HEARTBEAT -> ACK */
      s->heartbeats++;
      if (s->silent) continue;
      out[3] = 0x83;
      memcpy(out + 12, in + 12, 4);
      memset(out + 16, 0, 8);
      sendto(s->fd, out, 12 + 12, 0, (struct sockaddr *)&from, fromlen);
    } else if (in[3] == 0x03) {
      s->leave_datagrams++;
      if (s->leaves == 0 || memcmp(s->left_cookie, in + 4, 8) != 0) s->leaves++;
      memcpy(s->left_cookie, in + 4, 8);
    }
    fromlen = sizeof from;
  }
}

static void fake_start(struct ev_loop *loop, struct fake_server *s) {
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
  ev_io_init(&s->io, fake_readable, s->fd, EV_READ);
  s->io.data = s;
  ev_io_start(loop, &s->io);
}

static void fake_stop(struct ev_loop *loop, struct fake_server *s) {
  ev_io_stop(loop, &s->io);
  close(s->fd);
}


/* Sends `count` HEARTBEAT_ACKs to the engine, unasked (the session takes any ack that
   carries its cookie as data). */
static inline void fake_push_acks(struct fake_server *s, int count) {
  unsigned char out[24];
  out[0] = 'T'; out[1] = 'H'; out[2] = 1; out[3] = 0x83;
  memcpy(out + 4, s->cookie, 8);
  memset(out + 12, 0, 12);
  for (int i = 0; i < count; i++) {
    sendto(s->fd, out, sizeof out, 0, (struct sockaddr *)&s->peer, s->peerlen);
  }
}

/* Sends a presence digest naming members 7, 8 and 9 as alive, heard 5 ms ago. */
static inline void fake_push_presence(struct fake_server *s) {
  unsigned char out[12 + 2 + 3 * 9];
  out[0] = 'T'; out[1] = 'H'; out[2] = 1; out[3] = 0x84;
  memcpy(out + 4, s->cookie, 8);
  out[12] = 0; out[13] = 3;
  for (int i = 0; i < 3; i++) {
    unsigned char *e = out + 14 + 9 * i;
    put32(e, (uint32_t)(7 + i));
    e[4] = 2;
    put32(e + 5, 5);
  }
  sendto(s->fd, out, sizeof out, 0, (struct sockaddr *)&s->peer, s->peerlen);
}

#endif
