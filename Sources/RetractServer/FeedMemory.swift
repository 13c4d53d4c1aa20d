import Foundation
import Logging
import Metrics
import NIOConcurrencyHelpers
import RetractKit
import RetractModel
import RetractStore
import ServiceLifecycle

/// What this server keeps in memory to answer the device feed without the
/// database when nothing is new: where each app's retractions reached, device
/// by device, and the `client` keys that read the feed.
///
/// A phone's page was read at a horizon: every retraction before it was
/// looked at, and any retraction taking a delivery after it has a place (its
/// `created_xid`) at or past it. A device that no retraction at or past the
/// horizon took has nothing new.
///
/// Kept by the ledger's notifications (`LISTEN retract_feed`, migration
/// 0017), sent when a retraction commits: its app, its place, and the
/// digests of the devices it took (or "all of them", past 100,000). An app
/// is first read from the ledger as its newest place for all its devices,
/// since which devices older retractions took is not known here. A key
/// revoked or changed empties the keys. While not listening nothing is kept,
/// and every question goes to the ledger.
///
/// A notification reaches the server after its commit, a few milliseconds
/// later or, on a server short of CPU, seconds. So the server ticks: every
/// `tick` it notifies the channel itself, and PostgreSQL delivers
/// notifications in commit order, so a tick heard back means every
/// retraction that committed before it was sent has been heard. Memory
/// answers only while its last tick heard was sent within `freshness`: an
/// answer from memory misses no retraction that committed more than
/// `freshness` before it, and a server too slow to hear its ticks asks the
/// ledger instead.
final class FeedMemory: Service, Sendable {
    /// Where one app's retractions reached.
    private struct Places {
        /// The newest place of a retraction of any of the app's devices.
        var all: UInt64
        /// The newest place of a retraction of each device named, when newer than `all`.
        var devices: [UInt64: UInt64] = [:]

        func newest(for device: UInt64) -> UInt64 { max(all, devices[device] ?? 0) }
    }

    private struct State {
        var listening = false
        /// Counts the times the state was emptied, so that a read begun before is not kept.
        var generation = 0
        /// The apps read from the ledger since listening began.
        var apps: [Int64: Places] = [:]
        /// What notifications said of apps not read yet: kept for when they are.
        var early: [Int64: Places] = [:]
        var devices = 0
        var keys: [[UInt8]: APIKeyRecord] = [:]
        /// When each tick not heard back yet was sent.
        var ticksSent: [UInt64: ContinuousClock.Instant] = [:]
        /// When the last tick heard back was sent: every retraction that
        /// committed before then has been heard.
        var heardThrough: ContinuousClock.Instant?

        mutating func empty(listening: Bool) {
            self.listening = listening
            generation += 1
            apps = [:]
            early = [:]
            devices = 0
            keys = [:]
            ticksSent = [:]
            heardThrough = nil
        }

        mutating func heard(tick number: UInt64) {
            guard let sent = ticksSent[number] else { return }
            heardThrough = max(heardThrough ?? sent, sent)
            ticksSent = ticksSent.filter { $0.key > number }
        }

        func isFresh(within freshness: Duration) -> Bool {
            heardThrough.map { ContinuousClock.now - $0 <= freshness } ?? false
        }

        mutating func note(app: Int64, xid: UInt64, devices named: [UInt64]?) {
            var places = apps[app] ?? early[app] ?? Places(all: 0)
            if let named {
                for device in named where places.devices[device] ?? 0 < xid && places.all < xid {
                    if places.devices.updateValue(xid, forKey: device) == nil { devices += 1 }
                }
            } else {
                places.all = max(places.all, xid)
            }
            if apps[app] != nil { apps[app] = places } else { early[app] = places }
            if devices > FeedMemory.maximumDevices { forgetDevices() }
        }

        /// Past the most devices kept: each app's devices count as all of them
        /// from their newest place on. Phones read since then go to the ledger once.
        mutating func forgetDevices() {
            for (app, places) in apps { apps[app] = Places(all: places.devices.values.reduce(places.all, max)) }
            for (app, places) in early { early[app] = Places(all: places.devices.values.reduce(places.all, max)) }
            devices = 0
        }
    }

    /// The most devices kept, over all apps (16 bytes and a dictionary's share each).
    static let maximumDevices = 1_000_000
    /// The most keys kept; past it, they are read again from the start.
    static let maximumKeys = 10_000

    private let store: RetractStore
    private let logger: Logger
    private let state = NIOLockedValueBox(State())
    /// This server, as its ticks name it.
    private let server = UUID()
    private let tick: Duration
    private let freshness: Duration

    /// - Parameters:
    ///   - tick: how often the server notifies the channel itself.
    ///   - freshness: how long after its sending a tick heard back lets memory answer.
    init(store: RetractStore, logger: Logger, tick: Duration = .milliseconds(100), freshness: Duration = .milliseconds(300)) {
        self.store = store
        self.logger = logger
        self.tick = tick
        self.freshness = freshness
    }

    /// Whether it listens, and so keeps anything.
    var isListening: Bool { state.withLockedValue(\.listening) }

    /// The key with this hash, revoked or not: from memory when known. Only
    /// keys whose one scope is `client` are kept (an app's public key, which
    /// every phone sends): another key's revocation is seen from the next
    /// request on, where a client key's is seen when its notification
    /// comes, milliseconds after the commit.
    func apiKey(hash: [UInt8]) async throws(StoreError) -> APIKeyRecord? {
        if let known = knownKey(hash: hash) { return known }
        let generation = state.withLockedValue { $0.listening ? $0.generation : nil }
        let record = try await store.apiKey(hash: hash)
        if let record, record.scopes == [.client], let generation {
            state.withLockedValue { state in
                guard state.generation == generation else { return }
                if state.keys.count >= Self.maximumKeys { state.keys = [:] }
                state.keys[hash] = record
            }
        }
        return record
    }

    /// The key with this hash when memory has it: nothing is read.
    func knownKey(hash: [UInt8]) -> APIKeyRecord? {
        state.withLockedValue { $0.keys[hash] }
    }

    /// Whether no retraction of the app at or past `horizon` took the device
    /// with this ``DeviceDigest``: true only when this server knows it; false
    /// when it does not (not listening, no tick heard within `freshness`, or
    /// the ledger could not be read), and the caller asks the ledger.
    func isQuiet(appID: Int64, device: UInt64, since horizon: UInt64) async -> Bool {
        enum Known {
            case newest(UInt64)
            case unread(generation: Int)
            case unknown
        }
        let known: Known = state.withLockedValue { [freshness] state in
            guard state.listening else { return .unknown }
            guard let places = state.apps[appID] else { return .unread(generation: state.generation) }
            guard state.isFresh(within: freshness) else { return .unknown }
            return .newest(places.newest(for: device))
        }
        switch known {
        case .newest(let newest):
            return newest < horizon
        case .unknown:
            return false
        case .unread(let generation):
            guard let read = try? await store.newestFeedPlaces(apps: [appID])[appID] else { return false }
            return state.withLockedValue { state in
                // Emptied since: what was read may predate a notification missed meanwhile.
                guard state.generation == generation else { return false }
                if state.apps[appID] == nil {
                    // What came while reading is as new as what was read, or newer.
                    var places = state.early.removeValue(forKey: appID) ?? Places(all: 0)
                    places.all = max(places.all, read)
                    state.apps[appID] = places
                }
                return state.apps[appID]!.newest(for: device) < horizon
            }
        }
    }

    /// Listens until the server shuts down, again a second after the
    /// connection is lost, and ticks while it listens.
    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await self.listenAndTick()
                } catch {
                    self.logger.warning(
                        "not listening for new retractions; the device feed asks the database for every page until listening again",
                        metadata: ["error": "\(error)"])
                }
                self.state.withLockedValue { $0.empty(listening: false) }
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Listens, and ticks every `tick` from the moment it listens, until
    /// the connection is lost (which throws) or the task is cancelled.
    private func listenAndTick() async throws {
        let (listening, heardOnce) = AsyncStream.makeStream(of: Void.self)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await self.store.listenForFeed(
                    listening: {
                        self.state.withLockedValue { $0.empty(listening: true) }
                        heardOnce.yield()
                    },
                    notified: { notification in
                        self.state.withLockedValue { state in
                            switch notification {
                            case .retraction(let app, let xid, let devices):
                                state.note(app: app, xid: xid, devices: devices)
                            case .keys:
                                state.keys = [:]
                                state.generation += 1
                            case .tick(let server, let number):
                                if server == self.server { state.heard(tick: number) }
                            case .unreadable:
                                state.empty(listening: true)
                            }
                        }
                    })
            }
            group.addTask {
                // From the moment it listens: a tick sent before is never heard.
                for await _ in listening { break }
                var number: UInt64 = 0
                while !Task.isCancelled {
                    number += 1
                    let sent = ContinuousClock.now
                    self.state.withLockedValue { $0.ticksSent[number] = sent }
                    // A tick that fails is never heard: memory answers nothing once the last one heard is too old.
                    try? await self.store.notifyFeedTick(server: self.server, number: number)
                    try? await Task.sleep(for: self.tick)
                }
            }
            // Listening ended (or failed): the ticks end with it.
            defer { group.cancelAll() }
            try await group.next()
        }
    }
}

/// `retract_feed_answers_total{answer}`: how the device feed answered.
struct FeedMetrics: Sendable {
    enum Answer: String, CaseIterable {
        /// 304 from memory: the app had nothing past the page's horizon.
        case fromMemory = "not-modified-from-memory"
        /// 304 after reading the page again, which listed nothing still.
        case readUnchanged = "not-modified-after-read"
        /// 200 with the page.
        case read = "page"
    }

    private let counters: [Answer: Counter]

    init(factory: any MetricsFactory) {
        counters = Dictionary(
            uniqueKeysWithValues: Answer.allCases.map {
                ($0, Counter(label: "retract_feed_answers_total", dimensions: [("answer", $0.rawValue)], factory: factory))
            })
    }

    func answered(_ answer: Answer) {
        counters[answer]?.increment()
    }
}
