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
    .testTarget(name: "TetherCoreTests", dependencies: ["TetherCore"]),
  ]
)
