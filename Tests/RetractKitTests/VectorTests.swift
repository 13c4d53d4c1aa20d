import Foundation
import PayloadVectors
import RetractKit
import Testing

/// Every case of Tests/Vectors/payloads.json, through the handler an app calls.
@Suite("Payload vectors")
struct VectorTests {
    @Test(arguments: try PayloadVectors.load().cases)
    func payloadVector(_ vector: PayloadVectors.Case) async throws {
        let push = try userInfo(vector.pushJSON)
        let delivered = try #require(try JSONSerialization.jsonObject(with: Data(vector.deliveredJSON.utf8)) as? [[String: Any]])
        let showing = delivered.map { notification in
            // An Android phone's notification, as RetractKit for Android matches it (`retract match` reads both).
            guard let identifier = notification["identifier"] as? String else {
                return DeliveredNotification(
                    androidTag: notification["tag"] as? String, id: notification["id"] as? Int ?? 0,
                    extras: notification["extras"] as? [AnyHashable: Any] ?? [:], group: notification["group"] as? String)
            }
            return DeliveredNotification(
                identifier: identifier, userInfo: notification["userInfo"] as? [AnyHashable: Any] ?? [:],
                threadIdentifier: notification["threadIdentifier"] as? String)
        }
        let center = InMemoryNotificationCenter(delivered: showing)
        let report = await RetractionHandler(center: center).handle(RetractPayload.read(push))

        #expect((report.outcome != .notARetraction) == vector.retraction)
        #expect(report.references.map(\.rawValue).sorted() == vector.references.sorted())
        #expect(report.threads.sorted() == vector.threads.sorted())
        #expect(report.outcome.identifiers.sorted() == vector.remove.sorted())
        #expect(Set(center.delivered.map(\.identifier)) == Set(showing.map(\.identifier)).subtracting(vector.remove))
        #expect(report.diagnostics.compactMap(\.key).sorted() == vector.diagnostics.sorted())
        #expect(report.diagnostics.count == vector.diagnostics.count)

        // The app delegate's one call gives the same outcome.
        let again = InMemoryNotificationCenter(delivered: showing)
        #expect(await RetractionHandler(center: again).handle(userInfo: push) == report.outcome)
    }
}

extension PayloadVectors.Case: CustomTestStringConvertible {
    public var testDescription: String { name }
}
