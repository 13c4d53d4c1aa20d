import NIOConcurrencyHelpers

/// Questions to the ledger made together when they come together: the
/// device feed's page reads, and reads of conversations (``RetractStore/recordRead(_:)``).
///
/// Every push a phone receives may read its feed, a broadcast retracted
/// makes every phone that got it read at once, and a chat's reads come 10
/// to 50 times as often as its deletions. Each question alone is a
/// statement: a connection leased, a snapshot taken, a plan run, an answer
/// limit watched, a transaction committed, PostgreSQL's and PostgresNIO's
/// per-statement work done. Here at most `concurrency` statements run at a
/// time; a question that comes while they all run waits, and the next
/// statement takes every question waiting, up to `maximumBatch`, at once.
/// Nothing waits for company: a question that finds a statement free runs
/// at once, alone, so a quiet server answers as it did; the busier it is,
/// the more each statement carries.
///
/// No task is made for a batch: the question that starts one runs it,
/// answers the others, and hands the next batch to the first question
/// still waiting, which runs it in its own task.
final class StatementBatches<Ask: Sendable, Answer: Sendable, Failure: Error>: Sendable {
    /// One read's part in a batch: its question, and where its answer goes.
    struct Waiting: Sendable {
        var ask: Ask
        var turn: CheckedContinuation<Turn, Never>
    }

    /// What a waiting read is told: its answer, or to run a batch (itself first).
    enum Turn: Sendable {
        case answered(Result<Answer, Failure>)
        case lead([Waiting])
    }

    private struct State {
        /// Statements running. While any read waits, `concurrency` of them run.
        var running = 0
        var waiting: [Waiting] = []

        mutating func nextBatch(_ maximum: Int) -> [Waiting] {
            let batch = Array(waiting.prefix(maximum))
            waiting.removeFirst(batch.count)
            return batch
        }
    }

    private let concurrency: Int
    /// The most reads one statement makes.
    private let maximumBatch: Int
    private let state = NIOLockedValueBox(State())
    init(concurrency: Int, maximumBatch: Int = 64) {
        precondition(concurrency > 0 && maximumBatch > 0, "at least one statement at a time, of one read at least")
        self.concurrency = concurrency
        self.maximumBatch = maximumBatch
    }

    /// The answer to `ask`: read alone at once, or with the reads waiting
    /// beside it. `read` reads the asks given, in their order, one answer
    /// each; a batch is read by the `read` of the read that runs it.
    func answer(_ ask: Ask, reading read: ([Ask]) async -> [Result<Answer, Failure>]) async throws(Failure) -> Answer {
        let turn = await withCheckedContinuation { (turn: CheckedContinuation<Turn, Never>) in
            let lead = state.withLockedValue { state -> [Waiting]? in
                state.waiting.append(Waiting(ask: ask, turn: turn))
                // Reads wait only while every statement runs, so this one is the only one waiting.
                guard state.running < concurrency else { return nil }
                state.running += 1
                return state.nextBatch(maximumBatch)
            }
            if let lead { turn.resume(returning: .lead(lead)) }
        }
        switch turn {
        case .answered(let result):
            return try result.get()
        case .lead(let batch):
            return try await run(batch, reading: read).get()
        }
    }

    /// Reads `batch` (its first read being this task's), answers the others,
    /// and hands what waits to the first of it; returns this task's answer.
    private func run(_ batch: [Waiting], reading read: ([Ask]) async -> [Result<Answer, Failure>]) async -> Result<Answer, Failure> {
        let answers = await read(batch.map(\.ask))
        precondition(answers.count == batch.count, "one answer for each page asked")
        var others = Array(zip(batch.dropFirst(), answers.dropFirst()))
        if Task.isCancelled, case .failure = answers[0] {
            // This task's cancellation failed the statement: the others are not
            // cancelled, and wait for the next one, at the front.
            let given = others.map(\.0)
            state.withLockedValue { $0.waiting.insert(contentsOf: given, at: 0) }
            others = []
        }
        for (waiting, answer) in others { waiting.turn.resume(returning: .answered(answer)) }
        let next = state.withLockedValue { state -> [Waiting]? in
            guard !state.waiting.isEmpty else {
                state.running -= 1
                return nil
            }
            return state.nextBatch(maximumBatch)
        }
        if let next { next[0].turn.resume(returning: .lead(next)) }
        return answers[0]
    }
}

extension StatementBatches {
    /// Reads waiting for a statement, for tests.
    var waitingReads: Int { state.withLockedValue { $0.waiting.count } }
}
