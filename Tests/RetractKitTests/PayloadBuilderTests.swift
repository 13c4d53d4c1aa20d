import Foundation
import RetractKit
import Testing

@Suite("Building payloads")
struct PayloadBuilderTests {
    let canonical = PayloadBuilder(dialect: .canonical)
    let legacy = PayloadBuilder(dialect: .legacy)

    @Test func canonicalRetractionBodyIsExactlyTheContract() throws {
        let bodies = try canonical.retractionBodies(for: ["msg-8812"])
        #expect(
            bodies.map(\.utf8String) == [
                #"{"aps":{"content-available":1},"notificationCustomData":{"pushNotificationReferenceId":"msg-8812","isReferredNotificationMustRemoved":true}}"#
            ]
        )
    }

    /// A device's earlier retractions ride along after its own references,
    /// newest first, as many as fit; repeats skipped; the first that does
    /// not fit ends the list.
    @Test func earlierRetractionsRideAlongAsFarAsTheyFit() throws {
        let (body, carried) = try canonical.retractionBody(for: ["m3"], addingWhatFitsOf: ["m2", "m3", "m1"])
        #expect(carried == 2)
        #expect(
            body.utf8String
                == #"{"aps":{"content-available":1},"notificationCustomData":{"pushNotificationReferenceIds":["m3","m2","m1"],"isReferredNotificationMustRemoved":true}}"#
        )
        let long = (0..<100).map { ReferenceID(String(format: "%04d-", $0) + String(repeating: "x", count: 95)) }
        let (full, fitted) = try canonical.retractionBody(for: ["now"], addingWhatFitsOf: long, limit: 1000)
        #expect(full.count <= 1000)
        #expect(fitted > 0 && fitted < long.count)
        #expect(try RetractPayload.retraction(in: userInfo(full.utf8String)) == Set(["now"] + long.prefix(fitted)))
        // One more would not have fitted.
        let (_, oneMore) = try canonical.retractionBody(for: ["now"], addingWhatFitsOf: Array(long.prefix(fitted + 1)), limit: 1000)
        #expect(oneMore == fitted)
        // Nothing fits beside a body already full: carried 0, the own references kept.
        let (alone, none) = try canonical.retractionBody(for: ["now"], addingWhatFitsOf: long, limit: 160)
        #expect(none == 0)
        #expect(try RetractPayload.retraction(in: userInfo(alone.utf8String)) == ["now"])
        #expect(error { try legacy.retractionBody(for: ["1"], addingWhatFitsOf: ["2"]) } is RetractPayloadError)
    }

    /// Earlier retractions of whole threads ride along as thread ids beside
    /// the references; a body whose history does not all fit says the rest
    /// is in the device feed, within the limit.
    @Test func threadsRideAlongBesideReferencesAndABodyLeavingSomeOutSaysSo() throws {
        let (mixed, carried) = try canonical.retractionBody(
            for: [], threads: ["c-9"], addingWhatFitsOf: [.reference("m2"), .thread("c-1"), .thread("c-9"), .reference("m1")])
        #expect(carried == 3)
        #expect(
            mixed.utf8String
                == #"{"aps":{"content-available":1},"notificationCustomData":{"pushNotificationReferenceIds":["m2","m1"],"pushNotificationThreadIds":["c-9","c-1"],"isReferredNotificationMustRemoved":true}}"#
        )
        let reading = RetractPayload.read(try userInfo(mixed.utf8String))
        #expect(reading.retraction == ["m1", "m2"])
        #expect(reading.retractedThreads == ["c-1", "c-9"])
        #expect(reading.customData?.moreInFeed == false)

        let long = (0..<100).map { PayloadBuilder.Retracted.reference(ReferenceID(String(format: "%04d-", $0) + String(repeating: "x", count: 95))) }
        let (full, fitted) = try canonical.retractionBody(for: ["now"], addingWhatFitsOf: long + [.thread("c-1")], limit: 1000)
        #expect(full.count <= 1000)
        #expect(fitted > 0 && fitted < long.count)
        #expect(full.utf8String.contains(#","pushNotificationMoreInFeed":true,"isReferredNotificationMustRemoved":true}}"#))
        #expect(RetractPayload.read(try userInfo(full.utf8String)).customData?.moreInFeed == true)
        // Asked for, the marker is there even when everything fits.
        let (marked, all) = try canonical.retractionBody(for: ["m3"], addingWhatFitsOf: [.reference("m1")], moreInFeed: true)
        #expect(all == 1)
        #expect(
            marked.utf8String
                == #"{"aps":{"content-available":1},"notificationCustomData":{"pushNotificationReferenceIds":["m3","m1"],"pushNotificationMoreInFeed":true,"isReferredNotificationMustRemoved":true}}"#
        )
        #expect(error { try canonical.retractionBody(for: [], threads: [""], addingWhatFitsOf: []) } is RetractPayloadError)
    }

    /// References split across bodies can each say the rest is in the feed.
    @Test func splitBodiesCanEachSayTheRestIsInTheFeed() throws {
        let references = (0..<200).map { ReferenceID("message-\(String(format: "%030d", $0))") }
        let bodies = try canonical.retractionBodies(for: references, moreInFeed: true)
        #expect(bodies.count > 1)
        #expect(bodies.allSatisfy { $0.count <= PayloadBuilder.maximumBodySize })
        var read: Set<ReferenceID> = []
        for body in bodies {
            let reading = RetractPayload.read(try userInfo(body.utf8String))
            #expect(reading.customData?.moreInFeed == true)
            read.formUnion(reading.retraction ?? [])
        }
        #expect(read == Set(references))
        #expect(try canonical.retractionReferenceGroups(for: references, moreInFeed: true).count == bodies.count)
        // The legacy dialect has no marker: one reference a body, as always.
        #expect(try legacy.retractionBodies(for: [1, 2], moreInFeed: true).map(\.utf8String).allSatisfy { !$0.contains("MoreInFeed") })
    }

    @Test func legacyRetractionBodyIsTheArticlesKeysWithIntegerIDs() throws {
        let bodies = try legacy.retractionBodies(for: ["233"])
        #expect(
            bodies.map(\.utf8String) == [
                #"{"aps":{"content-available":1},"notifcationCustomData":{"pushNotificationReferanceId":233,"isReferedNotificationMustRemoved":true}}"#
            ]
        )
    }

    @Test func legacyDialectRefusesNonIntegerReferences() {
        #expect(error { try legacy.retractionBodies(for: ["233", "msg-1"]) } as? RetractPayloadError == .referenceNotAnInteger("msg-1"))
        #expect(error { try legacy.originalCustomData(for: "0233") } as? RetractPayloadError == .referenceNotAnInteger("0233"))
    }

    @Test func legacyDialectSendsOneReferencePerBody() throws {
        let bodies = try legacy.retractionBodies(for: [1, 2, 1])
        #expect(try bodies.map { try RetractPayload.retraction(in: userInfo($0.utf8String)) } == [[1], [2]])
    }

    @Test func apsHoldsContentAvailableAndNothingElse() throws {
        for builder in [canonical, legacy] {
            for body in try builder.retractionBodies(for: [1, 2, 3]) {
                let aps = try #require(userInfo(body.utf8String)["aps"] as? [String: Any])
                #expect(aps.keys.sorted() == ["content-available"])
                #expect(aps["content-available"] as? Int == 1)
            }
        }
    }

    @Test func severalReferencesCoalesceIntoOneBody() throws {
        let bodies = try canonical.retractionBodies(for: ["a", "b\"quoted\"", "a", "c"])
        #expect(
            bodies.map(\.utf8String) == [
                #"{"aps":{"content-available":1},"notificationCustomData":{"pushNotificationReferenceIds":["a","b\"quoted\"","c"],"isReferredNotificationMustRemoved":true}}"#
            ]
        )
        #expect(try RetractPayload.retraction(in: userInfo(bodies[0].utf8String)) == ["a", "b\"quoted\"", "c"])
        #expect(try canonical.retractionBodies(for: []).isEmpty)
    }

    @Test func referencesOverTheLimitSplitIntoTheFewestBodies() throws {
        // References of 64 encoded bytes: every body but the last is full.
        let references = (0..<500).map { ReferenceID(String(format: "%062d", $0)) }
        let bodies = try canonical.retractionBodies(for: references)
        let overhead =
            #"{"aps":{"content-available":1},"notificationCustomData":{"pushNotificationReferenceIds":[],"isReferredNotificationMustRemoved":true}}"#
            .utf8.count
        let perBody = (PayloadBuilder.maximumBodySize - overhead + 1) / (64 + 1)
        #expect(bodies.count == (500 + perBody - 1) / perBody)
        #expect(bodies.allSatisfy { $0.count <= PayloadBuilder.maximumBodySize })
        #expect(bodies.dropLast().allSatisfy { $0.count > PayloadBuilder.maximumBodySize - 65 })

        var seen: [ReferenceID] = []
        for body in bodies {
            let customData = try RetractPayload.customData(in: userInfo(body.utf8String))
            seen += try #require(customData).references
        }
        #expect(seen.sorted() == references.sorted())
    }

    @Test func splitFindsFewerBodiesThanFirstFitDecreasing() throws {
        // In units of 396 encoded bytes: 5,5,4,4,3,3,3,3. First-fit decreasing
        // needs four bodies ({5,5} {4,4} {3,3,3} {3}); three fit: {5,5} {4,3,3} {4,3,3}.
        let units = [5, 5, 4, 4, 3, 3, 3, 3]
        let references = units.enumerated().map { index, unit in
            ReferenceID(String(index) + String(repeating: "u", count: unit * 396 - 2 - String(index).count))
        }
        let bodies = try canonical.retractionBodies(for: references)
        #expect(bodies.count == 3)
        #expect(bodies.allSatisfy { $0.count <= PayloadBuilder.maximumBodySize })
        let read = try bodies.map { try #require(RetractPayload.retraction(in: try userInfo($0.utf8String))) }
        #expect(read.reduce(Set()) { $0.union($1) } == Set(references))
    }

    @Test func mixedLengthsPackTightly() throws {
        // Two 2,000-byte references cannot share a body; the small ones fill the gaps.
        let large = (0..<2).map { ReferenceID(String(repeating: "L\($0)", count: 1000)) }
        let small = (0..<30).map { ReferenceID("s\($0)") }
        let bodies = try canonical.retractionBodies(for: small + large)
        #expect(bodies.count == 2)
        #expect(bodies.allSatisfy { $0.count <= PayloadBuilder.maximumBodySize })
        let references = try bodies.map { try #require(RetractPayload.retraction(in: userInfo($0.utf8String))) }
        #expect(references.reduce(Set()) { $0.union($1) } == Set(small + large))
    }

    @Test func bodyThatFitsExactlyIsAccepted() throws {
        let overhead = try canonical.retractionBodies(for: ["x"])[0].count - 3
        let exact = ReferenceID(String(repeating: "e", count: PayloadBuilder.maximumBodySize - overhead - 2))
        #expect(try canonical.retractionBodies(for: [exact])[0].count == PayloadBuilder.maximumBodySize)
        let over = ReferenceID(exact.rawValue + "ee")
        #expect(error { try canonical.retractionBodies(for: [over]) } as? RetractPayloadError == .bodyTooLarge(size: 4098, limit: 4096))
    }

    @Test func controlCharactersAndUnicodeAreEscapedAndCountedInBytes() throws {
        let reference: ReferenceID = "tab\tnul\u{0}é😀\\"
        let body = try canonical.retractionBodies(for: [reference])[0]
        #expect(body.utf8String.contains(#""tab\tnul\u0000é😀\\""#))
        #expect(try RetractPayload.retraction(in: userInfo(body.utf8String)) == [reference])
    }

    @Test func byteOrderMarkSurvivesTheBuilder() throws {
        let reference: ReferenceID = "\u{FEFF}x"
        let body = try canonical.retractionBodies(for: [reference])[0]
        struct Retraction: Decodable { var notificationCustomData: NotificationCustomData }
        #expect(try JSONDecoder().decode(Retraction.self, from: body).notificationCustomData.referenceID == reference)
    }

    @Test func emptyReferenceIsRefused() {
        #expect(
            error { try canonical.retractionBodies(for: ["a", ""]) } as? RetractPayloadError
                == .invalidValue(key: "pushNotificationReferenceId", reason: "a reference must not be empty")
        )
    }

    @Test func originalCustomDataInBothDialects() throws {
        #expect(try canonical.originalCustomData(for: "msg-8812").utf8String == #"{"pushNotificationReferenceId":"msg-8812"}"#)
        #expect(try legacy.originalCustomData(for: 233).utf8String == #"{"pushNotificationReferanceId":233}"#)
    }

    @Test func originalPayloadGetsTheReferenceAndKeepsEverythingElse() throws {
        let payload = Data(
            #"{"aps":{"alert":{"title":"Ada","body":"See you at 8?"},"sound":"default"},"thread":"t1","notificationCustomData":{"room":"r9","pushNotificationReferenceId":"old"}}"#
                .utf8)
        let written = try canonical.originalPayload(payload, reference: "msg-8812")
        #expect(
            written.utf8String
                == #"{"aps":{"alert":{"body":"See you at 8?","title":"Ada"},"sound":"default"},"notificationCustomData":{"pushNotificationReferenceId":"msg-8812","room":"r9"},"thread":"t1"}"#
        )
        let device = try userInfo(written.utf8String)
        #expect(DeliveredNotification(identifier: "x", userInfo: device).referenceID == "msg-8812")

        let otherSpelling = Data(
            #"{"notificationCustomData":"{\"pushNotificationReferanceId\":5,\"pushNotificationReferenceIds\":[\"x\"]}"}"#.utf8)
        #expect(
            try canonical.originalPayload(otherSpelling, reference: "msg-1").utf8String
                == #"{"notificationCustomData":{"pushNotificationReferenceId":"msg-1"}}"#
        )

        let legacyWritten = try legacy.originalPayload(Data(#"{"aps":{"alert":"hi"}}"#.utf8), reference: 233)
        #expect(legacyWritten.utf8String == #"{"aps":{"alert":"hi"},"notifcationCustomData":{"pushNotificationReferanceId":233}}"#)
    }

    @Test func originalPayloadRefusals() {
        #expect(error { try canonical.originalPayload(Data("[1]".utf8), reference: "a") } is RetractPayloadError)
        #expect(error { try canonical.originalPayload(Data("{".utf8), reference: "a") } is RetractPayloadError)
        #expect(
            error { try canonical.originalPayload(Data(#"{"notifcationCustomData":{}}"#.utf8), reference: "a") } as? RetractPayloadError
                == .invalidValue(
                    key: "notifcationCustomData", reason: "this app writes custom data under notificationCustomData; move it there")
        )
        #expect(
            error {
                try canonical.originalPayload(
                    Data(#"{"notificationCustomData":{"isReferredNotificationMustRemoved":true}}"#.utf8), reference: "a")
            } as? RetractPayloadError
                == .invalidValue(
                    key: "notificationCustomData.isReferredNotificationMustRemoved", reason: "an original must not carry the removal flag")
        )
        let huge = Data(#"{"aps":{"alert":"\#(String(repeating: "x", count: 4100))"}}"#.utf8)
        #expect(
            error { try canonical.originalPayload(huge, reference: "a") } as? RetractPayloadError == .bodyTooLarge(size: 4181, limit: 4096))
    }

    @Test func checkSizeSaysHowFarOver() {
        #expect(throws: Never.self) { try PayloadBuilder.checkSize(Data(count: 4096)) }
        #expect(error { try PayloadBuilder.checkSize(Data(count: 4100)) } as? RetractPayloadError == .bodyTooLarge(size: 4100, limit: 4096))
    }
}
