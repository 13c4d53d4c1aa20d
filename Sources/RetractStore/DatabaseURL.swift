import Foundation
import PostgresNIO

/// A PostgreSQL connection URL, as `DATABASE_URL` and `--database-url` take it:
/// `postgres://user:password@host:port/database?sslmode=disable|prefer|require`.
public struct DatabaseURL: Hashable, Sendable, CustomStringConvertible {
    public enum TLSMode: String, Hashable, Sendable {
        case disable, prefer, require
    }

    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    public var database: String
    public var tls: TLSMode

    /// Throws ``StoreError/Code/invalidInput`` naming what is wrong with `string`.
    public init(_ string: String) throws(StoreError) {
        func invalid(_ reason: String) -> StoreError {
            StoreError(.invalidInput, "database URL \(Self.redacted(string)): \(reason)")
        }
        guard let components = URLComponents(string: string), let scheme = components.scheme else {
            throw invalid("not a URL; expected postgres://user@host:port/database")
        }
        guard scheme == "postgres" || scheme == "postgresql" else {
            throw invalid("the scheme is \(scheme); expected postgres or postgresql")
        }
        guard let host = components.host, !host.isEmpty else { throw invalid("no host") }
        let database = String(components.path.drop(while: { $0 == "/" }))
        self.host = host
        port = components.port ?? 5432
        username = components.user.map { $0.removingPercentEncoding ?? $0 } ?? "postgres"
        password = components.password.map { $0.removingPercentEncoding ?? $0 }
        self.database = database.isEmpty ? username : (database.removingPercentEncoding ?? database)
        tls = .prefer
        for item in components.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                switch item.value {
                case "disable": tls = .disable
                case "allow", "prefer": tls = .prefer
                case "require", "verify-ca", "verify-full": tls = .require
                default: throw invalid("sslmode \(item.value ?? "") is not disable, prefer or require")
                }
            case "application_name", "connect_timeout":
                continue
            default:
                throw invalid("unknown parameter \(item.name)")
            }
        }
    }

    /// The URL with its password hidden, for messages and logs.
    public var description: String {
        let credentials = username + (password == nil ? "" : ":***")
        return "postgres://\(credentials)@\(host):\(port)/\(database)?sslmode=\(tls.rawValue)"
    }

    /// The URL pointing at another database on the same server.
    public func withDatabase(_ name: String) -> DatabaseURL {
        var url = self
        url.database = name
        return url
    }

    /// PostgresNIO's configuration for this URL.
    public var clientConfiguration: PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS =
            switch self.tls {
            case .disable: .disable
            case .prefer: .prefer(.makeClientConfiguration())
            case .require: .require(.makeClientConfiguration())
            }
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: tls)
        configuration.options.connectTimeout = .seconds(10)
        return configuration
    }

    /// PostgresNIO's configuration for a single connection to this URL.
    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        let tls: PostgresConnection.Configuration.TLS =
            switch self.tls {
            case .disable: .disable
            case .prefer: .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
            case .require: .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
        var configuration = PostgresConnection.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: tls)
        configuration.options.connectTimeout = .seconds(10)
        return configuration
    }

    private static func redacted(_ string: String) -> String {
        guard var components = URLComponents(string: string), components.password != nil else { return string }
        components.password = "***"
        return components.string ?? "(unreadable)"
    }
}
