// SPDX-License-Identifier: Apache-2.0
/*
 * handles.h - the opaque handles of tether.h as Swift sees them, for Swift only.
 *
 * C hosts never see this file: for them `struct tether_engine` and `struct
 * tether_rtm_client` stay incomplete. Swift imports a pointer to an incomplete struct as
 * OpaquePointer, the same type for both handles and for `const` or not, so the compiler
 * could not tell a function taking a tether_engine * from one taking a tether_rtm_client *.
 * Given a body here, they import as UnsafeMutablePointer<tether_engine> and
 * UnsafePointer<tether_rtm_client>..., and `@c @implementation` checks every exported
 * function's whole C signature against tether.h, handles and const included. No field is
 * ever read: a handle points at a Swift object, not at this struct.
 */
#ifndef TETHER_HANDLES_H
#define TETHER_HANDLES_H

#include "../../Include/tether.h"

struct tether_engine {
  unsigned char opaque_;
};

struct tether_rtm_client {
  unsigned char opaque_;
};

#endif /* TETHER_HANDLES_H */
