import Synchronization
import Testing

@testable import RetractStore

/// How the device feed's reads share statements (``StatementBatches``), with a
/// read of our own in place of the database: a read that finds a statement
/// free runs alone at once; reads that come while every statement runs are
/// read together by the next, at most `maximumBatch` at a time, each given
/// its own answer.
@Suite("Feed reads together")
struct StatementBatchesTests {
    struct Failed: Error, Equatable { var batch: [Int] }

    /// The batches read, in order; the first held until released.
    final class Reader: Sendable {
        let batches = Mutex<[[Int]]>([])
        let (released, release) = AsyncStream.makeStream(of: Void.self)
        let failing: Bool
        /// A batch read in a cancelled task fails, as a statement does.
        let failsWhenCancelled: Bool

        init(failing: Bool = false, failsWhenCancelled: Bool = false) {
            self.failing = failing
            self.failsWhenCancelled = failsWhenCancelled
        }

        func read(_ asks: [Int]) async -> [Result<Int, Failed>] {
            let first = batches.withLock { batches in
                batches.append(asks)
                return batches.count == 1
            }
            if first { for await _ in released { break } }
            let fails = failing || (failsWhenCancelled && Task.isCancelled)
            return asks.map { fails ? .failure(Failed(batch: asks)) : .success($0 * 10) }
        }
    }

    /// Starts `count` reads of 0, 1, … one after the other, the first held
    /// until all the others wait; each read's answer, in order.
    private static func answers(
        _ count: Int, _ reads: StatementBatches<Int, Int, Failed>, _ reader: Reader
    ) async -> [Result<Int, Failed>] {
        await withTaskGroup(of: (Int, Result<Int, Failed>).self) { group in
            for ask in 0..<count {
                group.addTask {
                    do throws(Failed) {
                        return (ask, .success(try await reads.answer(ask) { await reader.read($0) }))
                    } catch {
                        return (ask, .failure(error))
                    }
                }
                // In order: each one queued (or running, the first) before the next is asked.
                while reader.batches.withLock(\.count) == 0 || reads.waitingReads < ask { await Task.yield() }
            }
            reader.release.yield()
            var answers = [Result<Int, Failed>?](repeating: nil, count: count)
            for await (ask, answer) in group { answers[ask] = answer }
            return answers.map { $0! }
        }
    }

    @Test func readsThatComeWhileTheStatementRunsAreReadTogetherEachWithItsOwnAnswer() async throws {
        let reader = Reader()
        let answers = await Self.answers(10, StatementBatches(concurrency: 1), reader)
        #expect(answers == (0..<10).map { .success($0 * 10) })
        #expect(reader.batches.withLock { $0 } == [[0], Array(1..<10)])
    }

    @Test func aBatchHoldsAtMostItsMaximumAndTheRestFollowInOrder() async throws {
        let reader = Reader()
        let answers = await Self.answers(10, StatementBatches(concurrency: 1, maximumBatch: 4), reader)
        #expect(answers == (0..<10).map { .success($0 * 10) })
        #expect(reader.batches.withLock { $0 } == [[0], [1, 2, 3, 4], [5, 6, 7, 8], [9]])
    }

    @Test func aReadThatFindsAStatementFreeRunsAloneAtOnce() async throws {
        let reads = StatementBatches<Int, Int, Failed>(concurrency: 2)
        let reader = Reader()
        // The first holds one statement; the second finds the other free and is answered while the first still runs.
        let first = Task { try await reads.answer(0) { await reader.read($0) } }
        while reader.batches.withLock(\.count) == 0 { await Task.yield() }
        #expect(try await reads.answer(1) { await reader.read($0) } == 10)
        reader.release.yield()
        #expect(try await first.value == 0)
        #expect(reader.batches.withLock { $0 } == [[0], [1]])
        #expect(reads.waitingReads == 0)
    }

    @Test func aFailedStatementFailsEveryReadItCarriedAndTheNextOnesStillRun() async throws {
        let reader = Reader(failing: true)
        let reads = StatementBatches<Int, Int, Failed>(concurrency: 1, maximumBatch: 3)
        let answers = await Self.answers(5, reads, reader)
        #expect(
            answers == [.failure(Failed(batch: [0]))] + [1, 2, 3].map { _ in .failure(Failed(batch: [1, 2, 3])) } + [
                .failure(Failed(batch: [4]))
            ])
        // Nothing is left waiting, and a read after them runs at once.
        #expect(reads.waitingReads == 0)
        await #expect(throws: Failed(batch: [7])) { try await reads.answer(7) { await reader.read($0) } }
    }

    @Test func theReadsOfAStatementFailedByItsLeadersCancellationWaitForTheNext() async throws {
        let reads = StatementBatches<Int, Int, Failed>(concurrency: 1)
        let reader = Reader(failsWhenCancelled: true)
        let first = Task { try await reads.answer(0) { await reader.read($0) } }
        while reader.batches.withLock(\.count) == 0 { await Task.yield() }
        // Three reads wait behind the first statement; the one that leads the next is cancelled meanwhile.
        var waiting: [Task<Int, any Error>] = []
        for ask in 1...3 {
            waiting.append(Task { try await reads.answer(ask) { await reader.read($0) } })
            while reads.waitingReads < ask { await Task.yield() }
        }
        waiting[0].cancel()
        reader.release.yield()
        #expect(try await first.value == 0)
        await #expect(throws: Failed(batch: [1, 2, 3])) { try await waiting[0].value }
        // Not failed with it: read again, by the next statement.
        #expect(try await waiting[1].value == 20)
        #expect(try await waiting[2].value == 30)
        #expect(reader.batches.withLock { $0 } == [[0], [1, 2, 3], [2, 3]])
        #expect(reads.waitingReads == 0)
    }
}
