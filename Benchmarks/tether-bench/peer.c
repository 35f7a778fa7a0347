// SPDX-License-Identifier: Apache-2.0
/* The peer, in a process of its own: every session's datagrams go through it, so it can
 * cut links and knows when it last passed each session a datagram (what the "outside"
 * lateness is measured from). Without an edge it answers JOIN with ACCEPT and HEARTBEAT
 * with HEARTBEAT_ACK itself (docs/PROTOCOL.md); with one, it relays to it from one socket,
 * telling sessions apart by their cookie. */
#include "bench.h"

#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>


enum { TYPE_JOIN = 0x01, TYPE_HEARTBEAT = 0x02, TYPE_ACCEPT = 0x81, TYPE_ACK = 0x83 };
enum { HEADER = 12, HELD_MAX = 64 };

struct link {
  uint64_t cookie;
  struct sockaddr_in device;
  int known;
  unsigned char held[HELD_MAX]; /* the last datagram held during a burst's hold */
  int held_length;
};

static struct link *links;
static uint64_t *table_cookie; /* open addressing: cookie -> index */
static int32_t *table_index;
static size_t table_mask;
static int front, back = -1;
static uint32_t uid_base;
static int released;

static size_t slot_of(uint64_t cookie) {
  return (size_t)((cookie * 0x9E3779B97F4A7C15ull) >> 20) & table_mask;
}

static int lookup(uint64_t cookie) {
  for (size_t i = slot_of(cookie);; i = (i + 1) & table_mask) {
    if (table_cookie[i] == cookie) return table_index[i];
    if (table_cookie[i] == 0) return -1;
  }
}

static void remember(uint64_t cookie, int index) {
  size_t i = slot_of(cookie);
  while (table_cookie[i] != 0 && table_cookie[i] != cookie) i = (i + 1) & table_mask;
  table_cookie[i] = cookie;
  table_index[i] = index;
  links[index].cookie = cookie;
}

static uint64_t get64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = v << 8 | p[i];
  return v;
}

static uint32_t get32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}


static void pass(int index, const unsigned char *bytes, int length) {
  struct link *l = &links[index];
  if (!l->known) return;
  /* Before the send: the kernel stamps the datagram's arrival inside it, so the outside
     figure can only overstate how late a callback was. */
  store_ns(&last_to_device[index], now_ns());
  sendto(front, bytes, (size_t)length, 0, (struct sockaddr *)&l->device, sizeof l->device);
}

/* Toward device `index`: passed, held (during a burst's hold), or dropped (cut). */
static void to_device(int index, const unsigned char *bytes, int length) {
  ns_t now = now_ns();
  if (is_cut(index, now)) return;
  ns_t hold = load_ns(&shm->hold_from);
  if (hold && now >= hold && now < load_ns(&shm->release_at)) {
    if (length <= HELD_MAX) {
      memcpy(links[index].held, bytes, (size_t)length);
      links[index].held_length = length;
    }
    return;
  }
  pass(index, bytes, length);
}

/* The burst's release: everything held goes out back to back, then the cut begins. */
static void release_held(void) {
  for (int i = 0; i < shm->sessions; i++) {
    if (links[i].held_length > 0) {
      pass(i, links[i].held, links[i].held_length);
      links[i].held_length = 0;
    }
  }
  released = 1;
}

/* What the minimal peer answers. */
static void answer(int index, const unsigned char *in, ssize_t n) {
  unsigned char out[32];
  memcpy(out, in, HEADER);
  memset(out + HEADER, 0, sizeof out - HEADER);
  if (in[3] == TYPE_JOIN) {
    out[3] = TYPE_ACCEPT;
    memcpy(out + 12, in + 12, 4); /* the uid asked for; serverTime, no token expiry */
    to_device(index, out, HEADER + 17);
  } else if (in[3] == TYPE_HEARTBEAT && n == HEADER + 4) {
    out[3] = TYPE_ACK;
    memcpy(out + 12, in + 12, 4);
    to_device(index, out, HEADER + 12);
  }
}

static void from_devices(void) {
  unsigned char in[1500];
  struct sockaddr_in from;
  socklen_t length = sizeof from;
  ssize_t n;
  for (int reads = 0; reads < 512; reads++) {
    n = recvfrom(front, in, sizeof in, MSG_DONTWAIT, (struct sockaddr *)&from, &length);
    if (n < 0) return;
    length = sizeof from;
    if (n < HEADER || in[0] != 'T' || in[1] != 'H') continue;
    uint64_t cookie = get64(in + 4);
    int index = lookup(cookie);
    if (index < 0 && in[3] == TYPE_JOIN && n >= HEADER + 4) {
      uint32_t uid = get32(in + 12);
      if (uid >= uid_base && uid - uid_base < (uint32_t)shm->sessions) {
        index = (int)(uid - uid_base);
        remember(cookie, index);
      }
    }
    if (index < 0) continue;
    links[index].device = from;
    links[index].known = 1;
    if (is_cut(index, now_ns())) continue;
    if (back >= 0) {
      send(back, in, (size_t)n, 0);
    } else {
      answer(index, in, n);
    }
  }
}

static void from_edge(void) {
  unsigned char in[1500];
  ssize_t n;
  for (int reads = 0; reads < 512; reads++) {
    n = recv(back, in, sizeof in, MSG_DONTWAIT);
    if (n < 0) return;
    if (n < HEADER) continue;
    int index = lookup(get64(in + 4));
    if (index >= 0) to_device(index, in, (int)n);
  }
}

static void serve(void) {
  struct pollfd fds[2] = {{front, POLLIN, 0}, {back, POLLIN, 0}};
  while (!__atomic_load_n(&shm->stop_peer, __ATOMIC_RELAXED)) {
    ns_t now = now_ns(), release = load_ns(&shm->release_at);
    if (!release) released = 0;
    if (release && !released && now >= release) release_held();
    poll(fds, back >= 0 ? 2 : 1, release && !released ? 1 : 20);
    if (fds[0].revents) from_devices();
    if (back >= 0 && fds[1].revents) from_edge();
  }
}

/* Opens the peer's sockets and tables in this process. */
static void peer_open(const struct sockaddr_in *edge, uint32_t base, struct sockaddr_in *address) {
  struct sockaddr_in a;
  socklen_t length = sizeof a;
  int size = 8 << 20;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  front = socket(AF_INET, SOCK_DGRAM, 0);
  setsockopt(front, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  if (front < 0 || bind(front, (struct sockaddr *)&a, sizeof a) != 0) {
    perror("tether-bench: peer socket");
    exit(1);
  }
  getsockname(front, (struct sockaddr *)&a, &length);
  *address = a;
  back = -1;
  if (edge != NULL) {
    back = socket(AF_INET, SOCK_DGRAM, 0);
    setsockopt(back, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    if (back < 0 || connect(back, (const struct sockaddr *)edge, sizeof *edge) != 0) {
      perror("tether-bench: relay socket");
      exit(1);
    }
  }
  uid_base = base;
  released = 0;
  links = calloc((size_t)shm->sessions, sizeof *links);
  for (table_mask = 16; table_mask < 4 * (size_t)shm->sessions; table_mask <<= 1) {
  }
  table_cookie = calloc(table_mask, sizeof *table_cookie);
  table_index = calloc(table_mask, sizeof *table_index);
  table_mask -= 1;
  if (links == NULL || table_cookie == NULL || table_index == NULL) {
    fprintf(stderr, "tether-bench: out of memory for the peer\n");
    exit(1);
  }
}

static void peer_close(void) {
  close(front);
  if (back >= 0) close(back);
  back = -1;
  free(links);
  free(table_cookie);
  free(table_index);
  links = NULL;
  table_cookie = NULL;
  table_index = NULL;
}

pid_t peer_start(const struct sockaddr_in *edge, uint32_t base, struct sockaddr_in *address) {
  peer_open(edge, base, address);
  pid_t pid = fork();
  if (pid != 0) {
    peer_close();
    return pid;
  }
  prctl(PR_SET_NAME, "bench-peer");
  serve();
  _exit(0);
}

/* ---- The peer on the bench's own loop (--inline-peer) ------------------------------- */

static ev_io inline_io;
static ev_timer inline_tick;

static void inline_readable(struct ev_loop *loop, ev_io *w, int revents) {
  (void)loop;
  (void)w;
  (void)revents;
  from_devices();
}

/* Releases a burst's held datagrams on time (the child's poll loop does it there). */
static void inline_check(struct ev_loop *loop, ev_timer *w, int revents) {
  ns_t release = load_ns(&shm->release_at);
  (void)loop;
  (void)w;
  (void)revents;
  if (!release) released = 0;
  if (release && !released && now_ns() >= release) release_held();
}

void peer_attach(struct ev_loop *loop, uint32_t base, struct sockaddr_in *address) {
  peer_open(NULL, base, address);
  ev_io_init(&inline_io, inline_readable, front, EV_READ);
  ev_timer_init(&inline_tick, inline_check, 0.001, 0.001);
  ev_io_start(loop, &inline_io);
  ev_timer_start(loop, &inline_tick);
}

void peer_detach(struct ev_loop *loop) {
  ev_io_stop(loop, &inline_io);
  ev_timer_stop(loop, &inline_tick);
  peer_close();
}
