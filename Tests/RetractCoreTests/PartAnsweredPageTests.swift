import Foundation
import NIOCore
import RetractCore
import RetractKit
import RetractModel
import RetractPush
import RetractTestSupport
import Testing

/// A page whose burst its service answered only in part, as a connection
/// pool coming back from an outage one connection at a time does: some
/// pushes reach APNs, the ones routed to a connection still being refused
/// do not. Every device APNs took must be counted, and not sent again.
@Suite("A page answered in part")
struct PartAnsweredPageTests {
    /// Which devices, by their place in the page's token order, reach the
    /// service on the first pass; after it, every push does.
    enum FirstPass: String, CaseIterable, CustomTestStringConvertible {
        /// Every other device: two connections, one back and one not.
        case alternate
        /// All but the first device, whose push went to the connection still refused.
        case allButTheFirst
        /// Only the last one.
        case onlyTheLast

        func reaches(_ place: Int, of count: Int) -> Bool {
            switch self {
            case .alternate: place % 2 == 0
            case .allButTheFirst: place != 0
            case .onlyTheLast: place == count - 1
            }
        }

        var testDescription: String { rawValue }
    }

    /// On the in-memory queue: the rule is the worker's (``Settlement``), the
    /// queue's part (remainders that wait) is the contract both queues keep.
    @Test(arguments: FirstPass.allCases)
    func everyDeviceTheServiceTookIsSentOnceAndTheRestWaitForIt(firstPass: FirstPass) async throws {
        let devices = TestTokens.tokens(0..<50)
        let service = PartlyReachable(devices: devices, firstPass: firstPass)
        let queue = InMemoryWorkQueue()
        let app = try await queue.seedApp("split")
        try await queue.seed(devices.map { Delivery(appID: app.id, reference: "r", token: $0, sentAt: Date()) })
        let retraction = try await queue.seedRetraction(RetractionRequest(appID: app.id, target: .references(["r"]), requestedBy: "tests"))
        let settings = EngineSettings(
            window: 100, pageSize: 50, lanes: 1, idlePoll: .milliseconds(50), retryPolicy: EngineTests.quickRetries)
        let worker = RetractionWorker(queue: queue, transports: service, settings: settings, logger: TestDatabase.logger)
        try await FaultTests.within(.seconds(60)) { try await worker.finish([retraction.id]) }

        let done = try #require(try await queue.retraction(id: retraction.id))
        #expect(done.state == .done)
        #expect(done.counts == RetractionCounts(total: 50, sent: 50))
        let notOnce = devices.filter { service.delivered(to: $0) != 1 }.count
        #expect(notOnce == 0, "devices not delivered exactly once")
        #expect(service.firstPassMissed == (0..<50).filter { !firstPass.reaches($0, of: 50) }.count)
    }
}

/// A push service reached by some pushes of a page's first pass and by all
/// later ones; it counts what each device was delivered.
final class PartlyReachable: TransportProvider, PushTransport, @unchecked Sendable {
    // @unchecked: `attempts` and `deliveries` are only touched under `lock`.
    private let places: [DeviceToken: Int]
    private let firstPass: PartAnsweredPageTests.FirstPass
    private let lock = NSLock()
    private var attempts: [DeviceToken: Int] = [:]
    private var deliveries: [DeviceToken: Int] = [:]
    private var missed = 0

    init(devices: [DeviceToken], firstPass: PartAnsweredPageTests.FirstPass) {
        places = Dictionary(uniqueKeysWithValues: devices.sorted().enumerated().map { ($1, $0) })
        self.firstPass = firstPass
    }

    func delivered(to token: DeviceToken) -> Int { lock.withLock { deliveries[token, default: 0] } }
    var firstPassMissed: Int { lock.withLock { missed } }

    var bodyLimit: Int { 4096 }
    func problem(with body: ByteBuffer, kind: OutgoingPush.Kind) -> String? { nil }

    func send(_ push: OutgoingPush) async -> PushVerdict {
        lock.withLock {
            defer { attempts[push.token, default: 0] += 1 }
            if attempts[push.token, default: 0] == 0, let place = places[push.token], !firstPass.reaches(place, of: places.count) {
                missed += 1
                return .unreachable(reason: "cannot connect to APNs: connection refused")
            }
            deliveries[push.token, default: 0] += 1
            return .delivered
        }
    }

    func transport(for app: App, via service: PushService) throws(RetractError) -> any PushTransport { self }
    func readCredentials(of registration: AppRegistration) throws(RetractError) {}
    func reloadCredentials() {}
    func shutdown() async {}
}
