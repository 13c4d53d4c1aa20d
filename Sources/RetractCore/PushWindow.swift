import NIOConcurrencyHelpers
import NIOCore

/// A counting semaphore for pushes in flight: `acquire` waits while the
/// window is full, `release` lets the longest waiter in.
final class PushWindow: Sendable {
    private struct State {
        var available: Int
        var waiters = CircularBuffer<CheckedContinuation<Void, Never>>()
    }

    private let state: NIOLockedValueBox<State>

    init(size: Int) {
        precondition(size > 0, "a window holds at least one push")
        state = NIOLockedValueBox(State(available: size))
    }

    func acquire() async {
        let acquired = state.withLockedValue { state in
            guard state.available > 0 else { return false }
            state.available -= 1
            return true
        }
        if acquired { return }
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLockedValue { state in
                // A release may have come between the two locks.
                if state.available > 0 {
                    state.available -= 1
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    func release() {
        let waiter = state.withLockedValue { state in
            guard let waiter = state.waiters.popFirst() else {
                state.available += 1
                return nil as CheckedContinuation<Void, Never>?
            }
            return waiter
        }
        waiter?.resume()
    }
}
