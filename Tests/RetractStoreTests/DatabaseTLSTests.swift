import APNsSimulator
import Foundation
import PostgresNIO
import RetractDevSupport
import RetractModel
import RetractTestSupport
import SimulatorSupport
import Testing

@testable import RetractStore

/// `sslmode` as libpq reads it, against a PostgreSQL of its own that takes
/// TLS with a certificate its own authority issued for `localhost`.
@Suite("TLS to the database")
struct DatabaseTLSTests {
    @Test func eachSSLModeProtectsAsItsNameSays() async throws {
        let authority = try SimulatorCertificates.makeAuthority(name: "The ledger's authority")
        let stranger = try SimulatorCertificates.makeAuthority(name: "Someone else's authority")
        let certificate = try SimulatorCertificates.issueServerCertificate(from: authority, dnsNames: ["localhost"])
        let postgres = try ThrowawayPostgres.start(tls: (certificate.certificatePEM, certificate.privateKeyPEM))
        defer { postgres.stop() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("retract-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let trusted = folder.appendingPathComponent("ledger-ca.pem").path
        let other = folder.appendingPathComponent("other-ca.pem").path
        try Data(authority.certificatePEM.utf8).write(to: URL(fileURLWithPath: trusted))
        try Data(stranger.certificatePEM.utf8).write(to: URL(fileURLWithPath: other))

        /// Whether the connection to `url` is encrypted, as the server sees it.
        func encrypted(_ url: String) async throws -> Bool {
            try await RetractStore.withStore(url: try DatabaseURL(url), maximumConnections: 1, logger: TestDatabase.logger) { store in
                try await TestDatabase.value("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", of: Bool.self, on: store) ?? false
            }
        }
        let byAddress = "postgres://postgres@127.0.0.1:\(postgres.port)/postgres"
        let byName = "postgres://postgres@localhost:\(postgres.port)/postgres"

        #expect(try await !encrypted(byAddress + "?sslmode=disable"))
        // Encrypted, whoever's certificate it is: against eavesdropping only.
        #expect(try await encrypted(byAddress + "?sslmode=prefer"))
        #expect(try await encrypted(byAddress + "?sslmode=require"))
        // Signed by the trusted authority: against a server with a certificate of its own making.
        #expect(try await encrypted(byAddress + "?sslmode=verify-ca&sslrootcert=\(trusted)"))
        await #expect(throws: (any Error).self) { try await encrypted(byAddress + "?sslmode=verify-ca&sslrootcert=\(other)") }
        // And issued for the host connected to: against another server the authority certified.
        #expect(try await encrypted(byName + "?sslmode=verify-full&sslrootcert=\(trusted)"))
        await #expect(throws: (any Error).self) { try await encrypted(byAddress + "?sslmode=verify-full&sslrootcert=\(trusted)") }
        // A root file that cannot be read is named.
        let missing = #expect(throws: StoreError.self) {
            _ = try DatabaseURL(byName + "?sslmode=verify-full&sslrootcert=\(folder.path)/nope.pem").clientConfiguration()
        }
        #expect(missing?.message.contains("sslrootcert \(folder.path)/nope.pem") == true)
    }

    @Test func requireRefusesAServerWithoutTLS() async throws {
        let url = try TestDatabase.serverURL()
        let plain = "postgres://postgres@\(url.host):\(url.port)/postgres?sslmode=require"
        await #expect(throws: (any Error).self) {
            try await RetractStore.withStore(url: try DatabaseURL(plain), maximumConnections: 1, logger: TestDatabase.logger) { _ in }
        }
    }
}
