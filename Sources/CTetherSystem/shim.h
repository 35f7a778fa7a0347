/* The system calls of the Tether driver, as prefixed static inline functions. Swift reaches
   libc only through here (not through Glibc, which Embedded Swift does not have), and the
   macros and errno that Swift cannot see directly become plain functions. */
#ifndef TETHER_SYSTEM_SHIM_H
#define TETHER_SYSTEM_SHIM_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* recvmmsg */
#endif

#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static inline int tether_sys_errno(void) { return errno; }

/* tether_sys_monotonic_ns: CLOCK_MONOTONIC in nanoseconds. */
#include "clock.h"

/* The calling thread, as an opaque integer, and whether it is `owner`. */
static inline uintptr_t tether_sys_thread(void) { return (uintptr_t)pthread_self(); }
static inline int tether_sys_is_thread(uintptr_t owner) {
  return pthread_equal(pthread_self(), (pthread_t)owner) != 0;
}

/* An endpoint: room for any socket address, and its length. */
typedef struct tether_sys_address {
  struct sockaddr_storage storage;
  socklen_t length;
} tether_sys_address;

/* Copies the first IPv4 or IPv6 address of `result` into *out with `port`; 0, or -1 when
   there is none. */
static inline int tether_sys_first_address(const struct addrinfo *result, uint16_t port,
                                           tether_sys_address *out) {
  for (const struct addrinfo *a = result; a != NULL; a = a->ai_next) {
    if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) ||
        a->ai_addrlen > sizeof out->storage) {
      continue;
    }
    memset(out, 0, sizeof *out);
    memcpy(&out->storage, a->ai_addr, a->ai_addrlen);
    out->length = a->ai_addrlen;
    if (a->ai_family == AF_INET) {
      ((struct sockaddr_in *)&out->storage)->sin_port = htons(port);
    } else {
      ((struct sockaddr_in6 *)&out->storage)->sin6_port = htons(port);
    }
    return 0;
  }
  return -1;
}

/* Parses a numeric host (NUL-terminated, no brackets: "192.0.2.1", "::1") and port into
   *out. Never looks anything up, so never blocks. Returns 0, or -1. */
static inline int tether_sys_numeric_address(const char *host, uint16_t port,
                                             tether_sys_address *out) {
  struct addrinfo hints, *result = NULL;
  int rc;
  memset(&hints, 0, sizeof hints);
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_NUMERICHOST;
  if (getaddrinfo(host, NULL, &hints, &result) != 0 || result == NULL) return -1;
  rc = tether_sys_first_address(result, port, out);
  freeaddrinfo(result);
  return rc;
}

/* Whether two endpoints are the same address and port. */
static inline int tether_sys_same_address(const tether_sys_address *a,
                                          const tether_sys_address *b) {
  return a->length == b->length && memcmp(&a->storage, &b->storage, a->length) == 0;
}

/* A name lookup (getaddrinfo) on a thread of its own, so that the loop's thread never
   blocks on DNS. The job is shared by the engine that asked and the thread: each holds a
   reference and the last to let go closes the eventfd and frees it, so an engine destroyed
   while its lookup runs simply lets go (the thread finishes, then frees). The thread writes
   the answer, then makes `fd` readable; the engine watches `fd` on its loop and reads the
   answer on its own thread. */
typedef struct tether_sys_lookup {
  char host[256];
  uint16_t port;
  int fd;     /* eventfd: readable once the answer is in */
  int refs;   /* 2 while both the engine and the thread hold it */
  int done;   /* set (release) by the thread before it signals `fd` */
  int status; /* 0, or getaddrinfo's EAI_* code (EAI_FAMILY: no IPv4/IPv6 address) */
  tether_sys_address address;
} tether_sys_lookup;

static inline void tether_sys_lookup_release(tether_sys_lookup *job) {
  if (__atomic_sub_fetch(&job->refs, 1, __ATOMIC_ACQ_REL) == 0) {
    close(job->fd);
    free(job);
  }
}

static inline void *tether_sys_lookup_run(void *argument) {
  tether_sys_lookup *job = (tether_sys_lookup *)argument;
  struct addrinfo hints, *result = NULL;
  uint64_t one = 1;
  int rc;
  memset(&hints, 0, sizeof hints);
  hints.ai_socktype = SOCK_DGRAM;
  rc = getaddrinfo(job->host, NULL, &hints, &result);
  if (rc == 0) {
    rc = tether_sys_first_address(result, job->port, &job->address) == 0 ? 0 : EAI_FAMILY;
    freeaddrinfo(result);
  }
  job->status = rc;
  __atomic_store_n(&job->done, 1, __ATOMIC_RELEASE);
  if (write(job->fd, &one, sizeof one) < 0) { /* cannot fail: the counter is far from full */
  }
  tether_sys_lookup_release(job);
  return NULL;
}

/* Starts looking `host` (NUL-terminated, under 256 bytes) up; its answer will carry
   `port`. Returns the job, or NULL (errno set: no memory, descriptor or thread). The thread
   is detached and blocks every signal, so the host's signal handling is untouched. */
static inline tether_sys_lookup *tether_sys_lookup_start(const char *host, uint16_t port) {
  tether_sys_lookup *job;
  pthread_attr_t attributes;
  pthread_t thread;
  sigset_t all, previous;
  int rc;
  size_t length = strlen(host);
  if (length >= sizeof job->host) {
    errno = EINVAL;
    return NULL;
  }
  job = (tether_sys_lookup *)calloc(1, sizeof *job);
  if (job == NULL) return NULL;
  memcpy(job->host, host, length + 1);
  job->port = port;
  job->refs = 2;
  job->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (job->fd < 0) {
    free(job);
    return NULL;
  }
  pthread_attr_init(&attributes);
  pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  rc = pthread_create(&thread, &attributes, tether_sys_lookup_run, job);
  pthread_sigmask(SIG_SETMASK, &previous, NULL);
  pthread_attr_destroy(&attributes);
  if (rc != 0) {
    close(job->fd);
    free(job);
    errno = rc;
    return NULL;
  }
  return job;
}

static inline int tether_sys_lookup_fd(const tether_sys_lookup *job) { return job->fd; }

/* The answer of a finished lookup: 0 with *out set, an EAI_* code, or 1 while the thread
   has not answered yet. */
static inline int tether_sys_lookup_result(tether_sys_lookup *job, tether_sys_address *out) {
  uint64_t count;
  if (!__atomic_load_n(&job->done, __ATOMIC_ACQUIRE)) return 1;
  if (read(job->fd, &count, sizeof count) < 0) { /* already read: nothing to do */
  }
  if (job->status == 0) *out = job->address;
  return job->status;
}

/* A non-blocking UDP socket connected to `to`, or -1 (errno set). The kernel is asked to
   stamp each datagram with its arrival time (SO_TIMESTAMPNS); where it cannot (qemu-user,
   some sandboxes), datagrams come without a stamp. */
static inline int tether_sys_udp_connected(const tether_sys_address *to) {
  int fd = socket(to->storage.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int on = 1;
  if (fd < 0) return -1;
  (void)setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
  if (connect(fd, (const struct sockaddr *)&to->storage, to->length) != 0) {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

static inline long tether_sys_send(int fd, const void *bytes, size_t count) {
  return (long)send(fd, bytes, count, MSG_NOSIGNAL);
}

static inline void tether_sys_close(int fd) { close(fd); }

/* Room to receive up to TETHER_SYS_BATCH datagrams with one recvmmsg. */
#define TETHER_SYS_BATCH 8
typedef struct tether_sys_batch {
  struct mmsghdr messages[TETHER_SYS_BATCH];
  struct iovec vectors[TETHER_SYS_BATCH];
  union {
    char bytes[CMSG_SPACE(sizeof(struct timespec))];
    struct cmsghdr align;
  } control[TETHER_SYS_BATCH];
} tether_sys_batch;

/* Receives what is waiting on `fd`, up to TETHER_SYS_BATCH datagrams, datagram i into
   `bytes + i * stride` (at most `stride` bytes; a longer one is cut there). Returns how
   many, or -1 (errno set; EAGAIN: none waiting). One system call, which also tells that
   the socket is drained when fewer than TETHER_SYS_BATCH came. */
static inline int tether_sys_recv_batch(int fd, tether_sys_batch *batch, unsigned char *bytes,
                                        size_t stride) {
  memset(batch->messages, 0, sizeof batch->messages);
  for (int i = 0; i < TETHER_SYS_BATCH; i++) {
    batch->vectors[i].iov_base = bytes + (size_t)i * stride;
    batch->vectors[i].iov_len = stride;
    batch->messages[i].msg_hdr.msg_iov = &batch->vectors[i];
    batch->messages[i].msg_hdr.msg_iovlen = 1;
    batch->messages[i].msg_hdr.msg_control = batch->control[i].bytes;
    batch->messages[i].msg_hdr.msg_controllen = sizeof batch->control[i].bytes;
  }
  return recvmmsg(fd, batch->messages, TETHER_SYS_BATCH, MSG_DONTWAIT, NULL);
}

/* The length of datagram `i` of the last tether_sys_recv_batch. */
static inline size_t tether_sys_batch_length(const tether_sys_batch *batch, int i) {
  return batch->messages[i].msg_len;
}

/* When the kernel received datagram `i` of the last tether_sys_recv_batch, in CLOCK_REALTIME
   nanoseconds (what SO_TIMESTAMPNS gives); 0 when it came without a stamp. */
static inline uint64_t tether_sys_batch_arrival(const tether_sys_batch *batch, int i) {
  const struct msghdr *header = &batch->messages[i].msg_hdr;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(header); c != NULL;
       c = CMSG_NXTHDR((struct msghdr *)header, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS &&
        c->cmsg_len >= CMSG_LEN(sizeof(struct timespec))) {
      struct timespec stamp;
      memcpy(&stamp, CMSG_DATA(c), sizeof stamp);
      if (stamp.tv_sec < 0) return 0;
      return (uint64_t)stamp.tv_sec * 1000000000u + (uint64_t)stamp.tv_nsec;
    }
  }
  return 0;
}

/* CLOCK_REALTIME minus CLOCK_MONOTONIC now, in nanoseconds: what turns an arrival stamp
   into the monotonic time the engine runs on. */
static inline int64_t tether_sys_realtime_offset(void) {
  struct timespec real, mono;
  clock_gettime(CLOCK_REALTIME, &real);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  return ((int64_t)real.tv_sec - (int64_t)mono.tv_sec) * 1000000000 +
         ((int64_t)real.tv_nsec - (int64_t)mono.tv_nsec);
}

/* `count` random bytes from the kernel's generator (arc4random_buf: one getrandom call). */
static inline void tether_sys_random(void *bytes, size_t count) { arc4random_buf(bytes, count); }

/* A timerfd on CLOCK_MONOTONIC (non-blocking, close-on-exec), or -1 (errno set). */
static inline int tether_sys_timerfd(void) {
  return timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
}

/* Arms `fd` to expire once at `at_ns` on CLOCK_MONOTONIC (absolute: no drift from the time
   this call takes); at_ns 0 disarms it. Returns 0, or -1 (errno set). */
static inline int tether_sys_timerfd_arm(int fd, uint64_t at_ns) {
  struct itimerspec value;
  memset(&value, 0, sizeof value);
  value.it_value.tv_sec = (time_t)(at_ns / 1000000000u);
  value.it_value.tv_nsec = (long)(at_ns % 1000000000u);
  return timerfd_settime(fd, TFD_TIMER_ABSTIME, &value, NULL);
}

/* The lock of the driver's table of loops (which engines share which loop). Its storage
   is a static of this inline function, so exactly one Swift file may call these two
   (Sources/Tether/Loop/LoopRegistry.swift): each object file that used them would get a
   mutex of its own. */
static inline pthread_mutex_t *tether_sys_registry_mutex(void) {
  static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  return &mutex;
}
static inline void tether_sys_registry_lock(void) {
  pthread_mutex_lock(tether_sys_registry_mutex());
}
static inline void tether_sys_registry_unlock(void) {
  pthread_mutex_unlock(tether_sys_registry_mutex());
}

/* A netlink route socket subscribed to IPv4 and IPv6 address and route changes, or -1. */
static inline int tether_sys_netlink_addresses(void) {
  struct sockaddr_nl address;
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return -1;
  memset(&address, 0, sizeof address);
  address.nl_family = AF_NETLINK;
  address.nl_groups =
      RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE;
  if (bind(fd, (struct sockaddr *)&address, sizeof address) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Reads what the netlink socket has; 1 if a message said an address or a route was added
   or removed.
   Messages are walked with the kernel's own macros, bounded by what was received. */
static inline int tether_sys_netlink_drain(int fd) {
  union {
    struct nlmsghdr header;
    char bytes[8192];
  } buffer;
  int changed = 0;
  for (int reads = 0; reads < 16; reads++) {
    ssize_t n = recv(fd, buffer.bytes, sizeof buffer.bytes, 0);
    if (n <= 0) break;
    int length = (int)n;
    for (struct nlmsghdr *h = &buffer.header; NLMSG_OK(h, (unsigned)length);
         h = NLMSG_NEXT(h, length)) {
      if (h->nlmsg_type == RTM_NEWADDR || h->nlmsg_type == RTM_DELADDR ||
          h->nlmsg_type == RTM_NEWROUTE || h->nlmsg_type == RTM_DELROUTE) {
        changed = 1;
      }
    }
  }
  return changed;
}

/* The address of a socket address (family and bytes, not the port). */
static inline int tether_sys_same_host(const struct sockaddr_storage *a,
                                       const struct sockaddr_storage *b) {
  if (a->ss_family != b->ss_family) return 0;
  if (a->ss_family == AF_INET) {
    return memcmp(&((const struct sockaddr_in *)a)->sin_addr,
                  &((const struct sockaddr_in *)b)->sin_addr, sizeof(struct in_addr)) == 0;
  }
  if (a->ss_family == AF_INET6) {
    return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                  &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
  }
  return 0;
}

/* Whether the route from this device to the peer connected UDP socket `fd` talks to now
   leaves from another source address than `fd` uses: 1 yes (or there is no route any
   more), 0 no, -1 cannot tell (errno set). Nothing is sent: connecting a UDP socket only
   looks the route up. */
static inline int tether_sys_route_source_changed(int fd) {
  struct sockaddr_storage peer, local, now;
  socklen_t peer_length = sizeof peer, local_length = sizeof local, now_length = sizeof now;
  int probe, result;
  if (getpeername(fd, (struct sockaddr *)&peer, &peer_length) != 0 ||
      getsockname(fd, (struct sockaddr *)&local, &local_length) != 0) {
    return -1;
  }
  probe = socket(peer.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (probe < 0) return -1;
  if (connect(probe, (const struct sockaddr *)&peer, peer_length) != 0) {
    result = 1;
  } else if (getsockname(probe, (struct sockaddr *)&now, &now_length) != 0) {
    result = -1;
  } else {
    result = tether_sys_same_host(&local, &now) ? 0 : 1;
  }
  close(probe);
  return result;
}

#endif
