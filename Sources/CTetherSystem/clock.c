// SPDX-License-Identifier: Apache-2.0
/* Clocks and the timerfd the driver's deadlines fire from. */
#include "tether_system.h"

#include <string.h>
#include <sys/timerfd.h>
#include <time.h>

inline uint64_t tether_sys_monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

inline int64_t tether_sys_realtime_offset(void) {
  struct timespec real, mono;
  clock_gettime(CLOCK_REALTIME, &real);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  return ((int64_t)real.tv_sec - (int64_t)mono.tv_sec) * 1000000000 +
         ((int64_t)real.tv_nsec - (int64_t)mono.tv_nsec);
}

int tether_sys_timerfd(void) {
  return timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
}

inline int tether_sys_timerfd_arm(int fd, uint64_t at_ns) {
  struct itimerspec value;
  memset(&value, 0, sizeof value);
  value.it_value.tv_sec = (time_t)(at_ns / 1000000000u);
  value.it_value.tv_nsec = (long)(at_ns % 1000000000u);
  return timerfd_settime(fd, TFD_TIMER_ABSTIME, &value, NULL);
}
