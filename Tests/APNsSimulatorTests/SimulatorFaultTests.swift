import APNsSimulator
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import SimulatorSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Simulator faults and inbox")
struct SimulatorFaultTests {
    let fixture = Fixture()

    func token(_ number: Int) -> String { String(format: "%064x", number) }

    @Test func unregisteredTokenAnswers410WithItsTimestamp() async throws {
        let since = Date(timeIntervalSince1970: 1_750_000_000.25)
        try await fixture.run(faults: APNsSimulatorFaults(unregisteredTokens: [token(1): since], badDeviceTokens: [token(2)])) {
            simulator, sender in
            let gone = try await sender.send(try fixture.headers(path: "/3/device/\(token(1))"), body: Fixture.body)
            #expect(gone.status == 410)
            #expect(gone.body == #"{"reason":"Unregistered","timestamp":1750000000250}"#)
            let bad = try await sender.send(try fixture.headers(path: "/3/device/\(token(2))"), body: Fixture.body)
            #expect(bad.status == 400 && bad.reason == "BadDeviceToken")
            #expect(try await sender.send(try fixture.headers(path: "/3/device/\(token(3))"), body: Fixture.body).status == 200)
        }
    }

    /// Which of 1,000 tokens a simulator with these rates refuses, and with what.
    func refusals(seed: UInt64) async throws -> [String: String] {
        try await fixture.run(faults: APNsSimulatorFaults(tooManyRequestsRate: 0.2, serviceUnavailableRate: 0.1, seed: seed)) {
            simulator, sender in
            let headers = try fixture.headers()
            return try await withThrowingTaskGroup(of: (String, String?).self) { group in
                for number in 0..<1_000 {
                    let token = token(number)
                    group.addTask {
                        let answer = try await sender.send(headers.replacing(":path", with: "/3/device/\(token)"), body: Fixture.body)
                        return (token, answer.reason)
                    }
                }
                var refused: [String: String] = [:]
                for try await (token, reason) in group { refused[token] = reason }
                return refused.compactMapValues { $0 }
            }
        }
    }

    @Test func randomFaultsHitTheirRatesReproducibly() async throws {
        let first = try await refusals(seed: 42)
        let again = try await refusals(seed: 42)
        let other = try await refusals(seed: 43)
        #expect(first == again)
        #expect(first != other)
        let tooMany = first.values.filter { $0 == "TooManyRequests" }.count
        let unavailable = first.values.filter { $0 == "ServiceUnavailable" }.count
        #expect((150...250).contains(tooMany), "\(tooMany) of 1000 answered 429")
        #expect((60...140).contains(unavailable), "\(unavailable) of 1000 answered 503")
    }

    @Test func latencyDelaysEveryAnswer() async throws {
        try await fixture.run(faults: APNsSimulatorFaults(latency: .milliseconds(300))) { simulator, sender in
            _ = try await sender.send(try fixture.headers(), body: Fixture.body)  // connect first
            let started = ContinuousClock.now
            #expect(try await sender.send(try fixture.headers(), body: Fixture.body).status == 200)
            #expect(ContinuousClock.now - started >= .milliseconds(300))
        }
    }

    @Test func concurrentStreamLimitIsAnnouncedAndRespected() async throws {
        try await fixture.run(faults: APNsSimulatorFaults(latency: .milliseconds(50), maxConcurrentStreams: 5)) { simulator, sender in
            let headers = try fixture.headers()
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for number in 0..<40 {
                    let path = "/3/device/\(token(number))"
                    group.addTask { try await sender.send(headers.replacing(":path", with: path), body: Fixture.body).status }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 200, count: 40))
            #expect(simulator.statistics.peakConcurrentStreams == 5)
        }
    }

    @Test func goAwayAfterNStreamsIsCounted() async throws {
        try await fixture.run(faults: APNsSimulatorFaults(goAwayAfterStreams: 3)) { simulator, sender in
            for number in 0..<7 {
                let answer = try await sender.send(try fixture.headers(path: "/3/device/\(token(number))"), body: Fixture.body)
                #expect(answer.status == 200)
            }
            #expect(simulator.statistics.goAwaysSent == 2)
            #expect(simulator.statistics.connections == 3)
        }
    }

    @Test func inboxKeepsHeadersAndBodyAndIsReadableOverHTTP() async throws {
        try await fixture.run(inboxPort: 0) { simulator, sender in
            let headers = try fixture.headers().replacing("apns-collapse-id", with: "m1")
            _ = try await sender.send(headers, body: Fixture.body)
            _ = try await sender.send(try fixture.headers().replacing("apns-topic", with: "com.other"), body: Fixture.body)

            let inbox = simulator.inbox(for: Fixture.token.uppercased())
            #expect(inbox.count == 1)
            let push = try #require(inbox.first)
            #expect(push.headers[":path"] == "/3/device/\(Fixture.token)")
            #expect(push.collapseID == "m1")
            #expect(push.pushType == "background")
            #expect(push.headers["authorization"] == nil)
            #expect(String(decoding: push.body, as: UTF8.self) == Fixture.body)
            #expect((push.userInfo["notificationCustomData"] as? [String: Any])?["pushNotificationReferenceId"] as? String == "m1")

            let inboxPort = try #require(simulator.inboxPort)
            let (data, response) = try await URLSession.shared.data(
                from: URL(string: "http://127.0.0.1:\(inboxPort)/inbox/\(Fixture.token)")!)
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            let overHTTP = try decoder.decode([APNsReceivedPush].self, from: data)
            #expect(overHTTP.map(\.apnsID) == [push.apnsID])
            #expect(overHTTP.first?.body == push.body)

            let (statsData, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(inboxPort)/stats")!)
            let statistics = try decoder.decode(APNsSimulatorStatistics.self, from: statsData)
            #expect(statistics.accepted == 1 && statistics.rejected == 1)
            #expect(statistics.lastAcceptedAt.map { abs($0.timeIntervalSince(push.receivedAt)) < 1 } == true)
            #expect(statistics.rejectedByReason == ["TopicDisallowed": 1])

            var delete = URLRequest(url: URL(string: "http://127.0.0.1:\(inboxPort)/inbox")!)
            delete.httpMethod = "DELETE"
            _ = try await URLSession.shared.data(for: delete)
            #expect(simulator.inbox(for: Fixture.token).isEmpty)
            let (missing, missingResponse) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(inboxPort)/nothing")!)
            #expect((missingResponse as? HTTPURLResponse)?.statusCode == 404)
            #expect(String(decoding: missing, as: UTF8.self).contains("GET /inbox/<token>"))
        }
    }
    /// A phone taken offline in-process gets only the latest push sent
    /// meanwhile, when it is back, and ``APNsSimulator/screen(of:)`` shows it.
    @Test func aPhoneTakenOfflineGetsOnlyTheLatestPushWhenItIsBack() async throws {
        let clock = NIOLockedValueBox(Date())
        func wait(_ seconds: TimeInterval) { clock.withLockedValue { $0 += seconds } }
        let device = token(7)
        let path = "/3/device/\(device)"
        func original(_ message: String) -> String {
            #"{"aps":{"alert":{"body":"text of \#(message)"}},"notificationCustomData":{"pushNotificationReferenceId":"\#(message)"}}"#
        }
        try await fixture.run(now: { clock.withLockedValue { $0 } }) { simulator, sender in
            let alert = try fixture.alertHeaders().replacing(":path", with: path)
            #expect(try await sender.send(alert.replacing("apns-collapse-id", with: "m1"), body: original("m1")).status == 200)
            wait(10)
            simulator.takeOffline(deviceToken: device)
            wait(10)
            // Fixture.body retracts m1; the next message replaces it in APNs's store.
            #expect(try await sender.send(try fixture.headers(path: path), body: Fixture.body).status == 200)
            wait(10)
            #expect(try await sender.send(alert.replacing("apns-collapse-id", with: "m2"), body: original("m2")).status == 200)
            wait(10)
            let away = await simulator.screen(of: device)
            #expect(away.texts.keys.sorted() == ["m1"])
            #expect(away.stored == 1)
            #expect(away.storedAndReplaced == 1)
            simulator.bringOnline(deviceToken: device)
            let back = await simulator.screen(of: device)
            #expect(back.texts.keys.sorted() == ["m1", "m2"])
            #expect(back.stored == 0)
            #expect(back.storedAndReplaced == 1)
            #expect(simulator.phone(of: device).offline.count == 1)
            #expect(await simulator.screen(of: token(8)).storedAndReplaced == 0)
        }
    }
}
