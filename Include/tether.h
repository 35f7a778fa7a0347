/*
 * tether.h - the C interface of Tether, a connection core for devices.
 *
 * Tether keeps a device joined to a real-time channel through an edge server and reports
 * every connection state change with its reason. This header is the whole public API: what
 * is not here is not API. It needs only <stdint.h> and a forward declaration of libev's
 * `struct ev_loop`.
 *
 * Names and numbers below are fixed (see ABI.md in the project's shared documents): states,
 * reasons and error codes keep the values of the real-time SDK they model, so code written
 * against that model reads the same numbers here. New values may be added; existing ones
 * never change meaning.
 *
 * STATUS: this revision defines the types, enums and codes, which the core
 * (Sources/TetherCore) implements and a test checks value by value. The engine functions
 * (tether_engine_create, tether_join_channel, ...) arrive with the libev driver and are
 * not declared yet, so nothing here can fail to link.
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

/* The channel session's connection state (SPEC.md section 1). */
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

/* Return codes: 0 for success, a negative code for an error. New codes may be added. */
#define TETHER_OK 0
#define TETHER_ERR_FAILED -1                /* a failure with no more specific code */
#define TETHER_ERR_INVALID_ARGUMENT -2      /* NULL or out-of-range argument or config field */
#define TETHER_ERR_NOT_READY -3             /* the call does not apply in the current state */
#define TETHER_ERR_NOT_INITIALIZED -7       /* the handle is not a live engine */
#define TETHER_ERR_JOIN_CHANNEL_REJECTED -17 /* join_channel while not DISCONNECTED */
#define TETHER_ERR_INVALID_APP_ID -101      /* empty, over 64 bytes, or not printable ASCII */
#define TETHER_ERR_INVALID_CHANNEL_NAME -102 /* empty, over 63 bytes, or a byte outside the set */
#define TETHER_ERR_TOKEN_EXPIRED -109
#define TETHER_ERR_INVALID_TOKEN -110       /* over 512 bytes, or not printable ASCII */
#define TETHER_ERR_INVALID_USER_ID -121

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
  /* more callbacks may follow */
} tether_engine_handler;

#ifdef __cplusplus
}
#endif

#endif /* TETHER_H */
