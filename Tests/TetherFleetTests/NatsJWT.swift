// SPDX-License-Identifier: Apache-2.0
import Foundation

/// NATS's JWTs (version 2), made and signed here so the tests need no `nsc`: base64url
/// (unpadded) of the header and of the claims, joined by a dot, then the issuer's Ed25519
/// signature of those two parts. An operator signs itself and its accounts; an account
/// signs its users.
enum NatsJWT {
  /// The operator's own JWT, naming its system account (the server's config must name the
  /// same one).
  static func `operator`(_ key: NKey, name: String, systemAccount: String) -> String {
    token(
      subject: key.publicKey, name: name, issuer: key,
      nats: ["type": "operator", "version": 2, "system_account": systemAccount])
  }

  /// An account's JWT with no limit on connections, subscriptions or payloads; with
  /// `jetStream`, no limit on its streams and storage either (a zero limit would leave
  /// JetStream off, and a stream or a key-value bucket out of reach).
  static func account(_ key: NKey, name: String, issuer: NKey, jetStream: Bool) -> String {
    var limits: [String: Any] = [
      "subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1, "wildcards": true,
      "conn": -1, "leaf": -1,
    ]
    if jetStream {
      for limit in ["mem_storage", "disk_storage", "streams", "consumer"] { limits[limit] = -1 }
    }
    return token(
      subject: key.publicKey, name: name, issuer: issuer,
      nats: [
        "type": "account", "version": 2, "limits": limits,
        "default_permissions": ["pub": [:], "sub": [:]] as [String: Any],
      ])
  }

  /// A user's JWT, signed by its account: it may publish and subscribe anywhere.
  static func user(_ key: NKey, name: String, account: NKey) -> String {
    token(
      subject: key.publicKey, name: name, issuer: account,
      nats: [
        "type": "user", "version": 2, "pub": [:] as [String: Any], "sub": [:] as [String: Any],
        "subs": -1, "data": -1, "payload": -1,
      ])
  }

  /// A `.creds` file's text, as `nsc` writes it: the user's JWT, then the seed of its key.
  static func creds(jwt: String, seed: String) -> String {
    "-----BEGIN NATS USER JWT-----\n\(jwt)\n------END NATS USER JWT------\n\n"
      + "-----BEGIN USER NKEY SEED-----\n\(seed)\n------END USER NKEY SEED------\n"
  }

  /// `header.claims.signature`. The `jti` is only an identifier (`nsc` hashes the claims
  /// into it; the server never checks it), so a random one does.
  private static func token(subject: String, name: String, issuer: NKey, nats: [String: Any])
    -> String
  {
    let claims: [String: Any] = [
      "jti": UUID().uuidString, "iat": Int(Date().timeIntervalSince1970),
      "iss": issuer.publicKey, "sub": subject, "name": name, "nats": nats,
    ]
    let header = base64URL(Array(#"{"typ":"JWT","alg":"ed25519-nkey"}"#.utf8))
    let body = base64URL(json(claims))
    let signed = header + "." + body
    return signed + "." + base64URL(issuer.sign(Array(signed.utf8)))
  }

  private static func json(_ object: [String: Any]) -> [UInt8] {
    // Only dictionaries of strings, numbers and booleans reach here: it cannot fail.
    let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    return Array(data)
  }

  private static func base64URL(_ bytes: [UInt8]) -> String {
    Data(bytes).base64EncodedString()
      .replacingOccurrences(of: "+", with: "-")
      .replacingOccurrences(of: "/", with: "_")
      .replacingOccurrences(of: "=", with: "")
  }
}
