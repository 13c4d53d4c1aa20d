import NIOConcurrencyHelpers
import NIOCore

/// A counting semaphore for pushes in flight: `acquire` waits while the
/// window is full, `release` lets the longest waiter in. Its size can change
/// while pushes are in flight (``resize(to:)``): a larger window lets waiters
/// in at once, a smaller one takes effect as pushes are answered.
final class PushWindow: Sendable {
    private struct State {
        var limit: Int
        var inUse = 0
        var waits = 0
        var waiters = CircularBuffer<CheckedContinuation<Void, Never>>()
    }

    private let state: NIOLockedValueBox<State>

    init(size: Int) {
        precondition(size > 0, "a window holds at least one push")
        state = NIOLockedValueBox(State(limit: size))
    }

    /// How many pushes it lets in flight at once now.
    var size: Int { state.withLockedValue { $0.limit } }

    /// How many times a push has had to wait for a place: while it grows,
    /// the window is what holds sending back.
    var waits: Int { state.withLockedValue { $0.waits } }

    func acquire() async {
        let acquired = state.withLockedValue { state in
            guard state.inUse < state.limit else { return false }
            state.inUse += 1
            return true
        }
        if acquired { return }
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLockedValue { state in
                // A release may have come between the two locks.
                if state.inUse < state.limit {
                    state.inUse += 1
                    return true
                }
                state.waiters.append(continuation)
                state.waits += 1
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    func release() {
        let waiter = state.withLockedValue { state in
            // The place goes to the longest waiter, unless the window has shrunk below what is in flight.
            guard state.inUse <= state.limit, let waiter = state.waiters.popFirst() else {
                state.inUse -= 1
                return nil as CheckedContinuation<Void, Never>?
            }
            return waiter
        }
        waiter?.resume()
    }

    /// Lets `size` pushes in flight from now on.
    func resize(to size: Int) {
        precondition(size > 0, "a window holds at least one push")
        let admitted = state.withLockedValue { state in
            state.limit = size
            var admitted: [CheckedContinuation<Void, Never>] = []
            while state.inUse < state.limit, let waiter = state.waiters.popFirst() {
                state.inUse += 1
                admitted.append(waiter)
            }
            return admitted
        }
        for waiter in admitted { waiter.resume() }
    }
}
