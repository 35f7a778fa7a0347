#ifndef TETHER_CSODIUM_SHIM_H
#define TETHER_CSODIUM_SHIM_H
#include <sodium.h>
#endif
