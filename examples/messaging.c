/* messaging.c - a firmware-like host of Tether's login session (tether_rtm_*): logs in to
 * an edge server as a user, joins channels, and prints every callback with a
 * CLOCK_MONOTONIC timestamp, until SIGINT or SIGTERM, which log out cleanly. Build against
 * an installed Tether:
 *
 *   cc -std=c99 -o messaging examples/messaging.c $(pkg-config --cflags --libs tether)
 *
 * Usage: messaging --server HOST:PORT --app-id ID --user-id NAME --token TOKEN
 *                  [--channel NAME]... [--scale F] [--renew-token TOKEN]
 *   --channel NAME     join this channel once logged in (may be given up to 8 times)
 *   --scale F          multiply every threshold by F (0.01: interrupted after 40 ms ...)
 *   --renew-token T    answer on_token_expired with tether_rtm_renew_token(T)
 *   SIGUSR1            report a network change (tether_rtm_network_changed)
 * Output: one line per event, "<CLOCK_MONOTONIC seconds, to the microsecond> <event> <details>". */
#define _POSIX_C_SOURCE 200809L
#include <ev.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tether.h"

struct messaging {
  struct ev_loop *loop;
  tether_rtm_client *client;
  const char *channels[8];
  int channel_count;
  const char *renew_token;
};

static void say(const char *format, ...) {
  struct timespec ts;
  va_list args;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  printf("%lld.%06ld ", (long long)ts.tv_sec, ts.tv_nsec / 1000L);
  va_start(args, format);
  vprintf(format, args);
  va_end(args);
  putchar('\n');
  fflush(stdout);
}

static void on_state(void *ctx, tether_rtm_connection_state state,
                     tether_rtm_connection_change_reason reason) {
  (void)ctx;
  say("state %s %s", tether_rtm_connection_state_name((int)state),
      tether_rtm_connection_change_reason_name((int)reason));
}
static void on_login_result(void *ctx, int error) {
  struct messaging *m = (struct messaging *)ctx;
  say("login-result %s", tether_rtm_login_error_name(error));
  if (error != TETHER_RTM_LOGIN_ERR_OK) return;
  /* Channels may be joined as soon as login was called; here, once it succeeded. */
  for (int i = 0; i < m->channel_count; i++) {
    int rc = tether_rtm_join_channel(m->client, m->channels[i]);
    say("join-channel %s rc=%d %s", m->channels[i], rc, tether_error_name(rc));
  }
}
static void on_logout_result(void *ctx, int error) {
  (void)ctx;
  say("logout-result %s", tether_rtm_logout_error_name(error));
}
static void on_token_expired(void *ctx) {
  struct messaging *m = (struct messaging *)ctx;
  say("token-expired");
  if (m->renew_token) say("renew-token rc=%d", tether_rtm_renew_token(m->client, m->renew_token));
}
static void on_member_joined(void *ctx, const char *channel, const char *user_id) {
  (void)ctx;
  say("member-joined channel=%s user=%s", channel, user_id);
}
static void on_member_left(void *ctx, const char *channel, const char *user_id) {
  (void)ctx;
  say("member-left channel=%s user=%s", channel, user_id);
}
static void on_log(void *ctx, tether_log_level level, const char *message) {
  (void)ctx;
  if (level <= TETHER_LOG_WARNING) say("log level=%d %s", (int)level, message);
}
static void on_attempt(void *ctx, uint32_t attempt, uint32_t next_ms) {
  (void)ctx;
  say("login-attempt n=%u next_in=%u", attempt, next_ms);
}

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents) {
  struct messaging *m = (struct messaging *)w->data;
  (void)loop; (void)revents;
  if (w->signum == SIGUSR1) {
    say("network-changed rc=%d", tether_rtm_network_changed(m->client));
  } else if (w->signum == SIGINT || w->signum == SIGTERM) {
    /* on_logout_result (if logged in) runs inside this call. */
    int rc = tether_rtm_logout(m->client);
    say("logout rc=%d", rc);
    ev_break(m->loop, EVBREAK_ALL);
  }
}

static uint32_t scaled(uint32_t ms, double scale) {
  double v = ms * scale;
  return v < 1 ? 1 : (uint32_t)v;
}

static const char *arg(int argc, char **argv, const char *name, const char *fallback) {
  for (int i = 1; i + 1 < argc; i++) {
    if (strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  return fallback;
}

int main(int argc, char **argv) {
  struct messaging m;
  tether_rtm_config config;
  tether_rtm_handler handler;
  ev_signal signals[3];
  int numbers[3] = {SIGINT, SIGTERM, SIGUSR1};
  double scale = atof(arg(argc, argv, "--scale", "1"));
  const char *user = arg(argc, argv, "--user-id", NULL);
  const char *token = arg(argc, argv, "--token", NULL);
  int rc;

  memset(&m, 0, sizeof m);
  {
    /* A parent may have started us with signals blocked (the mask is inherited). */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
  }
  for (int i = 1; i + 1 < argc && m.channel_count < 8; i++) {
    if (strcmp(argv[i], "--channel") == 0) m.channels[m.channel_count++] = argv[++i];
  }
  m.loop = ev_default_loop(0);
  m.renew_token = arg(argc, argv, "--renew-token", NULL);
  if (!user || !token || scale <= 0) {
    fprintf(stderr, "usage: %s --server HOST:PORT --app-id ID --user-id NAME --token T "
                    "[--channel NAME]... [--scale F] [--renew-token T]\n", argv[0]);
    return 2;
  }

  tether_rtm_config_init(&config);
  config.app_id = arg(argc, argv, "--app-id", NULL);
  config.server = arg(argc, argv, "--server", NULL);
  config.login_timeout_ms = scaled(config.login_timeout_ms, scale);
  config.interrupted_after_ms = scaled(config.interrupted_after_ms, scale);
  config.heartbeat_interval_ms = scaled(config.heartbeat_interval_ms, scale);
  config.retry_base_ms = scaled(config.retry_base_ms, scale);
  config.retry_cap_ms = scaled(config.retry_cap_ms, scale);

  tether_rtm_handler_init(&handler);
  handler.on_connection_state_changed = on_state;
  handler.on_login_result = on_login_result;
  handler.on_logout_result = on_logout_result;
  handler.on_token_expired = on_token_expired;
  handler.on_member_joined = on_member_joined;
  handler.on_member_left = on_member_left;
  handler.on_log = on_log;
  handler.on_login_attempt = on_attempt;

  rc = tether_rtm_client_create(m.loop, &config, &handler, &m, &m.client);
  if (rc != TETHER_OK) {
    fprintf(stderr, "tether_rtm_client_create: %s\n", tether_error_name(rc));
    return 1;
  }
  for (int i = 0; i < 3; i++) {
    ev_signal_init(&signals[i], on_signal, numbers[i]);
    signals[i].data = &m;
    ev_signal_start(m.loop, &signals[i]);
  }
  rc = tether_rtm_login(m.client, token, user);
  say("login rc=%d%s%s", rc, rc ? " " : "", rc ? tether_error_name(rc) : "");
  if (rc == 0) ev_run(m.loop, 0);
  tether_rtm_client_destroy(m.client);
  return rc == 0 ? 0 : 1;
}
