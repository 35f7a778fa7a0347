// SPDX-License-Identifier: Apache-2.0
import CTetherClock

/// CLOCK_MONOTONIC in seconds: the clock the device example stamps its lines with, so the
/// lab's own events (a cut, a heal) and the devices' lines share one timeline. Read through
/// CTetherClock (Sources/CTetherSystem/include/tether_clock.h), as the driver and the edge
/// read it.
public func monotonicSeconds() -> Double {
  Double(tether_sys_monotonic_ns()) / 1e9
}
