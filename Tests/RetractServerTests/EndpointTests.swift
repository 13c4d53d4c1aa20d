import APNsSimulator
import Foundation
import RetractKit
import RetractModel
import RetractServer
import RetractStore
import RetractTestSupport
import Testing

/// Each endpoint's success path, over HTTP, against the ledger and the simulator.
@Suite("API endpoints")
struct EndpointTests {
    @Test func operationsEndpointsAnswerWithoutAKeyAndEchoTheRequestID() async throws {
        try await APIStage.with { stage in
            let health = try await stage.call("GET", "/healthz", headers: ["X-Request-Id": "trace-42.a_b"])
            #expect(health.status == 200)
            #expect(health.json?["status"] as? String == "ok")
            #expect(health.header("X-Request-Id") == "trace-42.a_b")

            let ready = try await stage.call("GET", "/readyz")
            #expect(ready.status == 200, "\(ready)")
            #expect(ready.json?["status"] as? String == "ready")
            // A request id that is not a plain token is replaced, not echoed.
            #expect(ready.header("X-Request-Id")?.isEmpty == false)
            let odd = try await stage.call("GET", "/healthz", headers: ["X-Request-Id": "a b<script>"])
            #expect(odd.header("X-Request-Id") != "a b<script>")

            let spec = try await stage.call("GET", "/openapi.yaml")
            #expect(spec.status == 200)
            #expect(spec.header("Content-Type") == "application/yaml")
            #expect(spec.text.hasPrefix("openapi: 3"))
            #expect(spec.text.contains("/v1/retractions/{id}:"))
        }
    }

    @Test func aServerBehindANewerSchemaIsNotReady() async throws {
        try await APIStage.with { stage in
            _ = try await stage.count(
                "INSERT INTO retract_schema_migrations (version, name, checksum) VALUES (99, '0099_next.sql', '\\x00') RETURNING 1")
            let ready = try await stage.call("GET", "/readyz")
            #expect(ready.status == 503)
            #expect(ready.problem == "not-ready")
            #expect((ready.json?["detail"] as? String)?.contains("0099_next.sql") == true)
        }
    }

    @Test func aChatBackendRecordsThenRetractsAndEveryDeviceGetsTheRemovalPush() async throws {
        try await APIStage.with { stage in
            let key = try await stage.chatKey()
            let devices = TestTokens.tokens(0..<3)
            let recorded = try await stage.call(
                "POST", "/v1/deliveries", key: key, body: #"{"app":"chat","reference":"msg-8812","tokens":\#(APIStage.hex(devices))}"#)
            #expect(recorded.status == 201, "\(recorded)")
            #expect(recorded.json?["recorded"] as? Int == 3)
            #expect(recorded.json?["deliveries"] as? Int == 3)

            let made = try await stage.call(
                "POST", "/v1/retractions", key: key, body: #"{"app":"chat","references":["msg-8812"],"reason":"deleted for everyone"}"#)
            #expect(made.status == 202, "\(made)")
            let id = try #require(made.json?["id"] as? String)
            #expect(id == id.lowercased())
            #expect(made.json?["devices"] as? Int == 3)
            #expect(made.json?["app"] as? String == "chat")
            #expect(made.json?["dryRun"] as? Bool == false)
            #expect(made.header("Location") == "/v1/retractions/\(id)")

            let status = try await stage.waitUntilDone(id, key: key)
            #expect(status["total"] as? Int == 3)
            #expect(status["sent"] as? Int == 3)
            #expect(status["failed"] as? Int == 0)
            #expect(status["unregistered"] as? Int == 0)
            #expect(status["pending"] as? Int == 0)
            #expect(status["references"] as? [String] == ["msg-8812"])
            #expect(status["reason"] as? String == "deleted for everyone")
            #expect((status["requestedBy"] as? String)?.hasPrefix("api-key:chat-backend") == true)
            for device in devices {
                let inbox = stage.apns.inbox(device)
                #expect(inbox.count == 1)
                #expect(inbox.first?.pushType == "background")
                #expect(inbox.first.flatMap { RetractPayload.retraction(in: $0.userInfo) } == ["msg-8812"])
            }
            let audit = try await stage.store.auditLog(appID: stage.chat.id)
            #expect(audit.first?.action == "retraction.created")
            #expect(audit.first?.actor.hasPrefix("api-key:chat-backend") == true)
        }
    }

    @Test func anArrayOfDeliveriesIsRecordedAndRecordingAgainAddsNothing() async throws {
        try await APIStage.with { stage in
            let key = try await stage.chatKey()
            let sentAt = ISO8601DateFormatter().string(from: Date().addingTimeInterval(-3600))
            let body = """
                [{"app":"chat","reference":"a","tokens":\(APIStage.hex(TestTokens.tokens(0..<2))),"sentAt":"\(sentAt)"},
                 {"app":"chat","reference":"b","tokens":\(APIStage.hex(TestTokens.tokens(1..<4)))}]
                """
            let first = try await stage.call("POST", "/v1/deliveries", key: key, body: body)
            #expect(first.status == 201, "\(first)")
            #expect(first.json?["recorded"] as? Int == 5)
            let again = try await stage.call("POST", "/v1/deliveries", key: key, body: body)
            #expect(again.json?["recorded"] as? Int == 0)
            #expect(again.json?["deliveries"] as? Int == 5)
            #expect(try await stage.count("SELECT count(*) FROM deliveries") == 5)
        }
    }

    @Test func aNotificationSentThroughTheAPIIsDeliveredAndRecorded() async throws {
        try await APIStage.with { stage in
            let key = try await stage.chatKey()
            let devices = TestTokens.tokens(0..<2)
            let sent = try await stage.call(
                "POST", "/v1/notifications", key: key,
                body:
                    #"{"app":"chat","reference":"msg-1","tokens":\#(APIStage.hex(devices)),"payload":{"aps":{"alert":"Hello"},"thread":"t1"}}"#
            )
            #expect(sent.status == 200, "\(sent)")
            #expect(sent.json?["accepted"] as? Int == 2)
            #expect(sent.json?["recorded"] as? Int == 2)
            #expect(sent.json?["failed"] as? Int == 0)
            for device in devices {
                let push = try #require(stage.apns.inbox(device).first)
                #expect(push.pushType == "alert")
                #expect(push.collapseID == "msg-1")
                #expect(try RetractPayload.customData(in: push.userInfo)?.referenceID == "msg-1")
                #expect(push.userInfo["thread"] as? String == "t1")
            }
            let page = try await stage.store.devicePage(appID: stage.chat.id, references: ["msg-1"])
            #expect(page.devices.map(\.token) == devices)
        }
    }

    @Test func anAdminRegistersAnAppThatThenTakesDeliveries() async throws {
        try await APIStage.with { stage in
            let admin = try await stage.key([.admin], apps: [], name: "ops")
            let body = """
                {"name":"shop","topic":"com.example.shop","environment":"production","dialect":"legacy",
                 "keyID":"\(SimulatedAPNs.keyID)","teamID":"\(SimulatedAPNs.teamID)","keyPath":"\(stage.apns.keyPath)"}
                """
            let made = try await stage.call("POST", "/v1/apps", key: admin, body: body)
            #expect(made.status == 201, "\(made)")
            #expect(made.json?["name"] as? String == "shop")
            #expect(made.json?["auth"] as? String == "token")
            #expect(made.json?["dialect"] as? String == "legacy")
            #expect(made.json?["keyPath"] as? String == stage.apns.keyPath)
            let app = try #require(try await stage.store.app(named: "shop"))
            #expect(made.json?["id"] as? Int == Int(app.id))

            let again = try await stage.call("POST", "/v1/apps", key: admin, body: body)
            #expect(again.status == 409)
            #expect(again.problem == "app-exists")

            let recorded = try await stage.call(
                "POST", "/v1/deliveries", key: admin, body: #"{"app":"shop","reference":"233","tokens":["abcd"]}"#)
            #expect(recorded.status == 201, "\(recorded)")
        }
    }

    @Test func aDryRunCountsTheDevicesAndSendsNothing() async throws {
        try await APIStage.with { stage in
            let key = try await stage.chatKey()
            let devices = TestTokens.tokens(0..<4)
            _ = try await stage.call(
                "POST", "/v1/deliveries", key: key, body: #"{"app":"chat","reference":"sale","tokens":\#(APIStage.hex(devices))}"#)
            let made = try await stage.call(
                "POST", "/v1/retractions", key: key, body: #"{"app":"chat","references":["sale"],"dryRun":true}"#)
            #expect(made.status == 202, "\(made)")
            #expect(made.json?["devices"] as? Int == 4)
            #expect(made.json?["state"] as? String == "done")
            #expect(made.json?["dryRun"] as? Bool == true)
            try await Task.sleep(for: .milliseconds(300))
            #expect(devices.allSatisfy { stage.apns.inbox($0).isEmpty })
        }
    }

    @Test func metricsCountRequestsPushesAndTheQueue() async throws {
        try await APIStage.with { stage in
            let key = try await stage.chatKey()
            _ = try await stage.call(
                "POST", "/v1/deliveries", key: key,
                body: #"{"app":"chat","reference":"m","tokens":\#(APIStage.hex(TestTokens.tokens(0..<2)))}"#)
            let made = try await stage.call("POST", "/v1/retractions", key: key, body: #"{"app":"chat","references":["m"]}"#)
            _ = try await stage.waitUntilDone(try #require(made.json?["id"] as? String), key: key)
            _ = try await stage.call("GET", "/v1/retractions/not-a-uuid", key: key)
            let metrics = try await stage.call("GET", "/metrics")
            #expect(metrics.status == 200)
            #expect(metrics.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
            let text = metrics.text
            #expect(text.contains(#"retract_http_requests_total{route="/v1/retractions",method="POST",status="202"} 1"#), "\(text)")
            #expect(text.contains(#"retract_http_requests_total{route="/v1/retractions/{id}",method="GET",status="404"} 1"#))
            #expect(text.contains(#"retract_pushes_total{kind="retraction",outcome="sent"} 2"#))
            #expect(text.contains("retract_retraction_duration_seconds_count 1"))
            #expect(text.contains("retract_queue_depth"))
            #expect(text.contains("retract_database_up 1"))
            #expect(text.contains(#"retract_http_request_duration_seconds_bucket{route="/v1/deliveries",method="POST""#))
        }
    }
}
