import Foundation

/// A push the simulator accepted, as the device would get it.
public struct APNsReceivedPush: Sendable, Hashable, Codable {
    public var apnsID: UUID
    /// The request's headers, pseudo-headers included; the authorization
    /// header is left out.
    public var headers: [String: String]
    public var body: Data
    public var receivedAt: Date

    public init(apnsID: UUID, headers: [String: String], body: Data, receivedAt: Date) {
        self.apnsID = apnsID
        self.headers = headers
        self.body = body
        self.receivedAt = receivedAt
    }

    /// The body as the `userInfo` dictionary iOS would hand the app.
    public var userInfo: [AnyHashable: Any] {
        (try? JSONSerialization.jsonObject(with: body)) as? [AnyHashable: Any] ?? [:]
    }

    public var pushType: String? { headers["apns-push-type"] }
    public var collapseID: String? { headers["apns-collapse-id"] }
}
