import APNsSimulator
import Crypto
import Foundation
import RetractKit
import RetractModel
import RetractServer
import RetractStore
import RetractTestSupport
import Testing

/// What the API must hold to whatever a caller sends or the database does:
/// an admin key cannot aim the server's credentials at a host or a file of
/// its choosing; a caller who is not an administrator never reads the
/// server's file paths; an unknown key costs no body; a send stopped part-way
/// is never sent twice.
@Suite("API under faults and misuse")
struct ReliabilityTests {
    /// A folder of its own for credential files, removed afterwards.
    static func withCredentialsFolder(_ body: (URL) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("retract-credentials-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try await body(URL(fileURLWithPath: folder.path).resolvingSymlinksInPath())
    }

    @Test func anAppRegisteredOverTheAPISendsOnlyToAllowedHostsWithFilesFromTheCredentialsFolder() async throws {
        try await Self.withCredentialsFolder { folder in
            let settings = ServerSettings(port: 0, healthInterval: .milliseconds(200), credentialsDirectory: folder.path)
            try await APIStage.with(settings: settings) { stage in
                let admin = try await stage.key([.admin], apps: [], name: "ops")
                try FileManager.default.copyItem(atPath: stage.apns.keyPath, toPath: folder.appendingPathComponent("AuthKey.p8").path)
                try FileManager.default.createSymbolicLink(
                    atPath: folder.appendingPathComponent("escape.p8").path, withDestinationPath: stage.apns.keyPath)
                func register(_ name: String, endpoint: String? = nil, keyPath: String) async throws -> HTTPAnswer {
                    let endpointField = endpoint.map { #","endpoint":"\#($0)""# } ?? ""
                    return try await stage.call(
                        "POST", "/v1/apps", key: admin,
                        body:
                            #"{"name":"\#(name)","topic":"com.example.\#(name)","environment":"sandbox","keyID":"\#(SimulatedAPNs.keyID)","teamID":"\#(SimulatedAPNs.teamID)","keyPath":"\#(keyPath)"\#(endpointField)}"#
                    )
                }

                // The server's key sent to a host of the caller's choosing: refused, whatever the file.
                for endpoint in ["https://collector.example", "https://127.0.0.1:\(stage.apns.simulator.port)"] {
                    let answer = try await register("aimed", endpoint: endpoint, keyPath: "AuthKey.p8")
                    #expect(answer.status == 422, "\(answer)")
                    #expect(answer.field == "endpoint")
                }
                // Files outside the folder: the same words whether or not they exist.
                let outside = try await [
                    register("outside", keyPath: stage.apns.keyPath), register("outside", keyPath: "/etc/no-such-key.p8"),
                    register("outside", keyPath: "../\(stage.apns.folder.lastPathComponent)/AuthKey_\(SimulatedAPNs.keyID).p8"),
                    register("outside", keyPath: "escape.p8"),
                ]
                for answer in outside {
                    #expect(answer.status == 422, "\(answer)")
                    #expect(answer.field == "keyPath")
                    #expect(answer.json?["detail"] as? String == outside[0].json?["detail"] as? String)
                    #expect(!answer.text.contains(stage.apns.folder.path), "\(answer)")
                }
                let missing = try await register("missing", keyPath: "AuthKey_ABSENT.p8")
                #expect(missing.status == 422)
                #expect(
                    (missing.json?["detail"] as? String)?.contains("no file \"AuthKey_ABSENT.p8\" in the server's credentials folder")
                        == true)
                #expect(try await stage.count("SELECT count(*) FROM apps") == 1)

                // A file reached through a link inside the folder keeps its path as given, so that a
                // secret mount that rotates by switching the link (as Kubernetes does) keeps working.
                let version = folder.appendingPathComponent("..2026_11_24")
                try FileManager.default.createDirectory(at: version, withIntermediateDirectories: true)
                try FileManager.default.copyItem(atPath: stage.apns.keyPath, toPath: version.appendingPathComponent("AuthKey.p8").path)
                try FileManager.default.createSymbolicLink(
                    atPath: folder.appendingPathComponent("current").path, withDestinationPath: version.path)
                let linked = try await register("linked", keyPath: "current/AuthKey.p8")
                #expect(linked.json?["keyPath"] as? String == folder.path + "/current/AuthKey.p8", "\(linked)")

                // A file in the folder, named relative to it, and Apple's own host: registered, and audited field by field.
                let made = try await register("shop", keyPath: "AuthKey.p8")
                #expect(made.status == 201, "\(made)")
                let shop = try #require(try await stage.store.app(named: "shop"))
                #expect(
                    shop.authentication
                        == .token(keyID: SimulatedAPNs.keyID, teamID: SimulatedAPNs.teamID, keyPath: folder.path + "/AuthKey.p8"))
                let audit = try #require(try await stage.store.auditLog(appID: shop.id).first { $0.action == "app.registered" })
                #expect(
                    audit.details == [
                        "name": "shop", "topic": "com.example.shop", "environment": "sandbox", "dialect": "canonical", "auth": "token",
                        "keyID": SimulatedAPNs.keyID, "teamID": SimulatedAPNs.teamID, "keyPath": folder.path + "/AuthKey.p8",
                        "retractionMode": "background", "retractionText": "This message was deleted", "approvalWindowMinutes": "1440",
                        "carrierInterruptionLevel": "passive",
                    ])
            }
        }
        // A server told of no credentials folder takes no credential files over the API.
        try await APIStage.with(settings: ServerSettings(port: 0, healthInterval: .milliseconds(200))) { stage in
            let admin = try await stage.key([.admin], apps: [], name: "ops")
            let answer = try await stage.call(
                "POST", "/v1/apps", key: admin,
                body:
                    #"{"name":"shop","topic":"com.example.shop","environment":"sandbox","keyID":"\#(SimulatedAPNs.keyID)","teamID":"\#(SimulatedAPNs.teamID)","keyPath":"\#(stage.apns.keyPath)"}"#
            )
            #expect(answer.status == 422)
            #expect((answer.json?["detail"] as? String)?.contains("--credentials-dir") == true)
        }
    }

    @Test func aCallerWhoIsNotAnAdministratorNeverReadsTheServersFilePaths() async throws {
        try await APIStage.with { stage in
            let keyPath = try stage.apns.file("AuthKey_LOST.p8", P256.Signing.PrivateKey().pemRepresentation)
            let lost = try await stage.store.registerApp(stage.apns.registration(name: "lost", keyPath: keyPath), actor: "test")
            try await stage.store.record([Delivery(appID: lost.id, reference: "m", token: TestTokens.token(1), sentAt: Date())])
            try FileManager.default.removeItem(atPath: keyPath)
            let key = try await stage.key([.send, .retract, .read], apps: [lost], name: "backend")

            let retraction = try await stage.call("POST", "/v1/retractions", key: key, body: #"{"app":"lost","references":["m"]}"#)
            let send = try await stage.call(
                "POST", "/v1/notifications", key: key,
                body: #"{"app":"lost","reference":"n","tokens":["\#(TestTokens.token(1).hex)"],"payload":{"aps":{"alert":"hi"}}}"#)
            for answer in [retraction, send] {
                #expect(answer.status == 422, "\(answer)")
                #expect(answer.problem == "app-credentials")
                #expect(answer.text.contains("cannot be read"), "\(answer)")
                #expect(!answer.text.contains(keyPath) && !answer.text.contains(stage.apns.folder.path), "\(answer)")
            }
        }
    }

    @Test func anUnknownKeyIsRefusedBeforeItsBodyIsRead() async throws {
        try await APIStage.with { stage in
            // Headers announcing a megabyte, and one byte of it: the answer must not wait for the rest.
            let answer = try Self.rawExchange(
                port: stage.http.baseURL.port ?? 0,
                "POST /v1/deliveries HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(APIKeySecret.generate())\r\n"
                    + "Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{")
            #expect(answer.hasPrefix("HTTP/1.1 401"), "\(answer.prefix(200))")
        }
    }

    @Test func aSendStoppedPartWayIsFinishedByItsIdempotencyKeyWithoutSendingAgain() async throws {
        let devices = TestTokens.tokens(0..<10)
        let uninstalled = devices[3]
        try await APIStage.with(faults: APNsSimulatorFaults(unregisteredTokens: [uninstalled.hex: Date()])) { stage in
            let key = try await stage.chatKey()
            // Marking the uninstalled device dead, after every device was sent to, loses the database connection.
            try await TestDatabase.execute(
                """
                CREATE FUNCTION lose_connection() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); RETURN NEW; END $$
                """, on: stage.store)
            try await TestDatabase.execute(
                "CREATE TRIGGER lose_connection BEFORE INSERT ON dead_tokens FOR EACH ROW EXECUTE FUNCTION lose_connection()",
                on: stage.store)
            // And the database is still away for the first tries to keep what was sent.
            try await TestDatabase.execute("CREATE SEQUENCE keep_tries", on: stage.store)
            try await TestDatabase.execute(
                """
                CREATE FUNCTION still_away() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN IF nextval('keep_tries') <= 4 THEN PERFORM pg_terminate_backend(pg_backend_pid()); END IF; RETURN NEW; END $$
                """, on: stage.store)
            try await TestDatabase.execute(
                "CREATE TRIGGER still_away BEFORE UPDATE ON idempotency_records FOR EACH ROW EXECUTE FUNCTION still_away()", on: stage.store
            )
            let body = #"{"app":"chat","reference":"m1","tokens":\#(APIStage.hex(devices)),"payload":{"aps":{"alert":"Hi"}}}"#
            let headers = ["Idempotency-Key": "send-m1"]

            let stopped = try await stage.call("POST", "/v1/notifications", key: key, body: body, headers: headers)
            #expect(stopped.status == 503, "\(stopped)")
            #expect((stopped.json?["detail"] as? String)?.contains("10 of 10 devices were sent to before it stopped") == true, "\(stopped)")
            for device in devices where device != uninstalled { #expect(stage.apns.inbox(device).count == 1) }

            #expect(try await TestDatabase.value("SELECT last_value FROM keep_tries", of: Int.self, on: stage.store) == 5)
            try await TestDatabase.execute("DROP TRIGGER lose_connection ON dead_tokens", on: stage.store)
            let finished = try await stage.call("POST", "/v1/notifications", key: key, body: body, headers: headers)
            #expect(finished.status == 200, "\(finished)")
            #expect(finished.json?["accepted"] as? Int == 9)
            #expect(finished.json?["dead"] as? [String] == [uninstalled.hex])
            #expect(finished.json?["recorded"] as? Int == 10)
            // Nothing was sent twice, and what the first run could not write is written now.
            for device in devices where device != uninstalled { #expect(stage.apns.inbox(device).count == 1) }
            #expect(try await stage.store.deadToken(uninstalled, appID: stage.chat.id) != nil)
            let replayed = try await stage.call("POST", "/v1/notifications", key: key, body: body, headers: headers)
            #expect(replayed.header("Idempotent-Replayed") == "true")
            #expect(replayed.body == finished.body)
        }
    }

    /// Writes `request` to the server over a plain socket and reads what comes back within 5 seconds.
    static func rawExchange(port: Int, _ request: String) throws -> String {
        let socket = try LoopbackSocket(port: port)
        defer { socket.close() }
        try socket.send(request)
        guard case .bytes(let bytes) = socket.receive() else { return "" }
        return String(decoding: bytes, as: UTF8.self)
    }
}
