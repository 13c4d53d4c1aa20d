import Foundation
import RetractDevSupport
import RetractKit
import RetractStore
import RetractTestSupport
import Testing

/// `retract serve` through a failover of its database: a primary and a
/// streaming standby behind one address (a TCP proxy standing for DNS or a
/// virtual IP), the primary killed, the standby promoted, the address moved.
@Suite("A failover", .serialized)
struct FailoverCommandTests {
    /// With asynchronous replication a failover loses what the old primary
    /// acknowledged last. A retraction the server answered 202 for that the
    /// promoted standby lacks is said, not silently gone: an error in the
    /// log naming it, `retract_retractions_lost_total`, and 410
    /// `retraction-lost` at its address. One the standby has is followed as
    /// before.
    @Test func aRetractionAnsweredAcceptedThatAFailoverLostIsSaidNotSilentlyGone() async throws {
        let primary = try ThrowawayPostgres.start()
        defer { primary.stop() }
        let link = try await AddressProxy(target: primary.port)
        let address = try await AddressProxy(target: primary.port)
        do {
            let standby = try primary.startStandby(reachingItAt: link.port)
            defer { standby.stop() }
            let url = "postgres://postgres@127.0.0.1:\(address.port)/postgres?sslmode=disable"
            try await SimulatedAPNs.with { apns in
                let stage = EndToEndTests.Stage(apns: apns, url: try DatabaseURL(url))
                #expect(try stage.retract(["migrate"]).status == 0)
                try stage.addApp("chat")
                for reference in ["m1", "m2"] { try stage.record(reference, app: "chat", tokens: TestTokens.tokens(0..<5)) }
                let key = try ServeCommandTests.createKey(stage, app: "chat", scopes: "retract,read")
                let server = try await ServeProcess.start(
                    ["--mode", "api", "--log-level", "info"], environment: ["DATABASE_URL": url, "APNS_CA_FILE": apns.caPath])
                func retract(_ reference: String) async throws -> String {
                    let made = try await server.http.call(
                        "POST", "/v1/retractions", key: key, body: #"{"app":"chat","references":["\#(reference)"]}"#)
                    try #require(made.status == 202, "\(made)")
                    return try #require(made.json?["id"] as? String)
                }

                // One the standby receives; then the link to it cut, and one only the primary acknowledges.
                let kept = try await retract("m1")
                let standbyURL = try DatabaseURL(standby.url)
                let replayed = ContinuousClock.now + .seconds(30)
                while try await ServeCommandTests.count("SELECT count(*) FROM retractions WHERE id = '\(kept)'", url: standbyURL) != 1 {
                    guard ContinuousClock.now < replayed else { throw CLIError("the standby did not replay the retraction within 30 s") }
                    try await Task.sleep(for: .milliseconds(100))
                }
                link.move(to: nil)
                let lost = try await retract("m2")
                // The failover: the primary dies, the standby is promoted, the address moves to it.
                try primary.kill()
                address.move(to: nil)
                try standby.promote()
                address.move(to: standby.port)

                let gone = try await server.http.poll("/v1/retractions/\(lost)", key: key, timeout: .seconds(60)) { $0.status == 410 }
                #expect(gone.problem == "retraction-lost", "\(gone)")
                #expect(gone.text.contains("lost in a failover"), "\(gone)")
                let followed = try await server.http.call("GET", "/v1/retractions/\(kept)", key: key)
                #expect(followed.status == 200, "\(followed)")
                let metrics = try await server.http.call("GET", "/metrics")
                #expect(metrics.text.contains("retract_retractions_lost_total 1"), "\(metrics.text.prefix(3000))")
                #expect(server.log.contains("a retraction answered 202 is not in the ledger"), "\(server.log.suffix(3000))")
                #expect(server.log.contains("retraction=\(lost)"), "\(server.log.suffix(3000))")
                #expect(!server.log.contains("retraction=\(kept)"), "\(server.log.suffix(3000))")
                #expect(try await server.stop() == 0, "\(server.log.suffix(3000))")
            }
        } catch {
            await address.close()
            await link.close()
            throw error
        }
        await address.close()
        await link.close()
    }
}
