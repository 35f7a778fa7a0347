// SPDX-License-Identifier: Apache-2.0
/* Network changes: a netlink socket that hears address and route changes, and whether the
   route to the server now leaves from another source address. */
#include "tether_system.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

int tether_sys_netlink_addresses(void) {
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

/* Messages are walked with the kernel's own macros, bounded by what was received. */
int tether_sys_netlink_drain(int fd) {
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

/* Whether two socket addresses have the same host (family and bytes, not the port). */
static int same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b) {
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

int tether_sys_route_source_changed(int fd) {
  struct sockaddr_storage peer, local, now;
  socklen_t peer_length = sizeof peer, local_length = sizeof local, now_length = sizeof now;
  char device[IFNAMSIZ] = {0};
  socklen_t device_length = sizeof device;
  int probe, result;
  if (getpeername(fd, (struct sockaddr *)&peer, &peer_length) != 0 ||
      getsockname(fd, (struct sockaddr *)&local, &local_length) != 0) {
    return -1;
  }
  probe = socket(peer.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (probe < 0) return -1;
  /* A socket bound to an interface routes through it: the probe asks the same question. */
  if (getsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, device, &device_length) == 0 &&
      device[0] != 0) {
    (void)setsockopt(probe, SOL_SOCKET, SO_BINDTODEVICE, device,
                     (socklen_t)strnlen(device, IFNAMSIZ));
  }
  if (connect(probe, (const struct sockaddr *)&peer, peer_length) != 0) {
    result = 1;
  } else if (getsockname(probe, (struct sockaddr *)&now, &now_length) != 0) {
    result = -1;
  } else {
    result = same_host(&local, &now) ? 0 : 1;
  }
  close(probe);
  return result;
}
