// SPDX-License-Identifier: Apache-2.0
/* edge-load: how many datagrams a second one tether-edge handles at saturation.
 *
 * It joins --sessions channel sessions to the edge (protocol version 2, through
 * Benchmarks/tether-bench/client_v2.c: a real handshake each, a socket each, on loopback),
 * then, for --seconds, keeps --window sealed HEARTBEATs of each session in flight, sent
 * with sendmmsg, and counts the HEARTBEAT_ACKs that come back (recvmmsg). A closed loop: a
 * session sends more only as its acks return, so what it measures is how fast the edge
 * answers, not how fast the kernel drops. The edge is one thread, so its figure is one
 * core's. Each heartbeat costs the edge one datagram in (received, opened, heard) and one
 * out (sealed, sent).
 *
 *   edge-load --edge 127.0.0.1:PORT --tokens FILE [--app-id ID] [--sessions 16]
 *             [--window 8] [--seconds 5] [--edge-pid PID]
 *
 * FILE: a line "channel v2token" per session (tether-bench's format). Prints one line of
 * key=value figures. Sends only to the --edge address, which must be a loopback address. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../tether-bench/client_v2.h"

#define BATCH 64

typedef int64_t ns_t;

static ns_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (ns_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* CPU seconds of process `pid` (utime + stime), from /proc; -1 if unknown. */
static double cpu_of(pid_t pid) {
  char path[64], text[1024];
  unsigned long user = 0, system = 0;
  FILE *f;
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  f = fopen(path, "r");
  if (f == NULL) return -1;
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  char *end = strrchr(text, ')'); /* the name may hold spaces */
  if (end == NULL ||
      sscanf(end + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &user, &system) != 2)
    return -1;
  return (double)(user + system) / (double)sysconf(_SC_CLK_TCK);
}

struct link {
  int fd;
  struct v2_client client;
  uint32_t sequence;
  int joined;
  ns_t next_join;
  long in_flight;
  ns_t progress; /* the last ack, or the load's start */
};

static void usage(void) {
  fprintf(stderr, "usage: edge-load --edge 127.0.0.1:PORT --tokens FILE [--app-id ID] "
                  "[--sessions N] [--window N] [--seconds S] [--edge-pid PID]\n");
  exit(2);
}

/* Takes every datagram waiting on link `l`'s socket; returns the acks among them. A
   handshake reply is sent at once. */
static long drain(struct link *l, ns_t now, long *dropped) {
  static uint8_t in[BATCH][512];
  struct mmsghdr messages[BATCH];
  struct iovec vectors[BATCH];
  long acks = 0;
  for (;;) {
    for (int i = 0; i < BATCH; i++) {
      vectors[i] = (struct iovec){in[i], sizeof in[i]};
      memset(&messages[i], 0, sizeof messages[i]);
      messages[i].msg_hdr.msg_iov = &vectors[i];
      messages[i].msg_hdr.msg_iovlen = 1;
    }
    int n = recvmmsg(l->fd, messages, BATCH, MSG_DONTWAIT, NULL);
    if (n <= 0) return acks;
    for (int i = 0; i < n; i++) {
      uint8_t reply[V2_CLIENT_OUT];
      size_t reply_length = 0;
      switch (v2_client_take(&l->client, in[i], messages[i].msg_len, now, reply, &reply_length)) {
      case V2_CLIENT_ACK: acks++; break;
      case V2_CLIENT_ACCEPTED: l->joined = 1; break;
      case V2_CLIENT_ANSWERED:
        if (reply_length > 0 && send(l->fd, reply, reply_length, 0) < 0) (*dropped)++;
        break;
      default: (*dropped)++; break;
      }
    }
    if (n < BATCH) return acks;
  }
}

int main(int argc, char **argv) {
  const char *edge = NULL, *tokens_path = NULL, *app_id = "bench-app";
  /* 16 x 8 in flight: enough that the edge never waits, few enough for its receive
     buffer (the default 208 KB holds about 200 small datagrams). */
  int sessions = 16, window = 8;
  double seconds = 5;
  pid_t edge_pid = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--edge") == 0) edge = argv[i + 1];
    else if (strcmp(argv[i], "--tokens") == 0) tokens_path = argv[i + 1];
    else if (strcmp(argv[i], "--app-id") == 0) app_id = argv[i + 1];
    else if (strcmp(argv[i], "--sessions") == 0) sessions = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--window") == 0) window = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--seconds") == 0) seconds = atof(argv[i + 1]);
    else if (strcmp(argv[i], "--edge-pid") == 0) edge_pid = (pid_t)atoi(argv[i + 1]);
    else usage();
  }
  if (argc % 2 == 0 || edge == NULL || tokens_path == NULL || sessions < 1 || sessions > 4096 ||
      window < 1 || window > 100 || !(seconds > 0 && seconds <= 600))
    usage();
  char host[64] = "";
  unsigned port = 0;
  struct sockaddr_in to = {.sin_family = AF_INET};
  if (sscanf(edge, "%63[^:]:%u", host, &port) != 2 || port == 0 || port > 65535 ||
      inet_pton(AF_INET, host, &to.sin_addr) != 1 || (ntohl(to.sin_addr.s_addr) >> 24) != 127) {
    fprintf(stderr, "edge-load: --edge must be 127.x.x.x:PORT (loopback only)\n");
    return 2;
  }
  to.sin_port = htons((uint16_t)port);
  if (sodium_init() < 0) return 1;

  struct link *links = calloc((size_t)sessions, sizeof *links);
  FILE *tokens = fopen(tokens_path, "r");
  if (links == NULL || tokens == NULL) {
    fprintf(stderr, "edge-load: cannot read %s\n", tokens_path);
    return 1;
  }
  for (int i = 0; i < sessions; i++) {
    char line[1200], channel[80], token[600];
    int rcvbuf = 1 << 20;
    if (fgets(line, sizeof line, tokens) == NULL || sscanf(line, "%79s %599s", channel, token) != 2 ||
        v2_client_init(&links[i].client, token, app_id, channel, (uint32_t)(i + 1)) != 0) {
      fprintf(stderr, "edge-load: %s: line %d is not \"channel v2token\"\n", tokens_path, i + 1);
      return 1;
    }
    links[i].fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    if (links[i].fd < 0 || connect(links[i].fd, (struct sockaddr *)&to, sizeof to) != 0) {
      fprintf(stderr, "edge-load: socket: %s\n", strerror(errno));
      return 1;
    }
    setsockopt(links[i].fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  }
  fclose(tokens);

  /* Join every session: an INIT each (again every 200 ms until it is answered). */
  long dropped = 0;
  int joined = 0;
  ns_t give_up = now_ns() + (ns_t)30 * 1000000000;
  while (joined < sessions && now_ns() < give_up) {
    ns_t now = now_ns();
    joined = 0;
    for (int i = 0; i < sessions; i++) {
      struct link *l = &links[i];
      drain(l, now, &dropped);
      if (l->joined) {
        joined++;
        continue;
      }
      if (now >= l->next_join) {
        uint8_t out[V2_CLIENT_OUT];
        int n = v2_client_join(&l->client, 0, now, out);
        if (n > 0) send(l->fd, out, (size_t)n, 0);
        l->next_join = now + 200 * 1000000;
      }
    }
    usleep(1000);
  }
  if (joined < sessions) {
    fprintf(stderr, "edge-load: %d of %d sessions joined in 30 s\n", joined, sessions);
    return 1;
  }

  /* The load: each session keeps `window` heartbeats in flight. */
  long sent = 0, acked = 0, send_errors = 0, stalls = 0;
  double edge0 = edge_pid ? cpu_of(edge_pid) : -1, self0 = cpu_of(getpid());
  ns_t start = now_ns(), end = start + (ns_t)(seconds * 1e9);
  for (int i = 0; i < sessions; i++) links[i].progress = start;
  static uint8_t out[BATCH][64];
  struct mmsghdr messages[BATCH];
  struct iovec vectors[BATCH];
  while (now_ns() < end) {
    for (int i = 0; i < sessions; i++) {
      struct link *l = &links[i];
      ns_t now = now_ns();
      long acks = drain(l, now, &dropped);
      acked += acks;
      l->in_flight -= acks;
      if (acks > 0) l->progress = now;
      /* A heartbeat or an ack lost (a full receive buffer) would hold its slot for ever:
         after 100 ms without an ack, what is in flight is written off (lost). */
      if (l->in_flight > 0 && now - l->progress > 100 * 1000000) {
        stalls++;
        l->in_flight = 0;
        l->progress = now;
      }
      int n = 0;
      while (l->in_flight + n < window && n < BATCH) {
        int length = v2_client_heartbeat(&l->client, ++l->sequence, out[n]);
        if (length <= 0) break;
        vectors[n] = (struct iovec){out[n], (size_t)length};
        memset(&messages[n], 0, sizeof messages[n]);
        messages[n].msg_hdr.msg_iov = &vectors[n];
        messages[n].msg_hdr.msg_iovlen = 1;
        n++;
      }
      if (n == 0) continue;
      int taken = sendmmsg(l->fd, messages, (unsigned)n, 0);
      if (taken < 0) {
        send_errors++;
        continue;
      }
      sent += taken;
      l->in_flight += taken;
    }
  }
  ns_t stop = now_ns();
  for (ns_t settle = stop + 200 * 1000000; now_ns() < settle;) {
    for (int i = 0; i < sessions; i++) acked += drain(&links[i], now_ns(), &dropped);
    usleep(1000);
  }
  double window_s = (double)(stop - start) / 1e9;
  double edge_cpu = edge_pid ? (cpu_of(edge_pid) - edge0) / window_s : -1;
  double self_cpu = (cpu_of(getpid()) - self0) / window_s;
  printf("edge-load sessions=%d window=%d seconds=%.3f sent=%ld acked=%ld lost=%ld "
         "send_errors=%ld stalls=%ld dropped=%ld heartbeats_per_s=%.0f datagrams_per_s=%.0f "
         "edge_cpu=%.3f load_cpu=%.3f us_per_heartbeat_edge=%.2f\n",
         sessions, window, window_s, sent, acked, sent - acked, send_errors, stalls, dropped,
         (double)acked / window_s, 2.0 * (double)acked / window_s, edge_cpu, self_cpu,
         edge_cpu > 0 && acked > 0 ? edge_cpu * window_s * 1e6 / (double)acked : -1.0);
  for (int i = 0; i < sessions; i++) {
    uint8_t leave[64];
    int n = v2_client_leave(&links[i].client, leave);
    if (n > 0) send(links[i].fd, leave, (size_t)n, 0);
    close(links[i].fd);
    v2_client_wipe(&links[i].client);
  }
  free(links);
  return 0;
}
