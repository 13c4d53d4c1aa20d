import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import RetractStore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where completion webhooks may go, checked when a webhook is set and again
/// before every attempt: its host and port must be on the allow-list, and
/// every address its host resolves to must be public, unless the operator
/// allows the range (`--allowed-webhook-network`) or names the address itself
/// on the list. The attempt then connects to the address that was checked,
/// so a name that resolves elsewhere a moment later (DNS rebinding) changes
/// nothing.
package struct WebhookDestinations: Sendable, Hashable {
    /// `host` (port 443) or `host:port`, as `--allowed-webhook-host` gives them.
    package var allowedHosts: [String]
    /// Ranges a webhook may reach although they are loopback, private,
    /// link-local or unique-local.
    package var allowedNetworks: [IPNetwork]

    package init(allowedHosts: [String] = [], allowedNetworks: [IPNetwork] = []) {
        self.allowedHosts = allowedHosts
        self.allowedNetworks = allowedNetworks
    }

    /// A webhook's URL, taken apart.
    package struct Target: Hashable, Sendable {
        /// As AsyncHTTPClient keys it: the URL's host, without IPv6 brackets.
        package var host: String
        package var port: Int
        /// Set when the host is an address, not a name.
        package var literal: IPAddress?
    }

    /// The host and port of an `https://` URL, if it has them.
    package static func target(of url: String) -> Target? {
        guard let parsed = URL(string: url), parsed.scheme?.lowercased() == "https", let host = parsed.host, !host.isEmpty else {
            return nil
        }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        return Target(host: bare, port: parsed.port ?? 443, literal: IPAddress(bare))
    }

    /// Whether the list allows the URL's host and port: nil, or why not.
    package func refusal(of url: String) -> WebhookFailure? {
        guard let target = Self.target(of: url) else { return .hostNotAllowed("(not an https:// URL)") }
        guard EndpointAllowList(allowedHosts, portless: .https).allows(host: target.host.lowercased(), port: target.port) else {
            return .hostNotAllowed(target.port == 443 ? target.host : "\(target.host):\(target.port)")
        }
        if let literal = target.literal { return refusal(of: literal, for: target) }
        return nil
    }

    /// Whether the webhook may connect to `address` for `target`: nil, or why not.
    package func refusal(of address: IPAddress, for target: Target) -> WebhookFailure? {
        guard let range = address.restrictedRange else { return nil }
        // An address named on the list is the operator's explicit choice.
        if target.literal == address { return nil }
        if allowedNetworks.contains(where: { $0.contains(address) }) { return nil }
        return .addressNotAllowed(host: target.host, address: "\(address)", range: range)
    }

    /// The addresses to connect to for `url`, in the resolver's order: its
    /// host resolved (unless it is an address) within `timeout`, and every
    /// address checked.
    package func addresses(for url: String, timeout: Duration) async -> Result<(Target, [IPAddress]), WebhookFailure> {
        if let refused = refusal(of: url) { return .failure(refused) }
        guard let target = Self.target(of: url) else { return .failure(.hostNotAllowed(url)) }
        if let literal = target.literal { return .success((target, [literal])) }
        // getaddrinfo cannot be cancelled: a resolver that does not answer is left to its thread.
        let resolved: Result<[IPAddress], WebhookFailure> = await firstOf(
            {
                do {
                    return .success(try await NIOThreadPool.singleton.runIfActive { try Self.resolve(target.host) })
                } catch {
                    return .failure(.hostNotFound)
                }
            },
            {
                try? await Task.sleep(for: timeout)
                return .failure(.timedOut)
            })
        let addresses: [IPAddress]
        switch resolved {
        case .success(let found): addresses = found
        case .failure(let failure): return .failure(failure)
        }
        guard !addresses.isEmpty else { return .failure(.hostNotFound) }
        // Every address is checked: a name with one public and one private address is refused.
        for address in addresses { if let refused = refusal(of: address, for: target) { return .failure(refused) } }
        return .success((target, addresses))
    }

    /// The addresses `getaddrinfo` gives for `host`, in its order.
    private static func resolve(_ host: String) throws -> [IPAddress] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { throw WebhookFailure.hostNotFound }
        defer { freeaddrinfo(first) }
        var addresses: [IPAddress] = []
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let entry = next {
            if let socket = entry.pointee.ai_addr {
                switch entry.pointee.ai_family {
                case AF_INET:
                    socket.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                        var raw = v4.pointee.sin_addr
                        if let address = IPAddress(bytes: withUnsafeBytes(of: &raw) { Array($0) }) { addresses.append(address) }
                    }
                case AF_INET6:
                    socket.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                        var raw = v6.pointee.sin6_addr
                        if let address = IPAddress(bytes: withUnsafeBytes(of: &raw) { Array($0) }) { addresses.append(address) }
                    }
                default: break
                }
            }
            next = entry.pointee.ai_next
        }
        var seen = Set<IPAddress>()
        return addresses.filter { seen.insert($0).inserted }
    }
}

/// Why a webhook attempt got no answer, in the few words that are stored
/// and shown to every key that may read the retraction: never the raw error
/// text, which can name addresses, file descriptors and library internals.
package enum WebhookFailure: Error, Hashable, Sendable, CustomStringConvertible {
    /// The host or port is not on `--allowed-webhook-host` (any more).
    case hostNotAllowed(String)
    /// The host resolves to an address in a range the operator did not allow.
    case addressNotAllowed(host: String, address: String, range: String)
    case hostNotFound
    case connectionRefused
    /// No route to the address.
    case unreachable
    case connectionReset
    case tlsHandshakeFailed
    case timedOut
    /// Any other failure to get an answer.
    case connectionFailed

    /// Whether a later attempt may go otherwise. A destination the operator's
    /// settings refuse is given up at once, and never contacted.
    package var isRetried: Bool {
        switch self {
        case .hostNotAllowed, .addressNotAllowed: false
        default: true
        }
    }

    package var description: String {
        switch self {
        case .hostNotAllowed(let host): "not sent: \(host) is not on --allowed-webhook-host"
        case .addressNotAllowed(let host, let address, let range):
            host == address
                ? "not sent: \(address) is a \(range) address (--allowed-webhook-network allows one)"
                : "not sent: \(host) resolves to a \(range) address (--allowed-webhook-network allows one)"
        case .hostNotFound: "host not found"
        case .connectionRefused: "connection refused"
        case .unreachable: "host unreachable"
        case .connectionReset: "connection reset"
        case .tlsHandshakeFailed: "TLS handshake failed"
        case .timedOut: "timed out"
        case .connectionFailed: "connection failed"
        }
    }

    /// Whether the next address the host resolved to may do better: this
    /// one could not be connected to at all.
    package var triesNextAddress: Bool { self == .connectionRefused || self == .unreachable }

    /// What an error from connecting, TLS or the exchange comes to: by its
    /// type where NIO, NIOSSL and AsyncHTTPClient give one, by its words last.
    package static func classify(_ error: any Error) -> WebhookFailure {
        switch error {
        case let failure as WebhookFailure:
            return failure
        case let error as IOError:
            switch error.errnoCode {
            case ECONNREFUSED: return .connectionRefused
            case ECONNRESET, EPIPE: return .connectionReset
            case ETIMEDOUT: return .timedOut
            case EHOSTUNREACH, ENETUNREACH: return .unreachable
            default: return .connectionFailed
            }
        case let error as NIOConnectionError:
            // Every address NIO tried failed: the first's reason stands for them.
            return error.connectionErrors.first.map { classify($0.error) } ?? .connectionFailed
        case let error as HTTPClientError:
            switch error {
            case .connectTimeout, .readTimeout, .writeTimeout, .deadlineExceeded: return .timedOut
            case .remoteConnectionClosed: return .connectionReset
            default: return .connectionFailed
            }
        case let error as NIOSSLError:
            if case .handshakeFailed = error { return .tlsHandshakeFailed }
            return .connectionFailed
        case is NIOSSLExtraError, is BoringSSLError:
            return .tlsHandshakeFailed
        default:
            let text = String(reflecting: error).lowercased()
            let causes: [(String, WebhookFailure)] = [
                ("connection refused", .connectionRefused), ("connection reset", .connectionReset), ("timed out", .timedOut),
                ("handshake", .tlsHandshakeFailed), ("certificate", .tlsHandshakeFailed),
            ]
            return causes.first { text.contains($0.0) }?.1 ?? .connectionFailed
        }
    }
}
