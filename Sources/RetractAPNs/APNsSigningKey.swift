import Crypto
import Foundation

/// The P-256 key of an APNs auth key (`.p8` file). Read once; never printed.
public struct APNsSigningKey: Sendable {
    // Kept as bytes: swift-crypto's key type is not Sendable on every platform.
    private let rawKey: Data

    /// From the PEM text of a `.p8` file (PKCS#8).
    public init(pem: String) throws(APNsError) {
        do {
            rawKey = try P256.Signing.PrivateKey(pemRepresentation: pem).rawRepresentation
        } catch {
            throw APNsError.authenticationUnavailable("the signing key is not a P-256 private key in PEM form")
        }
    }

    /// From a `.p8` file.
    public init(contentsOfFile path: String) throws(APNsError) {
        let pem: String
        do {
            pem = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw APNsError.authenticationUnavailable("cannot read the signing key file \(path)")
        }
        do {
            try self.init(pem: pem)
        } catch {
            throw APNsError.authenticationUnavailable("\(path) is not a P-256 private key in PEM form")
        }
    }

    public init(_ privateKey: P256.Signing.PrivateKey) {
        rawKey = privateKey.rawRepresentation
    }

    var privateKey: P256.Signing.PrivateKey {
        // The bytes came from a valid key.
        try! P256.Signing.PrivateKey(rawRepresentation: rawKey)
    }

    /// The public half, for a server that checks tokens (the simulator).
    public var publicKey: P256.Signing.PublicKey { privateKey.publicKey }
}

extension APNsSigningKey: CustomStringConvertible {
    public var description: String { "APNsSigningKey(P-256)" }
}
