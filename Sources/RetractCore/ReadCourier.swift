import Foundation
import Logging
import NIOCore
import RetractKit
import RetractModel
import RetractStore

/// Pushes the reads the ledger owes devices (docs/reads.md): claims marks
/// (`FOR UPDATE SKIP LOCKED`, with a lease), sends each device one silent
/// background push with what it must remove (every claimed conversation of
/// one account, then its other recent reads riding along, and the badge of
/// the newest read), through the engine's transports and windows, and
/// records the outcomes in one statement. A read that came while its push
/// was out is owed again. Runs beside a ``RetractionWorker``'s lanes, woken
/// by reads taken in this process and by the ledger's notifications of the
/// others'.
package struct ReadCourier: Sendable {
    let engine: RetractEngine

    /// Marks claimed per look at the ledger.
    static let batch = 256
    /// Loops claiming at once: one sends while the other claims.
    static let loops = 2
    /// How long a claim holds before another courier may take the mark.
    static let lease = Duration.seconds(30)
    /// How long an idle loop waits for a wake before looking again.
    static let poll = Duration.seconds(1)
    /// Attempts after which a read's push is given up: the feed still lists it.
    static let maximumAttempts = 8

    package init(engine: RetractEngine) {
        self.engine = engine
    }

    private var store: RetractStore { engine.store }
    private var logger: Logger { engine.logger }
    private var sender: PushSender { engine.sender }

    /// Pushes until `keepGoing` turns false (checked between batches) or the
    /// task is cancelled; database errors are logged and waited out.
    /// - Parameter mayClaim: false while claims must wait (the ledger takes no writes).
    package func run(while keepGoing: @escaping @Sendable () -> Bool, mayClaim: @escaping @Sendable () -> Bool = { true }) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await listen() }
            for _ in 0..<Self.loops {
                group.addTask { await loop(while: keepGoing, mayClaim: mayClaim) }
            }
            // The loops end on their own; the listener when they have.
            for _ in 0..<Self.loops { await group.next() }
            group.cancelAll()
        }
    }

    private func loop(while keepGoing: @escaping @Sendable () -> Bool, mayClaim: @escaping @Sendable () -> Bool) async {
        let wake = engine.readWake
        while !Task.isCancelled && keepGoing() {
            let seen = wake.generation
            guard mayClaim() else {
                await wake.wait(after: seen, atMost: Self.poll)
                continue
            }
            do {
                let since = Date().addingTimeInterval(-engine.settings.historyWindow.inSeconds)
                let claimed = try await store.claimReadPushes(limit: Self.batch, lease: Self.lease, historySince: since)
                guard !claimed.isEmpty else {
                    await wake.wait(after: seen, atMost: Self.poll)
                    continue
                }
                // A full batch: more may be due, for the other loop to claim meanwhile.
                if claimed.count >= Self.batch { wake.signal() }
                let results = await send(claimed)
                do {
                    try await store.finishReadPushes(results)
                } catch {
                    logger.warning("read pushes' outcomes could not be recorded; their claims lapse", metadata: ["error": "\(error)"])
                }
            } catch {
                if Task.isCancelled { break }
                logger.warning("read pushes could not be claimed; trying again", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Sends what is due now, batch by batch, until nothing is: what the
    /// command line does after a read when no server runs. A push to try
    /// again later stays owed, for `retract serve`'s courier.
    ///
    /// - Returns: the pushes finished (sent, or given up), and those left owed.
    package func sendDue() async throws(RetractError) -> (finished: Int, owed: Int) {
        var (finished, owed) = (0, 0)
        while true {
            let since = Date().addingTimeInterval(-engine.settings.historyWindow.inSeconds)
            let claimed = try await RetractError.store { () async throws(StoreError) in
                try await store.claimReadPushes(limit: Self.batch, lease: Self.lease, historySince: since)
            }
            guard !claimed.isEmpty else { return (finished, owed) }
            let results = await send(claimed)
            for (_, result) in results {
                if case .done = result { finished += 1 } else { owed += 1 }
            }
            try await RetractError.store { () async throws(StoreError) in try await store.finishReadPushes(results) }
        }
    }

    /// Turns the ledger's notifications of reads taken by other processes
    /// into wake-ups, listening again a second after the connection is lost.
    private func listen() async {
        let wake = engine.readWake
        while !Task.isCancelled {
            do {
                try await store.listenForReads { wake.signal() }
                try? await Task.sleep(for: .seconds(1))
            } catch {
                if Task.isCancelled { break }
                logger.warning("not listening for reads; the courier polls", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Sends every claimed push, at once within the engine's windows.
    func send(_ claimed: [ClaimedReadPush]) async -> [(push: ClaimedReadPush, result: ReadPushResult)] {
        var apps: [Int64: App?] = [:]
        for id in Set(claimed.map(\.appID)) { apps[id] = try? await engine.app(id: id) }
        return await withTaskGroup(of: (ClaimedReadPush, ReadPushResult).self) { group in
            for push in claimed {
                guard let app = apps[push.appID] ?? nil else {
                    // Removed, or not readable now: a later claim tries again, until the attempts run out.
                    group.addTask { (push, retryOrGiveUp(push, after: .seconds(5), "its app could not be read")) }
                    continue
                }
                let transport: any PushTransport
                do throws(RetractError) {
                    transport = try sender.transport(for: app, via: push.transport)
                } catch {
                    let reason = error.publicMessage
                    group.addTask { (push, retryOrGiveUp(push, after: .seconds(30), reason)) }
                    continue
                }
                let pacing = sender.pacing(for: app, via: push.transport)
                await sender.acquire(pacing)
                group.addTask {
                    defer { sender.release(pacing) }
                    return (push, await send(push, app: app, via: transport, pacing: pacing))
                }
            }
            var results: [(push: ClaimedReadPush, result: ReadPushResult)] = []
            for await (push, result) in group { results.append((push, result)) }
            return results
        }
    }

    private func send(_ push: ClaimedReadPush, app: App, via transport: any PushTransport, pacing: TransportPacing) async -> ReadPushResult {
        let bodies: [Data]
        do {
            bodies = try Self.bodies(for: push, dialect: app.dialect, limit: transport.bodyLimit)
        } catch {
            logger.warning("a read's push could not be made; given up", metadata: ["app": "\(app.name)", "error": "\(error)"])
            return .done
        }
        var outcome = PushOutcome.accepted
        for body in bodies {
            let outgoing = OutgoingPush(token: push.token, body: ByteBuffer(bytes: body), kind: .retraction(.background))
            outcome = await sender.send(outgoing, via: transport, pacing: pacing, attempt: push.attempts)
            guard case .accepted = outcome else { break }
        }
        sender.metrics.count(1, .read, outcome: outcome)
        switch outcome {
        case .accepted:
            return .done
        case .tokenDead(let since, let reason):
            do {
                try await store.markDead([DeadToken(token: push.token, since: since, reason: reason)], appID: app.id)
            } catch {
                logger.warning("a dead token could not be recorded", metadata: ["app": "\(app.name)", "error": "\(error)"])
            }
            return .done
        case .retry(let delay, let reason):
            return retryOrGiveUp(push, after: delay, reason)
        case .unreachable(let reason):
            return retryOrGiveUp(push, after: .seconds(2), reason)
        case .authenticationFailed(let reason):
            return retryOrGiveUp(push, after: .seconds(30), reason)
        case .failed(let reason):
            logger.warning("a read's push was refused; given up", metadata: ["app": "\(app.name)", "reason": "\(reason)"])
            return .done
        }
    }

    private func retryOrGiveUp(_ push: ClaimedReadPush, after delay: Duration, _ reason: String) -> ReadPushResult {
        guard push.attempts < Self.maximumAttempts else {
            logger.warning(
                "a read's push was given up; the device feed lists it",
                metadata: ["attempts": "\(push.attempts)", "reason": "\(reason)"])
            return .done
        }
        return .retry(after: delay)
    }

    /// The bodies of a device's read push: background, with the badge in its custom data;
    /// what the claimed reads carry first, then the device's other recent
    /// reads as fit (``PayloadBuilder/retractionBody(for:threads:addingWhatFitsOf:limit:aps:moreInFeed:)``,
    /// which says when the feed holds the rest). The legacy dialect carries
    /// one reference per push and nothing rides along.
    static func bodies(for push: ClaimedReadPush, dialect: PayloadDialect, limit: Int) throws -> [Data] {
        let builder = PayloadBuilder(dialect: dialect, account: push.account, badge: push.badge)
        let aps = RetractionAPS.background
        guard let first = push.references.first else { return [] }
        guard dialect == .canonical else { return try builder.retractionBodies(for: push.references, limit: limit, aps: aps) }
        let rest = (push.references.dropFirst() + push.history).map(PayloadBuilder.Retracted.reference)
        return [try builder.retractionBody(for: [first], addingWhatFitsOf: rest, limit: limit, aps: aps).body]
    }
}
