// SPDX-License-Identifier: Apache-2.0
/* tether-bench's command line: parsed here, with nothing else, so a test can run it alone
 * (test/test_options.c, from scripts/test/bench-smoke.sh). Parsing never exits: a bad
 * option is an error with a message, and main says it and exits 2. */
#ifndef TETHER_BENCH_OPTIONS_H
#define TETHER_BENCH_OPTIONS_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum design { DESIGN_TETHER, DESIGN_PREVIOUS, DESIGN_NAIVE, DESIGN_COUNT };
extern const char *const design_names[DESIGN_COUNT];
extern const char *const load_names[2];
extern const char *const pattern_names[2];

/* How the measured loop thread is scheduled (--priority): the kernel's policy and its
   priority (FIFO, RR: 1 ... 99) or nice value (OTHER: -20 ... 19). */
enum policy_kind { POLICY_DEFAULT, POLICY_FIFO, POLICY_RR, POLICY_NICE };
struct priority {
  enum policy_kind kind;
  int level; /* FIFO, RR: the real-time priority; NICE: the nice value; DEFAULT: 0 */
};

enum { MAX_SESSIONS = 8, MAX_PRIORITIES = 4, MAX_RUNS = 9, OPTION_ERROR = 160 };

struct options {
  int sessions[MAX_SESSIONS], session_count;
  int loads[2], load_count;       /* 0 idle, 1 busy */
  int patterns[2], pattern_count; /* 0 steady, 1 burst */
  int designs[DESIGN_COUNT], design_count;
  struct priority priorities[MAX_PRIORITIES];
  int priority_count;
  int runs, mlock;
  int quick, cost, busy_processes, inline_peer, vectors;
  int direct;           /* --direct: the scale rows, Tether straight to --edge */
  int heartbeat_ms;     /* --heartbeat-ms: the scale rows' heartbeat (default 1000) */
  int own_lateness_off; /* --own-lateness off: the engines' own_lateness_off */
  char edge_text[64];   /* --edge as given */
  int64_t slice; /* ns */
  struct sockaddr_in edge;
  int has_edge;
  pid_t edge_pid;
  const char *tokens_path, *out_dir, *app_id;
};

/* Parses argv into `o` (defaults where an option is absent). 0, or -1 with a sentence in
   `error` (room for OPTION_ERROR bytes). `cores`: the default --busy. */
int options_parse(int argc, char **argv, int cores, struct options *o, char error[OPTION_ERROR]);

/* A comma-separated list into `out`, at most `capacity` entries: names (an index of
   `names`), or positive integers when `names` is NULL. The count, or -1 with a sentence
   in `error` for an unknown or malformed item, an empty item, or more items than
   `capacity`: nothing is dropped silently. `option` names the list in the sentence. */
int parse_list(const char *text, const char *const *names, int name_count, int *out,
               int capacity, const char *option, char error[OPTION_ERROR]);

/* "default", "fifo:N", "rr:N" (N 1 ... 99) or "nice:N" (N -20 ... 19). 0, or -1. */
int parse_priority(const char *text, struct priority *out);

/* The text parse_priority reads ("fifo:10"); `out` has room for 16 bytes. */
void priority_text(const struct priority *p, char out[16]);

#endif
