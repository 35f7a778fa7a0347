// swift-tools-version: 6.1
// SPDX-License-Identifier: Apache-2.0
// Tether: a connection core for devices. See README.md and docs/.
import PackageDescription

let package = Package(
  name: "Tether",
  products: [
    .library(name: "TetherCore", targets: ["TetherCore"]),
    .library(name: "Tether", targets: ["Tether"]),
    .executable(name: "tether-edge", targets: ["tether-edge"]),
  ],
  dependencies: [
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
  ],
  targets: [
    // Pure Swift, no I/O, no clock, no Foundation. Also built as Embedded Swift by the
    // Makefile (`make embedded-check`), so it must stay inside that subset.
    .target(name: "TetherCore"),
    // A virtual-time simulator: real clients and the real edge server over a seeded faulty
    // network. The tests play the seed timeline on it; tether-sim prints it (`make sim`)
    // and runs seeded random scenarios against invariants (`make sim-check`, `make soak`).
    .target(
      name: "TetherSim", dependencies: ["TetherCore", "TetherEdge", "TetherSodium", "CSodium"]),
    // libev through a module map and a shim of its macros (Debian's libev has no .pc).
    .systemLibrary(name: "CLibev", path: "Sources/CLibev"),
    // Include/tether.h seen from Swift, so the exports use the header's own types.
    .systemLibrary(name: "CTetherABI", path: "Sources/CTetherABI"),
    // The driver's system calls, as prefixed C functions (no Glibc module: Embedded has none),
    // compiled with the strict flags of every C file here; its module map also holds
    // CTetherClock, the monotonic clock, for the edge and the lab.
    .target(
      name: "CTetherSystem",
      cSettings: [.unsafeFlags(["-std=c99", "-Wall", "-Wextra", "-Wpedantic", "-Werror"])]),
    // tether-edge's batched socket calls (recvmmsg, sendmmsg), apart from CTetherSystem: its
    // header defines no _GNU_SOURCE, so it sits beside Swift's Glibc in one file.
    .target(
      name: "CEdgeIO",
      cSettings: [.unsafeFlags(["-std=c99", "-Wall", "-Wextra", "-Wpedantic", "-Werror"])]),
    // The libev driver and the @c functions of Include/tether.h; it starts libsodium
    // (TetherSodium) at create, and protocol version 2 will seal through it.
    .target(
      name: "Tether",
      dependencies: ["TetherCore", "TetherSodium", "CLibev", "CTetherABI", "CTetherSystem"],
      linkerSettings: [.linkedLibrary("ev")]),
    // libsodium, protocol version 2's cryptography (Debian's libsodium-dev).
    .systemLibrary(name: "CSodium", path: "Sources/CSodium"),
    // TetherCore's crypto seam (SessionCrypto) on libsodium, for the edge, the simulation
    // and the tests. On the host libsodium is linked from its static archive, so the
    // installed tether-edge needs no more than the C library.
    .target(
      name: "TetherSodium", dependencies: ["TetherCore", "CSodium"],
      linkerSettings: [.unsafeFlags(["-Xlinker", "-l:libsodium.a"])]),
    // The reference edge server (normal Swift: it runs on a host, not a device).
    .target(
      name: "TetherEdge",
      dependencies: [
        "TetherCore", "TetherSodium", "CTetherSystem", "CEdgeIO", "CSodium",
        .product(name: "Logging", package: "swift-log"),
      ]),
    // The NATS C client (Debian's libnats-dev), for the fleet's bus.
    .systemLibrary(
      name: "CNats", path: "Sources/CNats", pkgConfig: "libnats",
      providers: [.apt(["libnats-dev"])]),
    // The fleet's bus on NATS (NatsFleetBus: TetherEdge's FleetBus over libnats's threads).
    .target(name: "TetherFleet", dependencies: ["TetherEdge", "CNats"]),
    .executableTarget(
      name: "tether-edge",
      dependencies: [
        "TetherEdge", "TetherFleet",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ]),
    .executableTarget(name: "tether-sim", dependencies: ["TetherCore", "TetherEdge", "TetherSim"]),
    // Runs real processes on loopback: tether-edge, C devices, and a relay whose link to
    // each device can be cut. The end-to-end tests and `make demo` are built on it.
    .target(name: "TetherLab", dependencies: ["CTetherSystem"]),
    .executableTarget(name: "tether-demo", dependencies: ["TetherLab"]),
    // `make bench`: the core's costs, tether-bench against tether-edge, the report.
    .systemLibrary(name: "CBenchSupport", path: "Sources/CBenchSupport"),
    .executableTarget(
      name: "tether-benchmarks",
      dependencies: [
        "TetherCore", "TetherEdge", "TetherFleet", "TetherLab", "TetherSodium", "CBenchSupport",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ]),
    .testTarget(name: "TetherCoreTests", dependencies: ["TetherCore", "TetherSim"]),
    .testTarget(name: "TetherDriverTests", dependencies: ["Tether", "TetherCore"]),
    .testTarget(
      name: "TetherEdgeTests",
      dependencies: ["TetherEdge", "TetherCore", "TetherSodium", "TetherSim", "CSodium"]),
    // Each test starts its own nats-server on loopback (an nkey user's made with libsodium).
    .testTarget(
      name: "TetherFleetTests",
      dependencies: ["TetherFleet", "TetherEdge", "TetherLab", "CNats", "CSodium"]),
    // The attacker's token holder builds INITs with the project's own handshake types.
    .testTarget(
      name: "EndToEndTests",
      dependencies: ["TetherLab", "TetherSim", "TetherCore", "TetherEdge", "TetherSodium"]),
  ]
)
