// SPDX-License-Identifier: Apache-2.0
/* Endpoints: numeric addresses, their comparison, and name look-ups on a thread of their
   own (the job's life is described at tether_sys_lookup in tether_system.h). */
#include "tether_system.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* Copies the first IPv4 or IPv6 address of `result` into *out with `port`; 0, or -1 when
   there is none. */
static int first_address(const struct addrinfo *result, uint16_t port, tether_sys_address *out) {
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

int tether_sys_numeric_address(const char *host, uint16_t port, tether_sys_address *out) {
  struct addrinfo hints, *result = NULL;
  int rc;
  memset(&hints, 0, sizeof hints);
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_NUMERICHOST;
  if (getaddrinfo(host, NULL, &hints, &result) != 0 || result == NULL) return -1;
  rc = first_address(result, port, out);
  freeaddrinfo(result);
  return rc;
}

int tether_sys_same_address(const tether_sys_address *a, const tether_sys_address *b) {
  return a->length == b->length && memcmp(&a->storage, &b->storage, a->length) == 0;
}

void tether_sys_lookup_release(tether_sys_lookup *job) {
  if (__atomic_sub_fetch(&job->refs, 1, __ATOMIC_ACQ_REL) == 0) {
    close(job->fd);
    free(job);
  }
}

/* The look-up thread: answers, signals, lets go. */
static void *lookup_run(void *argument) {
  tether_sys_lookup *job = (tether_sys_lookup *)argument;
  struct addrinfo hints, *result = NULL;
  uint64_t one = 1;
  int rc;
  memset(&hints, 0, sizeof hints);
  hints.ai_socktype = SOCK_DGRAM;
  rc = getaddrinfo(job->host, NULL, &hints, &result);
  if (rc == 0) {
    rc = first_address(result, job->port, &job->address) == 0 ? 0 : EAI_FAMILY;
    freeaddrinfo(result);
  }
  job->status = rc;
  __atomic_store_n(&job->done, 1, __ATOMIC_RELEASE);
  if (write(job->fd, &one, sizeof one) < 0) { /* cannot fail: the counter is far from full */
  }
  tether_sys_lookup_release(job);
  return NULL;
}

tether_sys_lookup *tether_sys_lookup_start(const char *host, uint16_t port) {
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
  rc = pthread_create(&thread, &attributes, lookup_run, job);
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

int tether_sys_lookup_fd(const tether_sys_lookup *job) { return job->fd; }

int tether_sys_lookup_result(tether_sys_lookup *job, tether_sys_address *out) {
  uint64_t count;
  if (!__atomic_load_n(&job->done, __ATOMIC_ACQUIRE)) return 1;
  if (read(job->fd, &count, sizeof count) < 0) { /* already read: nothing to do */
  }
  if (job->status == 0) *out = job->address;
  return job->status;
}
