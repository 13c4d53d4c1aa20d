import Hummingbird
import NIOConcurrencyHelpers

/// The routes the server registers, as `METHOD /path/{parameter}`: what the
/// spec test compares with docs/openapi.yaml, and what tells a wrong method
/// (405) from an unknown path (404).
package final class RouteTable: Sendable {
    package struct Route: Hashable, Sendable, CustomStringConvertible {
        package var method: String
        /// OpenAPI style: `/v1/retractions/{id}`.
        package var path: String
        package var description: String { "\(method) \(path)" }
    }

    private let table = NIOLockedValueBox<[Route]>([])

    package var routes: [Route] { table.withLockedValue { $0 } }

    /// Notes a route given in Hummingbird's form (`/v1/retractions/:id`).
    func add(_ method: HTTPRequest.Method, _ path: String) {
        let openAPIPath = path.split(separator: "/", omittingEmptySubsequences: false).map { segment in
            segment.hasPrefix(":") ? "{\(segment.dropFirst())}" : String(segment)
        }.joined(separator: "/")
        table.withLockedValue { $0.append(Route(method: method.rawValue, path: openAPIPath)) }
    }

    /// The methods registered for a concrete path, such as `/v1/retractions/42`.
    func methods(matching path: String) -> [String] {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        return routes.filter { route in
            let pattern = route.path.split(separator: "/", omittingEmptySubsequences: false)
            guard pattern.count == segments.count else { return false }
            return zip(pattern, segments).allSatisfy { expected, actual in
                (expected.hasPrefix("{") && !actual.isEmpty) || expected == actual
            }
        }.map(\.method)
    }
}
