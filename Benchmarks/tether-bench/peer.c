// SPDX-License-Identifier: Apache-2.0
/* The peer, in a process of its own: every session's datagrams go through it, so it can
 * cut links and knows when it last passed each session a datagram (what the "outside"
 * lateness is measured from). Every design speaks protocol version 2 (docs/PROTOCOL.md
 * §12). Without an edge the peer answers itself: INIT, CONFIRM and HEARTBEAT as an edge
 * would (v2.c). With an edge, it relays to it from one socket and routes each answer by
 * what it carries: the attempt's nonce N_d (RESPONSE, COOKIE_REPLY, the refusals) or the
 * session id (DATA, RESET), learnt from the INITs and RESPONSEs it passes. */
#include "bench.h"

#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>


/* Version 2 kinds (§12.2) and where they carry what the relay routes by. */
enum {
  V2_INIT = 0x01, V2_RESPONSE = 0x02, V2_CONFIRM = 0x03, V2_COOKIE_REPLY = 0x04, V2_REFUSE_CLEAR = 0x05,
  V2_REFUSE_SEALED = 0x06, V2_DATA = 0x07, V2_RESET = 0x08,
  V2_INIT_SIZE = 469, V2_INIT_NONCE = 2, V2_INIT_TOKEN_NONCE = 50 + 11
};
enum { HELD_MAX = 320 };

struct link {
  /* What tells this session's datagrams apart: its token (its INITs), the nonces of its
     last two INITs (the device answers no older attempt), the session id it last sent
     under (its CONFIRM or DATA: the session it took), and the ids of the last two
     RESPONSEs to it (one of them it may be about to take). */
  uint64_t token, nonces[2], used, ids[2];
  int next_nonce, next_id;
  struct sockaddr_in device;
  int known;
  unsigned char held[HELD_MAX]; /* the last datagram held during a burst's hold */
  int held_length;
};

static struct link *links;
static struct v2_link *edge_links;  /* the peer's own edge, version 2 (without an edge) */
static int32_t *port_index;         /* a device socket's port -> its session, version 2 */
static uint64_t *table_key;         /* open addressing: any key of a link -> its index */
static int32_t *table_index;
static size_t table_mask, table_used;
static int front, back = -1;
static int released;

static size_t slot_of(uint64_t key) {
  return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & table_mask;
}

static int lookup(uint64_t key) {
  if (key == 0) return -1;
  for (size_t i = slot_of(key);; i = (i + 1) & table_mask) {
    if (table_key[i] == key) return table_index[i];
    if (table_key[i] == 0) return -1;
  }
}

static void insert(uint64_t key, int index) {
  size_t i;
  if (key == 0) return;
  for (i = slot_of(key); table_key[i] != 0 && table_key[i] != key; i = (i + 1) & table_mask) {
  }
  if (table_key[i] == 0) table_used++;
  table_key[i] = key;
  table_index[i] = index;
}

/* Keys stay in the table after a link moves on (a nonce per attempt, an id per join), so
   when it is half full it is made again from the keys each link holds now: at most six
   a link, under half of the table. A key is one session's for good (a token, a random
   nonce, an id the edge never issues twice), so one left in the table routes right; one
   dropped is one the session no longer answers to. */
static void rebuild(void) {
  memset(table_key, 0, (table_mask + 1) * sizeof *table_key);
  table_used = 0;
  for (int i = 0; i < shm->sessions; i++) {
    struct link *l = &links[i];
    uint64_t held[6] = {l->token, l->nonces[0], l->nonces[1], l->used, l->ids[0], l->ids[1]};
    for (int k = 0; k < 6; k++) insert(held[k], i);
  }
}

static void remember(uint64_t key, int index) {
  insert(key, index);
  if (table_used > (table_mask + 1) / 2) rebuild();
}

static uint64_t get64(const unsigned char *p) { return wire_v2_get64(p); }

static void pass(int index, const unsigned char *bytes, int length) {
  struct link *l = &links[index];
  if (!l->known) return;
  /* Before the send: the kernel stamps the datagram's arrival inside it, so the outside
     figure can only overstate how late a callback was. */
  store_ns(&last_to_device[index], now_ns());
  __atomic_add_fetch(&shm->datagrams, 1, __ATOMIC_RELAXED);
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

/* A RESPONSE to session `index` (the edge's, or the bench edge's own): later DATA names
   the session it makes, by the id at bytes 17 ... 24. */
static void learn_response(int index, const unsigned char *in, ssize_t n) {
  if (index < 0 || n < 25 || in[0] != V2_RESPONSE) return;
  struct link *l = &links[index];
  l->ids[l->next_id] = get64(in + 17);
  remember(l->ids[l->next_id], index);
  l->next_id ^= 1;
}

/* The session a datagram from a device belongs to, or -1. Version 2 carries no cookie: an
   INIT names its token (each session has its own); a CONFIRM or DATA names the session id
   a RESPONSE gave; anything else comes from the socket of the session's last INIT. The
   library's sessions of one loop share one socket, so a port alone names no session. */
static int session_from_device(const unsigned char *in, ssize_t n, const struct sockaddr_in *from) {
  unsigned port = ntohs(from->sin_port);
  int index;
  if (n == V2_INIT_SIZE && in[0] == V2_INIT) {
    index = lookup(get64(in + V2_INIT_TOKEN_NONCE));
    if (index < 0) return -1;
    struct link *l = &links[index];
    port_index[port] = index;
    /* The edge's answer to this attempt echoes its nonce. */
    l->nonces[l->next_nonce] = get64(in + V2_INIT_NONCE);
    remember(l->nonces[l->next_nonce], index);
    l->next_nonce ^= 1;
    return index;
  }
  if (n < 1 || in[0] <= V2_INIT || in[0] > V2_RESET) return -1;
  index = n >= 9 && (in[0] == V2_CONFIRM || in[0] == V2_DATA) ? lookup(get64(in + 1)) : -1;
  if (index < 0) index = port_index[port];
  /* A CONFIRM or DATA names the session the device took: the edge's DATA will name it,
     however many RESPONSEs to its retries came after the one it took. */
  if (index >= 0 && n >= 9 && (in[0] == V2_CONFIRM || in[0] == V2_DATA)) {
    uint64_t id = get64(in + 1);
    if (id != links[index].used) {
      links[index].used = id;
      remember(id, index);
    }
  }
  return index;
}

static void from_devices(void) {
  unsigned char in[1500], out[400];
  struct sockaddr_in from;
  socklen_t length = sizeof from;
  ssize_t n;
  for (int reads = 0; reads < 512; reads++) {
    n = recvfrom(front, in, sizeof in, MSG_DONTWAIT, (struct sockaddr *)&from, &length);
    if (n < 0) return;
    length = sizeof from;
    int index = session_from_device(in, n, &from);
    if (index < 0) continue;
    links[index].device = from;
    links[index].known = 1;
    if (is_cut(index, now_ns())) continue;
    __atomic_add_fetch(&shm->datagrams, 1, __ATOMIC_RELAXED);
    if (back >= 0) {
      send(back, in, (size_t)n, 0);
    } else {
      int written = v2_answer(v2_link_at(edge_links, index), in, (size_t)n, out);
      learn_response(index, out, written);
      if (written > 0) to_device(index, out, written);
    }
  }
}

/* The session an edge's datagram is for, or -1 (see the file's comment). */
static int session_from_edge(const unsigned char *in, ssize_t n) {
  int index;
  switch (n >= 17 ? in[0] : 0) {
  case V2_RESPONSE:
    index = lookup(get64(in + 1));
    learn_response(index, in, n);
    return index;
  case V2_COOKIE_REPLY:
  case V2_REFUSE_CLEAR:
  case V2_REFUSE_SEALED: return lookup(get64(in + 1));
  case V2_DATA:
  case V2_RESET: return lookup(get64(in + 1));
  default: return -1;
  }
}

static void from_edge(void) {
  unsigned char in[1500];
  ssize_t n;
  for (int reads = 0; reads < 512; reads++) {
    n = recv(back, in, sizeof in, MSG_DONTWAIT);
    if (n < 0) return;
    int index = session_from_edge(in, n);
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
static void peer_open(const struct sockaddr_in *edge, char **tokens,
                      struct sockaddr_in *address) {
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
  released = 0;
  links = calloc((size_t)shm->sessions, sizeof *links);
  edge_links = edge == NULL ? v2_links(shm->sessions) : NULL;
  port_index = malloc(65536 * sizeof *port_index);
  for (table_mask = 16; table_mask < 16 * (size_t)shm->sessions; table_mask <<= 1) {
  }
  table_key = calloc(table_mask, sizeof *table_key);
  table_index = calloc(table_mask, sizeof *table_index);
  table_mask -= 1;
  table_used = 0;
  if (links == NULL || (edge == NULL && edge_links == NULL) || port_index == NULL ||
      table_key == NULL || table_index == NULL) {
    fprintf(stderr, "tether-bench: out of memory for the peer\n");
    exit(1);
  }
  for (int i = 0; i < 65536; i++) port_index[i] = -1;
  for (int i = 0; tokens != NULL && i < shm->sessions; i++) {
    links[i].token = v2_token_key(tokens[i]);
    remember(links[i].token, i);
  }
}

static void peer_close(void) {
  close(front);
  if (back >= 0) close(back);
  back = -1;
  v2_links_free(edge_links, shm->sessions);
  free(links);
  free(port_index);
  free(table_key);
  free(table_index);
  links = NULL;
  edge_links = NULL;
  port_index = NULL;
  table_key = NULL;
  table_index = NULL;
}

pid_t peer_start(const struct sockaddr_in *edge, char **tokens, struct sockaddr_in *address) {
  peer_open(edge, tokens, address);
  pid_t pid = fork();
  if (pid != 0) {
    peer_close();
    return pid;
  }
  prctl(PR_SET_NAME, "bench-peer");
  priority_child_default(); /* the relay is load, never at the loop's policy */
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

void peer_attach(struct ev_loop *loop, char **tokens, struct sockaddr_in *address) {
  peer_open(NULL, tokens, address);
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
