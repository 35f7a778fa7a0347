// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include "edge_io.h"

#include <errno.h>
#include <string.h>

/* Room for one datagram's control messages: SO_RXQ_OVFL's 32-bit count. */
#define CONTROL_ROOM CMSG_SPACE(sizeof(uint32_t))

int tether_edge_receive(int fd, unsigned char *bytes, size_t stride, size_t *lengths,
                        struct sockaddr_storage *peers, socklen_t *peer_lengths, uint32_t *drops,
                        int count) {
  struct mmsghdr messages[TETHER_EDGE_IO_BATCH];
  struct iovec vectors[TETHER_EDGE_IO_BATCH];
  union {
    char bytes[CONTROL_ROOM];
    size_t align; /* a cmsghdr cannot be the member: glibc ends it with a flexible array */
  } control[TETHER_EDGE_IO_BATCH];
  if (count > TETHER_EDGE_IO_BATCH) count = TETHER_EDGE_IO_BATCH;
  if (count <= 0) return 0;
  memset(messages, 0, sizeof messages);
  for (int i = 0; i < count; i++) {
    vectors[i].iov_base = bytes + (size_t)i * stride;
    vectors[i].iov_len = stride;
    messages[i].msg_hdr.msg_name = &peers[i];
    messages[i].msg_hdr.msg_namelen = sizeof peers[i];
    messages[i].msg_hdr.msg_iov = &vectors[i];
    messages[i].msg_hdr.msg_iovlen = 1;
    messages[i].msg_hdr.msg_control = control[i].bytes;
    messages[i].msg_hdr.msg_controllen = sizeof control[i].bytes;
  }
  int got;
  do {
    got = recvmmsg(fd, messages, (unsigned)count, MSG_DONTWAIT, NULL);
  } while (got < 0 && errno == EINTR);
  if (got <= 0) return 0;
  for (int i = 0; i < got; i++) {
    struct msghdr *header = &messages[i].msg_hdr;
    lengths[i] = messages[i].msg_len < stride ? messages[i].msg_len : stride;
    peer_lengths[i] = header->msg_namelen;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(header); c != NULL; c = CMSG_NXTHDR(header, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL &&
          c->cmsg_len >= CMSG_LEN(sizeof(uint32_t))) {
        memcpy(drops, CMSG_DATA(c), sizeof *drops);
      }
    }
  }
  return got;
}

int tether_edge_send(int fd, const unsigned char *data, const size_t *ends,
                     const struct sockaddr_storage *peers, const socklen_t *peer_lengths,
                     int count) {
  struct mmsghdr messages[TETHER_EDGE_IO_BATCH];
  struct iovec vectors[TETHER_EDGE_IO_BATCH];
  if (count > TETHER_EDGE_IO_BATCH) count = TETHER_EDGE_IO_BATCH;
  if (count <= 0) return 0;
  memset(messages, 0, sizeof messages);
  for (int i = 0; i < count; i++) {
    size_t start = i == 0 ? 0 : ends[i - 1];
    vectors[i].iov_base = (void *)(data + start);
    vectors[i].iov_len = ends[i] - start;
    messages[i].msg_hdr.msg_name = (void *)&peers[i];
    messages[i].msg_hdr.msg_namelen = peer_lengths[i];
    messages[i].msg_hdr.msg_iov = &vectors[i];
    messages[i].msg_hdr.msg_iovlen = 1;
  }
  int sent = 0;
  while (sent < count) {
    int taken = sendmmsg(fd, messages + sent, (unsigned)(count - sent), MSG_NOSIGNAL);
    if (taken > 0) {
      sent += taken;
    } else if (taken < 0 && errno == EINTR) {
      continue;
    } else {
      /* This one is refused (lost, as a UDP datagram may be): the rest, one call each. */
      int went = sent;
      for (int i = sent + 1; i < count; i++) {
        if (sendmsg(fd, &messages[i].msg_hdr, MSG_NOSIGNAL) >= 0) went++;
      }
      return went;
    }
  }
  return sent;
}
