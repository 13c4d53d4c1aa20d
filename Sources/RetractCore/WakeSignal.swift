import NIOConcurrencyHelpers

/// Wakes the idle lanes of a process's workers (one per engine, in its
/// ``PushSender``) when there may be work: a notification from the ledger, a
/// lane that made or finished work itself, or a window that grew.
///
/// A lane reads ``generation`` before it looks for work and, finding none,
/// waits ``wait(after:atMost:)`` with what it read: a signal that came in
/// between is not missed. The wait is bounded, so a lost signal costs at most
/// one poll interval.
final class WakeSignal: Sendable {
    private struct Waiter {
        var continuation: CheckedContinuation<Void, Never>
        var timer: Task<Void, Never>?
    }

    private struct State {
        var generation: UInt64 = 0
        var nextID = 0
        var waiters: [Int: Waiter] = [:]
    }

    private let state = NIOLockedValueBox(State())

    /// How many signals there have been.
    var generation: UInt64 { state.withLockedValue { $0.generation } }

    /// Wakes every waiting lane.
    func signal() {
        let woken = state.withLockedValue { state in
            state.generation &+= 1
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in woken {
            waiter.timer?.cancel()
            waiter.continuation.resume()
        }
    }

    /// Returns at the first signal after `seen` (at once if there has been
    /// one already), after `timeout`, or when the task is cancelled.
    func wait(after seen: UInt64, atMost timeout: Duration) async {
        let id = state.withLockedValue { state in
            defer { state.nextID &+= 1 }
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waiting = state.withLockedValue { state in
                    guard state.generation == seen, !Task.isCancelled else { return false }
                    state.waiters[id] = Waiter(continuation: continuation)
                    return true
                }
                guard waiting else {
                    continuation.resume()
                    return
                }
                let timer = Task {
                    try? await Task.sleep(for: timeout)
                    self.resume(id)
                }
                // The waiter may have been woken already; then the timer has nothing to end.
                let kept = state.withLockedValue { state in
                    guard state.waiters[id] != nil else { return false }
                    state.waiters[id]?.timer = timer
                    return true
                }
                if !kept { timer.cancel() }
            }
        } onCancel: {
            resume(id)
        }
    }

    private func resume(_ id: Int) {
        guard let waiter = state.withLockedValue({ $0.waiters.removeValue(forKey: id) }) else { return }
        waiter.timer?.cancel()
        waiter.continuation.resume()
    }
}
