import APNsSimulator
import Crypto
import Foundation
import Logging
import NIOCore
import NIOHPACK
import NIOPosix
import NIOSSL
import RetractHTTP2

@testable import RetractAPNs

/// Sends requests exactly as written, bypassing APNsClient's validation, to
/// see what the simulator makes of them.
struct RawSender {
    struct Answer {
        var status: Int
        var headers: HPACKHeaders
        var body: String

        var reason: String? {
            (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["reason"] as? String
        }
    }

    let pool: HTTP2ConnectionPool
    let port: Int

    init(simulator: APNsSimulator, connections: Int = 1) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMBytes(Array(simulator.certificateAuthorityPEM!.utf8)))]
        port = simulator.port
        pool = HTTP2ConnectionPool(
            service: "APNs",
            host: "127.0.0.1",
            port: simulator.port,
            tls: try NIOSSLContext(configuration: tls),
            group: MultiThreadedEventLoopGroup.singleton,
            connectionCount: connections,
            connectTimeout: .seconds(10),
            logger: Logger(label: "raw-sender")
        )
    }

    func send(_ headers: HPACKHeaders, body: String, timeout: TimeAmount = .seconds(60)) async throws -> Answer {
        let outcome = await withCheckedContinuation { continuation in
            pool.submit(
                HTTP2Exchange(headers: headers, body: ByteBuffer(string: body), deadline: .now() + timeout) { outcome in
                    continuation.resume(returning: outcome)
                })
        }
        switch outcome {
        case .answered(let status, let headers, let body):
            return Answer(status: status, headers: headers, body: body.map { String(buffer: $0) } ?? "")
        case .notProcessed:
            throw APNsError.connectionLost
        case .failed(let error):
            throw APNsError(error)
        }
    }

    func shutdown() async {
        await pool.shutdown()
    }
}

/// Keys, tokens and requests for the simulator's tests.
struct Fixture {
    static let keyID = "KEY1234567"
    static let teamID = "TEAM123456"
    static let topic = "com.example.chat"
    static let token = String(repeating: "ab", count: 32)
    static let body =
        #"{"aps":{"content-available":1},"notificationCustomData":{"pushNotificationReferenceId":"m1","isReferredNotificationMustRemoved":true}}"#

    let key: P256.Signing.PrivateKey
    /// One token for all requests: a new one per request would be refused
    /// as a token change within 20 minutes.
    let token: String

    init() {
        let key = P256.Signing.PrivateKey()
        self.key = key
        // swift-format-ignore: NeverUseForceTry
        token = try! APNsJWT.make(key: APNsSigningKey(key), keyID: Self.keyID, teamID: Self.teamID, issuedAt: Date())
    }

    var tokenKey: APNsSimulatorTokenKey {
        APNsSimulatorTokenKey(keyID: Self.keyID, teamID: Self.teamID, publicKey: key.publicKey)
    }

    func jwt(
        keyID: String = Fixture.keyID, teamID: String = Fixture.teamID, issuedAt: Date = Date(), signedWith: P256.Signing.PrivateKey? = nil
    )
        throws -> String
    {
        try APNsJWT.make(key: APNsSigningKey(signedWith ?? key), keyID: keyID, teamID: teamID, issuedAt: issuedAt)
    }

    /// A good background push; tests change one thing at a time.
    /// ``headers(path:bearer:)`` for an alert push at priority 10.
    func alertHeaders() throws -> HPACKHeaders {
        try headers().replacing("apns-push-type", with: "alert").replacing("apns-priority", with: "10")
    }

    func headers(path: String = "/3/device/\(Fixture.token)", bearer: String? = nil) throws -> HPACKHeaders {
        [
            ":method": "POST",
            ":scheme": "https",
            ":path": path,
            ":authority": "127.0.0.1",
            "authorization": "bearer " + (bearer ?? token),
            "apns-topic": Self.topic,
            "apns-push-type": "background",
            "apns-priority": "5",
        ]
    }

    func start(
        faults: APNsSimulatorFaults = APNsSimulatorFaults(),
        inboxPort: Int? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> APNsSimulator {
        try await APNsSimulator.start(
            APNsSimulatorConfiguration(inboxPort: inboxPort, tokenKeys: [tokenKey], topics: [Self.topic], faults: faults, now: now)
        )
    }
}

extension HPACKHeaders {
    /// The headers with `name` set to `value` (or removed), pseudo-headers kept first.
    func replacing(_ name: String, with value: String?) -> HPACKHeaders {
        var pseudo: [(String, String)] = []
        var regular: [(String, String)] = []
        for (existing, existingValue, _) in self where existing != name {
            if existing.hasPrefix(":") { pseudo.append((existing, existingValue)) } else { regular.append((existing, existingValue)) }
        }
        if let value {
            if name.hasPrefix(":") { pseudo.append((name, value)) } else { regular.append((name, value)) }
        }
        return HPACKHeaders(pseudo + regular)
    }
}

extension Fixture {
    /// Starts a simulator and a raw sender, runs `body`, and stops both.
    func run<Result>(
        faults: APNsSimulatorFaults = APNsSimulatorFaults(),
        inboxPort: Int? = nil,
        now: @escaping @Sendable () -> Date = { Date() },
        _ body: (APNsSimulator, RawSender) async throws -> Result
    ) async throws -> Result {
        let simulator = try await start(faults: faults, inboxPort: inboxPort, now: now)
        let sender: RawSender
        do {
            sender = try RawSender(simulator: simulator)
        } catch {
            try? await simulator.stop()
            throw error
        }
        do {
            let result = try await body(simulator, sender)
            await sender.shutdown()
            try await simulator.stop()
            return result
        } catch {
            await sender.shutdown()
            try? await simulator.stop()
            throw error
        }
    }
}
