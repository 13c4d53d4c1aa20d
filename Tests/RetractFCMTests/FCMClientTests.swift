import AsyncHTTPClient
import FCMSimulator
import Foundation
import NIOCore
import NIOSSL
import RetractFCM
import RetractKit
import RetractPush
import Testing

@Suite("FCM client against the FCM simulator")
struct FCMClientTests {
    @Test("one access token serves many messages")
    func tokenIsFetchedOnceAndReused() async throws {
        try await FCMHarness.with { harness, client in
            let message = try retractionMessage(["msg-1"])
            // Concurrent first sends share one token request.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<20 { group.addTask { try await client.send(message.request(token: "device-\(index)")) } }
                try await group.waitForAll()
            }
            let name = try await client.send(message.request(token: "device-20"))
            #expect(name.hasPrefix("projects/\(FCMHarness.projectID)/messages/"))
            let statistics = harness.simulator.statistics
            #expect(statistics.accessTokensIssued == 1)
            #expect(statistics.messagesAccepted == 21)
            #expect(statistics.messagesOverHTTP1 == 0)
        }
    }

    @Test("FCMClient speaks HTTP/2; the simulator counts a message that came over HTTP/1.1")
    func messagesGoOverHTTP2() async throws {
        try await FCMHarness.with { harness, client in
            try await client.send(try retractionMessage(["r"]).request(token: "device-a"))
            #expect(harness.simulator.statistics.messagesOverHTTP1 == 0)
            // The same message over HTTP/1.1, as a client that cannot do HTTP/2 would send it.
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = [
                .certificates(try NIOSSLCertificate.fromPEMBytes(Array(harness.simulator.certificateAuthorityPEM.utf8)))
            ]
            var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
            configuration.httpVersion = .http1Only
            let http1 = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            var request = HTTPClientRequest(url: "\(harness.simulator.baseURL)/v1/projects/\(FCMHarness.projectID)/messages:send")
            request.method = .POST
            request.headers.add(name: "authorization", value: "Bearer \(try await client.accessToken())")
            request.body = .bytes(try retractionMessage(["r"]).request(token: "device-b"))
            let response = try await http1.execute(request, timeout: .seconds(10))
            try await http1.shutdown()
            #expect(response.status == .ok)
            #expect(harness.simulator.statistics.messagesOverHTTP1 == 1)
        }
    }

    @Test("messages in flight beyond the server's stream limit open more connections, up to the cap")
    func connectionsFollowTheWindow() async throws {
        try await FCMHarness.with { harness, _ in
            func sendAtOnce(_ count: Int, provisioning: Int?, cap: Int) async throws -> Int {
                let client = try FCMClient(
                    account: harness.account,
                    configuration: FCMClientConfiguration(
                        messagesBaseURL: harness.simulator.baseURL, tokenURI: harness.simulator.tokenURI,
                        additionalTrustRootsPEM: [harness.simulator.certificateAuthorityPEM], maximumConnectionCount: cap))
                let message = try retractionMessage(["r"])
                if let provisioning { client.provision(inFlight: provisioning) }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<count { group.addTask { try await client.send(message.request(token: "device-\(index)")) } }
                    try await group.waitForAll()
                }
                let opened = client.connectionsOpened
                await client.shutdown()
                return opened
            }
            // No server here says its limit before the first connection: RFC 9113's 100 streams each.
            let unprovisioned = try await sendAtOnce(250, provisioning: nil, cap: 8)
            let provisioned = try await sendAtOnce(250, provisioning: 250, cap: 8)
            let capped = try await sendAtOnce(250, provisioning: 250, cap: 2)
            #expect(unprovisioned == 1)
            #expect(provisioned == 3)
            #expect(capped == 2)
            #expect(harness.simulator.statistics.messagesAccepted == 750)
            #expect(harness.simulator.statistics.messagesOverHTTP1 == 0)
        }
    }

    @Test("an FCM endpoint nothing listens on is unreachable, not a refusal")
    func aClosedPortIsUnreachable() async throws {
        let harness = try await FCMHarness.start()
        let client = try FCMClient(
            account: harness.account,
            configuration: FCMClientConfiguration(
                messagesBaseURL: "https://127.0.0.1:1", tokenURI: harness.simulator.tokenURI,
                additionalTrustRootsPEM: [harness.simulator.certificateAuthorityPEM], connectTimeout: .seconds(2)))
        let error = await #expect(throws: FCMError.self) { try await client.send(retractionMessage(["r"]).request(token: "device-a")) }
        await client.shutdown()
        await harness.simulator.stop()
        guard case .unreachable(let reason) = error else {
            Issue.record("expected unreachable, got \(String(describing: error))")
            return
        }
        #expect(!reason.isEmpty)
        #expect(PushVerdict(error!) == .unreachable(reason: "\(error!)"))
    }

    @Test("a token is replaced shortly before it expires, not after")
    func tokenIsRefreshedBeforeExpiry() async throws {
        let clock = TestClock()
        try await FCMHarness.with(accessTokenLifetime: 3600, clock: clock, refreshMargin: 300) { harness, client in
            let first = try await client.accessToken()
            clock.advance(by: 3000)
            #expect(try await client.accessToken() == first)
            // 3,400 s in, 200 s before expiry: inside the margin, so a new token.
            clock.advance(by: 400)
            let second = try await client.accessToken()
            #expect(second != first)
            try await client.send(try retractionMessage(["r"]).request(token: "device-a"))
            #expect(harness.simulator.statistics.accessTokensIssued == 2)
            #expect(harness.simulator.statistics.messagesRejected.isEmpty)
        }
    }

    @Test("a token the endpoint refuses is replaced once and the message sent again")
    func refusedTokenIsReplaced() async throws {
        try await FCMHarness.with { harness, client in
            try await client.send(try retractionMessage(["r"]).request(token: "device-a"))
            // Google revokes tokens when a key is deleted or rotated; the client still holds its own.
            harness.simulator.revokeAccessTokens()
            try await client.send(try retractionMessage(["r"]).request(token: "device-a"))
            let statistics = harness.simulator.statistics
            #expect(statistics.accessTokensIssued == 2)
            #expect(statistics.messagesRejected == ["UNAUTHENTICATED": 1])
            #expect(harness.simulator.inbox(for: "device-a").count == 2)
            // Refused twice in a row, the error is reported rather than tried forever: one new token, not more.
            harness.simulator.script([.unauthenticated, .unauthenticated], for: "device-b")
            await #expect {
                try await client.send(try retractionMessage(["r"]).request(token: "device-b"))
            } throws: { error in
                guard case .rejected(let rejection) = error as? FCMError else { return false }
                return rejection.disposition == .refreshAccessToken
            }
            #expect(harness.simulator.statistics.accessTokensIssued == 3)
            #expect(harness.simulator.inbox(for: "device-b").isEmpty)
        }
    }

    @Test("an expired token is refused by the simulator")
    func expiredTokenIsRefused() async throws {
        let serverClock = TestClock()
        // The client's clock stands still: it believes its token good while the simulator's has expired it.
        try await FCMHarness.with(accessTokenLifetime: 3600, clock: serverClock, clientClock: TestClock(), refreshMargin: 0) {
            harness, client in
            try await client.send(try retractionMessage(["r"]).request(token: "device-a"))
            serverClock.advance(by: 3601)
            // A fresh assertion is now out of the simulator's time frame too: the error says so.
            await #expect {
                try await client.send(try retractionMessage(["r"]).request(token: "device-a"))
            } throws: { error in
                guard case .accessTokenRefused(400, let reason) = error as? FCMError else { return false }
                return reason.contains("short-lived")
            }
            #expect(harness.simulator.statistics.messagesRejected == ["UNAUTHENTICATED": 1])
        }
    }

    @Test("an assertion signed by a key the token endpoint does not know is refused")
    func unknownAccountIsRefused() async throws {
        let harness = try await FCMHarness.start()
        let stranger = try FCMSimulator.makeServiceAccount(
            projectID: FCMHarness.projectID, clientEmail: "stranger@example.iam.gserviceaccount.com")
        // The right email with the wrong key: the signature does not verify.
        var forged = try FCMSimulator.makeServiceAccount(projectID: FCMHarness.projectID)
        forged.clientEmail = harness.account.clientEmail
        for (account, expected) in [(stranger, "no service account"), (forged, "Invalid JWT Signature")] {
            let client = try harness.client(account: account)
            await #expect {
                try await client.send(try retractionMessage(["r"]).request(token: "device-a"))
            } throws: { error in
                guard case .accessTokenRefused(400, let reason) = error as? FCMError else { return false }
                return reason.contains("invalid_grant") && reason.contains(expected)
            }
            await client.shutdown()
        }
        #expect(harness.simulator.statistics.tokenRequestsRefused == 2)
        await harness.simulator.stop()
    }

    @Test(
        "each FCM error is read and classified",
        arguments: [
            (FCMFault.unregistered, "UNREGISTERED", FCMDisposition.tokenDead),
            (.invalidArgument(field: "message.token"), "INVALID_ARGUMENT", .permanent),
            (.quotaExceeded(retryAfter: 7), "QUOTA_EXCEEDED", .retry),
            (.unavailable(retryAfter: 3), "UNAVAILABLE", .retry),
            (.internalError, "INTERNAL", .retry),
            (.thirdPartyAuthError, "THIRD_PARTY_AUTH_ERROR", .authenticationFailed),
            // The token belongs to another project: about that device, not the app's credentials.
            (.senderIDMismatch, "SENDER_ID_MISMATCH", .permanent),
        ])
    func errorsAreClassified(fault: FCMFault, code: String, disposition: FCMDisposition) async throws {
        try await FCMHarness.with { harness, client in
            harness.simulator.script([fault], for: "device-a")
            let message = try retractionMessage(["r"]).request(token: "device-a")
            do {
                try await client.send(message)
                Issue.record("accepted despite \(fault)")
            } catch {
                guard case .rejected(let rejection) = error as? FCMError else {
                    Issue.record("not a rejection: \(error)")
                    return
                }
                #expect(rejection.errorCode == code)
                #expect(rejection.disposition == disposition)
                switch fault {
                case .quotaExceeded(let seconds), .unavailable(let seconds): #expect(rejection.retryAfter == seconds.map(TimeInterval.init))
                case .invalidArgument(let field): #expect(rejection.field == field)
                default: #expect(rejection.retryAfter == nil)
                }
            }
            // The script is spent: the same message goes through now.
            try await client.send(message)
            #expect(harness.simulator.inbox(for: "device-a").count == 1)
        }
    }

    @Test("RetractKit decodes what an iPhone gets through FCM, in both dialects", arguments: [PayloadDialect.canonical, .legacy])
    func retractKitDecodesDeliveredMessage(dialect: PayloadDialect) async throws {
        try await FCMHarness.with { harness, client in
            for message in try retractionMessages(["4711", "4712"], dialect: dialect) {
                try await client.send(message.request(token: "device-a"))
            }
            let received = harness.simulator.inbox(for: "device-a")
            // The legacy dialect, as the article's code reads it, carries one reference per push.
            #expect(received.count == (dialect == .legacy ? 2 : 1))
            var retracted: Set<ReferenceID> = []
            for message in received {
                #expect(message.apnsHeaders == ["apns-push-type": "background", "apns-priority": "5"])
                #expect(message.androidPriority == "HIGH")
                // FCM data values are strings: the custom data went as JSON text.
                let customDataKey = dialect == .legacy ? "notifcationCustomData" : "notificationCustomData"
                #expect(message.data[customDataKey]?.hasPrefix("{") == true)
                retracted.formUnion(try #require(RetractPayload.retraction(in: message.userInfo)))
            }
            #expect(retracted == ["4711", "4712"])

            let center = InMemoryNotificationCenter(delivered: [
                DeliveredNotification(identifier: "a", referenceID: "4711"),
                DeliveredNotification(identifier: "b", referenceID: "other"),
                DeliveredNotification(identifier: "4712"),
            ])
            var removed: [String] = []
            for message in received {
                if case .removed(let identifiers) = await RetractionHandler(center: center).handle(userInfo: message.userInfo) {
                    removed += identifiers
                }
            }
            #expect(removed.sorted() == ["4712", "a"])
            #expect(await center.deliveredNotifications().map(\.identifier) == ["b"])
        }
    }

    @Test("the simulator refuses what FCM would, naming the field")
    func simulatorValidatesMessages() async throws {
        try await FCMHarness.with { harness, client in
            let cases: [(String, String)] = [
                (
                    #"{"message":{"token":"d","apns":{"headers":{"apns-push-type":"background","apns-priority":"5"},"payload":{"aps":{"alert":"hi","content-available":1}}}}}"#,
                    "message.apns.payload.aps"
                ),
                (
                    #"{"message":{"token":"d","apns":{"headers":{"apns-push-type":"background","apns-priority":"10"},"payload":{"aps":{"content-available":1}}}}}"#,
                    "message.apns.headers"
                ),
                (#"{"message":{"token":"d","data":{"n":{"a":1}}}}"#, "message.data[n]"),
                (#"{"message":{"token":"d","data":{"from":"x"}}}"#, "message.data"),
                (#"{"message":{"token":"","data":{}}}"#, "message.token"),
                (#"{"message":{"token":"d","notificationCustomData":{}}}"#, "message.notificationCustomData"),
                (#"{"message":{"token":"d","android":{"priority":"URGENT"}}}"#, "message.android.priority"),
            ]
            for (body, field) in cases {
                await #expect {
                    try await client.send(ByteBuffer(string: body))
                } throws: { error in
                    guard case .rejected(let rejection) = error as? FCMError else { return false }
                    return rejection.httpStatus == 400 && rejection.field == field && rejection.disposition == .permanent
                }
            }
            #expect(harness.simulator.statistics.messagesAccepted == 0)
        }
    }

    @Test("an original keeps its alert for iOS, becomes an Android notification and carries its reference")
    func originalMessage() async throws {
        let payload = try PayloadBuilder().originalPayload(
            Data(#"{"aps":{"alert":{"title":"Hi","body":"Sale"}}}"#.utf8), reference: "sale-1")
        let message = try FCMMessage(body: payload, kind: .alert, collapseID: "sale-1")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(buffer: message.request(token: "t"))) as? [String: Any])
        let inner = try #require(json["message"] as? [String: Any])
        let android = try #require(inner["android"] as? [String: Any])
        // The tag lets a later notification (a replace retraction) take this one's place.
        #expect(android["notification"] as? [String: String] == ["title": "Hi", "body": "Sale", "tag": "sale-1"])
        #expect(android["collapse_key"] as? String == "sale-1")
        let apns = try #require(inner["apns"] as? [String: Any])
        #expect(apns["headers"] as? [String: String] == ["apns-push-type": "alert", "apns-priority": "10", "apns-collapse-id": "sale-1"])
        let userInfo = try #require(inner["data"] as? [String: String])
        #expect(DeliveredNotification(identifier: "x", userInfo: userInfo).referenceID == "sale-1")
        #expect(throws: FCMMessageError.self) { try FCMMessage(body: Data(#"{"aps":{},"from":"x"}"#.utf8), kind: .alert) }
        #expect(throws: FCMMessageError.self) { try FCMMessage(body: Data(#"{"alert":"x"}"#.utf8), kind: .alert) }
    }

    @Test("an original the Android app shows itself is data only, with the alert's words; a tag given is Firebase's tag")
    func androidOriginalForms() throws {
        let payload = try PayloadBuilder().originalPayload(
            Data(#"{"aps":{"alert":{"title":"Ada","body":"see you at 8?"}},"title":"kept"}"#.utf8), reference: "m1", thread: "c-1")
        func inner(_ message: FCMMessage) throws -> [String: Any] {
            let json = try #require(try JSONSerialization.jsonObject(with: Data(buffer: message.request(token: "t"))) as? [String: Any])
            return try #require(json["message"] as? [String: Any])
        }
        let shownByApp = try inner(FCMMessage(body: payload, kind: .appShownAlert, collapseID: "m1"))
        let android = try #require(shownByApp["android"] as? [String: Any])
        #expect(android["notification"] == nil)
        #expect(android["priority"] as? String == "HIGH")
        let data = try #require(shownByApp["data"] as? [String: String])
        // The body's own `title` is the app's and stays; the alert's body fills the other.
        #expect(data["title"] == "kept")
        #expect(data["body"] == "see you at 8?")
        #expect(DeliveredNotification(identifier: "x", userInfo: data).referenceID == "m1")
        // iPhones still get an alert.
        let apns = try #require(shownByApp["apns"] as? [String: Any])
        #expect((apns["headers"] as? [String: String])?["apns-push-type"] == "alert")

        let tagged = try inner(FCMMessage(body: payload, kind: .alert, collapseID: nil, tag: "m1"))
        let notification = try #require((tagged["android"] as? [String: Any])?["notification"] as? [String: String])
        #expect(notification["tag"] == "m1")
        #expect((tagged["android"] as? [String: Any])?["collapse_key"] == nil)
    }
}

@Suite("FCM answers read from the wire")
struct FCMRejectionTests {
    @Test func retryAfterIsReadAndBounded() {
        #expect(FCMRejection(httpStatus: 429, body: [], retryAfterHeader: "7").retryAfter == 7)
        #expect(FCMRejection(httpStatus: 429, body: [], retryAfterHeader: "0").retryAfter == 0)
        // A huge value from a broken proxy is an hour, not a crash or a retry in a thousand years.
        #expect(FCMRejection(httpStatus: 503, body: [], retryAfterHeader: "99999999999999999999").retryAfter == 3600)
        #expect(FCMRejection(httpStatus: 503, body: [], retryAfterHeader: "-5").retryAfter == nil)
        #expect(FCMRejection(httpStatus: 503, body: [], retryAfterHeader: "soon").retryAfter == nil)
        let date = FCMRejection(httpStatus: 503, body: [], retryAfterHeader: "Wed, 21 Oct 2015 07:28:00 GMT").retryAfter
        #expect(date == 0)
    }

    @Test func theMessageNameIsReadFromTheAnswer() {
        func name(_ answer: String) -> String { FCMClient.messageName(in: ByteBuffer(string: answer).readableBytesView) }
        #expect(name(#"{"name": "projects/p/messages/0:1"}"#) == "projects/p/messages/0:1")
        #expect(name("{\n  \"name\" :\t\"projects/p/messages/2\"\n}") == "projects/p/messages/2")
        #expect(name(#"{"name": 7}"#) == "")
        #expect(name(#"{"name": "projects/p/messages/\u0030"}"#) == "")
        #expect(name(#"{"name": "unterminated"#) == "")
        #expect(name("") == "")
    }

    @Test func theSendEndpointIsReadFromTheBaseURL() {
        func endpoint(_ url: String) -> FCMClient.Endpoint? { FCMClient.Endpoint(baseURL: url, projectID: "p") }
        #expect(
            endpoint("https://fcm.googleapis.com")
                == .init(host: "fcm.googleapis.com", port: 443, authority: "fcm.googleapis.com", sendPath: "/v1/projects/p/messages:send"))
        #expect(
            endpoint("https://proxy.example:8443/fcm%20relay/")
                == .init(
                    host: "proxy.example", port: 8443, authority: "proxy.example:8443", sendPath: "/fcm%20relay/v1/projects/p/messages:send"
                ))
        #expect(
            endpoint("https://[::1]:9000")
                == .init(host: "::1", port: 9000, authority: "[::1]:9000", sendPath: "/v1/projects/p/messages:send"))
        #expect(endpoint("http://fcm.googleapis.com") == nil)
        #expect(endpoint("fcm.googleapis.com") == nil)
    }

    @Test func onlyFCMsOwnDetailMarksATokenDead() {
        func disposition(_ status: Int, _ body: String) -> FCMDisposition {
            FCMRejection(httpStatus: status, body: Array(body.utf8), retryAfterHeader: nil).disposition
        }
        let unregistered =
            #"{"error":{"code":404,"status":"NOT_FOUND","message":"x","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}"#
        #expect(disposition(404, unregistered) == .tokenDead)
        // A wrong project or endpoint answers 404 too: no device is marked dead for it.
        #expect(disposition(404, #"{"error":{"code":404,"status":"NOT_FOUND","message":"Requested entity was not found."}}"#) == .permanent)
        #expect(disposition(404, "<html>not found</html>") == .permanent)
        #expect(disposition(401, "") == .refreshAccessToken)
        #expect(disposition(403, "") == .authenticationFailed)
        #expect(disposition(502, "") == .retry)
        #expect(disposition(400, "") == .permanent)
    }
}
