// SPDX-License-Identifier: Apache-2.0
/* The system calls of the Tether driver, as prefixed C functions (defined in the .c files
   of Sources/CTetherSystem, compiled with the strict flags). Swift reaches libc only
   through here (not through Glibc, which Embedded Swift does not have), and the macros and
   errno that Swift cannot see directly become plain functions. This header declares what
   Swift calls and the types it names.

   The Embedded library links this C into its Swift module as LLVM bitcode before the last
   pass over the whole (scripts/build/build-lib.sh), so the optimizer inlines it into the Swift
   code as it did when these were static inline functions here. The definitions on the hot
   paths (per datagram, per deadline, per call of the API: errno, the thread checks, the
   clocks, the timerfd, send and the batch receive) are written `inline`, the hint they had
   then: without it, a Swift caller built for speed rather than size (armv7, -O) would call
   the monotonic clock, the thread check and the timerfd's arming instead of inlining them
   (780 bytes smaller, one call more on each path). The declarations here have no `inline`,
   so each of those is still an external definition (C99 6.7.4), which the SwiftPM build
   links as any function. */
#ifndef TETHER_SYSTEM_H
#define TETHER_SYSTEM_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* struct mmsghdr, for tether_sys_batch */
#endif

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h> /* strnlen, which the driver calls directly */
#include <sys/socket.h>
#include <time.h>

/* tether_sys_monotonic_ns: CLOCK_MONOTONIC in nanoseconds. */
#include "tether_clock.h"

/* errno, which Swift cannot read (a macro over a thread-local). */
int tether_sys_errno(void);

/* The calling thread, as an opaque integer, and whether it is `owner` (1) or not (0). */
uintptr_t tether_sys_thread(void);
int tether_sys_is_thread(uintptr_t owner);

/* The lock of the driver's table of loops (which engines share which loop): one mutex of
   the library, whichever Swift file calls these. */
void tether_sys_registry_lock(void);
void tether_sys_registry_unlock(void);

/* `count` random bytes from the kernel's generator (arc4random_buf: one getrandom call). */
void tether_sys_random(void *bytes, size_t count);

/* An endpoint: an IPv4 or IPv6 socket address (the only families a server has here), and
   its length. Not a sockaddr_storage: every engine holds two (the endpoint the app gave
   and the address its socket is connected to), and 128 bytes each was 200 bytes of each
   engine's memory for room no UDP server address uses. */
typedef struct tether_sys_address {
  union {
    struct sockaddr any;
    struct sockaddr_in in4;
    struct sockaddr_in6 in6;
  } storage;
  socklen_t length;
} tether_sys_address;

/* Parses a numeric host (NUL-terminated, no brackets: "192.0.2.1", "::1") and port into
   *out. Never looks anything up, so never blocks. Returns 0, or -1. */
int tether_sys_numeric_address(const char *host, uint16_t port, tether_sys_address *out);

/* Whether two endpoints are the same address and port (1) or not (0). */
int tether_sys_same_address(const tether_sys_address *a, const tether_sys_address *b);

/* A name lookup (getaddrinfo) on a thread of its own, so that the loop's thread never
   blocks on DNS. The job is shared by the engine that asked and the thread: each holds a
   reference and the last to let go closes the eventfd and frees it, so an engine destroyed
   while its lookup runs simply lets go (the thread finishes, then frees). The thread writes
   the answer, then makes `fd` readable; the engine watches `fd` on its loop and reads the
   answer on its own thread. Swift only holds a pointer to it; its fields are address.c's. */
typedef struct tether_sys_lookup {
  char host[256];
  uint16_t port;
  int fd;     /* eventfd: readable once the answer is in */
  int refs;   /* 2 while both the engine and the thread hold it */
  int done;   /* set (release) by the thread before it signals `fd` */
  int status; /* 0, or getaddrinfo's EAI_* code (EAI_FAMILY: no IPv4/IPv6 address) */
  tether_sys_address address;
} tether_sys_lookup;

/* Starts looking `host` (NUL-terminated, under 256 bytes) up; its answer will carry
   `port`. Returns the job, or NULL (errno set: no memory, descriptor or thread). The thread
   is detached and blocks every signal, so the host's signal handling is untouched. */
tether_sys_lookup *tether_sys_lookup_start(const char *host, uint16_t port);

/* The descriptor that becomes readable once the answer is in. */
int tether_sys_lookup_fd(const tether_sys_lookup *job);

/* The answer of a finished lookup: 0 with *out set, an EAI_* code, or 1 while the thread
   has not answered yet. */
int tether_sys_lookup_result(tether_sys_lookup *job, tether_sys_address *out);

/* Lets go of the engine's share of `job` (the thread frees it if it is still running). */
void tether_sys_lookup_release(tether_sys_lookup *job);

/* A non-blocking UDP socket connected to `to`, or -1 (errno set). The kernel is asked to
   stamp each datagram with its arrival time (SO_TIMESTAMPNS; where it cannot, qemu-user and
   some sandboxes, datagrams come without a stamp) and to say how many datagrams it dropped
   on the socket (SO_RXQ_OVFL). `device` NULL: a socket the sessions of a loop share, whose
   receive buffer is raised to the system's maximum (SO_RCVBUF, which the kernel caps at
   net.core.rmem_max; SO_RCVBUFFORCE past that to TETHER_SYS_SHARED_RCVBUF where the
   process may, never required). `device` a name: a session's own socket, bound to that
   interface (SO_BINDTODEVICE; failing that, -1), its buffer the system's default. */
int tether_sys_udp_open(const tether_sys_address *to, const unsigned char *device);

/* What a shared socket's receive buffer is forced up to where rmem_max is lower and the
   process has CAP_NET_ADMIN: 8 MiB, some 4,000 datagrams of a burst on loopback. */
#define TETHER_SYS_SHARED_RCVBUF (8 * 1024 * 1024)

/* The receive buffer `fd` has (SO_RCVBUF as the kernel reports it: twice what was set), or
   -1 (errno set). */
int tether_sys_receive_buffer(int fd);

/* send(2) on a connected socket, without SIGPIPE: the bytes sent, or -1 (errno set). */
long tether_sys_send(int fd, const void *bytes, size_t count);

void tether_sys_close(int fd);

/* Room to receive up to TETHER_SYS_BATCH datagrams with one recvmmsg. Each control buffer
   is aligned as a struct cmsghdr is (to size_t, the alignment CMSG_ALIGN uses): a cmsghdr
   itself cannot be the union's member, since glibc ends it with a flexible array, which
   ISO C forbids in an array element. It holds the arrival stamp and the drop count. */
#define TETHER_SYS_BATCH 8
typedef struct tether_sys_batch {
  struct mmsghdr messages[TETHER_SYS_BATCH];
  struct iovec vectors[TETHER_SYS_BATCH];
  union {
    char bytes[CMSG_SPACE(sizeof(struct timespec)) + CMSG_SPACE(sizeof(uint32_t))];
    size_t align;
  } control[TETHER_SYS_BATCH];
} tether_sys_batch;

/* Receives what is waiting on `fd`, up to TETHER_SYS_BATCH datagrams, datagram i into
   `bytes + i * stride` (at most `stride` bytes; a longer one is cut there). Returns how
   many, or -1 (errno set; EAGAIN: none waiting). One system call, which also tells that
   the socket is drained when fewer than TETHER_SYS_BATCH came. */
int tether_sys_recv_batch(int fd, tether_sys_batch *batch, unsigned char *bytes, size_t stride);

/* The length of datagram `i` of the last tether_sys_recv_batch. */
size_t tether_sys_batch_length(const tether_sys_batch *batch, int i);

/* When the kernel received datagram `i` of the last tether_sys_recv_batch, in CLOCK_REALTIME
   nanoseconds (what SO_TIMESTAMPNS gives); 0 when it came without a stamp. */
uint64_t tether_sys_batch_arrival(const tether_sys_batch *batch, int i);

/* How many datagrams the kernel had dropped on the socket (its receive buffer full) when
   datagram `i` of the last tether_sys_recv_batch was queued, counted since the socket was
   opened and wrapping at 2^32 (SO_RXQ_OVFL); 0 when it says nothing (none dropped yet, or a
   kernel that cannot tell). */
uint32_t tether_sys_batch_drops(const tether_sys_batch *batch, int i);

/* Datagrams waiting to go out with one sendmmsg: up to TETHER_SYS_BATCH, each copied in
   (at most TETHER_SYS_DATAGRAM bytes, the protocol's largest). */
#define TETHER_SYS_DATAGRAM 1200
typedef struct tether_sys_sends {
  struct mmsghdr messages[TETHER_SYS_BATCH];
  struct iovec vectors[TETHER_SYS_BATCH];
  unsigned char bytes[TETHER_SYS_BATCH][TETHER_SYS_DATAGRAM];
  int count;
} tether_sys_sends;

/* Copies `count` bytes (at most TETHER_SYS_DATAGRAM) in as the next datagram of `sends`,
   which must have room (count below TETHER_SYS_BATCH). */
void tether_sys_sends_add(tether_sys_sends *sends, const void *bytes, size_t count);

/* Sends datagrams `first` ..< sends->count on the connected socket `fd` with one sendmmsg,
   without SIGPIPE: how many went, from `first` on (at least 1), or -1 (errno set): datagram
   `first` was refused, and the rest were not tried. */
int tether_sys_sends_flush(int fd, tether_sys_sends *sends, int first);

/* CLOCK_REALTIME minus CLOCK_MONOTONIC now, in nanoseconds: what turns an arrival stamp
   into the monotonic time the engine runs on. */
int64_t tether_sys_realtime_offset(void);

/* A timerfd on CLOCK_MONOTONIC (non-blocking, close-on-exec), or -1 (errno set). */
int tether_sys_timerfd(void);

/* Arms `fd` to expire once at `at_ns` on CLOCK_MONOTONIC (absolute: no drift from the time
   this call takes); at_ns 0 disarms it. Returns 0, or -1 (errno set). */
int tether_sys_timerfd_arm(int fd, uint64_t at_ns);

/* A netlink route socket subscribed to IPv4 and IPv6 address and route changes, or -1. */
int tether_sys_netlink_addresses(void);

/* Reads what the netlink socket has; 1 if a message said an address or a route was added
   or removed, else 0. */
int tether_sys_netlink_drain(int fd);

/* Whether the route from this device to the peer connected UDP socket `fd` talks to now
   leaves from another source address than `fd` uses: 1 yes (or there is no route any
   more), 0 no, -1 cannot tell (errno set). Nothing is sent: connecting a UDP socket only
   looks the route up (from the interface `fd` is bound to, if it is). */
int tether_sys_route_source_changed(int fd);

#endif
