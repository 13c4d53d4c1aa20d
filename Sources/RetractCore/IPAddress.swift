import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 address, as bytes in network order: what a webhook's host
/// resolved to, checked before the server connects to it.
package struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// 4 bytes for IPv4, 16 for IPv6.
    package let bytes: [UInt8]

    package init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// A textual address, `192.0.2.1` or `2001:db8::1` (brackets allowed); nil for anything else, host names included.
    package init?(_ text: String) {
        let bare = text.hasPrefix("[") && text.hasSuffix("]") ? String(text.dropFirst().dropLast()) : text
        var v4 = in_addr()
        if inet_pton(AF_INET, bare, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, bare, &v6) == 1 else { return nil }
        bytes = withUnsafeBytes(of: &v6) { Array($0) }
    }

    package var isIPv4: Bool { bytes.count == 4 }

    package var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        var copy = bytes
        let family = isIPv4 ? AF_INET : AF_INET6
        guard inet_ntop(family, &copy, &text, socklen_t(text.count)) != nil else { return "?" }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The IPv4 address an IPv6 one carries for it: `::ffff:a.b.c.d`
    /// (mapped), `::a.b.c.d` (the old compatible form), `64:ff9b::a.b.c.d`
    /// (NAT64) and `2002:aabb:ccdd::` (6to4) reach that IPv4 host.
    package var embeddedIPv4: IPAddress? {
        guard !isIPv4 else { return nil }
        let zeros = Array(repeating: UInt8(0), count: 10)
        let nat64: [UInt8] = [0x00, 0x64, 0xFF, 0x9B] + Array(repeating: 0, count: 8)
        let head = Array(bytes.prefix(12))
        if head == zeros + [0xFF, 0xFF] || head == nat64 { return IPAddress(bytes: Array(bytes.suffix(4))) }
        // ::a.b.c.d, but not :: and ::1, which are IPv6's own.
        if head == zeros + [0, 0], bytes.suffix(4).reduce(0, { $0 << 8 | UInt32($1) }) > 1 {
            return IPAddress(bytes: Array(bytes.suffix(4)))
        }
        if bytes[0] == 0x20, bytes[1] == 0x02 { return IPAddress(bytes: Array(bytes[2..<6])) }
        return nil
    }

    /// The kind of address a webhook must not reach unless the operator
    /// allows it (`--allowed-webhook-network`): the machine itself, its
    /// networks and their neighbours, a cloud's metadata service at
    /// 169.254.169.254. Nil for a public address.
    package var restrictedRange: String? {
        if let v4 = embeddedIPv4 { return v4.restrictedRange }
        for (network, name) in isIPv4 ? Self.restrictedIPv4 : Self.restrictedIPv6 where network.contains(self) { return name }
        return nil
    }

    private static let restrictedIPv4: [(IPNetwork, String)] = [
        ("0.0.0.0/8", "unspecified"), ("127.0.0.0/8", "loopback"), ("10.0.0.0/8", "private"), ("172.16.0.0/12", "private"),
        ("192.168.0.0/16", "private"), ("169.254.0.0/16", "link-local"), ("100.64.0.0/10", "shared address space"),
        ("192.0.0.0/24", "reserved"), ("192.0.2.0/24", "reserved"), ("198.18.0.0/15", "reserved"), ("198.51.100.0/24", "reserved"),
        ("203.0.113.0/24", "reserved"), ("224.0.0.0/4", "multicast"), ("240.0.0.0/4", "reserved"),
    ].map { (IPNetwork($0.0)!, $0.1) }

    private static let restrictedIPv6: [(IPNetwork, String)] = [
        ("::/128", "unspecified"), ("::1/128", "loopback"), ("fe80::/10", "link-local"), ("fc00::/7", "unique-local"),
        ("fec0::/10", "site-local"), ("ff00::/8", "multicast"), ("64:ff9b:1::/48", "reserved"), ("100::/64", "reserved"),
        ("2001::/32", "reserved"), ("2001:db8::/32", "reserved"),
    ].map { (IPNetwork($0.0)!, $0.1) }
}

/// An address range, `10.0.0.0/8` or `fd00::/8`: what an operator allows with
/// `--allowed-webhook-network`.
package struct IPNetwork: Hashable, Sendable, CustomStringConvertible {
    package let address: IPAddress
    package let prefixLength: Int

    /// `address/length`, or an address alone (the one address).
    package init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(String(parts[0])) else { return nil }
        let maximum = address.bytes.count * 8
        if parts.count == 2 {
            guard parts[1].allSatisfy({ $0.isASCII && $0.isNumber }), let length = Int(parts[1]), (0...maximum).contains(length) else {
                return nil
            }
            prefixLength = length
        } else {
            prefixLength = maximum
        }
        self.address = address
    }

    package func contains(_ other: IPAddress) -> Bool {
        guard other.bytes.count == address.bytes.count else {
            // An IPv4 range holds the IPv6 forms of its addresses.
            return other.embeddedIPv4.map(contains) ?? false
        }
        var left = prefixLength
        for (mine, theirs) in zip(address.bytes, other.bytes) where left > 0 {
            let bits = min(8, left)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            if mine & mask != theirs & mask { return false }
            left -= bits
        }
        return true
    }

    package var description: String { "\(address)/\(prefixLength)" }
}
