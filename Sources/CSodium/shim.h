// SPDX-License-Identifier: Apache-2.0
#ifndef TETHER_CSODIUM_SHIM_H
#define TETHER_CSODIUM_SHIM_H
#include <sodium.h>
#endif
