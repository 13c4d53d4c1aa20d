import Foundation

/// The value of `operation`, or nil when it has not finished within
/// `seconds`; it is then cancelled and left to end on its own.
///
/// Unstructured tasks on purpose: a task group waits for every child, and a
/// child may be slow to honour cancellation (a network read, a Notification
/// Center call), while a Notification Service Extension's content handler must
/// be called on time. Both tasks are owned here and cancelled on the way out.
func withDeadline<T: Sendable>(seconds: TimeInterval, _ operation: @escaping @Sendable () async -> T) async -> T? {
    let work = Task { await operation() }
    let timer = Task { try? await Task.sleep(nanoseconds: nanoseconds(seconds)) }
    let result: T? = await withTaskCancellationHandler {
        await withCheckedContinuation { continuation in
            let first = FirstAnswer(continuation)
            Task { first.resume(returning: await work.value) }
            Task {
                await timer.value
                first.resume(returning: nil)
            }
        }
    } onCancel: {
        timer.cancel()
    }
    work.cancel()
    timer.cancel()
    return result
}

/// `seconds` as a sleep's nanoseconds: negative or NaN is none, and anything
/// past a day is a day, so that no value an app passes can trap the conversion.
private func nanoseconds(_ seconds: TimeInterval) -> UInt64 {
    guard seconds > 0 else { return 0 }
    return UInt64(min(seconds, 86_400) * 1_000_000_000)
}

/// Resumes a continuation with the first answer and ignores the rest.
private final class FirstAnswer<T: Sendable>: @unchecked Sendable {
    // @unchecked: `continuation` is only touched while holding `lock`.
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T?, Never>?

    init(_ continuation: CheckedContinuation<T?, Never>) {
        self.continuation = continuation
    }

    func resume(returning value: T?) {
        let waiting: CheckedContinuation<T?, Never>? = lock.locked {
            defer { continuation = nil }
            return continuation
        }
        waiting?.resume(returning: value)
    }
}
