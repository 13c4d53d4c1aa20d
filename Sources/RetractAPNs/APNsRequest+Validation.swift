import RetractKit

extension APNsRequest {
    /// Checks what APNs would refuse, so that it is refused here instead.
    public func validate() throws(APNsRequestError) {
        let token = deviceToken.utf8
        guard !token.isEmpty else { throw APNsRequestError(field: .deviceToken, reason: "is empty") }
        guard token.count.isMultiple(of: 2) else {
            throw APNsRequestError(field: .deviceToken, reason: "has an odd number of hex digits (\(token.count))")
        }
        guard token.allSatisfy({ HexDigits.value(of: $0) != nil }) else {
            throw APNsRequestError(field: .deviceToken, reason: "is not hex: \"\(deviceToken.prefix(80))\"")
        }
        guard !topic.isEmpty else { throw APNsRequestError(field: .topic, reason: "is missing") }
        // A header value cannot hold control characters: HTTP/2 would refuse the stream.
        guard !topic.containsControlCharacters else { throw APNsRequestError(field: .topic, reason: "holds a control character") }
        if let collapseID, collapseID.utf8.count > 64 {
            throw APNsRequestError(field: .collapseID, reason: "is \(collapseID.utf8.count) bytes; at most 64 are allowed")
        }
        if let collapseID, collapseID.containsControlCharacters {
            throw APNsRequestError(field: .collapseID, reason: "holds a control character")
        }
        let size = body.readableBytes
        guard size > 0 else { throw APNsRequestError(field: .body, reason: "is empty") }
        guard size <= maximumBodySize else {
            throw APNsRequestError(
                field: .body,
                reason: "is \(size) bytes, \(size - maximumBodySize) over the \(maximumBodySize)-byte limit"
            )
        }
        if pushType == .alert {
            let apsKeys = body.withUnsafeReadableBytes { JSONPeek.keysOfTopLevelObject(named: "aps", in: $0) } ?? []
            guard apsKeys.contains(where: { ["alert", "sound", "badge"].contains($0) }) else {
                throw APNsRequestError(field: .body, reason: "an alert push must have aps.alert, aps.sound or aps.badge")
            }
            if apsKeys.contains("mutable-content"), !apsKeys.contains("alert") {
                throw APNsRequestError(field: .body, reason: "aps.mutable-content needs aps.alert: the extension runs only for alerts")
            }
        }
        guard pushType == .background else { return }
        guard effectivePriority == .considerate else {
            throw APNsRequestError(field: .priority, reason: "a background push must have priority 5, not \(effectivePriority.rawValue)")
        }
        let apsKeys = body.withUnsafeReadableBytes { JSONPeek.keysOfTopLevelObject(named: "aps", in: $0) }
        guard let apsKeys else {
            throw APNsRequestError(field: .body, reason: "is not a JSON object with an \"aps\" object")
        }
        let forbidden = apsKeys.filter { ["alert", "sound", "badge"].contains($0) }.sorted()
        guard forbidden.isEmpty else {
            throw APNsRequestError(
                field: .body,
                reason: "a background push must not have \(forbidden.map { "aps.\($0)" }.joined(separator: ", "))"
            )
        }
    }
}
