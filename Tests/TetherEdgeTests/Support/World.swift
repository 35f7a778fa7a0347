// SPDX-License-Identifier: Apache-2.0
import TetherSim

/// The edge tests' world is the simulator's: the real ``EdgeServer`` and real
/// `ChannelSession` clients on one virtual clock (see `Sources/TetherSim/World.swift`).
/// Its links are perfect and instant unless a test gives them conditions.
typealias World = SimWorld
