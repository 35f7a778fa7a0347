// SPDX-License-Identifier: Apache-2.0
import Testing
import TetherFleet

@Suite struct NatsFleetConfigTests {
  private func config(
    _ servers: [String], credentials: NatsFleetConfig.Credentials? = nil, insecure: Bool = false
  ) -> NatsFleetConfig {
    var config = testConfig(server: "", name: "edge-1", bucket: "fleet", prefix: "fleet.a")
    config.servers = servers
    config.credentials = credentials
    config.insecure = insecure
    return config
  }

  // MARK: - Loopback without credentials

  @Test(arguments: [
    "nats://127.0.0.1:4222", "nats://127.8.9.10:4222", "tls://localhost:4222", "nats://[::1]:4222",
    "localhost:4222", "nats://LOCALHOST",
  ])
  func accepted_whenTheHostIsLoopback(url: String) throws {
    try config([url]).validate()
  }

  // MARK: - Another host

  @Test(arguments: [
    "nats://10.0.0.1:4222", "nats://nats.example.com:4222", "tls://[2001:db8::1]:4222",
    "nats://128.0.0.1", "nats://127.0.0.1.example.com", "nats://localhost.example.com",
  ])
  func refused_whenTheHostIsNotLoopback_andNoCredentials(url: String) {
    #expect(throws: FleetConfigError.remoteWithoutCredentials(url)) { try config([url]).validate() }
  }

  @Test func refused_whenOneOfTheServersIsRemote() {
    let servers = ["nats://127.0.0.1:4222", "nats://10.0.0.2:4222"]
    #expect(throws: FleetConfigError.remoteWithoutCredentials("nats://10.0.0.2:4222")) {
      try config(servers).validate()
    }
  }

  @Test func accepted_whenRemote_withACredsFile_anNKeySeed_userInfo_orInsecure() throws {
    try config(["tls://nats.example.com:4222"], credentials: .credsFile("/etc/edge.creds"))
      .validate()
    try config(
      ["tls://nats.example.com:4222"],
      credentials: .nkey(publicKey: "UABC", seedFile: "/etc/edge.nk")
    )
    .validate()
    try config(["nats://edge:secret@10.0.0.1:4222"]).validate()
    try config(["nats://10.0.0.1:4222"], insecure: true).validate()
  }

  @Test func refused_whenAnNKeyHasNoUserPublicKey_orACredentialFileIsEmpty() {
    let server = ["tls://nats.example.com:4222"]
    for credentials: NatsFleetConfig.Credentials in [
      .nkey(publicKey: "", seedFile: "/etc/edge.nk"), .nkey(publicKey: "SUABC", seedFile: "/a"),
      .nkey(publicKey: "UABC", seedFile: ""), .credsFile(""),
    ] {
      #expect(throws: FleetConfigError.self) {
        try config(server, credentials: credentials).validate()
      }
    }
  }

  @Test func theRefusalSaysWhatToDo() {
    let message = FleetConfigError.remoteWithoutCredentials("nats://10.0.0.1:4222").description
    #expect(message.contains("nats://10.0.0.1:4222") && message.contains("not on loopback"))
    #expect(message.contains("credentials") && message.contains("insecure"))
  }

  // MARK: - Malformed

  @Test func refused_whenNoServer_aBadScheme_orNoHost() {
    #expect(throws: FleetConfigError.noServer) { try config([]).validate() }
    #expect(throws: FleetConfigError.self) { try config(["http://127.0.0.1:4222"]).validate() }
    #expect(throws: FleetConfigError.self) { try config(["nats://:4222"]).validate() }
    #expect(throws: FleetConfigError.self) { try config(["nats://[::1:4222"]).validate() }
  }

  @Test func refused_whenTheBucket_thePrefix_theName_orATimingIsBad() {
    var bad = config(["nats://127.0.0.1"])
    bad.bucket = "fleet.one"
    #expect(throws: FleetConfigError.badBucket("fleet.one")) { try bad.validate() }
    for prefix in ["", "fleet.", "fleet.*", "fleet..a", "fleet.>"] {
      bad = config(["nats://127.0.0.1"])
      bad.subjectPrefix = prefix
      #expect(throws: FleetConfigError.badSubjectPrefix(prefix)) { try bad.validate() }
    }
    bad = config(["nats://127.0.0.1"])
    bad.name = ""
    #expect(throws: FleetConfigError.badName) { try bad.validate() }
    bad = config(["nats://127.0.0.1"])
    bad.pingInterval = .zero
    #expect(throws: FleetConfigError.self) { try bad.validate() }
    bad = config(["nats://127.0.0.1"])
    bad.maxPingsOut = 0
    #expect(throws: FleetConfigError.self) { try bad.validate() }
  }

  @Test func theBusRefusesABadConfig_beforeItStartsAnything() {
    #expect(throws: NatsFleetBusError.config(.noServer)) {
      _ = try NatsFleetBus(config: config([]))
    }
  }
}
