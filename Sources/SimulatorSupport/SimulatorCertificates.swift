import Crypto
import Foundation
import SwiftASN1
import X509

/// Certificates for a simulator and its clients, made in memory.
public enum SimulatorCertificates {
    /// A certificate and its private key, both PEM.
    public struct Identity: Sendable {
        public var certificatePEM: String
        public var privateKeyPEM: String
        let certificate: Certificate

        var key: P256.Signing.PrivateKey {
            // The PEM was written from a valid key.
            try! P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM)
        }
    }

    /// A certificate authority that can issue server and client certificates.
    public static func makeAuthority(name: String = "Retract APNs simulator CA") throws -> Identity {
        let key = P256.Signing.PrivateKey()
        let subject = try DistinguishedName { CommonName(name) }
        let now = Date()
        let certificate = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(10 * 365 * 86_400),
            issuer: subject,
            subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(key)
        )
        return try Identity(certificate: certificate, key: key)
    }

    /// A server certificate for localhost, 127.0.0.1 and ::1.
    public static func issueServerCertificate(from authority: Identity) throws -> Identity {
        try issue(
            commonName: "localhost",
            from: authority,
            usage: .serverAuth,
            names: SubjectAlternativeNames([
                .dnsName("localhost"),
                .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
                .ipAddress(ASN1OctetString(contentBytes: ArraySlice(repeating: 0, count: 15) + [1])),
            ])
        )
    }

    /// A server certificate for these host names only.
    public static func issueServerCertificate(from authority: Identity, dnsNames: [String]) throws -> Identity {
        try issue(
            commonName: dnsNames.first ?? "localhost", from: authority, usage: .serverAuth,
            names: SubjectAlternativeNames(dnsNames.map { .dnsName($0) }))
    }

    /// A client certificate, such as an app's APNs certificate.
    public static func issueClientCertificate(commonName: String, from authority: Identity) throws -> Identity {
        try issue(commonName: commonName, from: authority, usage: .clientAuth, names: nil)
    }

    private static func issue(
        commonName: String,
        from authority: Identity,
        usage: ExtendedKeyUsage.Usage,
        names: SubjectAlternativeNames?
    ) throws -> Identity {
        let key = P256.Signing.PrivateKey()
        let now = Date()
        let certificate = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(365 * 86_400),
            issuer: authority.certificate.subject,
            subject: try DistinguishedName { CommonName(commonName) },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([usage])
                if let names { names }
            },
            issuerPrivateKey: .init(authority.key)
        )
        return try Identity(certificate: certificate, key: key)
    }
}

extension SimulatorCertificates.Identity {
    init(certificate: Certificate, key: P256.Signing.PrivateKey) throws {
        self.certificate = certificate
        certificatePEM = try certificate.serializeAsPEM().pemString
        privateKeyPEM = key.pemRepresentation
    }
}
