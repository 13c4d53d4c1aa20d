import NIOCore
import RetractAPNs
import Testing

@Suite("Request validation before the network")
struct RequestValidationTests {
    static let token = String(repeating: "ab", count: 32)
    static let body = #"{"aps":{"content-available":1},"notificationCustomData":{"pushNotificationReferenceId":"m"}}"#

    static func request(
        token: String = token,
        topic: String = "com.example",
        pushType: APNsPushType = .background,
        priority: APNsPriority? = nil,
        collapseID: String? = nil,
        body: String = body
    ) -> APNsRequest {
        APNsRequest(
            deviceToken: token, topic: topic, pushType: pushType, priority: priority, collapseID: collapseID, body: Array(body.utf8))
    }

    static let invalid: [(APNsRequest, APNsRequestError.Field, String)] = [
        (request(token: ""), .deviceToken, "is empty"),
        (request(token: "abc"), .deviceToken, "has an odd number of hex digits (3)"),
        (request(token: "zz"), .deviceToken, #"is not hex: "zz""#),
        (request(topic: ""), .topic, "is missing"),
        (request(collapseID: String(repeating: "c", count: 65)), .collapseID, "is 65 bytes; at most 64 are allowed"),
        (request(collapseID: "a\u{0}b"), .collapseID, "holds a control character"),
        (request(topic: "com.example\napp"), .topic, "holds a control character"),
        (request(body: ""), .body, "is empty"),
        (
            request(body: #"{"aps":{"content-available":1},"x":""# + String(repeating: "x", count: 4070) + "\"}"), .body,
            "is 4108 bytes, 12 over the 4096-byte limit"
        ),
        (request(priority: .immediate), .priority, "a background push must have priority 5, not 10"),
        (
            request(body: #"{"aps":{"content-available":1,"alert":{},"badge":1}}"#), .body,
            "a background push must not have aps.alert, aps.badge"
        ),
        (request(body: #"{"aps":{"content-available":1,"s\u006fund":"x"}}"#), .body, "a background push must not have aps.sound"),
        (request(pushType: .alert), .body, "an alert push must have aps.alert, aps.sound or aps.badge"),
        (
            request(pushType: .alert, body: #"{"aps":{"badge":1,"mutable-content":1}}"#), .body,
            "aps.mutable-content needs aps.alert: the extension runs only for alerts"
        ),
        (request(body: "[1]"), .body, #"is not a JSON object with an "aps" object"#),
        (request(body: #"{"aps":1}"#), .body, #"is not a JSON object with an "aps" object"#),
        (request(body: #"{"other":{}}"#), .body, #"is not a JSON object with an "aps" object"#),
        (request(body: #"{"aps":{"content-available":1}"#), .body, #"is not a JSON object with an "aps" object"#),
    ]

    @Test(arguments: invalid.indices)
    func invalidRequestNamesTheField(index: Int) {
        let (request, field, reason) = Self.invalid[index]
        #expect(throws: APNsRequestError(field: field, reason: reason)) { try request.validate() }
    }

    @Test func validRequestsPass() throws {
        try Self.request().validate()
        try Self.request(token: String(repeating: "AB", count: 50)).validate()
        try Self.request(pushType: .alert, body: #"{"aps":{"alert":"hi","sound":"default"}}"#).validate()
        try Self.request(pushType: .alert, body: #"{"aps":{"alert":{"body":"deleted"},"badge":0,"mutable-content":1}}"#).validate()
        try Self.request(pushType: .voip, body: #"{"x":""# + String(repeating: "v", count: 5000) + "\"}").validate()
        try Self.request(body: #" { "notificationCustomData" : {"a":[1,{"b":"}"}]}, "aps" : { "content-available" : 1 } } "#).validate()
        #expect(Self.request(pushType: .alert).effectivePriority == .immediate)
        #expect(Self.request().effectivePriority == .considerate)
    }
}
