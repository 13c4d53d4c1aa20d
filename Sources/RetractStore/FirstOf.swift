import NIOConcurrencyHelpers
import RetractModel

/// The result of whichever of two operations ends first; the other is
/// cancelled and left to end on its own (it is not awaited). Cancelling the
/// caller cancels both, and it returns with whichever then ends first.
package func firstOf<Value: Sendable>(
    _ first: @escaping @Sendable () async -> Value,
    _ second: @escaping @Sendable () async -> Value
) async -> Value {
    let state = NIOLockedValueBox(FirstOfState())
    return await withTaskCancellationHandler {
        await withCheckedContinuation { continuation in
            let finish: @Sendable (Value) -> Void = { value in
                let losers: [Task<Void, Never>]? = state.withLockedValue { state in
                    guard !state.resumed else { return nil }
                    state.resumed = true
                    return state.tasks
                }
                guard let losers else { return }
                continuation.resume(returning: value)
                for task in losers { task.cancel() }
            }
            let started = [Task { finish(await first()) }, Task { finish(await second()) }]
            // One may have ended, or the caller been cancelled, before the tasks were stored.
            let cancelNow = state.withLockedValue { state in
                state.tasks = started
                return state.resumed || state.cancelled
            }
            if cancelNow { for task in started { task.cancel() } }
        }
    } onCancel: {
        let tasks = state.withLockedValue { state in
            state.cancelled = true
            return state.tasks
        }
        for task in tasks { task.cancel() }
    }
}

/// What ``firstOf(_:_:)`` tracks under its lock.
private struct FirstOfState {
    var resumed = false
    var cancelled = false
    var tasks: [Task<Void, Never>] = []
}
