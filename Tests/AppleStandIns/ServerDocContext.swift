// What docs/apns.md's examples take from the rest of a server: a module that
// scripts/apple-compile imports into the blocks that use the server's
// modules, built against a build of them (--server-modules).
import Crypto
import Foundation

/// A device token, in hex.
nonisolated public let hexToken = String(repeating: "ab", count: 32)
/// One the simulator answers 410 Unregistered for.
nonisolated public let deadToken = String(repeating: "cd", count: 32)
/// Whose inbox a test reads.
nonisolated public let token = hexToken
/// A retraction's payload, as `PayloadBuilder` makes it.
nonisolated public let retractionBody = Data(#"{"aps":{"content-available":1}}"#.utf8)
/// The signing key of an APNs auth key (.p8).
nonisolated public var key: P256.Signing.PrivateKey { P256.Signing.PrivateKey() }
