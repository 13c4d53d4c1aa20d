import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A plain TCP connection to 127.0.0.1: for what URLSession hides, such as
/// a response that stays open, a connection left without a word, or bytes
/// as they come.
package final class LoopbackSocket {
    /// What one read got.
    package enum Received: Equatable {
        case bytes([UInt8])
        /// The server closed the connection.
        case closed
        /// Nothing came within the receive timeout.
        case timedOut
    }

    private let descriptor: Int32

    package init(port: Int, receiveTimeout seconds: Int = 5) throws {
        descriptor = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw HTTPCaller.CallError(description: "no socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            Glibc.close(descriptor)
            throw HTTPCaller.CallError(description: "cannot connect to 127.0.0.1:\(port)")
        }
        setReceiveTimeout(seconds: seconds)
    }

    package func setReceiveTimeout(seconds: Int) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    package func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        guard Glibc.send(descriptor, bytes, bytes.count, 0) == bytes.count else { throw HTTPCaller.CallError(description: "cannot send") }
    }

    package func receive() -> Received {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(descriptor, &buffer, buffer.count, 0)
        if count > 0 { return .bytes(Array(buffer.prefix(count))) }
        return count == 0 ? .closed : .timedOut
    }

    package func close() { Glibc.close(descriptor) }
}
