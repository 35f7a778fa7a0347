// SPDX-License-Identifier: Apache-2.0
import TetherSim

/// The seeded crypto seam lives in TetherSim (Sources/TetherSim/SeededCrypto.swift), where
/// the simulation's world draws from it too; this name lets every suite here use it.
typealias SeededCrypto = TetherSim.SeededCrypto
