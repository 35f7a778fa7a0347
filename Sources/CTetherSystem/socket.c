// SPDX-License-Identifier: Apache-2.0
/* The engines' UDP sockets: opened connected to the server (shared by a loop's sessions,
   or a session's own bound to an interface), written one datagram at a time or in batches
   of TETHER_SYS_BATCH, read in batches with the kernel's arrival stamps and drop counts. */
#include "tether_system.h"

#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <string.h>
#include <unistd.h>

/* The control buffers of tether_sys_batch must be aligned for a struct cmsghdr. */
#define CONTROL_ALIGNED (__alignof__(struct cmsghdr) <= __alignof__(size_t))
typedef char tether_sys_control_aligned[CONTROL_ALIGNED ? 1 : -1];

/* Raises a shared socket's receive buffer: as far as rmem_max lets anyone (the kernel caps
   SO_RCVBUF there without an error), then past it only where the process may force it.
   Neither is required: a socket keeps whatever it got. */
static void raise_receive_buffer(int fd) {
  int wanted = INT_MAX / 2, forced = TETHER_SYS_SHARED_RCVBUF;
  (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &wanted, sizeof wanted);
  if (tether_sys_receive_buffer(fd) < 2 * forced) {
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &forced, sizeof forced);
  }
}

int tether_sys_udp_open(const tether_sys_address *to, const unsigned char *device) {
  int fd = socket(to->storage.any.sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int on = 1;
  if (fd < 0) return -1;
  (void)setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
  (void)setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &on, sizeof on);
  if (device == NULL) {
    raise_receive_buffer(fd);
  } else if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, device,
                        (socklen_t)strnlen((const char *)device, IFNAMSIZ)) != 0) {
    goto failed;
  }
  if (connect(fd, (const struct sockaddr *)&to->storage, to->length) != 0) goto failed;
  return fd;
failed: {
  int saved = errno;
  close(fd);
  errno = saved;
  return -1;
}
}

int tether_sys_receive_buffer(int fd) {
  int size = 0;
  socklen_t length = sizeof size;
  return getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, &length) == 0 ? size : -1;
}

inline long tether_sys_send(int fd, const void *bytes, size_t count) {
  return (long)send(fd, bytes, count, MSG_NOSIGNAL);
}

void tether_sys_close(int fd) { close(fd); }

inline int tether_sys_recv_batch(int fd, tether_sys_batch *batch, unsigned char *bytes,
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

inline size_t tether_sys_batch_length(const tether_sys_batch *batch, int i) {
  return batch->messages[i].msg_len;
}

/* The SOL_SOCKET control message of datagram `i` of `type` holding at least `size` bytes,
   or NULL. External (not static): the inline definitions below call it (C99 6.7.4). */
const struct cmsghdr *tether_sys_batch_control(const tether_sys_batch *batch, int i, int type,
                                               size_t size);
const struct cmsghdr *tether_sys_batch_control(const tether_sys_batch *batch, int i, int type,
                                               size_t size) {
  const struct msghdr *header = &batch->messages[i].msg_hdr;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(header); c != NULL;
       c = CMSG_NXTHDR((struct msghdr *)header, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == type && c->cmsg_len >= CMSG_LEN(size)) {
      return c;
    }
  }
  return NULL;
}

inline uint64_t tether_sys_batch_arrival(const tether_sys_batch *batch, int i) {
  const struct cmsghdr *c = tether_sys_batch_control(batch, i, SCM_TIMESTAMPNS,
                                                     sizeof(struct timespec));
  struct timespec stamp;
  if (c == NULL) return 0;
  memcpy(&stamp, CMSG_DATA(c), sizeof stamp);
  if (stamp.tv_sec < 0) return 0;
  return (uint64_t)stamp.tv_sec * 1000000000u + (uint64_t)stamp.tv_nsec;
}

inline uint32_t tether_sys_batch_drops(const tether_sys_batch *batch, int i) {
  const struct cmsghdr *c = tether_sys_batch_control(batch, i, SO_RXQ_OVFL, sizeof(uint32_t));
  uint32_t drops = 0;
  if (c != NULL) memcpy(&drops, CMSG_DATA(c), sizeof drops);
  return drops;
}

inline void tether_sys_sends_add(tether_sys_sends *sends, const void *bytes, size_t count) {
  int i = sends->count++;
  if (count > TETHER_SYS_DATAGRAM) count = TETHER_SYS_DATAGRAM;
  memcpy(sends->bytes[i], bytes, count);
  memset(&sends->messages[i], 0, sizeof sends->messages[i]);
  sends->vectors[i].iov_base = sends->bytes[i];
  sends->vectors[i].iov_len = count;
  sends->messages[i].msg_hdr.msg_iov = &sends->vectors[i];
  sends->messages[i].msg_hdr.msg_iovlen = 1;
}

inline int tether_sys_sends_flush(int fd, tether_sys_sends *sends, int first) {
  return sendmmsg(fd, &sends->messages[first], (unsigned)(sends->count - first), MSG_NOSIGNAL);
}
