import Foundation
import RetractKit

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A device feed answered in this process, through a `URLProtocol`, so that
/// ``RetractionFeed`` runs its real requests and decoding: each stub has a
/// host of its own, so tests running side by side never see each other's.
final class FeedStub: @unchecked Sendable {
    // @unchecked: `requests` and `answer` are only touched while holding `lock`.

    /// What one request is answered with.
    enum Answer: Sendable {
        /// A feed page: each entry's references, then the cursor and whether
        /// more follow, its `ETag` when given, and each entry's account (none when not given).
        case page([[String]], cursor: String, hasMore: Bool = false, etag: String? = nil, accounts: [String?] = [])
        /// 304 Not Modified, with an `ETag` when given.
        case notModified(etag: String?)
        /// Any status and JSON body.
        case status(Int, String)
        /// No connection at all, as with the network down.
        case offline
        /// Never an answer; the request only ends when cancelled.
        case silence
    }

    let host = "feed-\(UUID().uuidString.lowercased()).test"
    private let lock = NSLock()
    private var requests: [URLRequest] = []
    private var answer: @Sendable (Int) -> Answer

    /// - Parameter answer: the answer to the request with this index, from 0.
    init(_ answer: @escaping @Sendable (Int) -> Answer) {
        self.answer = answer
        FeedStubProtocol.register(self)
    }

    /// Answers every request alike.
    convenience init(always answer: Answer) {
        self.init { _ in answer }
    }

    var feed: RetractionFeed {
        RetractionFeed(baseURL: URL(string: "https://\(host)")!, apiKey: "rk_test", session: FeedStubProtocol.session)
    }

    /// The `since` of each request, in order; nil where there was none.
    var sinces: [String?] {
        lock.withLock { requests }.map { request in
            request.url.flatMap { URLComponents(url: $0, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "since" }?.value }
        }
    }

    /// The `If-None-Match` of each request, in order; nil where there was none.
    var validators: [String?] {
        lock.withLock { requests }.map { $0.value(forHTTPHeaderField: "If-None-Match") }
    }

    var requestCount: Int { lock.withLock { requests.count } }

    fileprivate func answer(_ request: URLRequest) -> Answer {
        lock.withLock {
            requests.append(request)
            return answer(requests.count - 1)
        }
    }
}

private final class FeedStubProtocol: URLProtocol {
    static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [FeedStubProtocol.self]
        return URLSession(configuration: configuration)
    }()

    private static let lock = NSLock()
    nonisolated(unsafe) private static var stubs: [String: FeedStub] = [:]  // only touched while holding `lock`

    static func register(_ stub: FeedStub) {
        lock.withLock { stubs[stub.host] = stub }
    }

    override class func canInit(with request: URLRequest) -> Bool { true }
    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override func startLoading() {
        guard let url = request.url, let stub = Self.lock.withLock({ Self.stubs[url.host ?? ""] }) else {
            client?.urlProtocol(self, didFailWithError: URLError(.unsupportedURL))
            return
        }
        switch stub.answer(request) {
        case .page(let entries, let cursor, let hasMore, let etag, let accounts):
            let retractions = entries.enumerated().map { index, references in
                var entry = ["id": "r\(index)", "references": references, "retractedAt": "2026-11-26T10:00:00Z"] as [String: Any]
                if index < accounts.count, let account = accounts[index] { entry["account"] = account }
                return entry
            }
            let page: [String: Any] = ["retractions": retractions, "cursor": cursor, "hasMore": hasMore]
            respond(200, (try? JSONSerialization.data(withJSONObject: page)) ?? Data(), etag: etag)
        case .notModified(let etag):
            respond(304, Data(), etag: etag)
        case .status(let status, let body):
            respond(status, Data(body.utf8))
        case .offline:
            client?.urlProtocol(self, didFailWithError: URLError(.notConnectedToInternet))
        case .silence:
            break
        }
    }

    override func stopLoading() {}

    private func respond(_ status: Int, _ body: Data, etag: String? = nil) {
        var headers = ["Content-Type": "application/json"]
        if let etag { headers["ETag"] = etag }
        guard let url = request.url,
            let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers)
        else { return }
        client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
        client?.urlProtocol(self, didLoad: body)
        client?.urlProtocolDidFinishLoading(self)
    }
}
