import Crypto
import Foundation
import NIOCore
import RetractAPNs
import RetractTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("retract simulator")
struct SimulatorCommandTests {
    @Test func runsAsAProcessThatAClientAndAnotherProcessCanUse() async throws {
        let token = String(repeating: "0a", count: 32)
        let simulator = try await SimulatorProcess.start(keyed: true, arguments: ["--unregistered", "\(token)@1700000000"])
        defer { simulator.stop() }
        let inboxPort = simulator.inboxPort
        let client = try simulator.apnsClient()
        let body =
            #"{"aps":{"content-available":1},"notificationCustomData":{"pushNotificationReferenceId":"m1","isReferredNotificationMustRemoved":true}}"#
        let live = String(repeating: "0b", count: 32)
        _ = try await client.send(APNsRequest(deviceToken: live, topic: "com.example.chat", pushType: .background, body: Array(body.utf8)))
        await #expect(throws: APNsError.self) {
            try await client.send(APNsRequest(deviceToken: token, topic: "com.example.chat", pushType: .background, body: Array(body.utf8)))
        }
        await client.shutdown()

        let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(inboxPort)/inbox/\(live)")!)
        let pushes = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
        #expect(pushes.count == 1)
        let (stats, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(inboxPort)/stats")!)
        let statistics = try #require(try JSONSerialization.jsonObject(with: stats) as? [String: Any])
        #expect(statistics["accepted"] as? Int == 1)
        #expect((statistics["rejectedByReason"] as? [String: Int]) == ["Unregistered": 1])
    }

    /// Phones as the simulator models them: force-quit phones whose extension
    /// may hide notifications, over their background budget, as a separate
    /// process reports them on GET /screen/<token>.
    @Test func reportsWhatEachPhoneDisplays() async throws {
        let simulator = try await SimulatorProcess.start(
            keyed: true, arguments: ["--phones", "force-quit=50,over-budget=50", "--service-extension", "filtering"])
        defer { simulator.stop() }
        let inboxPort = simulator.inboxPort
        let client = try simulator.apnsClient()
        let original = #"{"aps":{"alert":{"body":"secret"}},"notificationCustomData":{"pushNotificationReferenceId":"m1"}}"#
        let silent =
            #"{"aps":{"content-available":1},"notificationCustomData":{"pushNotificationReferenceId":"m1","isReferredNotificationMustRemoved":true}}"#
        let carrier =
            #"{"aps":{"alert":{"body":"Deleted"},"mutable-content":1},"notificationCustomData":{"pushNotificationReferenceId":"m1","isReferredNotificationMustRemoved":true}}"#
        let tokens = (1...8).map { String(repeating: String(format: "%02x", $0), count: 32) }
        func screen(_ token: String) async throws -> [String: Any] {
            let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(inboxPort)/screen/\(token)")!)
            return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        }
        for token in tokens {
            _ = try await client.send(
                APNsRequest(deviceToken: token, topic: "com.example.chat", pushType: .alert, collapseID: "m1", body: Array(original.utf8)))
            _ = try await client.send(
                APNsRequest(deviceToken: token, topic: "com.example.chat", pushType: .background, body: Array(silent.utf8)))
            // No phone here gets the silent push: the original stays.
            let afterSilent = try await screen(token)
            #expect((afterSilent["showing"] as? [[String: Any]])?.map { $0["text"] as? String } == ["secret"])
            #expect(afterSilent["dropped"] as? Int == 1)
        }
        let kinds = try await Set(
            tokens.asyncMap { try await screen($0)["phone"] as? [String: Any] }.map {
                "\($0?["appState"] ?? "")/\($0?["backgroundBudget"] ?? "")"
            })
        #expect(kinds == ["force-quit/3", "background/0"])
        for token in tokens {
            _ = try await client.send(
                APNsRequest(deviceToken: token, topic: "com.example.chat", pushType: .alert, collapseID: "m1", body: Array(carrier.utf8)))
            // The extension removes the original and hides the carrier.
            #expect((try await screen(token)["showing"] as? [Any])?.isEmpty == true)
        }
        await client.shutdown()
    }

    /// iOS keeping only the latest push, as a separate process reports it:
    /// two background retractions a second apart wake a suspended app once,
    /// with the later; a phone taken offline with POST /offline/<token> gets
    /// only the latest push sent meanwhile, once POST /online/<token> brings it back.
    @Test func reportsWhatKeepingOnlyTheLatestPushLeavesOnAPhone() async throws {
        let simulator = try await SimulatorProcess.start(keyed: true, arguments: ["--burst-window", "10"])
        defer { simulator.stop() }
        let inboxPort = simulator.inboxPort
        let client = try simulator.apnsClient()
        func original(_ message: String) -> APNsRequest {
            let body =
                #"{"aps":{"alert":{"body":"text of \#(message)"}},"notificationCustomData":{"pushNotificationReferenceId":"\#(message)"}}"#
            return APNsRequest(deviceToken: "", topic: "com.example.chat", pushType: .alert, collapseID: message, body: Array(body.utf8))
        }
        func retraction(_ message: String) -> APNsRequest {
            let body =
                #"{"aps":{"content-available":1},"notificationCustomData":{"pushNotificationReferenceId":"\#(message)","isReferredNotificationMustRemoved":true}}"#
            return APNsRequest(deviceToken: "", topic: "com.example.chat", pushType: .background, body: Array(body.utf8))
        }
        func send(_ request: APNsRequest, to token: String) async throws {
            var request = request
            request.deviceToken = token
            _ = try await client.send(request)
        }
        func call(_ method: String, _ path: String) async throws -> [String: Any] {
            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(inboxPort)\(path)")!)
            request.httpMethod = method
            let (data, _) = try await URLSession.shared.data(for: request)
            return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        }
        func texts(_ screen: [String: Any]) -> [String]? {
            (screen["showing"] as? [[String: Any]])?.compactMap { $0["text"] as? String }
        }

        let suspended = String(repeating: "0c", count: 32)
        try await send(original("m1"), to: suspended)
        try await send(retraction("m1"), to: suspended)
        try await Task.sleep(for: .seconds(1))
        try await send(retraction("m2"), to: suspended)
        // The app was woken once, for m2: m1 stays.
        let burst = try await call("GET", "/screen/\(suspended)")
        #expect(texts(burst) == ["text of m1"])
        #expect(burst["coalesced"] as? Int == 1)
        #expect(burst["dropped"] as? Int == 0)
        #expect((burst["phone"] as? [String: Any])?["burstWindow"] as? Double == 10)

        let away = String(repeating: "0d", count: 32)
        try await send(original("m1"), to: away)
        let wentOffline = try await call("POST", "/offline/\(away)")
        #expect(wentOffline["isOffline"] as? Bool == true)
        try await send(retraction("m1"), to: away)
        try await send(original("m2"), to: away)
        let whileOffline = try await call("GET", "/screen/\(away)")
        #expect(texts(whileOffline) == ["text of m1"])
        #expect(whileOffline["stored"] as? Int == 1)
        #expect(whileOffline["storedAndReplaced"] as? Int == 1)
        let cameBack = try await call("POST", "/online/\(away)")
        #expect(cameBack["isOffline"] as? Bool == false)
        #expect((cameBack["offline"] as? [[String: Any]])?.count == 1)
        // Only m2 was delivered: the retraction of m1 was replaced while the phone was away.
        let back = try await call("GET", "/screen/\(away)")
        #expect(texts(back) == ["text of m1", "text of m2"])
        #expect(back["stored"] as? Int == 0)
        #expect(back["storedAndReplaced"] as? Int == 1)
        // The other phone was never offline.
        #expect(try await call("GET", "/screen/\(suspended)")["storedAndReplaced"] as? Int == 0)
        await client.shutdown()
    }

    @Test(arguments: [
        (["--burst-window=-1"], "retract simulator: --burst-window -1.0: 0 or more seconds"),
        (
            ["--phones", "asleep=100"],
            #"retract simulator: --phones asleep=100: "asleep" is not background, force-quit, low-power or over-budget"#
        ),
        (["--phones", "force-quit"], "retract simulator: --phones force-quit: expected KIND=PERCENT, such as force-quit=15"),
        (["--key", "no-colons"], "retract simulator: --key no-colons: expected KEYID:TEAMID:PEM-FILE"),
        (["--key", "K:T:/nonexistent/AuthKey.p8"], "retract simulator: /nonexistent/AuthKey.p8: no such file"),
        (["--unregistered", "xyz"], "retract simulator: --unregistered xyz: expected HEX[@UNIX-SECONDS]"),
    ])
    func badArgumentsExitTwoWithOneLine(arguments: [String], message: String) throws {
        let result = try RetractCLI.run(["simulator", "--port", "0"] + arguments)
        #expect(result.status == 2)
        #expect(result.stderr == message + "\n")
    }

    @Test func aKeyFileThatIsNotAKeyExitsTwo() throws {
        let scratch = try ScratchFolder()
        let path = try scratch.file("AuthKey.p8", "not a key")
        let result = try RetractCLI.run(["simulator", "--port", "0", "--key", "K:T:\(path)"])
        #expect(result.status == 2)
        #expect(result.stderr == "retract simulator: \(path): not a P-256 key in PEM form\n")
    }
}

/// Whether something accepts connections on the port.
func canConnect(to port: Int) -> Bool {
    let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(socket) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
}

/// Whether `condition` holds within `timeout`, checking every 20 ms.
func eventually(within timeout: Duration = .seconds(10), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else { return false }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return true
}
