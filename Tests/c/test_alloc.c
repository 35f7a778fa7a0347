// SPDX-License-Identifier: Apache-2.0
/* No heap allocation per received packet in steady state: the engine (the Embedded library,
 * linked statically) is joined to the fake server, warmed up, then fed 10,000 heartbeat
 * acks and 1,000 presence digests while every malloc, calloc, realloc, posix_memalign and
 * aligned_alloc the program makes is counted (the linker's --wrap). Heartbeats keep going
 * out on their timer meanwhile. A second engine joined to the same server shares the loop's
 * socket, so every datagram is handed out by the socket's table of session ids (and
 * gathered sends go out with sendmmsg). Prints "alloc: N passed, M failed"; exits 1 on any
 * allocation in a window that kept the steady state, or when no window of three kept it. Built for every architecture (linked statically, with the linker's
 * --wrap: scripts/test/c-tests.sh) and run under qemu-user for ARM. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tether.h"

static long allocations;
static int counting;

void *__real_malloc(size_t size);
void *__real_calloc(size_t count, size_t size);
void *__real_realloc(void *pointer, size_t size);
int __real_posix_memalign(void **out, size_t alignment, size_t size);
void *__real_aligned_alloc(size_t alignment, size_t size);

/* Where the first counted allocations came from: their callers' return addresses, the
   allocator's caller first (a failure names them, for addr2line on the test's binary).
   Beyond that first caller the stack is walked by its frame records where the
   architecture keeps them for both the test and the library (aarch64, x86_64: the
   library's Swift keeps frame pointers in functions that call others), only while each
   record lies above the last and below the test's own frame. */
#define FRAMES 6
static void *callers[8][FRAMES];
static char *stack_top; /* the test's frame: no record of a callee lies above it */

static void walk(void **out, void *caller) {
  memset(out, 0, FRAMES * sizeof *out);
  out[0] = caller;
#if defined(__aarch64__) || defined(__x86_64__)
  /* walk's record, tally's, the wrapper's (its return address is `caller`), then on. */
  void **record = (void **)__builtin_frame_address(0);
  for (int depth = 0; depth < 3 + FRAMES - 1 && record != NULL; depth++) {
    void **next = (void **)record[0];
    if (depth >= 3) out[depth - 2] = record[1];
    if ((char *)next <= (char *)record || (char *)next >= stack_top) break;
    record = next;
  }
#endif
}

static void tally(void *caller, size_t size) {
  if (!counting) return;
  if (allocations < 8) walk(callers[allocations], caller);
  allocations++;
  (void)size;
}
#define COUNT(size) tally(__builtin_return_address(0), (size))
void *__wrap_malloc(size_t size) { COUNT(size); return __real_malloc(size); }
void *__wrap_calloc(size_t count, size_t size) { COUNT(count * size); return __real_calloc(count, size); }
void *__wrap_realloc(void *pointer, size_t size) { COUNT(size); return __real_realloc(pointer, size); }
int __wrap_posix_memalign(void **out, size_t alignment, size_t size) {
  COUNT(size);
  return __real_posix_memalign(out, alignment, size);
}
void *__wrap_aligned_alloc(size_t alignment, size_t size) {
  COUNT(size);
  return __real_aligned_alloc(alignment, size);
}

static int joined;
static void on_state(void *ctx, tether_connection_state state, tether_connection_changed_reason why) {
  (void)ctx; (void)why;
  joined = state == TETHER_CONNECTION_STATE_CONNECTED;
}

/* Members each engine has heard of (its ctx: a counter of its own). */
static void on_user_joined(void *ctx, uint32_t uid, uint32_t elapsed_ms) {
  (void)uid; (void)elapsed_ms;
  (*(int *)ctx)++;
}

/* Lets the loop drain what was sent (and run the heartbeat timer); keeps the longest turn. */
static double longest_turn_ms;
static void spin(struct ev_loop *loop, int turns) {
  for (int i = 0; i < turns; i++) {
    double start = now_ms(), took;
    ev_run(loop, EVRUN_NOWAIT);
    took = now_ms() - start;
    if (took > longest_turn_ms) longest_turn_ms = took;
  }
}

/* One counted window: 10,000 heartbeat acks and 1,000 presence digests to the engines,
   heartbeats going out meanwhile; returns the allocations counted, `callers` their first
   callers and `longest_turn_ms` the longest turn of the loop in it. */
#define WINDOWS 3
static long count_window(struct ev_loop *loop, struct fake_server *srv) {
  long during;
  longest_turn_ms = 0;
  allocations = 0;
  counting = 1;
  for (int rounds = 0; rounds < 200; rounds++) { /* 200 x 50 = 10,000 acks */
    fake_push_acks(srv, 50);
    for (int k = 0; k < 5; k++) fake_push_presence(srv); /* 200 x 5 = 1,000 digests */
    spin(loop, 4);
  }
  counting = 0;
  during = allocations;
  spin(loop, 4);
  return during;
}

static void test_tether_engine_receive_allocatesNothingInSteadyState(void) {
  struct fake_server srv;
  struct ev_loop *loop = test_loop_new(&srv);
  tether_engine_config config = engine_config(srv.address);
  tether_engine_handler handler;
  tether_engine *engine = NULL, *neighbour = NULL;
  long during = -1, at_setup; /* -1: no window ran */
  int rounds, members[2] = {0, 0};
  stack_top = (char *)&rounds;

  /* A heartbeat every 2 ms, so that thousands go out while counting: as often as the
     machine allows a steady state. Steady means each heartbeat's window ends outside the
     reading of a burst (55 datagrams a round, below): a window that ends during a read
     fires in it, the connection's datagrams wait for the batch's end, and its output,
     which has room for a steady step, grows once for the longer batch (and keeps that
     room). So the interval is at least twice what a burst costs here (the pace: natively
     a fraction of a millisecond, in an emulated ARM kernel some 12 ms). */
  double burst_ms = 55 * harness_pace().datagram_us / 1000.0;
  config.heartbeat_interval_ms = 2 * burst_ms > 2 ? (uint32_t)(2 * burst_ms) + 1 : 2;
  config.interrupted_after_ms = 5000;
  tether_engine_handler_init(&handler);
  handler.on_connection_state_changed = on_state;
  handler.on_user_joined = on_user_joined;
  counting = 1; /* the counter must see the allocations of create and join */
  CHECK(tether_engine_create(loop, &config, &handler, &members[0], &engine) == TETHER_OK);
  CHECK(tether_join_channel(engine, channel_token("lobby", 0), "lobby", 7) == TETHER_OK);
  counting = 0;
  at_setup = allocations;
  allocations = 0;
  CHECK(tether_engine_create(loop, &config, &handler, &members[1], &neighbour) == TETHER_OK);
  CHECK(tether_join_channel(neighbour, channel_token("lobby", 0), "lobby", 8) == TETHER_OK);
  /* Both joined before the warm-up: `joined` is either engine's, and a neighbour whose
     handshake ends while counting allocates what any join does (its keys, its first
     member events), which is not the steady state this test is about. */
  for (int i = 0; i < 2000 && !(tether_get_connection_state(engine) == TETHER_CONNECTION_STATE_CONNECTED &&
                               tether_get_connection_state(neighbour) == TETHER_CONNECTION_STATE_CONNECTED);
       i++)
    ev_run(loop, EVRUN_ONCE);
  CHECK(tether_get_connection_state(engine) == TETHER_CONNECTION_STATE_CONNECTED);
  CHECK(tether_get_connection_state(neighbour) == TETHER_CONNECTION_STATE_CONNECTED);
  /* Warm up: the member tables, the output buffers and libev reach their steady size. The
     fake server sends its pushes to the session it heard last, so which engine gets a
     digest is the heartbeats' race: an engine's first digest (its members heard of for
     the first time: 14 allocations, its member table and their events) used to come
     inside the counted window in some runs, after a warm-up of 20 rounds. Each engine
     must have heard its members before counting starts: the premise, checked. */
  for (rounds = 0; rounds < 20 || ((members[0] == 0 || members[1] == 0) && rounds < 20000); rounds++) {
    fake_push_presence(&srv);
    fake_push_acks(&srv, 50);
    spin(loop, 4);
  }
  if (members[0] == 0 || members[1] == 0)
    printf("alloc: premise failed: an engine heard no presence digest in %d warm-up rounds "
           "(members heard: %d and %d); the count below is not the steady state\n",
           rounds, members[0], members[1]);
  CHECK(members[0] > 0 && members[1] > 0);
  /* The counted window, again while its premise failed: a window whose loop was held
     longer than a heartbeat interval and that counted something is the one-time growth
     (below), not a measurement of the steady state, and the output keeps that room, so the
     next window measures the steady state again. Zero in any window passes; an allocation
     in a window that kept the premise is a product defect and fails at once; a premise
     that fails in every window fails the test, saying so. A per-packet allocation shows in
     every window, so no retry can hide it. */
  for (int window = 1; window <= WINDOWS; window++) {
    during = count_window(loop, &srv);
    printf("alloc: window %d: %ld allocations while receiving 10000 heartbeat acks and 1000 "
           "presence digests (state %s, %d heartbeats sent so far, one every %u ms; the "
           "longest turn of the loop %.1f ms)\n",
           window, during, tether_connection_state_name(tether_get_connection_state(engine)),
           srv.heartbeats, (unsigned)config.heartbeat_interval_ms, longest_turn_ms);
    /* As an offset from `allocations` (the binary is position-independent): its address in
       `nm` plus the offset is what addr2line takes. */
    for (long i = 0; i < during && i < 8; i++) {
      printf("alloc: counted allocation %ld called from (nm's address of allocations plus "
             "each, then addr2line):", i + 1);
      for (int depth = 0; depth < FRAMES && callers[i][depth] != NULL; depth++)
        printf(" allocations%+ld", (long)((uintptr_t)callers[i][depth] - (uintptr_t)&allocations));
      printf("\n");
    }
    /* Steady means no turn of the loop outlasted a heartbeat interval. A machine that
       stalls the loop longer (a loaded host does it to an emulated kernel now and then)
       makes a longer batch, whose output grows once (above); a turn of a loaded native run
       takes several ms, without allocating. So when something was counted, whether the
       premise held says which of the two it was. */
    if (during == 0) break;
    if (longest_turn_ms < config.heartbeat_interval_ms) {
      printf("alloc: premise held (no turn of the loop longer than a heartbeat interval): a "
             "product defect\n");
      break;
    }
    printf("alloc: premise failed: a turn of the loop took %.1f ms while counting, longer "
           "than the heartbeat interval (%u ms): not the steady state%s\n",
           longest_turn_ms, (unsigned)config.heartbeat_interval_ms,
           window < WINDOWS ? "; counting again" : "; no window kept it");
  }
  printf("alloc: %ld allocations counted while creating and joining (the counter works)\n",
         at_setup);
  CHECK(joined);
  CHECK(at_setup > 0); /* the counter works */
  CHECK(during == 0);
  tether_engine_destroy(engine);
  tether_engine_destroy(neighbour);
  test_loop_destroy(loop, &srv);
}

ONE_CASE_MAIN("alloc", test_tether_engine_receive_allocatesNothingInSteadyState, NULL)
