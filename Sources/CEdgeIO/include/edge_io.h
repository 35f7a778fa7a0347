// SPDX-License-Identifier: Apache-2.0
/* tether-edge's socket calls a batch at a time: recvmmsg and sendmmsg. The header names no
   GNU type (no struct mmsghdr), so it sits beside Swift's Glibc module in any file; the
   implementation (edge_io.c) is where _GNU_SOURCE is defined. */
#ifndef TETHER_EDGE_IO_H
#define TETHER_EDGE_IO_H
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* At most this many datagrams per call. */
#define TETHER_EDGE_IO_BATCH 32

/* Receives what is waiting on `fd`, without waiting: up to `count` (at most
   TETHER_EDGE_IO_BATCH) datagrams, datagram i into `bytes + i * stride` (a longer one cut
   to `stride`), its length into lengths[i], its sender into peers[i] (peer_lengths[i]
   bytes of it). `*drops` is set to the kernel's count of datagrams dropped on the socket
   (SO_RXQ_OVFL) when a datagram read carries it, else left alone. Returns how many, 0 when
   none is waiting or on an error (errno set). */
int tether_edge_receive(int fd, unsigned char *bytes, size_t stride, size_t *lengths,
                        struct sockaddr_storage *peers, socklen_t *peer_lengths, uint32_t *drops,
                        int count);

/* Sends `count` datagrams (at most TETHER_EDGE_IO_BATCH), datagram i the bytes
   `data[ends[i - 1] ..< ends[i]]` (from 0 for the first) to peers[i] (peer_lengths[i]
   bytes), with sendmmsg; after one the kernel refuses, the rest go one sendmsg each.
   Returns how many were sent. */
int tether_edge_send(int fd, const unsigned char *data, const size_t *ends,
                     const struct sockaddr_storage *peers, const socklen_t *peer_lengths,
                     int count);

#endif
