// SPDX-License-Identifier: Apache-2.0
/*
 * tether.h - the C interface of Tether, a connection core for devices.
 *
 * Tether keeps a device joined to a real-time channel through an edge server and reports
 * every connection state change with its reason. This header is the whole public API: what
 * is not here is not API. It needs only <stdint.h> and a forward declaration of libev's
 * `struct ev_loop`.
 *
 * Names and numbers below are fixed: states, reasons and error codes keep the values of the
 * real-time SDKs they model, so code written against that model reads the same numbers
 * here. New values, functions, struct fields (at the end) and callbacks (at the end) may
 * be added; existing ones are never renamed, renumbered or reordered. What each state,
 * reason, threshold and callback means, and when it comes: docs/BEHAVIOUR.md (installed
 * with the library in share/doc/tether).
 *
 * Threads: an engine (or a login client) lives on the thread that runs its libev loop.
 * Every function taking one must be called from that thread (from inside a callback, or
 * from code the loop's thread runs between ev_run calls); a call from another thread is
 * refused with TETHER_ERR_WRONG_THREAD (destroy included) and changes nothing: it reads
 * nothing of the handle but the thread recorded at create, and calls no callback.
 * Functions that take no handle may be called from any thread.
 *
 * Strings passed in are copied before the call returns. Strings passed to callbacks are
 * valid only during the callback.
 *
 * Time: thresholds run on CLOCK_MONOTONIC (time suspended does not count) and count from
 * when the last datagram arrived, as the kernel stamped it, not from when a busy loop read
 * it. The engines of one loop share one timerfd: every threshold the app sees fires at its
 * instant; only heartbeats may go up to 1/16 of their interval late, to share wake-ups.
 * How late deadlines ran is the engine's own figure (tether_engine_get_stats). Details:
 * docs/STATES.md ("Deadlines").
 */
#ifndef TETHER_H
#define TETHER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ev_loop; /* libev's loop; this header does not need ev.h */

#define TETHER_VERSION_MAJOR 0
#define TETHER_VERSION_MINOR 1
#define TETHER_VERSION_PATCH 0
/* The three packed as 0x00MMmmpp: what tether_version() returns for this header. */
#define TETHER_VERSION_HEX \
  ((TETHER_VERSION_MAJOR << 16) | (TETHER_VERSION_MINOR << 8) | TETHER_VERSION_PATCH)

/* The channel session's connection state (docs/BEHAVIOUR.md section 1). */
typedef enum tether_connection_state {
  /* Initial state; again after leave_channel, or after a join refused for a bad token. */
  TETHER_CONNECTION_STATE_DISCONNECTED = 1,
  /* From join_channel until the edge server accepts the join. */
  TETHER_CONNECTION_STATE_CONNECTING = 2,
  /* Joined: data flows. */
  TETHER_CONNECTION_STATE_CONNECTED = 3,
  /* The link was interrupted; Tether rejoins on its own. */
  TETHER_CONNECTION_STATE_RECONNECTING = 4,
  /* Tether stopped trying: call leave_channel, then join_channel again. */
  TETHER_CONNECTION_STATE_FAILED = 5
} tether_connection_state;

/* Why the connection state changed. 17 and 20-24 are reserved and never produced. */
typedef enum tether_connection_changed_reason {
  TETHER_CONNECTION_CHANGED_CONNECTING = 0,            /* CONNECTING: join_channel called */
  TETHER_CONNECTION_CHANGED_JOIN_SUCCESS = 1,          /* CONNECTED: first join accepted */
  TETHER_CONNECTION_CHANGED_INTERRUPTED = 2,           /* RECONNECTING: no data for 4 s */
  TETHER_CONNECTION_CHANGED_BANNED_BY_SERVER = 3,      /* FAILED: kicked/banned by the server */
  TETHER_CONNECTION_CHANGED_JOIN_FAILED = 4,           /* FAILED: no (re)join for 20 min */
  TETHER_CONNECTION_CHANGED_LEAVE_CHANNEL = 5,         /* DISCONNECTED: leave_channel */
  TETHER_CONNECTION_CHANGED_INVALID_APP_ID = 6,        /* FAILED: unknown app id */
  TETHER_CONNECTION_CHANGED_INVALID_CHANNEL_NAME = 7,  /* FAILED: server refused the name */
  TETHER_CONNECTION_CHANGED_INVALID_TOKEN = 8,         /* DISCONNECTED: token does not verify */
  TETHER_CONNECTION_CHANGED_TOKEN_EXPIRED = 9,         /* FAILED: token expired */
  TETHER_CONNECTION_CHANGED_REJECTED_BY_SERVER = 10,   /* FAILED: server refused the join */
  TETHER_CONNECTION_CHANGED_SETTING_PROXY_SERVER = 11, /* RECONNECTING: endpoint changed */
  TETHER_CONNECTION_CHANGED_RENEW_TOKEN = 12,          /* RECONNECTING: renew_token rejoins */
  TETHER_CONNECTION_CHANGED_CLIENT_IP_ADDRESS_CHANGED = 13, /* RECONNECTING: IP changed */
  TETHER_CONNECTION_CHANGED_KEEP_ALIVE_TIMEOUT = 14,   /* RECONNECTING: server forgot session */
  TETHER_CONNECTION_CHANGED_REJOIN_SUCCESS = 15,       /* CONNECTED: rejoin succeeded */
  TETHER_CONNECTION_CHANGED_LOST = 16,                 /* RECONNECTING: no data for 10 s */
  TETHER_CONNECTION_CHANGED_CLIENT_IP_ADDRESS_CHANGED_BY_USER = 18, /* RECONNECTING: app said */
  TETHER_CONNECTION_CHANGED_SAME_UID_LOGIN = 19        /* FAILED: same uid joined elsewhere */
} tether_connection_changed_reason;

/* Why a remote member is reported offline. */
typedef enum tether_user_offline_reason {
  TETHER_USER_OFFLINE_QUIT = 0,           /* it left the channel */
  TETHER_USER_OFFLINE_DROPPED = 1,        /* nothing heard from it for 20 s */
  TETHER_USER_OFFLINE_BECOME_AUDIENCE = 2 /* reserved; never produced */
} tether_user_offline_reason;

/* Return codes of every function of both profiles: 0 for success, or one negative code.
   One space: a value means one condition whichever function returns it, and
   tether_error_name and tether_error_message know every value a function returns. (The
   login profile's TETHER_RTM_LOGIN_ERR_* and TETHER_RTM_LOGOUT_ERR_* are another thing:
   what its result callbacks report, never returned.) New codes may be added. */
#define TETHER_OK 0
#define TETHER_ERR_FAILED -1                /* a failure with no more specific code */
#define TETHER_ERR_INVALID_ARGUMENT -2      /* NULL or out-of-range argument or config field */
#define TETHER_ERR_NOT_READY -3             /* the call does not apply in the current state */
#define TETHER_ERR_NOT_INITIALIZED -7       /* the handle is NULL or not a live engine/client */
#define TETHER_ERR_JOIN_CHANNEL_REJECTED -17 /* join_channel while not DISCONNECTED */
#define TETHER_ERR_INVALID_APP_ID -101      /* empty, over 64 bytes, or not printable ASCII */
#define TETHER_ERR_INVALID_CHANNEL_NAME -102 /* empty, over 63 bytes, or a byte outside the set */
#define TETHER_ERR_TOKEN_EXPIRED -109       /* reserved: no function of this version returns it */
#define TETHER_ERR_INVALID_TOKEN -110       /* over 512 bytes, or not printable ASCII */
#define TETHER_ERR_INVALID_USER_ID -121     /* reserved: no function of this version returns it */
#define TETHER_ERR_ALREADY_LOGGED_IN -208   /* login profile: login while not DISCONNECTED */
#define TETHER_ERR_TOO_OFTEN -210           /* login profile: a third login call within 1 s */
#define TETHER_ERR_NOT_LOGGED_IN -302       /* login profile: logout while DISCONNECTED */
#define TETHER_ERR_WRONG_THREAD -1000       /* called from a thread other than the loop's */

/* Log levels of the handler's optional on_log callback. Tether prints nothing itself. */
typedef enum tether_log_level {
  TETHER_LOG_ERROR = 1,
  TETHER_LOG_WARNING = 2,
  TETHER_LOG_INFO = 3,
  TETHER_LOG_DEBUG = 4
} tether_log_level;

typedef struct tether_engine tether_engine; /* opaque */

/* Engine configuration. Initialise with tether_engine_config_init (which sets `size` and
   every default), then change what you need. Fields are only ever added at the end. */
typedef struct tether_engine_config {
  uint32_t size;                        /* sizeof(tether_engine_config) */
  const char *app_id;                   /* 1..64 bytes of printable ASCII, no space */
  const char *server;                   /* edge server "host:port" */
  uint32_t interrupted_after_ms;        /* default 4000 */
  uint32_t lost_after_ms;               /* default 10000 */
  uint32_t remote_offline_after_ms;     /* default 20000 */
  uint32_t give_up_after_ms;            /* default 1200000 */
  uint32_t token_will_expire_before_ms; /* default 30000 */
  uint32_t heartbeat_interval_ms;       /* default 1000 */
  /* Tether's addition to the vendor model (at the end): the (re)join backoff. After
     attempt n the next follows after max(base/4, uniform(0 .. min(cap, base * 2^(n-1))));
     see docs/STATES.md "Retries". */
  uint32_t retry_base_ms;               /* default 500 */
  uint32_t retry_cap_ms;                /* default 8000; not below retry_base_ms */
  /* Added at the end: 0 (the default) keeps this engine's own lateness figures
     (lateness_p50_us, lateness_p99_us and lateness_max_us of tether_connection_stats:
     a histogram of about 1.1 KB per engine); 1 keeps none, and those three fields then
     read 0. deadlines_fired and the loop's figures (loop_lateness_*) are kept either
     way. For hosts with many engines on one loop. */
  uint32_t own_lateness_off;
  /* The socket (at the end). NULL (the default) or "": the engine shares one UDP socket
     with every engine and login client of its loop that talks to the same server address
     (one descriptor and one local port for all of them; its receive buffer raised to the
     system's maximum), and each datagram is handed to its session by what protocol
     version 2 carries in clear (docs/DESIGN.md, "The shared socket"). A name (1..15 bytes
     of printable ASCII, no space, '/' or ':'): the engine gets a socket of its own, bound
     to that interface (SO_BINDTODEVICE: Linux 5.7 or later, or CAP_NET_RAW), so its
     datagrams leave through it whatever the routes say (a modem beside the Wi-Fi); an
     interface that does not exist, or a binding refused, fails tether_engine_create with
     TETHER_ERR_FAILED (on_log says why), or, for a server name, the socket made when it
     resolves (logged; the name is looked up again). Such a socket behaves as every
     engine's did before sockets were shared. Copied at create. */
  const char *bind_interface;
  /* more fields may follow */
} tether_engine_config;

/* The app's callbacks. Any pointer may be NULL. Fields are only ever added at the end. */
typedef struct tether_engine_handler {
  uint32_t size; /* sizeof(tether_engine_handler) */
  void (*on_connection_state_changed)(void *ctx, tether_connection_state state,
                                      tether_connection_changed_reason reason);
  void (*on_join_channel_success)(void *ctx, const char *channel, uint32_t uid,
                                  uint32_t elapsed_ms);
  void (*on_rejoin_channel_success)(void *ctx, const char *channel, uint32_t uid,
                                    uint32_t elapsed_ms);
  void (*on_connection_lost)(void *ctx);
  void (*on_leave_channel)(void *ctx);
  void (*on_user_joined)(void *ctx, uint32_t uid, uint32_t elapsed_ms);
  void (*on_user_offline)(void *ctx, uint32_t uid, tether_user_offline_reason reason);
  void (*on_token_privilege_will_expire)(void *ctx, const char *token);
  void (*on_request_token)(void *ctx);
  /* Tether's additions to the vendor model (at the end): */
  /* A message for the app's log; `message` is one line without a newline. The one
     callback that may also come from inside tether_engine_create (e.g. the name look-up
     starting) and after on_leave_channel (e.g. a datagram dropped). */
  void (*on_log)(void *ctx, tether_log_level level, const char *message);
  /* A JOIN went out: attempt 1, 2, ... of the current (re)join effort; the next attempt
     follows in next_attempt_in_ms (at most retry_base_ms / 8 later, so engines on one
     loop share wake-ups) unless an answer comes first; the effort gives up
     (FAILED/JOIN_FAILED) in give_up_in_ms, exactly. Retries are never silent. */
  void (*on_join_attempt)(void *ctx, uint32_t attempt, uint32_t next_attempt_in_ms,
                          uint32_t give_up_in_ms);
  /* A remote member has been silent for interrupted_after_ms (before the 20 s DROPPED). */
  void (*on_remote_member_interrupted)(void *ctx, uint32_t uid);
  /* An interrupted remote member was heard from again. */
  void (*on_remote_member_resumed)(void *ctx, uint32_t uid);
  /* more callbacks may follow */
} tether_engine_handler;

/* Which timer carries the deadlines of a loop (tether_connection_stats). */
typedef enum tether_deadline_source {
  /* One timerfd per loop (CLOCK_MONOTONIC, absolute), watched at the loop's highest
     priority: deadlines fire as exactly as the kernel wakes the thread. */
  TETHER_DEADLINE_SOURCE_TIMERFD = 1,
  /* One ev_timer per loop, where no timerfd could be made: libev's millisecond rounding
     applies (about 1 ms late). on_log says so when an engine or client is created. */
  TETHER_DEADLINE_SOURCE_EV_TIMER = 2
} tether_deadline_source;

/* What a connection (an engine, or a login client) counted since it was created, and
   what its loop's deadline source counted since the first connection on that loop was
   created: what tether_engine_get_stats and tether_rtm_client_get_stats fill. Lateness is
   the time from a deadline's due instant to the moment Tether ran it (before the callbacks
   it caused), in microseconds rounded up, from a log-linear histogram whose buckets are at
   most 12.5 % wide: a percentile is never below the true value and at most one bucket
   above it; the maximum is exact. Fields are only ever added at the end. */
typedef struct tether_connection_stats {
  uint32_t size;                  /* set by the caller: sizeof(tether_connection_stats) */
  uint32_t deadline_source;       /* a tether_deadline_source */
  uint64_t deadlines_fired;       /* this connection's deadlines that fell due and ran */
  uint32_t lateness_p50_us;       /* how late they ran: median */
  uint32_t lateness_p99_us;       /* 99th percentile */
  uint32_t lateness_max_us;       /* the latest */
  uint32_t loop_engines;          /* engines and clients on its loop, this one included */
  uint64_t loop_deadlines_fired;  /* every one's on the loop (those since gone too) */
  uint32_t loop_lateness_p50_us;
  uint32_t loop_lateness_p99_us;
  uint32_t loop_lateness_p999_us; /* 99.9th percentile */
  uint32_t loop_lateness_max_us;
  uint64_t datagrams_in;          /* datagrams received from the server's address */
  uint64_t datagrams_out;         /* datagrams the kernel took */
  uint64_t datagrams_malformed;   /* received but not a datagram of the protocol: dropped */
  uint64_t datagrams_foreign;     /* well-formed but not for this session (cookie): dropped */
  uint64_t join_attempts;         /* JOINs sent: first joins, retries, rejoins (a client:
                                     LOGINs) */
  uint64_t send_failures;         /* datagrams the kernel refused (lost, as UDP may be) */
  uint64_t datagrams_unopened;    /* sealed datagrams whose tag did not verify: dropped,
                                     nothing changed (forged or altered on the way) */
  uint64_t datagrams_replayed;    /* sealed datagrams repeated or too old (behind the
                                     replay window): dropped, nothing changed */
  /* The loop's sockets (at the end), counted since the loop's first connection, as the
     loop_ fields above: */
  uint64_t loop_datagrams_overflowed; /* datagrams the kernel dropped because a receive
                                     buffer of the loop's sockets was full (SO_RXQ_OVFL),
                                     as the last datagram read from each said; 0 where the
                                     kernel does not tell */
  uint64_t loop_datagrams_unclaimed; /* datagrams on a shared socket that named no session
                                     of it (no session id or nonce of one, or no version 2
                                     datagram at all, from the server's address): dropped.
                                     While a socket carries one session, that session takes
                                     every datagram and counts what it drops itself
                                     (datagrams_malformed), as on a socket of its own */
  /* more fields may follow */
} tether_connection_stats;

/* The same struct under the name it had when only an engine filled it: code written with
   it keeps compiling (only `struct tether_engine_stats`, the tag, is gone). */
typedef tether_connection_stats tether_engine_stats;

/* ---------------------------------------------------------------------------------------
 * Functions
 *
 * Every function is documented in the same order: what it does; @param, one line per
 * parameter (ownership, lifetime, NULL); what it returns: for a function that returns
 * int, "Returns 0 or:" and one line per negative code with its cause (the codes of the
 * one space above: tether_error_name names each); from which thread it may be called
 * (Thread:); an example for the entry points. scripts/check/check-header-docs.py checks the
 * layout, scripts/check/check-error-codes.py the codes.
 * ------------------------------------------------------------------------------------ */

/* tether_version: the version of the linked library, packed as TETHER_VERSION_HEX packs
   the header's (0x00MMmmpp), so a host can check that the library it loaded is not older
   than the header it was compiled with.
   Returns (major << 16) | (minor << 8) | patch of the library.
   Thread: any.

     if (tether_version() < TETHER_VERSION_HEX) fprintf(stderr, "libtether too old\n"); */
uint32_t tether_version(void);

/* tether_engine_config_init: sets config->size to sizeof(tether_engine_config) and every
   field to its default (app_id and server NULL, thresholds as commented in the struct).
   @param config  the caller's struct, written in full; NULL is a harmless no-op.
   Returns nothing.
   Thread: any.

     tether_engine_config config;
     tether_engine_config_init(&config);
     config.app_id = "my-app";
     config.server = "127.0.0.1:7000"; */
void tether_engine_config_init(tether_engine_config *config);

/* tether_engine_handler_init: sets handler->size to sizeof(tether_engine_handler) and
   every callback to NULL, so a host sets only the callbacks it wants (and stays correct
   when callbacks are added at the end).
   @param handler  the caller's struct, written in full; NULL is a harmless no-op.
   Returns nothing.
   Thread: any. */
void tether_engine_handler_init(tether_engine_handler *handler);

/* Calls from inside a callback. Every callback runs on the engine's thread, from inside
   ev_run, and may call any function of this header on any engine. The rules:
   - Callbacks are delivered in the order the session produced them. A call made inside a
     callback takes effect at once (its return value says so), and the callbacks it causes
     come after those already queued, once the current callback has returned.
   - tether_leave_channel inside a callback: the callbacks queued before it and not yet
     delivered are dropped (their datagrams still go out); the only ones that follow are
     the leave's own, on_connection_state_changed(DISCONNECTED, LEAVE_CHANNEL) and then
     on_leave_channel, and nothing else comes until the next tether_join_channel.
     Leaving again inside on_leave_channel does nothing (already DISCONNECTED).
   - tether_engine_destroy inside a callback (of this engine or another on the same loop):
     no callback of that engine comes after it, queued ones included; the engine's
     memory is released when the callback returns. Until then every call on the handle
     returns TETHER_ERR_NOT_INITIALIZED (tether_engine_destroy again returns 0 and does
     nothing); after it, the handle must not be used at all.
   - ev_break, or starting and stopping other watchers, inside a callback is fine.
   Tests/c/test_reentry.c checks leave and destroy inside each callback. */

/* tether_engine_create: makes an engine on `loop` and stores it in *out_engine,
   DISCONNECTED. The engine never runs the loop: every callback comes from inside the
   host's ev_run on that loop's thread, which becomes the engine's thread.
   Nothing here blocks on DNS: a name is looked up (getaddrinfo) on a short-lived thread
   of the engine's own, whose answer comes back through the loop. Until the name has an
   address the session's JOINs count as attempts but go nowhere; the first address gets a
   JOIN at once. A name that does not resolve is no error: it is looked up again with each
   unanswered attempt (on_log says why it failed) and the session follows its documented
   timeline (LOST, then JOIN_FAILED at give_up_after_ms). While (re)joins go unanswered, the
   name is looked up again every 3 attempts, and after a network change; a new address
   gets a JOIN at once, with no state change: moving a fleet by DNS moves the devices that
   lost their server. On Linux the engine also watches the device's addresses and routes
   (a netlink socket on the loop); 100 ms after a burst of changes it rejoins, with
   CLIENT_IP_ADDRESS_CHANGED, only if the route to its server now leaves from another
   source address (or is gone): an interface, VPN or address it does not use changes
   nothing.
   Every engine on one loop shares that loop's deadline source (one timerfd behind all
   their deadlines), its netlink socket, and one UDP socket per server address: a loop
   holds three descriptors however many engines it has that talk to one server (and one
   more per engine that asked for a socket of its own: bind_interface). They are made with
   the loop's first engine and closed with its last (a socket: with the last engine that
   uses it). Engines on different loops, on different
   threads, may be created and destroyed at the same time.
   @param loop        the host's libev loop; NULL: libev's default loop (EV_DEFAULT). Not
                      owned: it must outlive the engine (destroy every engine of a loop
                      before ev_loop_destroy).
   @param config      read during the call (up to config->size: a struct from an older,
                      shorter header gets defaults for the rest) and copied, app_id and
                      server strings included; the caller may free it at once. Not NULL.
                      server is "a.b.c.d:port", "[v6]:port" or "name:port".
   @param handler     copied the same way (read up to handler->size); NULL: no callbacks.
                      Any callback in it may be NULL.
   @param ctx         the app's pointer, passed back untouched as the first argument of
                      every callback; never read or freed by Tether. May be NULL; must
                      stay valid until tether_engine_destroy.
   @param out_engine  where the new handle goes: set on success, NULL on failure. Not
                      NULL.
   Returns 0 or:
     TETHER_ERR_INVALID_ARGUMENT  out_engine or config NULL; config->size too small; a
                                  threshold of 0 (token_will_expire_before_ms included);
                                  heartbeat not below interrupted_after; lost_after below
                                  interrupted_after, give_up_after below lost_after, or
                                  remote_offline_after below interrupted_after;
                                  retry_cap_ms below retry_base_ms; own_lateness_off
                                  above 1; a handler whose size is below the first
                                  published handler's (size 0: the app did not call
                                  tether_engine_handler_init); server NULL or malformed
                                  (no port, a port over 65535, a host neither numeric
                                  nor a well-formed name); bind_interface over 15 bytes,
                                  or with a byte that names no interface
     TETHER_ERR_INVALID_APP_ID    app_id NULL, empty, over 64 bytes, or not printable
                                  ASCII
     TETHER_ERR_FAILED            no socket (or bound to bind_interface), or no thread for
                                  a name's look-up, could be made, or libsodium could not
                                  start (sodium_init: the system gave no random source);
                                  the log callback says why
   Thread: the thread that runs `loop`.

     tether_engine *engine;
     int rc = tether_engine_create(NULL, &config, &handler, &app, &engine);
     if (rc != TETHER_OK) fprintf(stderr, "%s\n", tether_error_message(rc)); */
int tether_engine_create(struct ev_loop *loop, const tether_engine_config *config,
                         const tether_engine_handler *handler, void *ctx,
                         tether_engine **out_engine);

/* tether_engine_destroy: stops the engine's watchers, closes its sockets and frees it,
   without callbacks and without telling the server (call tether_leave_channel first for a
   clean goodbye: its LEAVE goes out even when destroy follows at once, in the same
   callback). Safe inside any callback of this engine or another on its loop: the engine
   is freed when the callback returns, no further callback comes, and other calls on it
   until then return TETHER_ERR_NOT_INITIALIZED.
   @param engine  the engine to destroy; NULL: returns 0 and does nothing, and so does an
                  engine already destroyed inside the current callback. After the call
                  returns 0 (outside a callback) the handle must not be used again. ctx
                  is not touched: the app frees it afterwards if it owns it.
   Returns 0 or:
     TETHER_ERR_WRONG_THREAD  not the engine's thread: nothing is done, nothing is called,
                              and nothing of the engine is read but the thread it recorded
                              at create (the engine lives on)
   Thread: the engine's. */
int tether_engine_destroy(tether_engine *engine);

/* tether_join_channel: starts joining `channel` as `uid`: the state goes
   CONNECTING/CONNECTING and a JOIN is sent at once; retries follow on their own
   (on_join_attempt) until the server answers or give_up_after_ms passes.
   When it returns an error, nothing has changed.
   @param engine   a live engine; NULL or destroyed: TETHER_ERR_NOT_INITIALIZED.
   @param token    copied; NULL or "" for a server that asks for none; up to 512 bytes of
                   printable ASCII.
   @param channel  copied; 1..63 bytes of a-z A-Z 0-9, space and !#$%&()+-:;<=.>?@[]^_{}|~,
                   Not NULL.
   @param uid      1..2^32-1, or 0 to have the server assign one (reported in
                   on_join_channel_success).
   Returns 0 or:
     TETHER_ERR_NOT_INITIALIZED        engine NULL, or destroyed inside a callback
     TETHER_ERR_WRONG_THREAD           not the engine's thread
     TETHER_ERR_INVALID_ARGUMENT       channel NULL
     TETHER_ERR_INVALID_CHANNEL_NAME   empty, over 63 bytes, or a byte outside the set
                                       (nothing sent)
     TETHER_ERR_INVALID_TOKEN          over 512 bytes, or a byte outside printable ASCII
     TETHER_ERR_JOIN_CHANNEL_REJECTED  not DISCONNECTED
   Thread: the engine's.

     tether_join_channel(engine, token, "lobby", 0); */
int tether_join_channel(tether_engine *engine, const char *token, const char *channel,
                        uint32_t uid);

/* tether_leave_channel: leaves at once from any state: DISCONNECTED/LEAVE_CHANNEL, then
   on_leave_channel, and no callback after it until the next join. Every retry stops. A
   LEAVE goes to the server (so the others see QUIT) unless the session had FAILED.
   Idempotent: returns 0 and does nothing when already DISCONNECTED.
   @param engine  a live engine; NULL or destroyed: TETHER_ERR_NOT_INITIALIZED.
   Returns 0 or:
     TETHER_ERR_NOT_INITIALIZED  engine NULL or destroyed
     TETHER_ERR_WRONG_THREAD     not the engine's thread
   Thread: the engine's. */
int tether_leave_channel(tether_engine *engine);

/* tether_renew_token: hands the session a new token. CONNECTED: sent to the server, no
   state change. CONNECTING/RECONNECTING: used by the next JOIN; until a server accepts
   it, the expiry the engine knew keeps running, and if it passes first the engine calls
   on_request_token (no state change: the new token may still be good, and the rejoin
   goes on with it). FAILED with TOKEN_EXPIRED: RECONNECTING/RENEW_TOKEN and a rejoin at
   once.
   When it returns an error, nothing has changed.
   @param engine  a live engine; NULL or destroyed: TETHER_ERR_NOT_INITIALIZED.
   @param token   copied; up to 512 bytes of printable ASCII. Not NULL.
   Returns 0 or:
     TETHER_ERR_NOT_INITIALIZED   engine NULL or destroyed
     TETHER_ERR_WRONG_THREAD      not the engine's thread
     TETHER_ERR_INVALID_ARGUMENT  token NULL
     TETHER_ERR_INVALID_TOKEN     over 512 bytes, or a byte outside printable ASCII
     TETHER_ERR_NOT_READY         DISCONNECTED, or FAILED for another reason
   Thread: the engine's. */
int tether_renew_token(tether_engine *engine, const char *token);

/* tether_get_connection_state: the session's current state.
   @param engine  an engine; NULL, a destroyed engine or a call from another thread gives
                  TETHER_CONNECTION_STATE_DISCONNECTED.
   Returns the state (tether_connection_state).
   Thread: the engine's. */
tether_connection_state tether_get_connection_state(const tether_engine *engine);

/* tether_network_changed: the app reports that the device's network changed (an
   interface came up, a Wi-Fi switch...). The engine opens a fresh socket (so the kernel
   picks the source address again), then: CONNECTED or RECONNECTING: RECONNECTING/
   CLIENT_IP_ADDRESS_CHANGED_BY_USER and a rejoin at once; CONNECTING: a JOIN at once;
   otherwise nothing more. The engine does the same by itself, with
   CLIENT_IP_ADDRESS_CHANGED, when netlink reports that its route changed. A shared socket
   (bind_interface NULL) takes its fresh descriptor for every session on it: when netlink
   saw the change, each of them reacts as above; when the app reported it on one engine,
   only that engine does, and the others follow the new port without a callback (the edge
   validates their new path, one round trip, docs/PROTOCOL.md section 12.11).
   @param engine  a live engine; NULL or destroyed: TETHER_ERR_NOT_INITIALIZED.
   Returns 0 or:
     TETHER_ERR_NOT_INITIALIZED  engine NULL or destroyed
     TETHER_ERR_WRONG_THREAD     not the engine's thread
   Thread: the engine's. */
int tether_network_changed(tether_engine *engine);

/* tether_set_server: switches to another edge server or proxy endpoint. The next packets
   go there (a name is looked up off the loop's thread, as at create, and packets wait for
   its address); while CONNECTED or RECONNECTING the session goes
   RECONNECTING/SETTING_PROXY_SERVER and rejoins through it at once; CONNECTING sends a
   JOIN there at once; otherwise it is kept for the next join.
   When it returns an error, nothing has changed.
   @param engine  a live engine; NULL or destroyed: TETHER_ERR_NOT_INITIALIZED.
   @param server  copied; "host:port" as in the config. Not NULL.
   Returns 0 or:
     TETHER_ERR_NOT_INITIALIZED   engine NULL or destroyed
     TETHER_ERR_WRONG_THREAD      not the engine's thread
     TETHER_ERR_INVALID_ARGUMENT  server NULL or malformed
     TETHER_ERR_FAILED            no socket could be made for the new address, or no
                                  thread for the look-up of a name
   Thread: the engine's. */
int tether_set_server(tether_engine *engine, const char *server);

/* tether_engine_get_stats: copies the engine's figures (tether_connection_stats) into *out.
   Nothing is reset; the figures keep counting (tether_engine_reset_lateness starts the
   lateness figures afresh). Costs a walk of two 273-bucket histograms.
   When it returns an error, nothing is written.
   @param engine  a live engine; NULL or destroyed: TETHER_ERR_NOT_INITIALIZED.
   @param out     the caller's struct; set out->size first. Written up to out->size bytes:
                  a caller compiled against an older, shorter struct gets the fields it
                  knows, and bytes past its size are not touched. Not NULL.
   Returns 0 or:
     TETHER_ERR_NOT_INITIALIZED   engine NULL or destroyed
     TETHER_ERR_WRONG_THREAD      not the engine's thread
     TETHER_ERR_INVALID_ARGUMENT  out NULL, or out->size below 8
   Thread: the engine's.

     tether_connection_stats stats;
     stats.size = sizeof stats;
     if (tether_engine_get_stats(engine, &stats) == TETHER_OK)
       printf("p99 %u us over %llu deadlines\n", stats.lateness_p99_us,
              (unsigned long long)stats.deadlines_fired); */
int tether_engine_get_stats(const tether_engine *engine, tether_connection_stats *out);

/* tether_engine_reset_lateness: starts the lateness figures afresh: the engine's own
   (lateness_*_us) and its loop's (loop_lateness_*_us, shared by every engine and client on
   the loop), so that a later tether_engine_get_stats describes only the deadlines that ran
   after this call, e.g. a steady state after a start-up's joins. Until a deadline runs the
   figures read 0. The counts (deadlines_fired, loop_deadlines_fired) and the datagram
   counters are not reset.
   @param engine  a live engine; NULL or destroyed: TETHER_ERR_NOT_INITIALIZED.
   Returns 0 or:
     TETHER_ERR_NOT_INITIALIZED   engine NULL or destroyed
     TETHER_ERR_WRONG_THREAD      not the engine's thread
   Thread: the engine's. */
int tether_engine_reset_lateness(tether_engine *engine);

/* tether_connection_state_name: the name of a state without its prefix ("CONNECTED").
   @param state  any value; one out of range gives "UNKNOWN".
   Returns a static string, never NULL; do not free it.
   Thread: any. */
const char *tether_connection_state_name(int state);

/* tether_connection_changed_reason_name: the name of a reason without its prefix
   ("JOIN_SUCCESS").
   @param reason  any value; one out of range (17 and 20-24 included) gives "UNKNOWN".
   Returns a static string, never NULL; do not free it.
   Thread: any. */
const char *tether_connection_changed_reason_name(int reason);

/* tether_user_offline_reason_name: the name of a user-offline reason without its prefix
   ("DROPPED").
   @param reason  any value; one out of range gives "UNKNOWN".
   Returns a static string, never NULL; do not free it.
   Thread: any. */
const char *tether_user_offline_reason_name(int reason);

/* tether_error_name: the name of a return code without its "TETHER_" prefix
   ("ERR_INVALID_CHANNEL_NAME"; "OK" for 0).
   @param code  any value; a code this library does not know gives "UNKNOWN".
   Returns a static string, never NULL; do not free it.
   Thread: any. */
const char *tether_error_name(int code);

/* tether_error_message: one sentence saying what a return code means, for a log or a
   user ("The token has expired."; "No error." for 0). The sentences may be reworded in
   a later release: compare codes, not messages.
   @param code  any value; a code this library does not know gives "unknown error".
   Returns a static string, never NULL; do not free it.
   Thread: any.

     int rc = tether_join_channel(engine, token, "lobby", 0);
     if (rc != TETHER_OK)
       fprintf(stderr, "join: %s (%s)\n", tether_error_message(rc), tether_error_name(rc)); */
const char *tether_error_message(int code);

/* ---------------------------------------------------------------------------------------
 * The login session ("RTM" profile): a messaging login that stays up, with channel
 * membership (docs/BEHAVIOUR.md section 2). Same conventions as the channel engine: a loop thread,
 * copied strings, size-versioned structs, destroy safe inside a callback, callbacks only
 * from inside ev_run. A client shares its loop's deadline source (one timerfd), netlink
 * watcher and socket to its server with every engine and client on that loop. A host that uses only one profile
 * links only that profile's code from libtether.a.
 * ------------------------------------------------------------------------------------ */

typedef enum tether_rtm_connection_state {
  TETHER_RTM_CONNECTION_STATE_DISCONNECTED = 1, /* initial; after logout or a failed login */
  TETHER_RTM_CONNECTION_STATE_CONNECTING = 2,   /* tether_rtm_login was called */
  TETHER_RTM_CONNECTION_STATE_CONNECTED = 3,    /* logged in */
  TETHER_RTM_CONNECTION_STATE_RECONNECTING = 4, /* link lost; logging back in, for ever */
  TETHER_RTM_CONNECTION_STATE_ABORTED = 5       /* taken over or banned: logout, then login */
} tether_rtm_connection_state;

typedef enum tether_rtm_connection_change_reason {
  TETHER_RTM_CONNECTION_CHANGE_REASON_LOGIN = 1,            /* CONNECTING: login called */
  TETHER_RTM_CONNECTION_CHANGE_REASON_LOGIN_SUCCESS = 2,    /* CONNECTED (also after a reconnect) */
  TETHER_RTM_CONNECTION_CHANGE_REASON_LOGIN_FAILURE = 3,    /* DISCONNECTED: refused */
  TETHER_RTM_CONNECTION_CHANGE_REASON_LOGIN_TIMEOUT = 4,    /* DISCONNECTED: no answer in time */
  TETHER_RTM_CONNECTION_CHANGE_REASON_INTERRUPTED = 5,      /* RECONNECTING: 4 s without an answer */
  TETHER_RTM_CONNECTION_CHANGE_REASON_LOGOUT = 6,           /* DISCONNECTED: logout called */
  TETHER_RTM_CONNECTION_CHANGE_REASON_BANNED_BY_SERVER = 7, /* ABORTED: banned */
  TETHER_RTM_CONNECTION_CHANGE_REASON_REMOTE_LOGIN = 8,     /* ABORTED: same user id elsewhere */
  TETHER_RTM_CONNECTION_CHANGE_REASON_TOKEN_EXPIRED = 9     /* DISCONNECTED: the server ended
                                                               a live session for its token */
} tether_rtm_connection_change_reason;

/* Login results (docs/BEHAVIOUR.md section 2): what on_login_result reports, once, for a
   login call that returned 0, in the vendor's numbering. Positive, an enum of their own:
   no function returns them (a login refused on the spot returns a TETHER_ERR_* code).
   Values marked "not reported" are the vendor's, kept so that its numbers read the same. */
#define TETHER_RTM_LOGIN_ERR_OK 0
#define TETHER_RTM_LOGIN_ERR_UNKNOWN 1          /* ended without a verdict (logout, takeover)
                                                   or a code this build does not know */
#define TETHER_RTM_LOGIN_ERR_REJECTED 2         /* the server refused (e.g. login rate) */
#define TETHER_RTM_LOGIN_ERR_INVALID_ARGUMENT 3 /* not reported: TETHER_ERR_INVALID_ARGUMENT */
#define TETHER_RTM_LOGIN_ERR_INVALID_APP_ID 4   /* the server does not know the app id */
#define TETHER_RTM_LOGIN_ERR_INVALID_TOKEN 5    /* the token does not verify for the user */
#define TETHER_RTM_LOGIN_ERR_TOKEN_EXPIRED 6    /* the token has expired */
#define TETHER_RTM_LOGIN_ERR_NOT_AUTHORIZED 7   /* the user id is banned */
#define TETHER_RTM_LOGIN_ERR_ALREADY_LOGIN 8    /* not reported: TETHER_ERR_ALREADY_LOGGED_IN */
#define TETHER_RTM_LOGIN_ERR_TIMEOUT 9          /* no answer within login_timeout_ms */
#define TETHER_RTM_LOGIN_ERR_TOO_OFTEN 10       /* not reported: TETHER_ERR_TOO_OFTEN */
#define TETHER_RTM_LOGIN_ERR_NOT_INITIALIZED 101 /* not reported: TETHER_ERR_NOT_INITIALIZED */
/* Logout results: what on_logout_result reports (TETHER_RTM_LOGOUT_ERR_OK, after
   DISCONNECTED/LOGOUT); never returned, as the login results. */
#define TETHER_RTM_LOGOUT_ERR_OK 0
#define TETHER_RTM_LOGOUT_ERR_REJECTED 1        /* not reported: TETHER_ERR_WRONG_THREAD */
#define TETHER_RTM_LOGOUT_ERR_NOT_INITIALIZED 101 /* not reported: TETHER_ERR_NOT_INITIALIZED */
#define TETHER_RTM_LOGOUT_ERR_NOT_LOGGED_IN 102 /* not reported: TETHER_ERR_NOT_LOGGED_IN */

typedef struct tether_rtm_client tether_rtm_client; /* opaque */

/* Client configuration. Initialise with tether_rtm_config_init. */
typedef struct tether_rtm_config {
  uint32_t size;                  /* sizeof(tether_rtm_config) */
  const char *app_id;             /* 1..64 bytes of printable ASCII, no space */
  const char *server;             /* edge server "host:port", as tether_engine_config's */
  uint32_t login_timeout_ms;      /* default 6000: the first login's answer */
  uint32_t interrupted_after_ms;  /* default 4000: without an answer, RECONNECTING */
  uint32_t heartbeat_interval_ms; /* default 1000; below interrupted_after_ms */
  /* Tether's addition (at the end): the login backoff, as the engine's. */
  uint32_t retry_base_ms;         /* default 500 */
  uint32_t retry_cap_ms;          /* default 8000; not below retry_base_ms */
  /* Added at the end: 0 (the default) keeps this client's own lateness figures
     (lateness_p50_us, lateness_p99_us and lateness_max_us of tether_connection_stats:
     a histogram of about 1.1 KB per client); 1 keeps none, and those three fields then
     read 0. deadlines_fired and the loop's figures (loop_lateness_*) are kept either
     way. For hosts with many clients on one loop. */
  uint32_t own_lateness_off;
  /* The socket (at the end), as tether_engine_config's: NULL or "" shares the loop's
     socket to the server, a name binds a socket of the client's own to that interface. */
  const char *bind_interface;
  /* more fields may follow */
} tether_rtm_config;

/* The app's callbacks. Any pointer may be NULL. Fields are only ever added at the end. */
typedef struct tether_rtm_handler {
  uint32_t size; /* sizeof(tether_rtm_handler) */
  void (*on_connection_state_changed)(void *ctx, tether_rtm_connection_state state,
                                      tether_rtm_connection_change_reason reason);
  /* Once per tether_rtm_login call that returned 0, just before the state change it
     causes: TETHER_RTM_LOGIN_ERR_OK, or why the attempt failed. Never for a reconnect. */
  void (*on_login_result)(void *ctx, int login_error);
  /* After DISCONNECTED/LOGOUT: TETHER_RTM_LOGOUT_ERR_OK. */
  void (*on_logout_result)(void *ctx, int logout_error);
  /* The session needs a new token (tether_rtm_renew_token): it expired while
     RECONNECTING (no state change; reconnecting goes on), a relogin was refused for it,
     a renewal was refused, or the server ended a live session for it. */
  void (*on_token_expired)(void *ctx);
  /* Another user joined, or left, one of this client's channels. A user away for less
     than the server's online grace (30 s) causes neither. */
  void (*on_member_joined)(void *ctx, const char *channel, const char *user_id);
  void (*on_member_left)(void *ctx, const char *channel, const char *user_id);
  /* Tether's additions to the vendor model (at the end): */
  /* A message for the app's log, as tether_engine_handler's (so it may also come from
     inside tether_rtm_client_create, and after on_logout_result). */
  void (*on_log)(void *ctx, tether_log_level level, const char *message);
  /* A LOGIN went out: attempt 1, 2, ... of the current (re)login effort; the next follows
     in next_attempt_in_ms (at most retry_base_ms / 8 later, as the engine's) unless an
     answer comes first. */
  void (*on_login_attempt)(void *ctx, uint32_t attempt, uint32_t next_attempt_in_ms);
  /* more callbacks may follow */
} tether_rtm_handler;

/* tether_rtm_config_init: sets config->size to sizeof(tether_rtm_config) and every field
   to its default (app_id and server NULL, thresholds as commented in the struct).
   @param config  the caller's struct, written in full; NULL is a harmless no-op.
   Returns nothing.
   Thread: any. */
void tether_rtm_config_init(tether_rtm_config *config);

/* tether_rtm_handler_init: sets handler->size to sizeof(tether_rtm_handler) and every
   callback to NULL.
   @param handler  the caller's struct, written in full; NULL is a harmless no-op.
   Returns nothing.
   Thread: any. */
void tether_rtm_handler_init(tether_rtm_handler *handler);

/* tether_rtm_client_create: makes a login client on `loop` and stores it in *out_client,
   DISCONNECTED. As tether_engine_create: a server name is looked up off the loop's
   thread, nothing blocks, and the loop's thread becomes the client's.
   @param loop        the host's libev loop; NULL: libev's default loop. Not owned: it
                      must outlive the client.
   @param config      read up to config->size and copied, strings included; the caller
                      may free it at once. Not NULL.
   @param handler     copied the same way; NULL: no callbacks. Any callback may be NULL.
   @param ctx         the app's pointer, passed back untouched as the first argument of
                      every callback; never read or freed by Tether. May be NULL; must
                      stay valid until tether_rtm_client_destroy.
   @param out_client  where the new handle goes: set on success, NULL on failure. Not
                      NULL.
   Returns 0 or:
     TETHER_ERR_INVALID_ARGUMENT  out_client or config NULL; config->size too small; a
                                  threshold or retry base of 0; heartbeat not below
                                  interrupted_after; retry cap below its base;
                                  own_lateness_off above 1; a handler whose size is
                                  below the first published one (size 0:
                                  tether_rtm_handler_init was not called); server NULL or
                                  malformed; bind_interface malformed
     TETHER_ERR_INVALID_APP_ID    app_id NULL, empty, over 64 bytes, or not printable
                                  ASCII
     TETHER_ERR_FAILED            no socket, or no look-up thread, could be made, or
                                  libsodium could not start (as tether_engine_create)
   Thread: the thread that runs `loop`.

     tether_rtm_client *client;
     int rc = tether_rtm_client_create(NULL, &config, &handler, &app, &client); */
int tether_rtm_client_create(struct ev_loop *loop, const tether_rtm_config *config,
                             const tether_rtm_handler *handler, void *ctx,
                             tether_rtm_client **out_client);

/* tether_rtm_client_destroy: stops the client's watchers, closes its socket and frees it,
   without callbacks and without telling the server (tether_rtm_logout first for a clean
   goodbye: its LOGOUT goes out even when destroy follows in the same callback; otherwise
   the others see member-left only when the server's 30 s grace ends). Safe inside any
   callback, as tether_engine_destroy.
   @param client  the client to destroy; NULL: returns 0 and does nothing, and so does a
                  client already destroyed inside the current callback. After the call
                  returns 0 (outside a callback) the handle must not be used again. ctx
                  is not touched.
   Returns 0 or:
     TETHER_ERR_WRONG_THREAD  not the client's thread: nothing is done, nothing is called,
                              and nothing of the client is read but the thread it recorded
                              at create (the client lives on)
   Thread: the client's. */
int tether_rtm_client_destroy(tether_rtm_client *client);

/* tether_rtm_login: starts logging in: CONNECTING/LOGIN and a LOGIN at once, repeated
   with backoff (on_login_attempt) until the server answers or login_timeout_ms passes.
   The outcome comes once, in on_login_result, just before CONNECTED/LOGIN_SUCCESS or
   DISCONNECTED/LOGIN_FAILURE (or _LOGIN_TIMEOUT). Once connected, an interruption (no
   answer for interrupted_after_ms, including an uplink that alone is dead) goes
   RECONNECTING/INTERRUPTED, and the client logs back in on its own for ever, until
   tether_rtm_logout; success is CONNECTED/LOGIN_SUCCESS again, without on_login_result.
   The channels the client was in are kept by the server for its online grace (30 s), and
   joined again by the client after it. The refusals are checked in the order listed;
   when it returns one, nothing has changed.
   @param client   a live client; NULL or destroyed: TETHER_ERR_NOT_INITIALIZED.
   @param token    copied; 0..512 bytes of printable ASCII, no space. "" goes to the server
                   as it is (a server that asks for a token answers INVALID_TOKEN). Not
                   NULL.
   @param user_id  copied; 1..64 bytes of printable ASCII, no space. Not NULL.
   Returns 0 or:
     TETHER_ERR_NOT_INITIALIZED    client NULL or destroyed
     TETHER_ERR_WRONG_THREAD       not the client's thread
     TETHER_ERR_TOO_OFTEN          two calls already within the last second (every call
                                   but these counts)
     TETHER_ERR_INVALID_ARGUMENT   token or user_id NULL or malformed
     TETHER_ERR_ALREADY_LOGGED_IN  not DISCONNECTED; ABORTED included
   Thread: the client's.

     if (tether_rtm_login(client, token, "alice") != 0) ... */
int tether_rtm_login(tether_rtm_client *client, const char *token, const char *user_id);

/* tether_rtm_logout: logs out at once from any state but DISCONNECTED: a login result
   still owed comes first (TETHER_RTM_LOGIN_ERR_UNKNOWN), then DISCONNECTED/LOGOUT, then
   on_logout_result(TETHER_RTM_LOGOUT_ERR_OK), and nothing after it until the next login.
   A LOGOUT goes to the server (twice; the others get member-left at once) unless the
   session was ABORTED. The client forgets its channels.
   When it returns an error, nothing has changed.
   @param client  a live client; NULL or destroyed: TETHER_ERR_NOT_INITIALIZED.
   Returns 0 or:
     TETHER_ERR_NOT_INITIALIZED  client NULL or destroyed
     TETHER_ERR_WRONG_THREAD     not the client's thread
     TETHER_ERR_NOT_LOGGED_IN    already DISCONNECTED
   Thread: the client's. */
int tether_rtm_logout(tether_rtm_client *client);

/* tether_rtm_join_channel: joins `channel`. Allowed while CONNECTING, CONNECTED or
   RECONNECTING: the client keeps its channels, tells the server as soon as it is
   connected (retransmitting until acknowledged), and joins them again by itself on a new
   server session. The other members get on_member_joined.
   When it returns an error, nothing has changed.
   @param client   a live client; NULL or destroyed: TETHER_ERR_NOT_INITIALIZED.
   @param channel  copied; the channel-name rule of tether_join_channel. Not NULL.
   Returns 0 or:
     TETHER_ERR_NOT_INITIALIZED        client NULL or destroyed
     TETHER_ERR_WRONG_THREAD           not the client's thread
     TETHER_ERR_INVALID_ARGUMENT       channel NULL
     TETHER_ERR_INVALID_CHANNEL_NAME   empty, over 63 bytes, or a byte outside the set
     TETHER_ERR_NOT_READY              DISCONNECTED or ABORTED; or 32 channel operations
                                       are still unacknowledged by the server
     TETHER_ERR_JOIN_CHANNEL_REJECTED  already in `channel`, or already in 16 channels
   Thread: the client's. */
int tether_rtm_join_channel(tether_rtm_client *client, const char *channel);

/* tether_rtm_leave_channel: leaves `channel`; the other members get on_member_left.
   When it returns an error, nothing has changed.
   @param client   a live client; NULL or destroyed: TETHER_ERR_NOT_INITIALIZED.
   @param channel  read during the call only; the channel-name rule of tether_join_channel.
                   Not NULL.
   Returns 0 or:
     TETHER_ERR_NOT_INITIALIZED       client NULL or destroyed
     TETHER_ERR_WRONG_THREAD          not the client's thread
     TETHER_ERR_INVALID_ARGUMENT      channel NULL
     TETHER_ERR_INVALID_CHANNEL_NAME  empty, over 63 bytes, or a byte outside the set
     TETHER_ERR_NOT_READY             not in `channel`; DISCONNECTED or ABORTED; or 32
                                      channel operations are still unacknowledged
   Thread: the client's. */
int tether_rtm_leave_channel(tether_rtm_client *client, const char *channel);

/* tether_rtm_renew_token: hands the session a new token. CONNECTED: sent to the server at
   once (and with each heartbeat until answered); a refusal keeps the old token and calls
   on_token_expired. CONNECTING or RECONNECTING: the next LOGIN carries it.
   When it returns an error, nothing has changed.
   @param client  a live client; NULL or destroyed: TETHER_ERR_NOT_INITIALIZED.
   @param token   copied; the token rule of tether_rtm_login. Not NULL.
   Returns 0 or:
     TETHER_ERR_NOT_INITIALIZED   client NULL or destroyed
     TETHER_ERR_WRONG_THREAD      not the client's thread
     TETHER_ERR_INVALID_ARGUMENT  token NULL
     TETHER_ERR_INVALID_TOKEN     malformed
     TETHER_ERR_NOT_READY         DISCONNECTED or ABORTED
   Thread: the client's. */
int tether_rtm_renew_token(tether_rtm_client *client, const char *token);

/* tether_rtm_network_changed: the app reports that the device's network changed. A fresh
   socket; CONNECTED: a token-bearing relogin at once, which moves the session to the new
   address without a state change; CONNECTING or RECONNECTING: a LOGIN at once. The client
   does the same by itself when netlink reports that the route to its server changed.
   @param client  a live client; NULL or destroyed: TETHER_ERR_NOT_INITIALIZED.
   Returns 0 or:
     TETHER_ERR_NOT_INITIALIZED  client NULL or destroyed
     TETHER_ERR_WRONG_THREAD     not the client's thread
   Thread: the client's. */
int tether_rtm_network_changed(tether_rtm_client *client);

/* tether_rtm_get_connection_state: the session's current state.
   @param client  a client; NULL, a destroyed client or a call from another thread gives
                  TETHER_RTM_CONNECTION_STATE_DISCONNECTED.
   Returns the state (tether_rtm_connection_state).
   Thread: the client's. */
tether_rtm_connection_state tether_rtm_get_connection_state(const tether_rtm_client *client);

/* tether_rtm_client_get_stats: copies the client's figures (tether_connection_stats, the
   struct tether_engine_get_stats fills) into *out, as tether_engine_get_stats does;
   join_attempts counts LOGINs.
   When it returns an error, nothing is written.
   @param client  a live client; NULL or destroyed: TETHER_ERR_NOT_INITIALIZED.
   @param out     as tether_engine_get_stats's: set out->size first. Not NULL.
   Returns 0 or:
     TETHER_ERR_NOT_INITIALIZED   client NULL or destroyed
     TETHER_ERR_WRONG_THREAD      not the client's thread
     TETHER_ERR_INVALID_ARGUMENT  out NULL, or out->size below 8
   Thread: the client's. */
int tether_rtm_client_get_stats(const tether_rtm_client *client,
                                tether_connection_stats *out);

/* tether_rtm_client_reset_lateness: starts the client's lateness figures and its loop's
   afresh, as tether_engine_reset_lateness does for an engine.
   @param client  a live client; NULL or destroyed: TETHER_ERR_NOT_INITIALIZED.
   Returns 0 or:
     TETHER_ERR_NOT_INITIALIZED   client NULL or destroyed
     TETHER_ERR_WRONG_THREAD      not the client's thread
   Thread: the client's. */
int tether_rtm_client_reset_lateness(tether_rtm_client *client);

/* tether_rtm_connection_state_name: the name of a login state without its prefix
   ("ABORTED").
   @param state  any value; one out of range gives "UNKNOWN".
   Returns a static string, never NULL; do not free it.
   Thread: any. */
const char *tether_rtm_connection_state_name(int state);

/* tether_rtm_connection_change_reason_name: the name of a login reason without its
   prefix ("REMOTE_LOGIN").
   @param reason  any value; one out of range gives "UNKNOWN".
   Returns a static string, never NULL; do not free it.
   Thread: any. */
const char *tether_rtm_connection_change_reason_name(int reason);

/* tether_rtm_login_error_name: the name of a login result without its "TETHER_RTM_" prefix
   ("LOGIN_ERR_TIMEOUT"). For what a function returns, tether_error_name.
   @param code  a login result as on_login_result reports it; one out of range gives
                "UNKNOWN".
   Returns a static string, never NULL; do not free it.
   Thread: any. */
const char *tether_rtm_login_error_name(int code);

/* tether_rtm_logout_error_name: the name of a logout result without its "TETHER_RTM_"
   prefix ("LOGOUT_ERR_OK"). For what a function returns, tether_error_name.
   @param code  a logout result as on_logout_result reports it; one out of range gives
                "UNKNOWN".
   Returns a static string, never NULL; do not free it.
   Thread: any. */
const char *tether_rtm_logout_error_name(int code);

#ifdef __cplusplus
}
#endif

#endif /* TETHER_H */
