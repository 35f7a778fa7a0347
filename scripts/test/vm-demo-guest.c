// SPDX-License-Identifier: Apache-2.0
/* vm-demo-guest.c - the guest's half of `make test-vm-demo` (scripts/test/vm-demo.sh): runs
 * examples/device in an ARM virtual machine against the host's tether-edge, for the host's
 * tether-demo, which can neither signal a guest process nor read the guest's clock.
 *
 * It reads its settings from the kernel command line (/proc/cmdline, one boot per scenario:
 * the host's ports are known only once bound): tether.control=PORT (tether-demo's control
 * socket on the host's loopback, 10.0.2.2 here), tether.server, tether.app, tether.channel,
 * tether.uid, tether.token, tether.scale (the device's arguments) and tether.limit (seconds:
 * the whole run's bound). Then, over UDP to the control port:
 *   1. the clock: 50 probes, each "clock" answered by the host's CLOCK_MONOTONIC; the one
 *      with the shortest round trip is printed as "tether-vm: clock T1 HOST T2" (the guest's
 *      send and receive times around the host's), from which the host maps its instants
 *      (the relay's cut, its last answer) onto the guest's clock and back;
 *   2. /tests/device, its lines (stamped with the guest's CLOCK_MONOTONIC) straight on the
 *      console, so the host reads them as they come;
 *   3. "leave" from the host: SIGINT to the device (it leaves the channel), "left" back;
 *   4. the clock again (the host checks that the two agree: no drift between the clocks).
 * Everything goes to /dev/console; the exit status is 0 only if the device left when told
 * and exited 0. Every wait is bounded by tether.limit. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static FILE *console;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fail(const char *what) {
  fprintf(console, "tether-vm: demo guest: %s\n", what);
  printf("demo guest: %s\n", what);
  return 1;
}

/* The value of "tether.NAME=" on the kernel command line (in `line`), or NULL. */
static const char *setting(char *line, const char *name) {
  static char values[8][1024];
  static int used;
  char key[64];
  snprintf(key, sizeof key, "tether.%s=", name);
  for (char *word = line; word && *word; word = strchr(word, ' ')) {
    while (*word == ' ') word++;
    if (strncmp(word, key, strlen(key)) != 0) continue;
    size_t length = strcspn(word + strlen(key), " \n");
    if (used == 8 || length >= sizeof values[0]) return NULL;
    memcpy(values[used], word + strlen(key), length);
    values[used][length] = 0;
    return values[used++];
  }
  return NULL;
}

/* One datagram within `seconds`, NUL-terminated in `buffer`: its length, or -1. */
static int receive(int fd, char *buffer, size_t size, double seconds) {
  struct pollfd p = {fd, POLLIN, 0};
  if (poll(&p, 1, (int)(seconds * 1000)) <= 0) return -1;
  ssize_t n = recv(fd, buffer, size - 1, 0);
  if (n < 0) return -1;
  buffer[n] = 0;
  return (int)n;
}

/* The round of 50 probes with the shortest round trip, printed; 0 if one came back. */
static int clock_line(int fd) {
  double best_t1 = 0, best_t2 = 0, best_host = 0;
  char buffer[128];
  for (int i = 0; i < 50; i++) {
    double t1 = now();
    if (send(fd, "clock", 5, 0) != 5) continue;
    if (receive(fd, buffer, sizeof buffer, 1.0) < 0) continue;
    double t2 = now(), host;
    if (sscanf(buffer, "clock %lf", &host) != 1) continue;
    if (best_t1 == 0 || t2 - t1 < best_t2 - best_t1) {
      best_t1 = t1, best_t2 = t2, best_host = host;
    }
  }
  if (best_t1 == 0) return -1;
  fprintf(console, "tether-vm: clock %.6f %.6f %.6f\n", best_t1, best_host, best_t2);
  return 0;
}

int main(void) {
  static char line[4096];
  int fd, status = 0;
  pid_t device;

  console = fopen("/dev/console", "w");
  if (!console) return 1;
  setvbuf(console, NULL, _IOLBF, 0);
  FILE *cmdline = fopen("/proc/cmdline", "r");
  if (!cmdline || !fgets(line, sizeof line, cmdline)) return fail("no /proc/cmdline");
  fclose(cmdline);
  const char *control = setting(line, "control"), *server = setting(line, "server"),
             *app = setting(line, "app"), *channel = setting(line, "channel"),
             *uid = setting(line, "uid"), *token = setting(line, "token"),
             *scale = setting(line, "scale"), *limit_text = setting(line, "limit");
  if (!control || !server || !app || !channel || !uid || !token || !scale || !limit_text) {
    return fail("a tether.* setting is missing from the kernel command line");
  }
  double limit = atof(limit_text), end = now() + limit;

  struct sockaddr_in host;
  memset(&host, 0, sizeof host);
  host.sin_family = AF_INET;
  host.sin_port = htons((unsigned short)atoi(control));
  inet_pton(AF_INET, "10.0.2.2", &host.sin_addr);
  fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&host, sizeof host) != 0) {
    return fail("no socket to the host's control port");
  }
  if (clock_line(fd) != 0) return fail("the host did not answer the clock probes");

  char *arguments[] = {"/tests/device", "--server", (char *)server, "--app-id", (char *)app,
                       "--channel", (char *)channel, "--uid", (char *)uid, "--token",
                       (char *)token, "--scale", (char *)scale, NULL};
  device = fork();
  if (device == 0) {
    dup2(fileno(console), 1);
    dup2(fileno(console), 2);
    execv(arguments[0], arguments);
    _exit(127);
  }
  if (device < 0) return fail("fork failed");
  fprintf(console, "tether-vm: device started\n");

  /* Until the host says "leave" (or the device ends by itself, or the limit). */
  int told = 0, exited = 0;
  char buffer[128];
  while (!told && now() < end) {
    if (waitpid(device, &status, WNOHANG) == device) {
      exited = 1;
      break;
    }
    if (receive(fd, buffer, sizeof buffer, 0.05) > 0 && strcmp(buffer, "leave") == 0) told = 1;
  }
  if (!told) {
    if (!exited) kill(device, SIGKILL), waitpid(device, &status, 0);
    return fail(exited ? "the device exited before the host said leave"
                       : "the host never said leave (tether.limit)");
  }
  kill(device, SIGINT);
  send(fd, "left", 4, 0);
  while (!exited && now() < end + 5) {
    if (waitpid(device, &status, WNOHANG) == device) exited = 1;
    else poll(NULL, 0, 10);
  }
  if (!exited) {
    kill(device, SIGKILL);
    waitpid(device, &status, 0);
    return fail("the device did not exit after SIGINT");
  }
  /* The host may repeat "leave" until it saw "left": the rest is drained by the probes. */
  while (receive(fd, buffer, sizeof buffer, 0.01) > 0) {}
  if (clock_line(fd) != 0) return fail("the host did not answer the second clock probes");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return fail("the device did not exit with 0 after leaving");
  }
  printf("demo guest: the device joined, left when told and exited 0\n");
  return 0;
}
