// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import Tether

/// What tether_engine_create and tether_set_server take as a server: numeric hosts at once,
/// well-formed names for a look-up, anything else refused.
@Suite struct ServerEndpointTests {
  private func endpoint(_ text: String) -> ServerEndpoint? { ServerEndpoint(Array(text.utf8)) }

  @Test func numericHosts_areAddresses_withNoLookUp() throws {
    for text in ["127.0.0.1:7000", "[::1]:9", "192.0.2.10:65535"] {
      let parsed = try #require(endpoint(text))
      #expect(parsed.address != nil && parsed.name.isEmpty, "\(text)")
    }
  }

  @Test func wellFormedNames_areLookedUp_withTheirPort() throws {
    for text in ["localhost:1", "edge.example.com:7000", "a-b.c_d.test:80", "edge.test.:9"] {
      let parsed = try #require(endpoint(text))
      #expect(parsed.address == nil && parsed.name.last == 0, "\(text)")
    }
    #expect(endpoint("edge.test:7000")?.port == 7000)
    let longest = String(repeating: "a", count: 63) + ".test:1"
    #expect(endpoint(longest) != nil)
  }

  @Test func malformedServers_areRefused() {
    let bad = [
      "", "edge.test", ":80", "edge.test:", "edge.test:70000", "edge.test:8a", "bad name:80",
      "-x.test:80", "x-.test:80", "a..b:80", ".a:80", "[edge.test]:80", "[]:80", "é.test:80",
      String(repeating: "a", count: 64) + ".test:1",
      String(repeating: "a.", count: 127) + "a:1",
    ]
    for text in bad { #expect(endpoint(text) == nil, "\(text)") }
  }

  /// Brackets hold an IPv6 address and only that: an IPv6 host without them is ambiguous
  /// ("::1:80" is "::1" port 80, or "::1:80" with no port), an IPv4 one in them is not v6.
  /// The edge's --listen and --server take the same rule (HostPort).
  @Test func bracketsHoldIPv6Only() {
    for text in ["::1:80", "fe80::1:9", "[127.0.0.1]:80", "[::1]x:80", "[::1]"] {
      #expect(endpoint(text) == nil, "\(text)")
    }
    #expect(endpoint("[fe80::1]:80")?.port == 80)
  }
}
