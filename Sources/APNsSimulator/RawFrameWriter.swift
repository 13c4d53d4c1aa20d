import NIOCore

/// Sits between TLS and HTTP/2 so the simulator can put frames on the wire
/// that NIOHTTP2's state machine does not track.
///
/// The scripted GOAWAY goes out this way: NIOHTTP2, once it has sent a GOAWAY
/// itself, treats DATA of the streams it refused as a connection error, while
/// RFC 9113 (and APNs) simply ignore them.
final class RawFrameWriter: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    /// A GOAWAY frame with APNs's `{"reason":"..."}` as its debug data.
    static func goAway(lastStreamID: Int32, reason: String, allocator: ByteBufferAllocator) -> ByteBuffer {
        let debugData = Array(#"{"reason":"\#(reason)"}"#.utf8)
        var frame = allocator.buffer(capacity: 17 + debugData.count)
        let length = 8 + debugData.count
        frame.writeInteger(UInt8(truncatingIfNeeded: length >> 16))
        frame.writeInteger(UInt16(truncatingIfNeeded: length))
        frame.writeInteger(UInt8(0x07))  // GOAWAY
        frame.writeInteger(UInt8(0))  // no flags
        frame.writeInteger(UInt32(0))  // the connection
        frame.writeInteger(UInt32(bitPattern: lastStreamID) & 0x7FFF_FFFF)
        frame.writeInteger(UInt32(0))  // NO_ERROR
        frame.writeBytes(debugData)
        return frame
    }
}
