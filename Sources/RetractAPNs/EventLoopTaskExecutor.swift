import NIOCore

/// Runs Swift tasks on a NIO event loop.
///
/// Senders that run their tasks on the event loop of their APNs connections
/// (`withTaskExecutorPreference`) hand requests over and get answers back
/// without a thread hop: on a small machine that is most of the cost of a push.
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
public final class EventLoopTaskExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: the only stored property is an EventLoop, which is Sendable;
    // TaskExecutor's requirements are what keep the compiler from seeing it.
    public let eventLoop: any EventLoop

    public init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}
