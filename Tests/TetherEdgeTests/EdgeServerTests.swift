import Testing

@testable import TetherEdge
