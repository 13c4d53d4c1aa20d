import Hummingbird
import NIOConcurrencyHelpers

/// The request context of the API: Hummingbird's, and notes the handlers
/// leave for the request middleware's log line (which key asked).
package struct APIContext: RequestContext {
    package var coreContext: CoreRequestContextStorage
    let notes = RequestNotes()

    package init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }
}

/// Shared between the middleware and the handler of one request: the context
/// itself is copied on the way in.
final class RequestNotes: Sendable {
    private let callerBox = NIOLockedValueBox<String?>(nil)

    var caller: String? {
        get { callerBox.withLockedValue { $0 } }
        set { callerBox.withLockedValue { $0 = newValue } }
    }
}
