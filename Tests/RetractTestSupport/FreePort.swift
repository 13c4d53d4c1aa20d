import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A port of 127.0.0.1 nothing listens on right now.
package func freePort() throws -> Int {
    let (socket, port) = try boundLoopbackSocket()
    close(socket)
    return port
}

/// A TCP port of 127.0.0.1 that takes connections into its backlog and
/// never accepts them: a server, a database say, that does not answer.
package final class SilentListener {
    package let port: Int
    private let descriptor: Int32

    package init() throws {
        (descriptor, port) = try boundLoopbackSocket()
        guard listen(descriptor, 16) == 0 else {
            close(descriptor)
            throw HTTPCaller.CallError(description: "cannot listen on 127.0.0.1:\(port)")
        }
    }

    deinit { close(descriptor) }
}

/// A TCP socket bound to a port of 127.0.0.1 the system chose, and that port.
private func boundLoopbackSocket() throws -> (descriptor: Int32, port: Int) {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socket >= 0 else { throw HTTPCaller.CallError(description: "no socket") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0 }
    }
    guard bound else {
        close(socket)
        throw HTTPCaller.CallError(description: "cannot find a free port")
    }
    return (socket, Int(UInt16(bigEndian: address.sin_port)))
}
