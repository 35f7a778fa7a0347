// SPDX-License-Identifier: Apache-2.0
/* tether-bench's command line (options.h). */
#include "options.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const design_names[DESIGN_COUNT] = {"tether", "previous", "naive"};
const char *const load_names[2] = {"idle", "busy"};
const char *const pattern_names[2] = {"steady", "burst"};

/* A decimal integer in [low, high], the whole of `text`. 0, or -1. */
static int parse_int(const char *text, long low, long high, long *out) {
  char *end = NULL;
  long value;
  if (text == NULL || *text == 0) return -1;
  errno = 0;
  value = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != 0 || value < low || value > high) return -1;
  *out = value;
  return 0;
}

int parse_list(const char *text, const char *const *names, int name_count, int *out,
               int capacity, const char *option, char error[OPTION_ERROR]) {
  int n = 0;
  const char *item = text;
  for (;;) {
    const char *comma = strchr(item, ',');
    size_t length = comma ? (size_t)(comma - item) : strlen(item);
    char word[64];
    int value = -1;
    if (length == 0 || length >= sizeof word) {
      snprintf(error, OPTION_ERROR, "%s: an empty or overlong item in \"%.60s\"", option, text);
      return -1;
    }
    memcpy(word, item, length);
    word[length] = 0;
    if (names == NULL) {
      long number;
      if (parse_int(word, 1, 1000000, &number) == 0) value = (int)number;
    } else {
      for (int i = 0; i < name_count; i++) {
        if (strcmp(word, names[i]) == 0) value = i;
      }
    }
    if (value < 0) {
      snprintf(error, OPTION_ERROR, "%s: \"%s\" is not %s", option, word,
               names == NULL ? "a positive number" : "one of its names");
      return -1;
    }
    if (n == capacity) {
      snprintf(error, OPTION_ERROR, "%s: more than %d items in \"%.60s\"", option, capacity, text);
      return -1;
    }
    out[n++] = value;
    if (comma == NULL) return n;
    item = comma + 1;
  }
}

int parse_priority(const char *text, struct priority *out) {
  static const struct {
    const char *prefix;
    enum policy_kind kind;
    long low, high;
  } kinds[] = {{"fifo:", POLICY_FIFO, 1, 99}, {"rr:", POLICY_RR, 1, 99}, {"nice:", POLICY_NICE, -20, 19}};
  if (strcmp(text, "default") == 0) {
    out->kind = POLICY_DEFAULT;
    out->level = 0;
    return 0;
  }
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    size_t length = strlen(kinds[i].prefix);
    long level;
    if (strncmp(text, kinds[i].prefix, length) == 0 &&
        parse_int(text + length, kinds[i].low, kinds[i].high, &level) == 0) {
      out->kind = kinds[i].kind;
      out->level = (int)level;
      return 0;
    }
  }
  return -1;
}

void priority_text(const struct priority *p, char out[16]) {
  static const char *const prefixes[] = {"default", "fifo", "rr", "nice"};
  if (p->kind == POLICY_DEFAULT) snprintf(out, 16, "default");
  else snprintf(out, 16, "%s:%d", prefixes[p->kind], p->level);
}

/* --priority: a list of priorities, each its own set of rows. */
static int parse_priorities(const char *text, struct options *o, char error[OPTION_ERROR]) {
  const char *item = text;
  o->priority_count = 0;
  for (;;) {
    const char *comma = strchr(item, ',');
    size_t length = comma ? (size_t)(comma - item) : strlen(item);
    char word[16];
    if (o->priority_count == MAX_PRIORITIES) {
      snprintf(error, OPTION_ERROR, "--priority: more than %d items", MAX_PRIORITIES);
      return -1;
    }
    if (length == 0 || length >= sizeof word) {
      snprintf(error, OPTION_ERROR, "--priority: \"%.60s\" is not default, fifo:N, rr:N or nice:N", text);
      return -1;
    }
    memcpy(word, item, length);
    word[length] = 0;
    if (parse_priority(word, &o->priorities[o->priority_count]) != 0) {
      snprintf(error, OPTION_ERROR,
               "--priority: \"%s\" is not default, fifo:N or rr:N (N 1-99), or nice:N (N -20-19)", word);
      return -1;
    }
    o->priority_count++;
    if (comma == NULL) return 0;
    item = comma + 1;
  }
}

static int parse_edge(const char *text, struct options *o) {
  char host[64] = "";
  unsigned port = 0;
  if (sscanf(text, "%63[^:]:%u", host, &port) != 2 || port == 0 || port > 65535) return -1;
  o->edge.sin_family = AF_INET;
  o->edge.sin_port = htons((uint16_t)port);
  if (inet_pton(AF_INET, host, &o->edge.sin_addr) != 1) return -1;
  o->has_edge = 1;
  return 0;
}

static void defaults(struct options *o) {
  if (o->session_count == 0) {
    int quick[] = {1, 50}, full[] = {1, 1000, 10000};
    o->session_count = o->quick ? 2 : 3;
    memcpy(o->sessions, o->quick ? quick : full, (size_t)o->session_count * sizeof(int));
  }
  if (o->load_count == 0) { o->loads[0] = 0; o->loads[1] = 1; o->load_count = 2; }
  if (o->pattern_count == 0) { o->patterns[0] = 0; o->patterns[1] = 1; o->pattern_count = 2; }
  if (o->design_count == 0 && o->direct) {
    o->designs[0] = DESIGN_TETHER;
    o->design_count = 1;
  } else if (o->design_count == 0) {
    for (int d = 0; d < DESIGN_COUNT; d++) o->designs[d] = d;
    o->design_count = DESIGN_COUNT;
  }
  if (o->priority_count == 0) o->priority_count = 1; /* default (zeroed) */
  if (o->inline_peer) { o->loads[0] = 0; o->load_count = 1; } /* and no kernel or bare phase */
  if (o->direct && o->heartbeat_ms == 0) o->heartbeat_ms = 1000;
}

/* An option with a value. 0, or -1 with `error` written. */
static int parse_valued(const char *a, const char *v, struct options *o, char error[OPTION_ERROR]) {
  long number;
  int n = 0;
  if (strcmp(a, "--sessions") == 0) n = o->session_count = parse_list(v, NULL, 0, o->sessions, MAX_SESSIONS, a, error);
  else if (strcmp(a, "--loads") == 0) n = o->load_count = parse_list(v, load_names, 2, o->loads, 2, a, error);
  else if (strcmp(a, "--patterns") == 0) n = o->pattern_count = parse_list(v, pattern_names, 2, o->patterns, 2, a, error);
  else if (strcmp(a, "--designs") == 0)
    n = o->design_count = parse_list(v, design_names, DESIGN_COUNT, o->designs, DESIGN_COUNT, a, error);
  else if (strcmp(a, "--priority") == 0) n = parse_priorities(v, o, error);
  else if (strcmp(a, "--own-lateness") == 0) {
    if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0) {
      snprintf(error, OPTION_ERROR, "--own-lateness: \"%.40s\" is not on or off", v);
      return -1;
    }
    o->own_lateness_off = strcmp(v, "off") == 0;
  } else if (strcmp(a, "--heartbeat-ms") == 0) {
    if (parse_int(v, 100, 60000, &number) != 0) {
      snprintf(error, OPTION_ERROR, "--heartbeat-ms: \"%.40s\" is not a number from 100 to 60000", v);
      return -1;
    }
    o->heartbeat_ms = (int)number;
  } else if (strcmp(a, "--runs") == 0 || strcmp(a, "--busy") == 0 || strcmp(a, "--slice-us") == 0 ||
           strcmp(a, "--edge-pid") == 0) {
    int runs = strcmp(a, "--runs") == 0;
    if (parse_int(v, runs ? 1 : 0, runs ? MAX_RUNS : 10000000, &number) != 0) {
      snprintf(error, OPTION_ERROR, "%s: \"%.40s\" is not a number%s", a, v, runs ? " from 1 to 9" : "");
      return -1;
    }
    if (runs) o->runs = (int)number;
    else if (strcmp(a, "--busy") == 0) o->busy_processes = (int)number;
    else if (strcmp(a, "--slice-us") == 0) o->slice = (int64_t)number * 1000;
    else o->edge_pid = (pid_t)number;
  } else if (strcmp(a, "--out") == 0) o->out_dir = v;
  else if (strcmp(a, "--tokens") == 0) o->tokens_path = v;
  else if (strcmp(a, "--app-id") == 0) o->app_id = v;
  else if (strcmp(a, "--edge") == 0) {
    if (parse_edge(v, o) != 0) {
      snprintf(error, OPTION_ERROR, "--edge: \"%.60s\" is not IPV4:PORT", v);
      return -1;
    }
    snprintf(o->edge_text, sizeof o->edge_text, "%s", v);
  } else {
    snprintf(error, OPTION_ERROR, "unknown option %.60s", a);
    return -1;
  }
  return n < 0 ? -1 : 0;
}

int options_parse(int argc, char **argv, int cores, struct options *o, char error[OPTION_ERROR]) {
  memset(o, 0, sizeof *o);
  o->app_id = "bench-app";
  o->busy_processes = cores;
  o->runs = 1;
  error[0] = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--quick") == 0) o->quick = 1;
    else if (strcmp(a, "--cost") == 0) o->cost = 1;
    else if (strcmp(a, "--inline-peer") == 0) o->inline_peer = 1;
    else if (strcmp(a, "--vectors") == 0) o->vectors = 1;
    else if (strcmp(a, "--mlock") == 0) o->mlock = 1;
    else if (strcmp(a, "--direct") == 0) o->direct = 1;
    else if (i + 1 == argc) {
      snprintf(error, OPTION_ERROR, "%.60s needs a value", a);
      return -1;
    } else if (parse_valued(a, argv[++i], o, error) != 0) {
      return -1;
    }
  }
  if (o->has_edge && o->tokens_path == NULL && !o->direct) {
    snprintf(error, OPTION_ERROR, "--edge needs --tokens (but --direct mints its own)");
    return -1;
  }
  if (o->inline_peer && (o->has_edge || o->cost)) {
    snprintf(error, OPTION_ERROR, "--inline-peer runs without --edge and --cost");
    return -1;
  }
  if (o->direct && (!o->has_edge || o->inline_peer || o->cost)) {
    snprintf(error, OPTION_ERROR, "--direct needs --edge (and runs without --inline-peer and --cost)");
    return -1;
  }
  if (o->direct && (o->design_count > 1 || (o->design_count == 1 && o->designs[0] != DESIGN_TETHER))) {
    snprintf(error, OPTION_ERROR, "--direct measures tether alone (the libev designs need a socket per session)");
    return -1;
  }
  if (!o->direct && (o->heartbeat_ms || o->own_lateness_off)) {
    snprintf(error, OPTION_ERROR, "--heartbeat-ms and --own-lateness are for --direct");
    return -1;
  }
  for (int i = 0; i < o->priority_count && o->slice; i++) {
    if (o->priorities[i].kind == POLICY_FIFO || o->priorities[i].kind == POLICY_RR) {
      snprintf(error, OPTION_ERROR, "--slice-us is for default and nice:N (a real-time policy has no slice)");
      return -1;
    }
  }
  defaults(o);
  return 0;
}
