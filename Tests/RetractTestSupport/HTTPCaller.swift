import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An HTTP answer as a test looks at it.
package struct HTTPAnswer: Sendable, CustomStringConvertible {
    package var status: Int
    /// Header names in lowercase.
    package var headers: [String: String]
    package var body: Data

    package var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as a JSON object, or nil.
    package var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] }

    /// The last part of a problem's `type`: `invalid-field`, `unauthorized`, ...
    package var problem: String? { (json?["type"] as? String)?.components(separatedBy: "/problems/").last }

    /// A problem's `field`.
    package var field: String? { json?["field"] as? String }

    package func header(_ name: String) -> String? { headers[name.lowercased()] }

    package var description: String { "HTTP \(status) \(text.prefix(600))" }
}

/// Calls a server over real HTTP with URLSession.
package struct HTTPCaller: Sendable {
    package let baseURL: URL
    private let session: URLSession

    package init(baseURL: URL) {
        self.baseURL = baseURL
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 60
        // Cookies are the tests' to send: a Set-Cookie must not replace a Cookie header a test gives.
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        session = URLSession(configuration: configuration)
    }

    package init(port: Int) {
        self.init(baseURL: URL(string: "http://127.0.0.1:\(port)")!)
    }

    /// `method path`, with `key` as the bearer token and `body` as JSON
    /// (unless `contentType` says otherwise).
    package func call(
        _ method: String, _ path: String, key: String? = nil, body: String? = nil, contentType: String? = "application/json",
        headers: [String: String] = [:]
    ) async throws -> HTTPAnswer {
        guard let url = URL(string: path, relativeTo: baseURL) else { throw CallError(description: "bad path \(path)") }
        var request = URLRequest(url: url)
        request.httpMethod = method
        if let key { request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization") }
        if let body {
            request.httpBody = Data(body.utf8)
            if let contentType { request.setValue(contentType, forHTTPHeaderField: "Content-Type") }
        }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw CallError(description: "no HTTP answer from \(url)") }
        var lowercased: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { lowercased[name.lowercased()] = value }
        }
        return HTTPAnswer(status: http.statusCode, headers: lowercased, body: data)
    }

    /// Polls `GET path` until `done` holds of the answer, or `timeout` passes.
    package func poll(
        _ path: String, key: String? = nil, headers: [String: String] = [:], timeout: Duration = .seconds(60),
        until done: (HTTPAnswer) -> Bool
    ) async throws -> HTTPAnswer {
        let deadline = ContinuousClock.now + timeout
        while true {
            let answer = try? await call("GET", path, key: key, headers: headers)
            if let answer, done(answer) { return answer }
            guard ContinuousClock.now < deadline else {
                throw CallError(
                    description:
                        "GET \(path) did not reach the expected answer within \(timeout); last: \(answer.map { "\($0)" } ?? "none")")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    package struct CallError: Error, CustomStringConvertible {
        package var description: String
        package init(description: String) { self.description = description }
    }
}
