import Foundation
import RetractCore
import RetractKit
import RetractModel

extension RetractAPI {
    /// `POST /v1/reads` (docs/reads.md): a recipient read a conversation up
    /// to a point; its other devices remove what they were sent of it up to
    /// there. Needs the `retract` scope; a silent background push always,
    /// never audited, never held for approval, no webhook.
    func markRead(_ input: PostInput) async throws -> Answer {
        try input.caller.require(.retract)
        let given = try JSONBody.decode(ReadBody.self, from: input.body)
        if let (field, problem) = given.retractionField { throw APIProblem.invalid(field, problem) }
        let app = try await app(named: given.app, for: input.caller, field: "app")
        let reader = try given.reader.map { (text) throws(APIProblem) -> DeviceToken in
            guard let token = PushService.anyToken(text) else {
                throw APIProblem.invalid("reader", PushService.fcm.tokenProblem(text))
            }
            return token
        }
        let request = ReadRequest(
            app: app, recipient: given.recipient, thread: given.thread,
            upTo: try given.upTo.map { (text) throws(APIProblem) in try Validate.date(text, field: "upTo") },
            upToReference: try given.upToReference.map { (text) throws(APIProblem) in try Validate.reference(text, field: "upToReference") },
            reader: reader, badge: given.badge, account: given.account)
        let receipt = try await engine.read(request)
        return Answer(
            .accepted,
            ReadTakenView(
                id: receipt.id.uuidString.lowercased(), app: app.name, account: given.account, devices: receipt.devices,
                deliveries: receipt.deliveries, upTo: receipt.upTo))
    }
}
