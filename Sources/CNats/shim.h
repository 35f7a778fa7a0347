// SPDX-License-Identifier: Apache-2.0
#ifndef TETHER_CNATS_SHIM_H
#define TETHER_CNATS_SHIM_H
#include <nats/nats.h>
/* The bus's descriptor (NatsFleetBus.descriptor): Swift's Glibc module has no eventfd. */
#include <sys/eventfd.h>
#endif
