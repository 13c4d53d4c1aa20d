import Foundation
import PropertyBased
import RetractKit
import Testing

/// Reference strings from every corner: JSON's special characters, control
/// characters, and all of Unicode but surrogates.
let referenceStrings = Gen.int(in: 0...0x21_0000).map { value -> Character in
    let scalar: UInt32
    switch value % 4 {
    case 0: scalar = UInt32(value / 4 % 0x80)
    case 1: scalar = Array(#""\/{}[],:"#.unicodeScalars)[value / 4 % 9].value
    default: scalar = UInt32(value / 2 % 0x10_F800)
    }
    // Skip the surrogate block, which holds no scalars, and U+FEFF: Linux's
    // JSONSerialization drops it at the start of a string (Apple's keeps it,
    // see byteOrderMarkSurvivesTheBuilder), and the device side here is
    // simulated with JSONSerialization.
    let shifted = scalar < 0xD800 ? scalar : scalar + 0x800
    return Character(Unicode.Scalar(shifted == 0xFEFF ? 0xFEFE : shifted)!)
}
.string(of: 1...40)
.map { ReferenceID($0) }

let integerReferences = Gen.int(in: Int.min...Int.max).map { ReferenceID($0) }

@Suite("Payload properties")
struct PayloadPropertyTests {
    /// What a device reads out of the bodies the builder made for `references`.
    func readBack(_ bodies: [Data]) throws -> Set<ReferenceID> {
        var read = Set<ReferenceID>()
        for body in bodies {
            #expect(body.count <= PayloadBuilder.maximumBodySize)
            read.formUnion(try #require(RetractPayload.retraction(in: userInfo(body.utf8String))))
        }
        return read
    }

    @Test func canonicalRetractionsRoundTrip() async {
        await propertyCheck(input: referenceStrings.array(of: 1...12)) { references in
            let bodies = try PayloadBuilder(dialect: .canonical).retractionBodies(for: references)
            #expect(bodies.count == 1)
            #expect(try readBack(bodies) == Set(references))
        }
    }

    @Test func canonicalRetractionsThatSplitRoundTrip() async {
        await propertyCheck(count: 30, input: referenceStrings.array(of: 150...400)) { references in
            let bodies = try PayloadBuilder(dialect: .canonical).retractionBodies(for: references)
            #expect(try readBack(bodies) == Set(references))
        }
    }

    @Test func splitUsesTheFewestBodies() async {
        // Lengths around a half, a third and a quarter of a body are where
        // first-fit decreasing alone leaves a body too many.
        await propertyCheck(count: 300, input: Gen.int(in: 300...2100).array(of: 2...8)) { lengths in
            let references = lengths.enumerated().map { index, length in
                ReferenceID(String(index) + String(repeating: "r", count: length))
            }
            let bodies = try PayloadBuilder().retractionBodies(for: references)
            #expect(bodies.count == (try fewestBodiesByBruteForce(references)), "\(lengths)")
            #expect(try readBack(bodies) == Set(references))
        }
    }

    /// The fewest bodies, trying every partition of the references.
    func fewestBodiesByBruteForce(_ references: [ReferenceID]) throws -> Int {
        let builder = PayloadBuilder()
        let singleOverhead = try builder.retractionBodies(for: ["x"])[0].count - 3
        let batchOverhead = try builder.retractionBodies(for: ["x", "y"])[0].count - 7
        let lengths = references.map { $0.rawValue.utf8.count + 2 }
        func fits(_ block: [Int]) -> Bool {
            let total = block.reduce(0) { $0 + lengths[$1] }
            let size = block.count == 1 ? singleOverhead + total : batchOverhead + total + block.count - 1
            return size <= PayloadBuilder.maximumBodySize
        }
        var best = references.count
        var blocks: [[Int]] = []
        func assign(_ item: Int) {
            guard blocks.count < best else { return }
            guard item < references.count else {
                best = blocks.count
                return
            }
            for block in blocks.indices where fits(blocks[block] + [item]) {
                blocks[block].append(item)
                assign(item + 1)
                blocks[block].removeLast()
            }
            blocks.append([item])
            assign(item + 1)
            blocks.removeLast()
        }
        assign(0)
        return best
    }

    @Test func legacyRetractionsRoundTrip() async {
        await propertyCheck(input: integerReferences.array(of: 1...5)) { references in
            let bodies = try PayloadBuilder(dialect: .legacy).retractionBodies(for: references)
            #expect(bodies.count == Set(references).count)
            #expect(try readBack(bodies) == Set(references))
        }
    }

    @Test func originalCustomDataRoundTripsInBothDialects() async {
        await propertyCheck(input: referenceStrings, integerReferences) { text, integer in
            for (builder, reference) in [(PayloadBuilder(dialect: .canonical), text), (PayloadBuilder(dialect: .legacy), integer)] {
                let customData = try builder.originalCustomData(for: reference)
                let info: [AnyHashable: Any] = [builder.dialect.customDataKey: customData.utf8String]
                #expect(try RetractPayload.customData(in: info) == NotificationCustomData(referenceID: reference))
            }
        }
    }

    @Test func codableRoundTrips() async {
        await propertyCheck(input: referenceStrings.optional, referenceStrings.array(of: 0...4), Gen.bool) { single, batch, flag in
            let customData = NotificationCustomData(referenceID: single, referenceIDs: batch, mustRemoveReferred: flag)
            let decoded = Result { try decodeThroughCodable(JSONEncoder().encode(customData)) }
            #expect((try? decoded.get()) == customData, "\(decoded)")
        }
    }

    @Test func readingArbitraryJSONNeverTrapsAndBothPathsAgree() async {
        await propertyCheck(count: 500, input: Gen.int(in: 0...Int(UInt16.max)).array(of: 0...80)) { program in
            var builder = ArbitraryJSON(program: program)
            let generated = builder.value(depth: 0, nearCustomData: true)
            _ = RetractPayload.retraction(in: ["notifcationCustomData": generated])
            // Both paths read the same JSON text, as a device receives it.
            let text = try JSONSerialization.data(withJSONObject: [generated], options: .fragmentsAllowed).dropFirst().dropLast()
            let customData = try JSONSerialization.jsonObject(with: Data(text), options: .fragmentsAllowed)

            let throughUserInfo = Result { try RetractPayload.customData(in: ["notificationCustomData": customData]) }
            let throughCodable = Result { try decodeThroughCodable(Data(text)) }
            _ = Result { try RetractPayload.customData(in: ["notificationCustomData": String(decoding: text, as: UTF8.self)]) }

            switch (throughUserInfo, throughCodable) {
            case (.success(let viaUserInfo?), .success(let viaCodable)):
                #expect(viaUserInfo == viaCodable, "\(String(decoding: text, as: UTF8.self))")
            case (.success(nil), .failure):
                // null custom data is no custom data; a Decodable field cannot be null.
                #expect(customData is NSNull)
            case (.failure(let userInfoError), .failure(let codableError)):
                guard case .dataCorrupted(let context) = codableError as? DecodingError else {
                    // Not an object at all: the decoder says so in its own words.
                    #expect(userInfoError is RetractPayloadError)
                    return
                }
                #expect(context.underlyingError as? RetractPayloadError == userInfoError as? RetractPayloadError)
            default:
                Issue.record("paths disagree on \(String(decoding: text, as: UTF8.self)): \(throughUserInfo) vs \(throughCodable)")
            }
        }
    }

    @Test func aDeviceKeepsExactlyTheReferencesThatCanBeRead() async {
        // Each element is a reference (string or integer) or one of the values
        // a reference cannot be; the push goes under either custom data key,
        // as an object or its JSON text, or flat at the top level (FCM's way).
        let element = zip(Gen.int(in: 0...7), referenceStrings, integerReferences).map { kind, text, integer -> BatchElement in
            let bad: [Any] = [["id": 1], 1.5, "", true, [3], 1e20]
            switch kind {
            case 0, 1: return .good(json: text.rawValue, reference: text)
            case 2: return .good(json: Int(integer.rawValue)!, reference: integer)
            default: return .bad(bad[kind - 3 + (text.rawValue.utf8.count % 2)])
            }
        }
        await propertyCheck(count: 300, input: element.array(of: 0...12), Gen.int(in: 0...4)) { elements, placement in
            let batch = elements.map(\.json)
            let flag = "isReferredNotificationMustRemoved"
            let push: [AnyHashable: Any]
            let prefix: String
            switch placement {
            case 0:
                (push, prefix) = (
                    ["notificationCustomData": ["pushNotificationReferenceIds": batch, flag: true]], "notificationCustomData."
                )
            case 1:
                (push, prefix) = (["notifcationCustomData": ["pushNotificationReferenceIds": batch, flag: "1"]], "notifcationCustomData.")
            case 2:
                let text = try JSONSerialization.data(withJSONObject: ["pushNotificationReferenceIds": batch, flag: true]).utf8String
                (push, prefix) = (["notificationCustomData": text], "notificationCustomData.")
            case 3: (push, prefix) = (["pushNotificationReferenceIds": batch, flag: true], "")
            default:
                let text = try JSONSerialization.data(withJSONObject: batch).utf8String
                (push, prefix) = (["pushNotificationReferenceIds": text, flag: "true"], "")
            }
            let reading = RetractPayload.read(push)
            let good = Set(elements.compactMap(\.reference))
            #expect(reading.retraction == (good.isEmpty ? nil : good))
            let badPositions = elements.indices.filter { elements[$0].reference == nil }
            #expect(reading.diagnostics.map(\.key) == badPositions.map { "\(prefix)pushNotificationReferenceIds[\($0)]" })
            #expect((try? RetractPayload.customData(in: push)) == (badPositions.isEmpty ? reading.customData : nil))
        }
    }

    @Test func readingArbitraryPushesNeverTraps() async {
        // Arbitrary JSON under both custom data keys and at the top level, read
        // as a retraction, as an original and by the extension's check.
        await propertyCheck(count: 500, input: Gen.int(in: 0...Int(UInt16.max)).array(of: 0...120)) { program in
            var builder = ArbitraryJSON(program: program)
            var push: [AnyHashable: Any] = [:]
            for key in ["notificationCustomData", "notifcationCustomData"] + ArbitraryJSON.keys where builder.next(3) == 0 {
                push[key] = builder.value(depth: 0, nearCustomData: true)
            }
            _ = RetractPayload.read(push)
            _ = (try? RetractPayload.customData(in: push)) ?? nil
            _ = DeliveredNotification(identifier: "x", userInfo: push)
            _ = Tombstones(storage: InMemoryTombstoneStorage()).wasRetracted(identifier: "x", userInfo: push)
        }
    }

    @Test func readingArbitraryTextNeverTraps() async {
        let text = Gen<Character>.ascii.string(of: 0...60)
        await propertyCheck(count: 500, input: text) { text in
            for value: Any in [text, Data(text.utf8), "{\"pushNotificationReferenceId\":\(text)}"] {
                _ = Result { try RetractPayload.customData(in: ["notificationCustomData": value]) }
            }
        }
        let deep = String(repeating: "[", count: 100_000)
        #expect(throws: RetractPayloadError.self) { try RetractPayload.customData(in: ["notificationCustomData": deep]) }
    }
}

/// One element of a batch: a reference, or a value that cannot be one.
enum BatchElement {
    case good(json: Any, reference: ReferenceID)
    case bad(Any)

    var json: Any {
        switch self {
        case .good(let json, _): json
        case .bad(let json): json
        }
    }

    var reference: ReferenceID? {
        guard case .good(_, let reference) = self else { return nil }
        return reference
    }
}

/// Turns a list of random numbers into a JSON value that leans towards custom
/// data: its keys are mostly the contract's, its values every JSON kind.
struct ArbitraryJSON {
    var program: [Int]
    var position = 0

    static let keys = [
        "pushNotificationReferenceId", "pushNotificationReferanceId", "pushNotificationReferenceIds",
        "isReferredNotificationMustRemoved", "isReferedNotificationMustRemoved", "other",
    ]

    mutating func next(_ bound: Int) -> Int {
        defer { position += 1 }
        return position < program.count ? program[position] % bound : 0
    }

    mutating func value(depth: Int, nearCustomData: Bool = false) -> Any {
        switch next(depth > 3 ? 8 : nearCustomData ? 10 : 11) {
        case 0: return NSNull()
        case 1: return next(2) == 0
        case 2: return next(1000) - 500
        case 3: return Double(next(1000)) / 7
        case 4: return ["", "true", "false", "1", "0", "233", "msg-1", "{\"a\":1}"][next(8)]
        case 5: return Double(next(3))  // 0.0, 1.0, 2.0
        case 6:
            let large: [Any] = [UInt64.max - UInt64(next(3)), 1e20, 18_446_744_073_709_551_616.0, -1e18]
            return large[next(large.count)]
        case 7: return String(next(100_000))
        case 8: return (0..<next(4)).map { _ in value(depth: depth + 1) }
        default:
            var object: [String: Any] = [:]
            for _ in 0..<next(5) { object[Self.keys[next(Self.keys.count)]] = value(depth: depth + 1) }
            return object
        }
    }
}
