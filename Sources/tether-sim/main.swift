// SPDX-License-Identifier: Apache-2.0
// tether-sim: picks its mode from the arguments, and exits with the mode's status.
//
//   tether-sim                    the seed timeline in virtual time (TimelineMode.swift,
//                                 `make sim`)
//   tether-sim --scenarios N ...  seeded random scenarios against the invariants, or one
//   tether-sim --replay SEED      replayed (ScenarioMode.swift; --login: the login profile)
//   tether-sim steady N           the allocation probe (SteadyMode.swift, `make alloc-check`)
import Glibc

if let rounds = SteadyMode.rounds(CommandLine.arguments) {
  exit(try SteadyMode.main(rounds: rounds))
}

// `tether-sim --scenarios N [--seed S] [--seconds T] [--jobs J]`, `tether-sim --replay SEED`:
// seeded random scenarios against the invariants (ScenarioMode.swift).
if let options = ScenarioMode.parse(CommandLine.arguments) {
  // Dictionaries iterate in an order seeded per process; the edge server addresses its
  // clients in that order. Fixed hashing makes a scenario a function of its seed alone.
  if getenv("SWIFT_DETERMINISTIC_HASHING") == nil {
    setenv("SWIFT_DETERMINISTIC_HASHING", "1", 1)
    execv("/proc/self/exe", CommandLine.unsafeArgv)
  }
  exit(ScenarioMode.main(options))
}

exit(TimelineMode.main())
