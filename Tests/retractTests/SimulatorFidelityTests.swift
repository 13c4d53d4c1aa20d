import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOSSL
import RetractAPNs
import RetractTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `retract simulator` as another team uses it to test their own APNs
/// client: a separate process, reached over HTTP/2 by clients no one here
/// wrote (AsyncHTTPClient carrying tokens laid out as APNSwift, PyJWT and
/// Apple's command-line recipe write them; curl with Apple's recipe), next
/// to what APNs refuses. scripts/client-test drives it with aioapns.
@Suite("retract simulator takes what APNs takes")
struct SimulatorFidelityTests {
    static let keyID = "KEY1234567"
    static let teamID = "TEAM123456"
    static let topic = "com.example.chat"
    static let body =
        #"{"aps":{"content-available":1},"notificationCustomData":{"pushNotificationReferenceIds":["m1"],"isReferredNotificationMustRemoved":true}}"#

    @Test func tokensAsClientsInTheFieldWriteThemAreAccepted() async throws {
        let simulator = try await SimulatorProcess.start(keyed: true)
        defer { simulator.stop() }
        let now = Date()
        let shapes: [ClientProviderToken] = [
            .apnswift(keyID: Self.keyID, teamID: Self.teamID, issuedAt: now),
            .pyjwt(keyID: Self.keyID, teamID: Self.teamID, issuedAt: now),
            .appleCommandLine(keyID: Self.keyID, teamID: Self.teamID, issuedAt: now),
            .documented(keyID: Self.keyID, teamID: Self.teamID, issuedAt: now),
        ]
        for (index, shape) in shapes.enumerated() {
            // A client of its own for each: one connection, one token, as a new client starts.
            let answer = try await simulator.send(
                authorization: "bearer " + (try shape.signed(with: simulator.key)), to: Self.device(index))
            #expect(answer.status == 200, "\(shape): \(answer.body)")
            #expect(answer.httpVersion == 2, "\(shape)")
        }
        // APNSwift's token, reused for many pushes at once over one connection, as it sends them.
        let authorization = "bearer " + (try shapes[0].signed(with: simulator.key))
        let statuses = try await simulator.withClient { client in
            try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<500 {
                    group.addTask {
                        try await simulator.send(authorization: authorization, to: Self.device(100 + index), using: client).status
                    }
                }
                return try await group.reduce(into: [Int: Int]()) { $0[$1, default: 0] += 1 }
            }
        }
        #expect(statuses == [200: 500])
        let statistics = try await simulator.statistics()
        #expect(statistics["accepted"] as? Int == 504)
        #expect(statistics["rejected"] as? Int == 0)
        // Four shapes and the APNSwift token signed again (ECDSA signatures differ each time).
        #expect(statistics["providerTokens"] as? Int == 5)
        #expect(try await simulator.inbox(Self.device(2)).count == 1)
    }

    /// A token with one thing wrong, and APNs's answer.
    struct Refusal: Sendable, CustomTestStringConvertible {
        var name: String
        var authorization: @Sendable (_ key: P256.Signing.PrivateKey, _ now: Date) throws -> String?
        var status: Int
        var reason: String
        var explanation: String
        var testDescription: String { name }
    }

    static let refusals: [Refusal] = [
        Refusal(
            name: "signed with another key",
            authorization: { _, now in
                "bearer " + (try ClientProviderToken.apnswift(keyID: keyID, teamID: teamID, issuedAt: now).signed(with: .init()))
            },
            status: 403, reason: "InvalidProviderToken", explanation: "the signature does not verify with key KEY1234567's public key"),
        Refusal(
            name: "unknown key id",
            authorization: { key, now in
                "bearer " + (try ClientProviderToken.pyjwt(keyID: "OTHERKEY99", teamID: teamID, issuedAt: now).signed(with: key))
            },
            status: 403, reason: "InvalidProviderToken", explanation: "key id OTHERKEY99 is not known: the simulator knows KEY1234567"),
        Refusal(
            name: "another team",
            authorization: { key, now in
                "bearer " + (try ClientProviderToken.apnswift(keyID: keyID, teamID: "OTHERTEAM9", issuedAt: now).signed(with: key))
            },
            status: 403, reason: "InvalidProviderToken",
            explanation: "key KEY1234567 belongs to team TEAM123456, and the token's iss is OTHERTEAM9"),
        Refusal(
            name: "issued two hours ago",
            authorization: { key, now in
                "bearer "
                    + (try ClientProviderToken.apnswift(keyID: keyID, teamID: teamID, issuedAt: now - 7200).signed(with: key))
            },
            status: 403, reason: "ExpiredProviderToken", explanation: "iat is more than an hour ago: a token lasts an hour"),
        Refusal(
            name: "issued an hour ahead",
            authorization: { key, now in
                "bearer "
                    + (try ClientProviderToken.appleCommandLine(keyID: keyID, teamID: teamID, issuedAt: now + 3600).signed(with: key))
            },
            status: 403, reason: "InvalidProviderToken", explanation: "iat is more than 60 s ahead of the simulator's clock"),
        Refusal(
            name: "alg none",
            authorization: { key, now in
                "bearer "
                    + (try ClientProviderToken.documented(keyID: keyID, teamID: teamID, issuedAt: now, algorithm: "none", signature: .none)
                        .signed(with: key))
            },
            status: 403, reason: "InvalidProviderToken", explanation: #"alg is "none": APNs accepts only ES256"#),
        Refusal(
            name: "alg HS256",
            authorization: { key, now in
                "bearer "
                    + (try ClientProviderToken.documented(keyID: keyID, teamID: teamID, issuedAt: now, algorithm: "HS256", signature: .hmac)
                        .signed(with: key))
            },
            status: 403, reason: "InvalidProviderToken", explanation: #"alg is "HS256": APNs accepts only ES256"#),
        Refusal(
            name: "iat a word",
            authorization: { key, now in
                let shape = ClientProviderToken.documented(keyID: keyID, teamID: teamID, issuedAt: now)
                return "bearer " + (try shape.with("iat a word", claims: #"{"iss":"\#(teamID)","iat":"soon"}"#).signed(with: key))
            },
            status: 403, reason: "InvalidProviderToken",
            explanation: #"iat is "soon": a whole number of seconds, or a string of digits, is expected"#),
        Refusal(
            name: "not a token", authorization: { _, _ in "bearer garbage" }, status: 403, reason: "InvalidProviderToken",
            explanation: "not a JWS: three base64url parts separated by dots are expected"),
        Refusal(
            name: "no authorization", authorization: { _, _ in nil }, status: 403, reason: "MissingProviderToken",
            explanation: "no authorization header and no client certificate"),
    ]

    @Test func whatAPNsRefusesIsRefusedWithApplesReasonsAndExplainedOnce() async throws {
        let simulator = try await SimulatorProcess.start(keyed: true)
        defer { simulator.stop() }
        for refusal in Self.refusals {
            let authorization = try refusal.authorization(simulator.key, Date())
            for _ in 0..<2 {
                let answer = try await simulator.send(authorization: authorization, to: Self.device(1))
                #expect(answer.status == refusal.status, "\(refusal.name): \(answer.body)")
                #expect(answer.body == #"{"reason":"\#(refusal.reason)"}"#, "\(refusal.name)")
            }
        }
        #expect(try await simulator.inbox(Self.device(1)).isEmpty)
        let refused = try #require(try await simulator.statistics()["providerTokenRefusals"] as? [String: Int])
        #expect(refused == Dictionary(uniqueKeysWithValues: Self.refusals.map { ("\($0.reason): \($0.explanation)", 2) }))
        // Each new kind of refusal is explained once on standard error.
        let lines = simulator.errorLines.filter { $0.hasPrefix("retract simulator: refused a provider token: ") }
        #expect(lines == Self.refusals.map { "retract simulator: refused a provider token: \($0.reason): \($0.explanation)" })
    }

    /// The shell recipe of Apple's "Sending push notifications using
    /// command-line tools" (docs/examples/apns-curl.sh), run as written.
    @Test func curlWithApplesCommandLineRecipe() async throws {
        let simulator = try await SimulatorProcess.start(keyed: true)
        defer { simulator.stop() }
        let script = RetractCLI.packageRoot.appendingPathComponent("docs/examples/apns-curl.sh")
        func curl(teamID: String, device: String) throws -> RetractCLI.Result {
            try RetractCLI.run(
                [script.path], executable: URL(fileURLWithPath: "/bin/sh"),
                environment: [
                    "TEAM_ID": teamID, "AUTH_KEY_ID": Self.keyID, "TOKEN_KEY_FILE_NAME": simulator.keyPath, "TOPIC": Self.topic,
                    "DEVICE_TOKEN": device, "APNS_HOST_NAME": "127.0.0.1:\(simulator.port)", "CA_FILE": simulator.caPath,
                ])
        }
        let accepted = try curl(teamID: Self.teamID, device: Self.device(7))
        #expect(accepted.status == 0, "\(accepted.stderr)")
        #expect(accepted.stdout == "\n200\n")
        let pushes = try await simulator.inbox(Self.device(7))
        #expect(pushes.count == 1)
        #expect((pushes.first?["headers"] as? [String: String])?["apns-push-type"] == "background")

        let refused = try curl(teamID: "OTHERTEAM9", device: Self.device(8))
        #expect(refused.stdout == #"{"reason":"InvalidProviderToken"}"# + "\n403\n")
        #expect(try await simulator.inbox(Self.device(8)).isEmpty)
    }

    @Test func withoutAKeyTheSimulatorSaysEveryTokenWillBeRefused() async throws {
        let simulator = try await SimulatorProcess.start(keyed: false)
        defer { simulator.stop() }
        #expect(
            await simulator.eventuallyLogged(
                "retract simulator: no --key given: every provider token will be refused with 403 InvalidProviderToken. "
                    + "Give --key KEYID:TEAMID:PEM-FILE for the key your client signs with, or --accept-any-key to accept any well-formed ES256 token"
            ))
        let token = try ClientProviderToken.apnswift(keyID: Self.keyID, teamID: Self.teamID, issuedAt: Date()).signed(with: simulator.key)
        let answer = try await simulator.send(authorization: "bearer " + token, to: Self.device(1))
        #expect(answer.status == 403)
        #expect(answer.body == #"{"reason":"InvalidProviderToken"}"#)
        #expect(
            await simulator.eventuallyLogged(
                "retract simulator: refused a provider token: InvalidProviderToken: key id KEY1234567 is not known: the simulator was given no --key"
            ))
    }

    @Test func acceptAnyKeyTakesAnyWellFormedES256Token() async throws {
        let simulator = try await SimulatorProcess.start(keyed: false, arguments: ["--accept-any-key"])
        defer { simulator.stop() }
        #expect(
            await simulator.eventuallyLogged(
                "retract simulator: --accept-any-key: any well-formed ES256 provider token is accepted, and no signature is checked"))
        let stranger = P256.Signing.PrivateKey()
        let now = Date()
        let apnswift = try ClientProviderToken.apnswift(keyID: "STRANGER01", teamID: "ANYTEAM123", issuedAt: now).signed(with: stranger)
        #expect(try await simulator.send(authorization: "bearer " + apnswift, to: Self.device(1)).status == 200)
        let unsigned = try ClientProviderToken.documented(
            keyID: "STRANGER01", teamID: "ANYTEAM123", issuedAt: now, algorithm: "none", signature: .none
        ).signed(with: stranger)
        #expect(
            try await simulator.send(authorization: "bearer " + unsigned, to: Self.device(2)).body == #"{"reason":"InvalidProviderToken"}"#)
        let stale = try ClientProviderToken.pyjwt(keyID: "STRANGER01", teamID: "ANYTEAM123", issuedAt: now - 7200).signed(with: stranger)
        #expect(
            try await simulator.send(authorization: "bearer " + stale, to: Self.device(3)).body == #"{"reason":"ExpiredProviderToken"}"#)
    }

    static func device(_ index: Int) -> String {
        String(format: "%064x", index + 1)
    }
}

/// `retract simulator` in its own process, with a key on disk, and an
/// AsyncHTTPClient that trusts its authority.
struct SimulatorProcess: Sendable {
    struct Answer {
        var status: Int
        var body: String
        /// The HTTP major version the answer came over.
        var httpVersion: Int
    }

    let process: Process
    let folder: URL
    // Kept as bytes: swift-crypto's key type is not Sendable.
    let keyBytes: Data
    let keyPath: String
    let caPath: String
    let port: Int
    let inboxPort: Int
    let tls: TLSConfiguration

    /// The key the simulator was given with --key (when keyed).
    var key: P256.Signing.PrivateKey {
        // swift-format-ignore: NeverUseForceTry
        try! P256.Signing.PrivateKey(rawRepresentation: keyBytes)
    }

    static func start(keyed: Bool, arguments: [String] = []) async throws -> SimulatorProcess {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("retract-fidelity-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let key = P256.Signing.PrivateKey()
        let keyPath = folder.appendingPathComponent("AuthKey_\(SimulatorFidelityTests.keyID).p8").path
        try Data(key.pemRepresentation.utf8).write(to: URL(fileURLWithPath: keyPath))
        let (port, inboxPort) = (try freePort(), try freePort())
        let keyArguments = keyed ? ["--key", "\(SimulatorFidelityTests.keyID):\(SimulatorFidelityTests.teamID):\(keyPath)"] : []
        let process = try RetractCLI.start(
            [
                "simulator", "--port", "\(port)", "--inbox-port", "\(inboxPort)", "--cert-dir", folder.path, "--topic",
                SimulatorFidelityTests.topic,
            ]
                + keyArguments + arguments,
            errorLog: folder.appendingPathComponent("stderr.log"))
        let caPath = folder.appendingPathComponent("simulator-ca.pem").path
        guard await eventually({ FileManager.default.fileExists(atPath: caPath) && canConnect(to: inboxPort) && canConnect(to: port) })
        else {
            process.terminate()
            throw CLIError("retract simulator did not start")
        }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.file(caPath)]
        return SimulatorProcess(
            process: process, folder: folder, keyBytes: key.rawRepresentation, keyPath: keyPath, caPath: caPath, port: port,
            inboxPort: inboxPort, tls: tls)
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: folder)
    }

    /// Retract's APNs client, trusting the simulator's authority and signing with its key; shut it down after use.
    func apnsClient() throws -> APNsClient {
        try APNsClient(
            configuration: APNsClientConfiguration(
                environment: .custom(host: "127.0.0.1", port: port),
                authentication: .token(
                    key: APNsSigningKey(contentsOfFile: keyPath), keyID: SimulatorFidelityTests.keyID, teamID: SimulatorFidelityTests.teamID
                ),
                additionalTrustRootsPEM: [try String(contentsOfFile: caPath, encoding: .utf8)]))
    }

    /// Runs `body` with a client of its own, shut down afterwards.
    func withClient<Result: Sendable>(_ body: (HTTPClient) async throws -> Result) async throws -> Result {
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = .automatic
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            let result = try await body(client)
            try await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    /// A background push to `device` with `authorization` as its header (none when nil), on a new client.
    func send(authorization: String?, to device: String) async throws -> Answer {
        try await withClient { try await send(authorization: authorization, to: device, using: $0) }
    }

    func send(authorization: String?, to device: String, using client: HTTPClient) async throws -> Answer {
        var request = HTTPClientRequest(url: "https://127.0.0.1:\(port)/3/device/\(device)")
        request.method = .POST
        if let authorization { request.headers.add(name: "authorization", value: authorization) }
        request.headers.add(name: "apns-topic", value: SimulatorFidelityTests.topic)
        request.headers.add(name: "apns-push-type", value: "background")
        request.headers.add(name: "apns-priority", value: "5")
        request.body = .bytes(ByteBuffer(string: SimulatorFidelityTests.body))
        let response = try await client.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 64 * 1024)
        return Answer(status: Int(response.status.code), body: String(buffer: body), httpVersion: Int(response.version.major))
    }

    func statistics() async throws -> [String: Any] {
        try await json("/stats") as? [String: Any] ?? [:]
    }

    func inbox(_ device: String) async throws -> [[String: Any]] {
        try await json("/inbox/\(device)") as? [[String: Any]] ?? []
    }

    private func json(_ path: String) async throws -> Any {
        let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(inboxPort)\(path)")!)
        return try JSONSerialization.jsonObject(with: data)
    }

    /// What the process wrote to standard error so far, line by line.
    var errorLines: [String] {
        let text = (try? String(contentsOf: folder.appendingPathComponent("stderr.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    func eventuallyLogged(_ line: String) async -> Bool {
        await eventually { errorLines.contains(line) }
    }
}
