import Foundation
import Logging
import Metrics
import NIOConcurrencyHelpers
import RetractCore
import ServiceLifecycle

/// The console's live progress streams (`/console/retractions/{id}/events`).
///
/// One loop reads each watched retraction's status once a tick and hands it
/// to every stream of that retraction, however many browsers watch it. A
/// stream ends when its browser disconnects (the handler is cancelled), its
/// retraction finishes, a minute passes (the browser reconnects by itself),
/// or its session ends: at sign-out at once, and within
/// ``Limits/sessionCheck`` when it expires or its key is revoked. Streams
/// are capped per session and in all; with none open, nothing is read.
final class ProgressStreams: Service, Sendable {
    struct Limits: Sendable {
        /// Streams one signed-in browser may hold: a few tabs.
        var perSession = 4
        /// Streams all the sessions of one API key may hold.
        var perKey = 16
        /// Streams the server holds at once.
        var total = 200
        /// How often a watched retraction's status is read.
        var interval: Duration = .milliseconds(500)
        /// How often the sessions of open streams are checked.
        var sessionCheck: Duration = .seconds(2)
        /// How long one stream lasts; the browser then reconnects.
        var lifetime: Duration = .seconds(60)
    }

    /// Why a stream was not opened.
    enum Refusal: Error, Equatable {
        case sessionFull(Int)
        case keyFull(Int)
        case serverFull(Int)
        /// The server is shutting down.
        case stopped

        var message: String {
            switch self {
            case .sessionFull(let limit): "this browser follows \(limit) retractions live already; close a tab that follows one"
            case .keyFull(let limit): "this API key's sessions follow \(limit) retractions live already; close some"
            case .serverFull(let limit): "the server follows \(limit) retractions live already; try again shortly"
            case .stopped: "the server is stopping; try again shortly"
            }
        }
    }

    private struct Stream {
        var retraction: UUID
        var session: [UInt8]
        var key: UUID
        var until: ContinuousClock.Instant
        var continuation: AsyncStream<ConsoleProgress>.Continuation
    }

    private struct State {
        var streams: [UUID: Stream] = [:]
        /// The loop, while it waits for a first stream.
        var idle: CheckedContinuation<Void, Never>?
        /// Set once the server stops: no stream is opened after.
        var stopped = false
    }

    let limits: Limits
    private let engine: RetractEngine
    private let state = NIOLockedValueBox(State())
    private let reads: Counter
    private let openStreams: Gauge

    init(engine: RetractEngine, limits: Limits = Limits(), metricsFactory: any MetricsFactory) {
        self.engine = engine
        self.limits = limits
        reads = Counter(label: "retract_console_progress_reads_total", dimensions: [], factory: metricsFactory)
        openStreams = Gauge(label: "retract_console_progress_streams", dimensions: [], factory: metricsFactory)
    }

    /// Opens a stream of `retraction`'s progress for the session whose id
    /// hashes to `session`, signed in with the key `key`.
    func open(retraction: UUID, session: [UInt8], key: UUID) throws(Refusal) -> AsyncStream<ConsoleProgress> {
        let id = UUID()
        // A slow browser gets the latest progress, not a backlog.
        let (updates, continuation) = AsyncStream.makeStream(of: ConsoleProgress.self, bufferingPolicy: .bufferingNewest(1))
        let stream = Stream(retraction: retraction, session: session, key: key, until: .now + limits.lifetime, continuation: continuation)
        let opened = state.withLockedValue { state -> Result<(CheckedContinuation<Void, Never>?, Int), Refusal> in
            guard !state.stopped else { return .failure(.stopped) }
            guard state.streams.count < limits.total else { return .failure(.serverFull(limits.total)) }
            guard state.streams.values.count(where: { $0.session == session }) < limits.perSession else {
                return .failure(.sessionFull(limits.perSession))
            }
            guard state.streams.values.count(where: { $0.key == key }) < limits.perKey else { return .failure(.keyFull(limits.perKey)) }
            state.streams[id] = stream
            defer { state.idle = nil }
            return .success((state.idle, state.streams.count))
        }
        let (idle, count) = try opened.get()
        // The handler cancelled (its browser went) or the stream finished: either way it is no longer watched.
        continuation.onTermination = { [weak self] _ in self?.remove([id]) }
        openStreams.record(count)
        idle?.resume()
        return updates
    }

    /// Ends every stream of a session: it signed out.
    func end(session: [UInt8]) {
        finish { $0.session == session }
    }

    /// Streams open now.
    var count: Int { state.withLockedValue { $0.streams.count } }

    func run() async throws {
        await cancelWhenGracefulShutdown { await self.watch() }
        state.withLockedValue { $0.stopped = true }
        finish { _ in true }
    }

    // MARK: - The loop

    private func watch() async {
        var lastCheck = ContinuousClock.now
        while !Task.isCancelled {
            finish { $0.until <= .now }
            let watched = state.withLockedValue { Set($0.streams.values.map(\.retraction)) }
            guard !watched.isEmpty else {
                await waitForStream()
                continue
            }
            if ContinuousClock.now - lastCheck >= limits.sessionCheck {
                await endLapsedSessions()
                lastCheck = .now
            }
            for retraction in watched {
                reads.increment()
                guard let status = try? await engine.status(of: retraction) else { continue }
                publish(ConsoleProgress(status), of: retraction)
            }
            try? await Task.sleep(for: limits.interval)
        }
    }

    private func publish(_ progress: ConsoleProgress, of retraction: UUID) {
        let watchers = state.withLockedValue { $0.streams.values.filter { $0.retraction == retraction }.map(\.continuation) }
        for watcher in watchers { watcher.yield(progress) }
        if progress.finished { finish { $0.retraction == retraction } }
    }

    /// Ends the streams of sessions that expired or whose key was revoked.
    private func endLapsedSessions() async {
        let sessions = state.withLockedValue { Set($0.streams.values.map(\.session)) }
        guard let live = try? await engine.store.liveConsoleSessions(idHashes: sessions) else { return }
        finish { !live.contains($0.session) }
    }

    private func waitForStream() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLockedValue { state in
                    guard state.streams.isEmpty, !Task.isCancelled else { return true }
                    state.idle = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLockedValue { state in
                defer { state.idle = nil }
                return state.idle
            }?.resume()
        }
    }

    /// Finishes the streams `matching`; their handlers end their responses.
    private func finish(_ matching: (Stream) -> Bool) {
        let ended = state.withLockedValue { $0.streams.filter { matching($0.value) } }
        remove(Array(ended.keys))
        for stream in ended.values { stream.continuation.finish() }
    }

    private func remove(_ ids: [UUID]) {
        let count = state.withLockedValue { state in
            for id in ids { state.streams[id] = nil }
            return state.streams.count
        }
        openStreams.record(count)
    }
}
