import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Catches up on retractions a device missed: iOS throttles background
/// pushes and drops them for an app the user force-quit, so an app asks
/// Retract at launch what was retracted for its token since it last asked,
/// and removes those notifications with the same ``RetractionHandler``.
///
/// ```swift
/// let feed = RetractionFeed(baseURL: URL(string: "https://retract.example.com")!, apiKey: clientKey)
/// let result = try await feed.catchUp(token: DeviceToken(deviceTokenData), since: savedCursor, handler: handler)
/// savedCursor = result.cursor
/// ```
///
/// The key is a `client` scope key: it only reads which references were
/// retracted for a token, so shipping it inside the app is what it is for.
public struct RetractionFeed: Sendable {
    /// One answer of `GET /v1/devices/{token}/retractions`.
    public struct Page: Hashable, Sendable {
        /// The references retracted in this page, of notifications this
        /// device received, each within its account.
        public var retracted: RetractedReferences
        /// Those of the app's only account (retractions that name no account).
        public var references: Set<ReferenceID> { retracted.references(of: nil) }
        /// Pass it as `since` next time.
        public var cursor: String
        public var hasMore: Bool
        /// The page's validator (its `ETag`): pass it with the same `since`
        /// next time, and a server with nothing new answers 304 without a
        /// body. Nil from a server that gives none.
        public var validator: String?
        /// Whether the server answered 304 Not Modified to the validator
        /// passed: nothing new after `since` (``references`` is empty,
        /// ``cursor`` is `since`).
        public var notModified: Bool

        /// - Parameter accountReferences: the references of retractions of an account, by account.
        public init(
            references: Set<ReferenceID>, accountReferences: [String: Set<ReferenceID>] = [:], cursor: String, hasMore: Bool,
            validator: String? = nil, notModified: Bool = false
        ) {
            var retracted = RetractedReferences(references)
            for (account, references) in accountReferences { retracted.insert(references, account: account) }
            self.retracted = retracted
            self.cursor = cursor
            self.hasMore = hasMore
            self.validator = validator
            self.notModified = notModified
        }
    }

    /// Why a page could not be read; the feed never throws anything else.
    public struct FeedError: Error, Hashable, Sendable, CustomStringConvertible {
        /// The HTTP status, or nil when no answer came.
        public var status: Int?
        /// The problem's `type` from the server, such as `https://retract.dev/problems/unauthorized`.
        public var type: String?
        public var detail: String

        public var description: String {
            status.map { "HTTP \($0): \(detail)" } ?? detail
        }
    }

    public let baseURL: URL
    private let apiKey: String
    private let app: String?
    private let account: String?
    private let session: URLSession

    /// - Parameters:
    ///   - app: the app's name in Retract; needed only when the key is for several apps.
    ///   - account: read only the retractions of this account (`?account=`);
    ///     nil reads every account's, each removed within its own.
    public init(baseURL: URL, apiKey: String, app: String? = nil, account: String? = nil, session: URLSession = .shared) {
        self.baseURL = baseURL
        self.apiKey = apiKey
        self.app = app
        self.account = account
        self.session = session
    }

    /// Reads the retractions after `cursor` (nil: from the start), one page,
    /// for a device with an APNs token. With the `validator` of the page last
    /// read from the same `cursor`, a server with nothing new answers
    /// without a body (``Page/notModified``).
    public func page(
        for token: DeviceToken, since cursor: String?, limit: Int? = nil, validator: String? = nil
    ) async throws(FeedError) -> Page {
        try await page(at: Device(token), since: cursor, limit: limit, validator: validator)
    }

    /// Reads one page for a device reached through Firebase Cloud Messaging,
    /// by its FCM registration token.
    public func page(
        forFCMToken token: String, since cursor: String?, limit: Int? = nil, validator: String? = nil
    ) async throws(FeedError) -> Page {
        try await page(at: Device(fcmToken: token), since: cursor, limit: limit, validator: validator)
    }

    /// A device as the feed's URL names it; ``FeedCursor`` keeps it in the App Group.
    struct Device: Codable, Hashable, Sendable {
        var pathToken: String
        var transport: String?

        init(pathToken: String, transport: String?) {
            self.pathToken = pathToken
            self.transport = transport
        }

        init(_ token: DeviceToken) { self.init(pathToken: token.hex, transport: nil) }

        init(fcmToken: String) { self.init(pathToken: fcmToken, transport: "fcm") }
    }

    private func page(at device: Device, since cursor: String?, limit: Int?, validator: String?) async throws(FeedError) -> Page {
        var components = URLComponents(
            url: baseURL.appendingPathComponent("v1/devices/\(device.pathToken)/retractions"), resolvingAgainstBaseURL: false)
        var query: [URLQueryItem] = []
        if let transport = device.transport { query.append(URLQueryItem(name: "transport", value: transport)) }
        if let cursor { query.append(URLQueryItem(name: "since", value: cursor)) }
        if let app { query.append(URLQueryItem(name: "app", value: app)) }
        if let account { query.append(URLQueryItem(name: "account", value: account)) }
        if let limit { query.append(URLQueryItem(name: "limit", value: String(limit))) }
        components?.queryItems = query.isEmpty ? nil : query
        guard let url = components?.url else { throw FeedError(status: nil, type: nil, detail: "cannot make a URL from \(baseURL)") }
        // The validator is sent by hand: URLSession's own cache stays out of it.
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData)
        request.setValue("Bearer \(apiKey)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        // A validator says what came after a cursor: without one, it is not this page's.
        if let validator, cursor != nil { request.setValue(validator, forHTTPHeaderField: "If-None-Match") }
        let (data, status, etag) = try await fetch(request)
        if status == 304, let cursor, validator != nil {
            return Page(references: [], cursor: cursor, hasMore: false, validator: etag ?? validator, notModified: true)
        }
        guard status == 200 else {
            let problem = try? JSONDecoder().decode(Problem.self, from: data)
            throw FeedError(status: status, type: problem?.type, detail: problem?.detail ?? "the server answered \(status)")
        }
        guard let answer = try? JSONDecoder().decode(Answer.self, from: data) else {
            throw FeedError(status: status, type: nil, detail: "the answer is not a retraction feed page")
        }
        var page = Page(references: [], cursor: answer.cursor, hasMore: answer.hasMore, validator: etag)
        for entry in answer.retractions {
            // An entry of an account says so; one that names none is the app's only account's.
            page.retracted.insert(entry.references.map { ReferenceID($0) }, account: entry.account.flatMap { $0.isEmpty ? nil : $0 })
        }
        return page
    }

    /// Reads every page after `cursor` and removes what they name through
    /// `handler`, in one pass over Notification Center.
    ///
    /// - Returns: what the handler did, and the cursor to keep for next time
    ///   (`cursor` itself when nothing new came, or when the removal was
    ///   ``RetractionOutcome/notConfirmed(_:)``).
    public func catchUp(
        token: DeviceToken, since cursor: String?, handler: RetractionHandler
    ) async throws(FeedError) -> (outcome: RetractionOutcome, cursor: String?) {
        try await catchUp(Device(token), since: cursor, handler: handler)
    }

    /// ``catchUp(token:since:handler:)`` for a device reached through FCM, by its registration token.
    public func catchUp(
        fcmToken: String, since cursor: String?, handler: RetractionHandler
    ) async throws(FeedError) -> (outcome: RetractionOutcome, cursor: String?) {
        try await catchUp(Device(fcmToken: fcmToken), since: cursor, handler: handler)
    }

    /// Reads the feed from the cursor `saved` keeps, removes what it names
    /// through `handler`, and only then moves the cursor, so a process
    /// stopped in between reads the same entries again rather than skipping
    /// them; so does a removal Notification Center did not confirm. The app at launch and its Notification Service Extension share
    /// one cursor this way.
    ///
    /// - Returns: what the handler did; nil when the app has saved no token yet.
    public func catchUp(from saved: FeedCursor, handler: RetractionHandler) async throws(FeedError) -> RetractionOutcome? {
        try await catchUp(from: saved, handler: handler, maximumPages: Self.maximumPages)?.outcome
    }

    /// ``catchUp(from:handler:)`` reading at most `maximumPages` pages; the
    /// cursor then stops after the last page read. Also says which references
    /// the feed named.
    func catchUp(
        from saved: FeedCursor, handler: RetractionHandler, maximumPages: Int
    ) async throws(FeedError) -> (outcome: RetractionOutcome, references: RetractedReferences)? {
        guard let position = saved.position else { return nil }
        let read = try await references(
            for: position.device, since: position.cursor, validator: position.validator, maximumPages: maximumPages)
        // Past a deadline, the caller has moved on without this answer: remove nothing it did not see.
        guard !Task.isCancelled else { throw FeedError(status: nil, type: nil, detail: "cancelled") }
        let outcome = read.references.isEmpty ? RetractionOutcome.noMatch : await handler.retract(read.references)
        // A removal Notification Center did not confirm is read and asked
        // for again next time; a cursor that cannot be saved only means
        // reading these entries again.
        if case .notConfirmed = outcome { return (outcome, read.references) }
        if read.cursor != position.cursor || read.validator != position.validator, let cursor = read.cursor {
            try? saved.advance(to: cursor, validator: read.validator, for: position.device)
        }
        return (outcome, read.references)
    }

    private func catchUp(
        _ device: Device, since cursor: String?, handler: RetractionHandler
    ) async throws(FeedError) -> (outcome: RetractionOutcome, cursor: String?) {
        let read = try await references(for: device, since: cursor, validator: nil, maximumPages: Self.maximumPages)
        guard !read.references.isEmpty else { return (.noMatch, read.cursor) }
        let outcome = await handler.retract(read.references)
        // Not confirmed: the same entries are read, and their removal asked for, again.
        if case .notConfirmed = outcome { return (outcome, cursor) }
        return (outcome, read.cursor)
    }

    /// The references retracted for `device` after `cursor`, read page by
    /// page (the first with `validator`), the cursor after the last page
    /// read (`cursor` itself when there was nothing new), and the validator
    /// to send from that cursor: the last page's when it listed nothing,
    /// since only "nothing new" is worth asking about again.
    private func references(
        for device: Device, since cursor: String?, validator: String?, maximumPages: Int
    ) async throws(FeedError) -> (references: RetractedReferences, cursor: String?, validator: String?) {
        var references = RetractedReferences()
        var cursor = cursor
        var validator = validator
        // A server that kept saying "more" would otherwise keep the app busy forever.
        for _ in 0..<max(maximumPages, 1) {
            let page = try await page(at: device, since: cursor, limit: nil, validator: validator)
            references.formUnion(page.retracted)
            validator = page.retracted.isEmpty ? page.validator : nil
            cursor = page.cursor
            if !page.hasMore { break }
        }
        return (references, cursor, validator)
    }

    /// The most pages one ``catchUp(token:since:handler:)`` reads.
    static let maximumPages = 100

    /// The answer's body, status and `ETag`.
    private func fetch(_ request: URLRequest) async throws(FeedError) -> (Data, Int, String?) {
        let running = RunningTask()
        let result: Result<(Data, Int, String?), FeedError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // The completion-handler form: async `data(for:)` needs iOS 15, RetractKit runs on 13.
                let task = session.dataTask(with: request) { data, response, error in
                    if let error {
                        continuation.resume(returning: .failure(FeedError(status: nil, type: nil, detail: error.localizedDescription)))
                    } else if let response = response as? HTTPURLResponse {
                        continuation.resume(
                            returning: .success((data ?? Data(), response.statusCode, response.value(forHTTPHeaderField: "ETag"))))
                    } else {
                        continuation.resume(returning: .failure(FeedError(status: nil, type: nil, detail: "no HTTP answer")))
                    }
                }
                let cancelled = running.start(task)
                task.resume()
                if cancelled { task.cancel() }
            }
        } onCancel: {
            running.cancel()
        }
        return try result.get()
    }

    /// The data task of one fetch, for cancelling it from another thread.
    private final class RunningTask: @unchecked Sendable {
        // @unchecked: both fields are only touched under `lock`.
        private let lock = NSLock()
        private var task: URLSessionDataTask?
        private var cancelled = false

        /// Notes the task; true when the fetch was cancelled before it began.
        func start(_ task: URLSessionDataTask) -> Bool {
            lock.locked {
                self.task = task
                return cancelled
            }
        }

        func cancel() {
            let task: URLSessionDataTask? = lock.locked {
                cancelled = true
                return self.task
            }
            task?.cancel()
        }
    }

    private struct Answer: Decodable {
        struct Entry: Decodable {
            var references: [String]
            /// The account the retraction was of; absent: the app's only account.
            var account: String?
        }

        var retractions: [Entry]
        var cursor: String
        var hasMore: Bool
    }

    private struct Problem: Decodable {
        var type: String?
        var detail: String?
    }
}
