// SPDX-License-Identifier: Apache-2.0
/* tether-bench's command line (options.c), alone: scripts/test/bench-smoke.sh builds it
 * with -std=c99 -Wall -Wextra -Wpedantic -Werror and, where the compiler has them,
 * AddressSanitizer and UndefinedBehaviorSanitizer, and runs it. Lists used to be read
 * eight items deep whatever their array held (two loads, three designs): a longer list
 * wrote past the array into the next fields, and an unknown name was dropped in silence. */
#include "../options.h"

#include <stdio.h>
#include <string.h>

static int failures;

#define CHECK(condition)                                                              \
  do {                                                                                \
    if (!(condition)) {                                                               \
      fprintf(stderr, "%s:%d: %s: failed: %s\n", __FILE__, __LINE__, __func__, #condition); \
      failures++;                                                                     \
    }                                                                                 \
  } while (0)

/* Parses the words of `line` as tether-bench's arguments. */
static int parse_line(const char *line, struct options *o, char error[OPTION_ERROR]) {
  static char copy[512];
  char *argv[32];
  int argc = 0;
  snprintf(copy, sizeof copy, "tether-bench %s", line);
  for (char *word = strtok(copy, " "); word != NULL && argc < 32; word = strtok(NULL, " ")) argv[argc++] = word;
  return options_parse(argc, argv, 2, o, error);
}

static void test_parse_list_moreItemsThanTheArrayHolds_isAnError(void) {
  struct options o;
  char error[OPTION_ERROR];
  CHECK(parse_line("--loads idle,busy,idle", &o, error) == -1);
  CHECK(strstr(error, "--loads") != NULL && strstr(error, "more than 2") != NULL);
  CHECK(parse_line("--designs tether,previous,naive,tether", &o, error) == -1);
  CHECK(strstr(error, "more than 3") != NULL);
  CHECK(parse_line("--patterns steady,burst,steady,burst,steady,burst,steady,burst", &o, error) == -1);
  CHECK(parse_line("--sessions 1,2,3,4,5,6,7,8,9", &o, error) == -1);
  CHECK(strstr(error, "more than 8") != NULL);
}

static void test_parse_list_fullArrays_leaveTheNextFieldsAlone(void) {
  struct options o;
  char error[OPTION_ERROR];
  CHECK(parse_line("--designs tether,previous,naive --loads busy,idle --patterns burst,steady "
                   "--sessions 1,2,3,4,5,6,7,8 --busy 5",
                   &o, error) == 0);
  CHECK(o.design_count == 3 && o.designs[0] == DESIGN_TETHER && o.designs[2] == DESIGN_NAIVE);
  CHECK(o.load_count == 2 && o.loads[0] == 1 && o.loads[1] == 0);
  CHECK(o.pattern_count == 2 && o.patterns[0] == 1 && o.patterns[1] == 0);
  CHECK(o.session_count == 8 && o.sessions[7] == 8);
  CHECK(o.busy_processes == 5 && o.priority_count == 1 && o.runs == 1);
}

static void test_parse_list_unknownOrMalformedItem_isAnError(void) {
  struct options o;
  char error[OPTION_ERROR];
  CHECK(parse_line("--loads idle,bogus", &o, error) == -1);
  CHECK(strstr(error, "bogus") != NULL);
  CHECK(parse_line("--designs tether,,naive", &o, error) == -1);
  CHECK(parse_line("--sessions 1,10x", &o, error) == -1);
  CHECK(parse_line("--sessions 0", &o, error) == -1);
  CHECK(parse_line("--sessions 1,", &o, error) == -1);
}

static void test_parse_priority_eachForm(void) {
  struct priority p;
  char text[16];
  CHECK(parse_priority("default", &p) == 0 && p.kind == POLICY_DEFAULT);
  CHECK(parse_priority("fifo:10", &p) == 0 && p.kind == POLICY_FIFO && p.level == 10);
  priority_text(&p, text);
  CHECK(strcmp(text, "fifo:10") == 0);
  CHECK(parse_priority("rr:99", &p) == 0 && p.kind == POLICY_RR && p.level == 99);
  CHECK(parse_priority("nice:-20", &p) == 0 && p.kind == POLICY_NICE && p.level == -20);
  priority_text(&p, text);
  CHECK(strcmp(text, "nice:-20") == 0);
  CHECK(parse_priority("fifo:0", &p) == -1);
  CHECK(parse_priority("fifo:100", &p) == -1);
  CHECK(parse_priority("nice:20", &p) == -1);
  CHECK(parse_priority("fifo", &p) == -1);
  CHECK(parse_priority("deadline:1", &p) == -1);
}

static void test_options_priorityRunsAndLimits(void) {
  struct options o;
  char error[OPTION_ERROR];
  CHECK(parse_line("--priority default,fifo:10 --runs 3 --mlock", &o, error) == 0);
  CHECK(o.priority_count == 2 && o.priorities[1].kind == POLICY_FIFO && o.runs == 3 && o.mlock == 1);
  CHECK(parse_line("--priority default,fifo:1,rr:2,nice:-5,fifo:3", &o, error) == -1);
  CHECK(parse_line("--priority fifo:x", &o, error) == -1);
  CHECK(parse_line("--runs 0", &o, error) == -1);
  CHECK(parse_line("--runs 10", &o, error) == -1);
  CHECK(parse_line("--priority fifo:10 --slice-us 100", &o, error) == -1);
  CHECK(parse_line("--sessions", &o, error) == -1 && strstr(error, "needs a value") != NULL);
  CHECK(parse_line("--frobnicate 1", &o, error) == -1 && strstr(error, "unknown option") != NULL);
  CHECK(parse_line("--edge 127.0.0.1:7000", &o, error) == -1);
  CHECK(parse_line("--edge 127.0.0.1:7000 --tokens t.txt", &o, error) == 0 && o.has_edge);
}

/* --direct (the scale rows): Tether alone, straight to an edge, its own options refused
   elsewhere rather than ignored. */
static void test_options_direct(void) {
  struct options o;
  char error[OPTION_ERROR];
  CHECK(parse_line("--direct --edge 127.0.0.1:7000 --sessions 100000", &o, error) == 0);
  CHECK(o.direct && o.heartbeat_ms == 1000 && !o.own_lateness_off);
  CHECK(o.design_count == 1 && o.designs[0] == DESIGN_TETHER);
  CHECK(strcmp(o.edge_text, "127.0.0.1:7000") == 0 && o.sessions[0] == 100000);
  CHECK(parse_line("--direct --edge 127.0.0.1:7000 --heartbeat-ms 2000 --own-lateness off", &o, error) == 0);
  CHECK(o.heartbeat_ms == 2000 && o.own_lateness_off);
  CHECK(parse_line("--direct", &o, error) == -1 && strstr(error, "--edge") != NULL);
  CHECK(parse_line("--direct --edge 127.0.0.1:7000 --designs naive", &o, error) == -1);
  CHECK(strstr(error, "tether alone") != NULL);
  CHECK(parse_line("--direct --edge 127.0.0.1:7000 --cost", &o, error) == -1);
  CHECK(parse_line("--heartbeat-ms 2000", &o, error) == -1 && strstr(error, "--direct") != NULL);
  CHECK(parse_line("--direct --edge 127.0.0.1:7000 --heartbeat-ms 50", &o, error) == -1);
  CHECK(parse_line("--direct --edge 127.0.0.1:7000 --own-lateness maybe", &o, error) == -1);
  CHECK(parse_line("--edge 127.0.0.1:7000", &o, error) == -1 && strstr(error, "--tokens") != NULL);
}

int main(void) {
  test_parse_list_moreItemsThanTheArrayHolds_isAnError();
  test_parse_list_fullArrays_leaveTheNextFieldsAlone();
  test_parse_list_unknownOrMalformedItem_isAnError();
  test_parse_priority_eachForm();
  test_options_priorityRunsAndLimits();
  test_options_direct();
  if (failures) {
    fprintf(stderr, "test_options: %d failed\n", failures);
    return 1;
  }
  printf("test_options: every check passed\n");
  return 0;
}
