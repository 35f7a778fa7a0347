// SPDX-License-Identifier: Apache-2.0
/* The engine's UDP socket: opened connected to the server, written one datagram at a time,
   read in batches of TETHER_SYS_BATCH with the kernel's arrival stamps. */
#include "tether_system.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

/* The control buffers of tether_sys_batch must be aligned for a struct cmsghdr. */
#define CONTROL_ALIGNED (__alignof__(struct cmsghdr) <= __alignof__(size_t))
typedef char tether_sys_control_aligned[CONTROL_ALIGNED ? 1 : -1];

int tether_sys_udp_connected(const tether_sys_address *to) {
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

inline uint64_t tether_sys_batch_arrival(const tether_sys_batch *batch, int i) {
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
