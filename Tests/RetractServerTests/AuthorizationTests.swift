import Foundation
import RetractKit
import RetractModel
import RetractServer
import RetractStore
import RetractTestSupport
import Testing

/// Who may do what: every key problem has its exact status, and another
/// app's things are 404 rather than 403 so that ids and names do not leak.
@Suite("API authorization")
struct AuthorizationTests {
    @Test func theKeyMatrixGivesExactStatusesAndWritesNothingWhenRefused() async throws {
        try await APIStage.with { stage in
            let shop = try await stage.store.registerApp(stage.apns.registration(name: "shop"), actor: "test")
            let full = try await stage.chatKey()
            let recordOnly = try await stage.key([.record], apps: [stage.chat], name: "recorder")
            let shopKey = try await stage.key([.record, .send, .retract, .read, .client], apps: [shop], name: "shop")
            let revoked = try await stage.key([.retract], apps: [stage.chat], name: "old")
            let revokedID = try #require(try await stage.store.apiKeys().first { $0.name == "old" }?.id)
            try await stage.store.revokeAPIKey(id: revokedID, actor: "test")
            let unknown = APIKeySecret.generate()
            _ = try await stage.call("POST", "/v1/deliveries", key: full, body: #"{"app":"chat","reference":"r","tokens":["aa"]}"#)

            let body = #"{"app":"chat","references":["r"]}"#
            let cases: [(String, [String: String], Int, String?)] = [
                ("no Authorization header", [:], 401, "unauthorized"),
                ("not a bearer", ["Authorization": "Basic dXNlcjpwYXNz"], 401, "unauthorized"),
                ("not a Retract key", ["Authorization": "Bearer abc.def"], 401, "unauthorized"),
                ("an unknown key", ["Authorization": "Bearer \(unknown)"], 401, "unauthorized"),
                ("a revoked key", ["Authorization": "Bearer \(revoked)"], 401, "unauthorized"),
                ("a key without the retract scope", ["Authorization": "Bearer \(recordOnly)"], 403, "forbidden"),
                ("another app's key", ["Authorization": "Bearer \(shopKey)"], 404, "not-found"),
            ]
            for (name, headers, status, problem) in cases {
                let answer = try await stage.call("POST", "/v1/retractions", body: body, headers: headers)
                #expect(answer.status == status, "\(name): \(answer)")
                #expect(answer.problem == problem, "\(name)")
                #expect(answer.header("Content-Type") == "application/problem+json", "\(name)")
                if status == 401 { #expect(answer.header("WWW-Authenticate")?.hasPrefix("Bearer") == true, "\(name)") }
            }
            #expect(try await stage.count("SELECT count(*) FROM retractions") == 0)
            // A request without a key is refused before its body is read: 401, not 413.
            let unread = try await stage.call("POST", "/v1/deliveries", body: #"{"pad":"\#(String(repeating: "p", count: 1_200_000))"}"#)
            #expect(unread.status == 401)

            let made = try await stage.call("POST", "/v1/retractions", key: full, body: body)
            #expect(made.status == 202, "\(made)")
            let id = try #require(made.json?["id"] as? String)

            // Reading it: another app's key sees the same 404 as for an id that does not exist.
            let asShop = try await stage.call("GET", "/v1/retractions/\(id)", key: shopKey)
            let missing = try await stage.call("GET", "/v1/retractions/\(UUID().uuidString.lowercased())", key: shopKey)
            #expect(asShop.status == 404)
            #expect(missing.status == 404)
            #expect(asShop.problem == missing.problem)
            #expect(try await stage.call("GET", "/v1/retractions/\(id)", key: recordOnly).status == 403)
            #expect(try await stage.call("GET", "/v1/retractions/\(id)", key: full).status == 200)
            let admin = try await stage.key([.admin], apps: [], name: "ops")
            #expect(try await stage.call("GET", "/v1/retractions/\(id)", key: admin).status == 200)

            // Another app's name is as unknown as a name nobody registered.
            let shopRecord = try await stage.call(
                "POST", "/v1/deliveries", key: full, body: #"{"app":"shop","reference":"r","tokens":["aa"]}"#)
            #expect(shopRecord.status == 404)
            #expect(shopRecord.field == "app")

            // The device feed needs the client scope.
            let token = TestTokens.token(1).hex
            #expect(try await stage.call("GET", "/v1/devices/\(token)/retractions", key: recordOnly).status == 403)
            #expect(try await stage.call("GET", "/v1/devices/\(token)/retractions", key: full).status == 200)
        }
    }

    @Test func onlyAnAdminKeyForEveryAppRegistersApps() async throws {
        try await APIStage.with { stage in
            let body = """
                {"name":"shop","topic":"com.example.shop","environment":"sandbox",
                 "keyID":"\(SimulatedAPNs.keyID)","teamID":"\(SimulatedAPNs.teamID)","keyPath":"\(stage.apns.keyPath)"}
                """
            let full = try await stage.chatKey()
            let chatAdmin = try await stage.key([.admin], apps: [stage.chat], name: "chat-admin")
            let everyApp = try await stage.key([.admin], apps: [], name: "ops")
            #expect(try await stage.call("POST", "/v1/apps", key: full, body: body).status == 403)
            #expect(try await stage.call("POST", "/v1/apps", key: chatAdmin, body: body).status == 403)
            #expect(try await stage.count("SELECT count(*) FROM apps") == 1)
            #expect(try await stage.call("POST", "/v1/apps", key: everyApp, body: body).status == 201)
        }
    }

    @Test func aRevokedKeyIsRefusedFromTheNextRequestOn() async throws {
        try await APIStage.with { stage in
            let key = try await stage.chatKey()
            let path = "/v1/devices/\(TestTokens.token(1).hex)/retractions"
            #expect(try await stage.call("GET", path, key: key).status == 200)
            let id = try #require(try await stage.store.apiKeys().first?.id)
            try await stage.store.revokeAPIKey(id: id, actor: "test")
            let refused = try await stage.call("GET", path, key: key)
            #expect(refused.status == 401)
            #expect(refused.json?["detail"] as? String == "the API key was revoked")
        }
    }
}
