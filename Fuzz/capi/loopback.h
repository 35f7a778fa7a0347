/* Included by fuzz_capi.c and fuzz_rtm.c: the library's sockets reach loopback only. */
#ifndef TETHER_FUZZ_LOOPBACK_H
#define TETHER_FUZZ_LOOPBACK_H
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- nothing leaves the machine ----
   Random server strings can be numeric addresses anywhere ("9.9:80" is 9.0.0.9) or host
   names. These two definitions take the place of libc's for the library: a socket may be
   connected to loopback only (anything else fails as unreachable, which the library must
   survive anyway), and only "localhost" (from /etc/hosts) and numeric hosts are looked up,
   so no query goes to a DNS server. */
static int is_loopback(const struct sockaddr *to, socklen_t length) {
  if (to == NULL) return 0;
  if (to->sa_family == AF_INET && length >= (socklen_t)sizeof(struct sockaddr_in)) {
    return (ntohl(((const struct sockaddr_in *)(const void *)to)->sin_addr.s_addr) >> 24) == 127;
  }
  if (to->sa_family == AF_INET6 && length >= (socklen_t)sizeof(struct sockaddr_in6)) {
    const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)to)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(a) ||
           (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
  }
  return 0;
}

int connect(int fd, const struct sockaddr *to, socklen_t length) {
  if (!is_loopback(to, length)) {
    errno = ENETUNREACH;
    return -1;
  }
  return (int)syscall(SYS_connect, fd, to, length);
}

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res) {
  typedef int (*real_t)(const char *, const char *, const struct addrinfo *, struct addrinfo **);
  real_t real = (real_t)(uintptr_t)dlsym(RTLD_NEXT, "getaddrinfo");
  int numeric = hints != NULL && (hints->ai_flags & AI_NUMERICHOST);
  if (!numeric && (node == NULL || strcmp(node, "localhost") != 0)) return EAI_NONAME;
  return real(node, service, hints, res);
}

#endif
