import APNsSimulator
import ArgumentParser
import Crypto
import Foundation
import RetractAPNs
import SimulatorSupport

/// `retract-bench certs`: a server certificate for the HTTP/2 sink, a signing
/// key, and a provider token for h2load, written to a folder.
struct BenchmarkCertificates: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "certs",
        abstract: "Write ca.pem, server.pem, server-key.pem, signing-key.p8 and token.jwt to a folder."
    )

    @Option(help: "The folder to write to.")
    var out: String

    @Option(help: "The key id of the signing key.")
    var keyID = "BENCHKEY01"

    @Option(help: "The team id of the signing key.")
    var teamID = "BENCHTEAM1"

    func run() throws {
        let folder = URL(fileURLWithPath: out)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let authority = try SimulatorCertificates.makeAuthority(name: "Retract benchmark CA")
        let server = try SimulatorCertificates.issueServerCertificate(from: authority)
        let signingKey = P256.Signing.PrivateKey()
        let token = try APNsJWT.make(key: APNsSigningKey(signingKey), keyID: keyID, teamID: teamID, issuedAt: Date())
        let files = [
            "ca.pem": authority.certificatePEM,
            "server.pem": server.certificatePEM,
            "server-key.pem": server.privateKeyPEM,
            "signing-key.p8": signingKey.pemRepresentation,
            "token.jwt": token,
        ]
        for (name, contents) in files {
            try Data(contents.utf8).write(to: folder.appendingPathComponent(name))
        }
    }
}
