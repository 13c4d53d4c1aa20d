import Foundation
import RetractKit
import Testing

/// A push's userInfo as iOS hands it over: JSON parsed by Foundation.
func userInfo(_ json: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [AnyHashable: Any] {
    let object = try JSONSerialization.jsonObject(with: Data(json.utf8))
    return try #require(object as? [AnyHashable: Any], sourceLocation: sourceLocation)
}

/// Custom data decoded through `Codable`, for comparison with the userInfo path.
func decodeThroughCodable(_ customDataJSON: Data) throws -> NotificationCustomData {
    struct Push: Decodable {
        var notificationCustomData: NotificationCustomData
    }
    let wrapped = Data(#"{"notificationCustomData":"#.utf8) + customDataJSON + Data("}".utf8)
    return try JSONDecoder().decode(Push.self, from: wrapped).notificationCustomData
}

/// The error a throwing call ended with, or nil.
func error<T>(of body: () throws -> T) -> (any Error)? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}

extension Data {
    var utf8String: String { String(decoding: self, as: UTF8.self) }
}
