import Foundation
import RetractKit
import Testing

@Suite("Reading custom data")
struct CustomDataDecodingTests {
    // The article (seeds/004) writes its payloads with typographic quotes and a
    // trailing comma; these are the same payloads as the JSON a server sends.
    static let articleAPNsRetraction = """
        {"aps": {"content_available": true, "alert": {}},
         "notifcationCustomData": {"pushNotificationReferanceId": 233, "isReferedNotificationMustRemoved": true}}
        """
    static let articleFCMRetraction = """
        {"content_available": true, "registration_ids": ["..."],
         "notifcationCustomData": {"pushNotificationReferanceId": 233, "isReferedNotificationMustRemoved": true}}
        """
    static let articleOriginalCustomData = #"{"notifcationCustomData": {"pushNotificationReferanceId": 233}}"#

    @Test(arguments: [articleAPNsRetraction, articleFCMRetraction])
    func articleRetractionPayloadsDecode(payload: String) throws {
        let info = try userInfo(payload)
        #expect(try RetractPayload.customData(in: info) == NotificationCustomData(referenceID: 233, mustRemoveReferred: true))
        #expect(RetractPayload.retraction(in: info) == [233])
    }

    @Test func articleOriginalIsNotARetraction() throws {
        let info = try userInfo(Self.articleOriginalCustomData)
        #expect(try RetractPayload.customData(in: info) == NotificationCustomData(referenceID: "233"))
        #expect(RetractPayload.retraction(in: info) == nil)
    }

    @Test func designContractPayloadDecodes() throws {
        let info = try userInfo(
            """
            { "aps": { "content-available": 1 },
              "notificationCustomData": { "pushNotificationReferenceId": "msg-8812",
                                          "isReferredNotificationMustRemoved": true } }
            """
        )
        #expect(RetractPayload.retraction(in: info) == ["msg-8812"])
    }

    @Test func payloadWithoutCustomDataIsNil() throws {
        #expect(try RetractPayload.customData(in: userInfo(#"{"aps": {"alert": "hi"}}"#)) == nil)
        #expect(try RetractPayload.customData(in: userInfo(#"{"notificationCustomData": null}"#)) == nil)
        #expect(try RetractPayload.retraction(in: userInfo(#"{"aps": {"content-available": 1}}"#)) == nil)
        #expect(try RetractPayload.customData(in: [:]) == nil)
    }

    /// Every accepted spelling and value form, as custom data JSON and what it reads as.
    static let acceptedForms: [(json: String, expected: NotificationCustomData)] = [
        (
            #"{"pushNotificationReferenceId": "msg-1", "isReferredNotificationMustRemoved": true}"#,
            .init(referenceID: "msg-1", mustRemoveReferred: true)
        ),
        (
            #"{"pushNotificationReferanceId": "msg-1", "isReferedNotificationMustRemoved": true}"#,
            .init(referenceID: "msg-1", mustRemoveReferred: true)
        ),
        (#"{"pushNotificationReferenceId": 233}"#, .init(referenceID: "233")),
        (#"{"pushNotificationReferenceId": "233"}"#, .init(referenceID: 233)),
        (#"{"pushNotificationReferenceId": 233.0}"#, .init(referenceID: 233)),
        (#"{"pushNotificationReferenceId": -7}"#, .init(referenceID: -7)),
        (#"{"pushNotificationReferenceId": -1000000000000000000}"#, .init(referenceID: "-1000000000000000000")),
        (#"{"pushNotificationReferenceId": -9223372036854775808}"#, .init(referenceID: "-9223372036854775808")),
        (#"{"pushNotificationReferenceId": 18446744073709551615}"#, .init(referenceID: "18446744073709551615")),
        (
            #"{"pushNotificationReferenceId": "a", "isReferredNotificationMustRemoved": 1}"#,
            .init(referenceID: "a", mustRemoveReferred: true)
        ),
        (
            #"{"pushNotificationReferenceId": "a", "isReferredNotificationMustRemoved": "true"}"#,
            .init(referenceID: "a", mustRemoveReferred: true)
        ),
        (
            #"{"pushNotificationReferenceId": "a", "isReferredNotificationMustRemoved": "1"}"#,
            .init(referenceID: "a", mustRemoveReferred: true)
        ),
        (#"{"pushNotificationReferenceId": "a", "isReferredNotificationMustRemoved": false}"#, .init(referenceID: "a")),
        (#"{"pushNotificationReferenceId": "a", "isReferredNotificationMustRemoved": 0}"#, .init(referenceID: "a")),
        (#"{"pushNotificationReferenceId": "a", "isReferredNotificationMustRemoved": "false"}"#, .init(referenceID: "a")),
        (#"{"pushNotificationReferenceId": "a", "isReferredNotificationMustRemoved": null}"#, .init(referenceID: "a")),
        (
            #"{"pushNotificationReferenceIds": ["a", 2, "b"], "isReferredNotificationMustRemoved": true}"#,
            .init(referenceIDs: ["a", 2, "b"], mustRemoveReferred: true)
        ),
        (#"{"pushNotificationReferenceId": "a", "pushNotificationReferenceIds": ["b"]}"#, .init(referenceID: "a", referenceIDs: ["b"])),
        (#"{"pushNotificationReferenceId": null, "pushNotificationReferenceIds": null}"#, .init()),
        (#"{"pushNotificationReferenceId": "a", "pushNotificationReferanceId": "a"}"#, .init(referenceID: "a")),
        (#"{"pushNotificationReferenceId": 5, "pushNotificationReferanceId": "5"}"#, .init(referenceID: 5)),
        // Both spellings with different references: a server moving from the
        // article's keys to the canonical ones. Both are read.
        (#"{"pushNotificationReferenceId": "a", "pushNotificationReferanceId": "b"}"#, .init(referenceID: "a", referenceIDs: ["b"])),
        (#"{"pushNotificationReferenceIds": "[\"a\", 2]"}"#, .init(referenceIDs: ["a", 2])),
        (#"{"pushNotificationReferenceId": "a", "appSpecific": {"deep": [1, [2]]}}"#, .init(referenceID: "a")),
        (#"{}"#, .init()),
    ]

    @Test(arguments: acceptedForms.indices)
    func acceptedFormReadsTheSameAsObjectStringAndData(index: Int) throws {
        let (json, expected) = Self.acceptedForms[index]
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8))
        for key in ["notificationCustomData", "notifcationCustomData"] {
            for value: Any in [object, json, Data(json.utf8)] {
                #expect(try RetractPayload.customData(in: [key: value]) == expected, "\(key) as \(type(of: value))")
            }
        }
        #expect(try decodeThroughCodable(Data(json.utf8)) == expected)
    }

    @Test func swiftValuesInUserInfoReadLikeJSON() throws {
        // An app or a test may build userInfo from Swift literals instead of JSON.
        let info: [AnyHashable: Any] = [
            "notificationCustomData": [
                "pushNotificationReferenceIds": ["a", 7, UInt64.max],
                "isReferredNotificationMustRemoved": true,
            ] as [String: Any]
        ]
        let expected = NotificationCustomData(referenceIDs: ["a", 7, "18446744073709551615"], mustRemoveReferred: true)
        #expect(try RetractPayload.customData(in: info) == expected)
        let numericFlag: [AnyHashable: Any] = [
            "notificationCustomData": ["pushNotificationReferenceId": "a", "isReferredNotificationMustRemoved": NSNumber(value: 1)]
        ]
        #expect(RetractPayload.retraction(in: numericFlag) == ["a"])
        let trueAsReference: [AnyHashable: Any] = ["notificationCustomData": ["pushNotificationReferenceId": true]]
        #expect(throws: RetractPayloadError.self) { try RetractPayload.customData(in: trueAsReference) }
    }

    /// Malformed custom data and the error it gives, through both reading paths.
    static let malformed: [(customData: String, error: RetractPayloadError)] = [
        ("42", .wrongType(key: "notificationCustomData", expected: "an object, a JSON string or Data", found: "an integer")),
        (#""[1, 2]""#, .wrongType(key: "notificationCustomData", expected: "a JSON object", found: "an array")),
        (
            #"{"pushNotificationReferenceId": true}"#,
            .wrongType(key: "notificationCustomData.pushNotificationReferenceId", expected: "a string or an integer", found: "a boolean")
        ),
        (
            #"{"pushNotificationReferenceId": ""}"#,
            .invalidValue(key: "notificationCustomData.pushNotificationReferenceId", reason: "a reference must not be empty")
        ),
        (
            #"{"pushNotificationReferenceId": 1.5}"#,
            .invalidValue(key: "notificationCustomData.pushNotificationReferenceId", reason: "1.5 is not an integer reference")
        ),
        (
            #"{"pushNotificationReferenceId": 100000000000000000000}"#,
            .invalidValue(
                key: "notificationCustomData.pushNotificationReferenceId",
                reason: "1e+20 is too large for an integer reference; send it as a string"
            )
        ),
        (
            #"{"pushNotificationReferenceId": 18446744073709551616}"#,
            .invalidValue(
                key: "notificationCustomData.pushNotificationReferenceId",
                reason: "1.8446744073709552e+19 is too large for an integer reference; send it as a string"
            )
        ),
        (
            #"{"pushNotificationReferanceId": {"id": 1}}"#,
            .wrongType(key: "notificationCustomData.pushNotificationReferanceId", expected: "a string or an integer", found: "an object")
        ),
        (
            #"{"pushNotificationReferenceId": [1]}"#,
            .wrongType(key: "notificationCustomData.pushNotificationReferenceId", expected: "a string or an integer", found: "an array")
        ),
        (
            #"{"isReferredNotificationMustRemoved": 2}"#,
            .invalidValue(
                key: "notificationCustomData.isReferredNotificationMustRemoved", reason: #"2 is not a removal flag (true, 1 or "true")"#)
        ),
        (
            #"{"isReferedNotificationMustRemoved": "yes"}"#,
            .invalidValue(
                key: "notificationCustomData.isReferedNotificationMustRemoved", reason: #""yes" is not a removal flag (true, 1 or "true")"#)
        ),
        (
            #"{"isReferredNotificationMustRemoved": []}"#,
            .wrongType(
                key: "notificationCustomData.isReferredNotificationMustRemoved", expected: #"a boolean, 0/1 or "true"/"false""#,
                found: "an array")
        ),
        (
            #"{"pushNotificationReferenceIds": "a"}"#,
            .wrongType(
                key: "notificationCustomData.pushNotificationReferenceIds", expected: "an array of references, or a JSON array in a string",
                found: "a string that is not JSON")
        ),
        (
            #"{"pushNotificationReferenceIds": "233"}"#,
            .wrongType(
                key: "notificationCustomData.pushNotificationReferenceIds", expected: "an array of references, or a JSON array in a string",
                found: "a string holding an integer")
        ),
        (
            #"{"pushNotificationReferenceIds": {"a": 1}}"#,
            .wrongType(
                key: "notificationCustomData.pushNotificationReferenceIds", expected: "an array of references, or a JSON array in a string",
                found: "an object")
        ),
        (
            #"{"pushNotificationReferenceIds": ["a", [1]]}"#,
            .wrongType(key: "notificationCustomData.pushNotificationReferenceIds[1]", expected: "a string or an integer", found: "an array")
        ),
        (
            #"{"pushNotificationReferenceIds": ["a", ""]}"#,
            .invalidValue(key: "notificationCustomData.pushNotificationReferenceIds[1]", reason: "a reference must not be empty")
        ),
        (
            #"{"pushNotificationReferenceIds": [false]}"#,
            .wrongType(
                key: "notificationCustomData.pushNotificationReferenceIds[0]", expected: "a string or an integer", found: "a boolean")
        ),
        (
            #"{"isReferredNotificationMustRemoved": true, "isReferedNotificationMustRemoved": false}"#,
            .conflictingKeys(
                "notificationCustomData.isReferredNotificationMustRemoved", "notificationCustomData.isReferedNotificationMustRemoved")
        ),
    ]

    @Test(arguments: malformed.indices)
    func malformedCustomDataGivesTypedError(index: Int) throws {
        let (json, expected) = Self.malformed[index]
        let value = try JSONSerialization.jsonObject(with: Data(json.utf8), options: .fragmentsAllowed)
        let info: [AnyHashable: Any] = ["notificationCustomData": value]
        #expect(error { try RetractPayload.customData(in: info) } as? RetractPayloadError == expected)
        #expect(RetractPayload.retraction(in: info) == nil)

        let codableError = error { try decodeThroughCodable(Data(json.utf8)) }
        guard case .dataCorrupted(let context)? = codableError as? DecodingError else {
            Issue.record("expected DecodingError.dataCorrupted, got \(String(describing: codableError))")
            return
        }
        #expect(context.underlyingError as? RetractPayloadError == expected)
    }

    @Test(arguments: ["{not json", "", #"{"pushNotificationReferenceId": "a""#])
    func customDataStringThatIsNotJSONNamesTheKey(text: String) {
        for value: Any in [text, Data(text.utf8)] {
            let failure = error { try RetractPayload.customData(in: ["notifcationCustomData": value]) }
            guard case .invalidJSON(let key, let reason)? = failure as? RetractPayloadError else {
                Issue.record("expected invalidJSON, got \(String(describing: failure))")
                continue
            }
            #expect(key == "notifcationCustomData")
            #expect(!reason.isEmpty)
        }
    }

    @Test func bothCustomDataKeysAreUnited() throws {
        let agreeing = try userInfo(
            #"{"notificationCustomData": {"pushNotificationReferenceId": "a"}, "notifcationCustomData": "{\"pushNotificationReferanceId\": \"a\"}"}"#
        )
        #expect(try RetractPayload.customData(in: agreeing) == NotificationCustomData(referenceID: "a"))
        let differing = try userInfo(
            #"{"notificationCustomData": {"pushNotificationReferenceIds": ["a", "b"]}, "notifcationCustomData": {"pushNotificationReferanceId": 1}}"#
        )
        #expect(try RetractPayload.customData(in: differing) == NotificationCustomData(referenceID: 1, referenceIDs: ["a", "b"]))
    }

    @Test func retractionNeedsTheFlagAndAReference() throws {
        #expect(try RetractPayload.retraction(in: userInfo(#"{"notificationCustomData": {"pushNotificationReferenceId": "a"}}"#)) == nil)
        #expect(
            try RetractPayload.retraction(in: userInfo(#"{"notificationCustomData": {"isReferredNotificationMustRemoved": true}}"#)) == nil)
        #expect(
            try RetractPayload.retraction(
                in: userInfo(
                    #"{"notificationCustomData": {"pushNotificationReferenceId": "a", "pushNotificationReferenceIds": ["b", "a"], "isReferredNotificationMustRemoved": true}}"#
                )
            ) == ["a", "b"]
        )
    }

    @Test func errorMessagesSayWhichKeyAndWhy() {
        let wrongType = RetractPayloadError.wrongType(
            key: "notificationCustomData.pushNotificationReferenceId", expected: "a string or an integer", found: "a boolean")
        #expect(
            wrongType.description == "notificationCustomData.pushNotificationReferenceId: expected a string or an integer, found a boolean")
        #expect(
            RetractPayloadError.bodyTooLarge(size: 4200, limit: 4096).description
                == "the payload is 4200 bytes, 104 over the 4096-byte limit")
        #expect(RetractPayloadError.bodyTooLarge(size: 4200, limit: 4096).bytesOverLimit == 104)
    }

    @Test func customDataEncodesInTheCanonicalDialect() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let retraction = NotificationCustomData(referenceID: 233, referenceIDs: ["b"], mustRemoveReferred: true)
        #expect(
            try encoder.encode(retraction).utf8String
                == #"{"isReferredNotificationMustRemoved":true,"pushNotificationReferenceId":"233","pushNotificationReferenceIds":["b"]}"#
        )
        #expect(try encoder.encode(NotificationCustomData(referenceID: "a")).utf8String == #"{"pushNotificationReferenceId":"a"}"#)
    }
}
