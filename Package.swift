// swift-tools-version: 6.1
// Tether: a connection core for devices. See README.md and docs/.
import PackageDescription

let package = Package(
  name: "Tether",
  products: [
    .library(name: "TetherCore", targets: ["TetherCore"])
  ],
  targets: [
    // Pure Swift, no I/O, no clock, no Foundation. Also built as Embedded Swift by the
    // Makefile (`make embedded-check`), so it must stay inside that subset.
    .target(name: "TetherCore"),
    // A virtual-time simulator of clients, a server and a network that can be cut: the
    // tests play the seed timeline on it, and `make demo` prints it (tether-sim).
    .target(name: "TetherSim", dependencies: ["TetherCore"]),
    .executableTarget(name: "tether-sim", dependencies: ["TetherCore", "TetherSim"]),
    .testTarget(name: "TetherCoreTests", dependencies: ["TetherCore", "TetherSim"]),
  ]
)
