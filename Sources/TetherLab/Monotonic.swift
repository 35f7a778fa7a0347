#if canImport(Glibc)
  import Glibc
#endif

/// CLOCK_MONOTONIC in seconds: the clock the device example stamps its lines with, so the
/// lab's own events (a cut, a heal) and the devices' lines share one timeline.
public func monotonicSeconds() -> Double {
  var ts = timespec()
  clock_gettime(CLOCK_MONOTONIC, &ts)
  return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}
