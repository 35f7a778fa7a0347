// SPDX-License-Identifier: Apache-2.0
/* libev for Swift: the header, plus static inline wrappers for what libev defines as
   macros (watcher initialisation and access), prefixed tether_ev_ so nothing collides. */
#ifndef TETHER_CLIBEV_SHIM_H
#define TETHER_CLIBEV_SHIM_H
#include <ev.h>

static inline struct ev_loop *tether_ev_default_loop(void) { return ev_default_loop(0); }

static inline void tether_ev_io_init(ev_io *w, void (*cb)(struct ev_loop *, ev_io *, int), int fd,
                                     int events) {
  ev_io_init(w, cb, fd, events);
}

static inline void tether_ev_timer_init(ev_timer *w, void (*cb)(struct ev_loop *, ev_timer *, int),
                                        ev_tstamp after, ev_tstamp repeat) {
  ev_timer_init(w, cb, after, repeat);
}

static inline void tether_ev_timer_set(ev_timer *w, ev_tstamp after, ev_tstamp repeat) {
  ev_timer_set(w, after, repeat);
}

static inline void tether_ev_set_data_io(ev_io *w, void *data) { w->data = data; }
static inline void *tether_ev_data_io(ev_io *w) { return w->data; }
static inline void tether_ev_set_data_timer(ev_timer *w, void *data) { w->data = data; }
static inline void *tether_ev_data_timer(ev_timer *w) { return w->data; }
static inline int tether_ev_is_active_timer(ev_timer *w) { return ev_is_active(w); }
static inline void tether_ev_set_priority_io(ev_io *w, int priority) {
  ev_set_priority(w, priority);
}
static inline int tether_ev_max_priority(void) { return EV_MAXPRI; }
static inline int tether_ev_is_active_io(ev_io *w) { return ev_is_active(w); }

#endif
