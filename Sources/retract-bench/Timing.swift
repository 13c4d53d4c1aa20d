import Foundation
import RetractCore
import RetractKit
import RetractModel
import RetractStore

/// What the engine and client-alone benchmarks share.
enum Timing {
    /// Seconds to run `send(index)` for every index below `count`, with
    /// `window` lanes each taking every `window`-th index; every send must succeed.
    static func inLanes(count: Int, window: Int, _ send: @escaping @Sendable (Int) async throws -> Void) async throws -> Double {
        let started = ContinuousClock.now
        let failures = try await withThrowingTaskGroup(of: Int.self) { group in
            for lane in 0..<window {
                group.addTask {
                    var failures = 0
                    for index in stride(from: lane, to: count, by: window) {
                        do { try await send(index) } catch { failures += 1 }
                    }
                    return failures
                }
            }
            return try await group.reduce(0, +)
        }
        let seconds = (ContinuousClock.now - started).inSeconds
        guard failures == 0 else { throw CommandFailure("\(failures) of \(count) sends of the client alone failed") }
        return seconds
    }

    /// Seconds for one worker to take a retraction of `reference` to the end;
    /// every one of `count` devices must have been sent to.
    static func retraction(
        of reference: ReferenceID, app: App, count: Int, engine: RetractEngine, mode: RetractionMode = .background,
        selector: RetractionSelector? = nil, inspect: (RetractionStatus) throws -> Void = { _ in }
    ) async throws -> Double {
        let started = ContinuousClock.now
        let (retraction, _) = try await engine.startRetraction(
            app: app, target: selector.map { .selector($0) } ?? .references([reference]), requestedBy: "bench", mode: mode)
        try await RetractionWorker(engine: engine).finish([retraction.id])
        let seconds = (ContinuousClock.now - started).inSeconds
        let status = try await engine.status(of: retraction.id)
        guard status.retraction.counts.sent == count else {
            throw CommandFailure("the retraction reached \(status.retraction.counts.sent) of \(count) devices: \(status.failures)")
        }
        try inspect(status)
        return seconds
    }
}
