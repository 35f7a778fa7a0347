// SPDX-License-Identifier: Apache-2.0
/* --priority and --mlock: how the measured loop thread is scheduled, applied to that thread
 * alone. Every policy is set with SCHED_RESET_ON_FORK, so a process the bench forks after
 * it (the peer, the relay, the busy processes) starts at the default policy, never at the
 * loop's real-time one; and each child resets itself too (priority_child_default), for what
 * the flag does not reset (a positive nice value). What was applied is read back from the
 * kernel, never assumed from what was asked. */
#include "bench.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

static int real_time(const struct priority *p) {
  return p->kind == POLICY_FIFO || p->kind == POLICY_RR;
}

void priority_current(char out[16]) {
  int policy = sched_getscheduler(0);
  struct sched_param sp;
  if (policy < 0) {
    snprintf(out, 16, "unknown");
    return;
  }
  policy &= ~SCHED_RESET_ON_FORK;
  if ((policy == SCHED_FIFO || policy == SCHED_RR) && sched_getparam(0, &sp) == 0) {
    snprintf(out, 16, "%s:%d", policy == SCHED_FIFO ? "fifo" : "rr", sp.sched_priority);
    return;
  }
  if (policy != SCHED_OTHER) {
    snprintf(out, 16, "policy%u", (unsigned)policy & 0xFF); /* batch, idle, deadline: set outside the bench */
    return;
  }
  errno = 0;
  int nice = getpriority(PRIO_PROCESS, 0); /* Linux: the calling thread's */
  if (errno != 0 || nice == 0) snprintf(out, 16, "default");
  else snprintf(out, 16, "nice:%d", nice);
}

int priority_apply(const struct priority *p, ns_t slice, char applied[16], char why[160]) {
  struct sched_param sp;
  char asked[16];
  int policy = p->kind == POLICY_FIFO ? SCHED_FIFO : p->kind == POLICY_RR ? SCHED_RR : SCHED_OTHER;
  int failed = 0;
  why[0] = 0;
  priority_text(p, asked);
  memset(&sp, 0, sizeof sp);
  sp.sched_priority = real_time(p) ? p->level : 0;
  /* EPERM: no CAP_SYS_NICE and an RLIMIT_RTPRIO below the level, or an RT cgroup with no
     runtime (then EINVAL or EPERM). The call says so; nothing is guessed from the uid. */
  if (sched_setscheduler(0, policy | SCHED_RESET_ON_FORK, &sp) != 0) {
    snprintf(why, 160, "sched_setscheduler(%s) refused: %s", asked, strerror(errno));
    failed = 1;
  } else if (!real_time(p) && setpriority(PRIO_PROCESS, 0, p->kind == POLICY_NICE ? p->level : 0) != 0) {
    snprintf(why, 160, "setpriority(%s) refused: %s", asked, strerror(errno));
    failed = 1;
  } else if (!real_time(p) && slice && set_slice(slice, p->kind == POLICY_NICE ? p->level : 0) != 0) {
    snprintf(why, 160, "sched_setattr (a %lld us slice) refused: %s; Linux 6.12+ needed",
             (long long)(slice / 1000), strerror(errno));
    failed = 1;
  }
  priority_current(applied);
  return failed ? -1 : 0;
}

void priority_child_default(void) {
  struct sched_param sp;
  memset(&sp, 0, sizeof sp);
  /* SCHED_RESET_ON_FORK has already made the child SCHED_OTHER at nice 0 or above; a
     positive nice value the loop was given stays unless this may lower it (CAP_SYS_NICE or
     RLIMIT_NICE): then the child runs at that nice value, below the default, never above. */
  sched_setscheduler(0, SCHED_OTHER, &sp);
  setpriority(PRIO_PROCESS, 0, 0);
}

int memory_lock(char why[160]) {
  why[0] = 0;
  if (mlockall(MCL_CURRENT | MCL_FUTURE) == 0) return 0;
  snprintf(why, 160, "mlockall refused: %s (RLIMIT_MEMLOCK, or no CAP_IPC_LOCK)", strerror(errno));
  return -1;
}

int runs_at_default(pid_t pid) {
  int policy = sched_getscheduler(pid);
  if (policy < 0) return 1; /* gone already: it runs at nothing */
  policy &= ~SCHED_RESET_ON_FORK;
  return policy != SCHED_FIFO && policy != SCHED_RR && policy != SCHED_DEADLINE;
}
