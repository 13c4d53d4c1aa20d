import Foundation
import NIOSSL
import PostgresNIO
import RetractModel

/// A PostgreSQL connection URL, as `DATABASE_URL` and `--database-url` take it:
/// `postgres://user:password@host:port/database?sslmode=MODE&sslrootcert=FILE`.
///
/// The modes are libpq's: `disable` (no TLS), `prefer` (TLS when the server
/// offers it, the certificate not checked; the default), `require` (TLS or
/// no connection, the certificate not checked), `verify-ca` (TLS, the
/// certificate signed by a trusted authority) and `verify-full` (that, and
/// issued for the host connected to). `sslrootcert` names the PEM file of the
/// authorities trusted for the verify modes (the system's when not given).
package struct DatabaseURL: Hashable, Sendable, CustomStringConvertible {
    package enum TLSMode: String, Hashable, Sendable, CaseIterable {
        case disable, prefer, require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    package var host: String
    package var port: Int
    package var username: String
    package var password: String?
    package var database: String
    package var tls: TLSMode
    /// The PEM file of the certificate authorities trusted in the verify modes.
    package var rootCertificatePath: String?

    /// Throws ``StoreError/Code/invalidInput`` naming what is wrong with `string`.
    package init(_ string: String) throws(StoreError) {
        func invalid(_ reason: String) -> StoreError {
            StoreError(.invalidInput, "database URL \(Self.redacted(string)): \(reason)")
        }
        guard let components = URLComponents(string: string), let scheme = components.scheme else {
            throw invalid(
                "not a URL; expected postgres://user:password@host:port/database (percent-encode a password's /, #, ?, @ and %)")
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
                if item.value == "allow" {
                    tls = .prefer
                } else if let mode = item.value.flatMap(TLSMode.init(rawValue:)) {
                    tls = mode
                } else {
                    throw invalid(
                        "sslmode \(item.value ?? "") is not one of \(TLSMode.allCases.map(\.rawValue).joined(separator: ", "))")
                }
            case "sslrootcert":
                guard let path = item.value, !path.isEmpty else { throw invalid("sslrootcert: the path of a PEM file") }
                rootCertificatePath = path
            case "application_name", "connect_timeout":
                continue
            default:
                throw invalid("unknown parameter \(item.name)")
            }
        }
        if rootCertificatePath != nil, tls != .verifyCA, tls != .verifyFull {
            throw invalid("sslrootcert is used by sslmode=verify-ca or verify-full only; sslmode is \(tls.rawValue)")
        }
    }

    /// The URL with its password hidden, for messages and logs.
    package var description: String {
        let credentials = username + (password == nil ? "" : ":***")
        let root = rootCertificatePath.map { "&sslrootcert=\($0)" } ?? ""
        return "postgres://\(credentials)@\(host):\(port)/\(database)?sslmode=\(tls.rawValue)\(root)"
    }

    /// The URL pointing at another database on the same server.
    package func withDatabase(_ name: String) -> DatabaseURL {
        var url = self
        url.database = name
        return url
    }

    /// PostgresNIO's configuration for this URL.
    ///
    /// - Throws: ``StoreError/Code/invalidInput`` when `sslrootcert` cannot be read.
    package func clientConfiguration() throws(StoreError) -> PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS =
            switch self.tls {
            case .disable: .disable
            case .prefer: .prefer(try tlsConfiguration())
            case .require, .verifyCA, .verifyFull: .require(try tlsConfiguration())
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
            case .prefer: .prefer(try NIOSSLContext(configuration: try tlsConfiguration()))
            case .require, .verifyCA, .verifyFull: .require(try NIOSSLContext(configuration: try tlsConfiguration()))
            }
        var configuration = PostgresConnection.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: tls)
        configuration.options.connectTimeout = .seconds(10)
        return configuration
    }

    /// TLS as the mode asks: `prefer` and `require` encrypt without checking
    /// whose certificate it is, as libpq does; the verify modes check it.
    private func tlsConfiguration() throws(StoreError) -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        switch tls {
        case .disable, .prefer, .require: configuration.certificateVerification = .none
        case .verifyCA: configuration.certificateVerification = .noHostnameVerification
        case .verifyFull: configuration.certificateVerification = .fullVerification
        }
        if let path = rootCertificatePath {
            do {
                configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(path))
            } catch {
                throw StoreError(
                    .invalidInput, "database URL \(self): sslrootcert \(path) is not a readable PEM certificate file (\(error))")
            }
        }
        return configuration
    }

    /// `string` with any password hidden, whether or not it parses: the
    /// text between the first `:` after the scheme's `//` and the last `@`
    /// (a password may hold `/`, `#`, `?` and `@` themselves); without an
    /// `@`, what follows that `:` unless it is a port; and a `password=` parameter.
    static func redacted(_ string: String) -> String {
        var text = Substring(string)
        var redacted = ""
        if let schemeEnd = text.range(of: "://") {
            redacted += text[..<schemeEnd.upperBound]
            text = text[schemeEnd.upperBound...]
        }
        if let at = text.lastIndex(of: "@"), let colon = text[..<at].firstIndex(of: ":") {
            redacted += text[...colon] + "***"
            text = text[at...]
        } else if !text.contains("@"), let colon = text.firstIndex(of: ":") {
            // `user:password` with the host left out, or `host:port`: a port is all digits.
            let rest = text[text.index(after: colon)...]
            let end = rest.firstIndex(where: { "/?#".contains($0) }) ?? rest.endIndex
            if !rest[..<end].allSatisfy(\.isNumber) {
                redacted += text[...colon] + "***"
                text = rest[end...]
            }
        }
        redacted += text
        // libpq also takes the password as a parameter.
        return redacted.replacingOccurrences(of: #"(?i)(password=)[^&]*"#, with: "$1***", options: .regularExpression)
    }
}
