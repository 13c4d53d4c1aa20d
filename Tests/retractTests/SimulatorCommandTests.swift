import Crypto
import Foundation
import NIOCore
import RetractAPNs
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("retract simulator")
struct SimulatorCommandTests {
    @Test func runsAsAProcessThatAClientAndAnotherProcessCanUse() async throws {
        let scratch = try ScratchFolder()
        let key = P256.Signing.PrivateKey()
        let keyPath = try scratch.file("AuthKey.p8", key.pemRepresentation)
        let port = try freePort()
        let inboxPort = try freePort()
        let token = String(repeating: "0a", count: 32)
        let process = try RetractCLI.start([
            "simulator", "--port", "\(port)", "--inbox-port", "\(inboxPort)", "--cert-dir", scratch.url.path,
            "--key", "KEY1234567:TEAM123456:\(keyPath)", "--topic", "com.example.chat", "--unregistered", "\(token)@1700000000",
        ])
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        let caFile = scratch.url.appendingPathComponent("simulator-ca.pem")
        #expect(await eventually { FileManager.default.fileExists(atPath: caFile.path) && canConnect(to: inboxPort) })

        let client = try APNsClient(
            configuration: APNsClientConfiguration(
                environment: .custom(host: "127.0.0.1", port: port),
                authentication: .token(key: APNsSigningKey(contentsOfFile: keyPath), keyID: "KEY1234567", teamID: "TEAM123456"),
                additionalTrustRootsPEM: [try String(contentsOf: caFile, encoding: .utf8)]
            )
        )
        let body = #"{"aps":{"content-available":1},"notificationCustomData":{"pushNotificationReferenceId":"m1","isReferredNotificationMustRemoved":true}}"#
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

    @Test(arguments: [
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

/// A port nothing listens on right now.
func freePort() throws -> Int {
    let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(socket) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0 }
    }
    guard bound else { throw CLIError("cannot find a free port") }
    return Int(UInt16(bigEndian: address.sin_port))
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
