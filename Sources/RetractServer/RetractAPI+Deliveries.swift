import Foundation
import NIOCore
import RetractCore
import RetractKit
import RetractModel
import RetractStore

extension RetractAPI {
    /// The most deliveries one `POST /v1/deliveries` may carry, counting every token.
    static let maximumDeliveriesPerRequest = 10_000
    /// The most delivery objects in one array body.
    static let maximumDeliveryObjects = 1000
    /// The most devices one `POST /v1/notifications` sends to.
    static let maximumSendTokens = 1000

    /// `POST /v1/deliveries`: records what the caller sent itself. Every
    /// object is checked first; then all are written in one transaction, so a
    /// refused request writes nothing.
    func record(_ input: PostInput) async throws -> Answer {
        let (body, caller) = (input.body, input.caller)
        try caller.require(.record)
        let objects: [(DeliveryBody, prefix: String)]
        if JSONBody.firstCharacter(of: body) == UInt8(ascii: "[") {
            let array = try JSONBody.decode([DeliveryBody].self, from: body)
            guard !array.isEmpty else { throw APIProblem(.invalidField, "the array holds no delivery") }
            guard array.count <= Self.maximumDeliveryObjects else {
                throw APIProblem(.invalidField, "\(array.count) delivery objects; at most \(Self.maximumDeliveryObjects)")
            }
            objects = array.enumerated().map { ($0.element, "[\($0.offset)].") }
        } else {
            objects = [(try JSONBody.decode(DeliveryBody.self, from: body), "")]
        }
        let total = objects.reduce(0) { $0 + $1.0.tokens.count }
        guard total <= Self.maximumDeliveriesPerRequest else {
            throw APIProblem(.invalidField, "\(total) tokens in all; at most \(Self.maximumDeliveriesPerRequest) per request")
        }
        let now = Date()
        var recordings: [RetractEngine.Recording] = []
        for (object, prefix) in objects {
            // The store keeps apps read by name: one lookup per app, not per object.
            let app = try await self.app(named: object.app, for: caller, field: prefix + "app")
            let reference = try Validate.reference(object.reference, field: prefix + "reference")
            let service = try Validate.transport(object.transport, field: prefix + "transport")
            let tokens = try Validate.tokens(
                object.tokens, field: prefix + "tokens", limit: Self.maximumDeliveriesPerRequest, service: service)
            var sentAt = now
            if let text = object.sentAt { sentAt = try Validate.date(text, field: prefix + "sentAt") }
            do {
                recordings.append(
                    try engine.recording(
                        app: app, reference: reference, tokens: tokens, sentAt: sentAt, via: service, collapseID: object.collapseId,
                        labels: object.labels, account: object.account, now: now))
            } catch {
                throw error.within(prefix)
            }
        }
        let recorded = try await engine.record(recordings, now: now)
        return Answer(.created, RecordedView(recorded: recorded, deliveries: total))
    }

    /// `POST /v1/notifications`: sends a notification with the reference
    /// written into it, recording every device before it is sent to.
    func send(_ input: PostInput) async throws -> Answer {
        let (body, caller) = (input.body, input.caller)
        try caller.require(.send)
        let given = try JSONBody.decode(NotificationBody.self, from: body)
        let app = try await app(named: given.app, for: caller, field: "app")
        let reference = try Validate.reference(given.reference, field: "reference")
        let service = try Validate.transport(given.transport, field: "transport")
        let androidDisplay = try Validate.androidDisplay(given.androidDisplay, field: "androidDisplay")
        let tokens = try Validate.tokens(given.tokens, field: "tokens", limit: Self.maximumSendTokens, service: service)
        if let collapseID = given.collapseID, let problem = CollapseIDChoice.problem(with: collapseID) {
            throw APIProblem.invalid("collapseID", problem)
        }
        let payload = try Self.payloadBytes(of: body)
        var resuming: SendProgress?
        if let kept = input.partialWork {
            resuming = try? JSONDecoder().decode(SendProgress.self, from: Data(kept))
            if resuming == nil { logger.warning("the partial work kept with an Idempotency-Key cannot be read; sending to every device") }
        }
        let report: SendReport
        do {
            report = try await engine.send(
                app: app, reference: reference, tokens: tokens, payload: payload,
                collapseID: given.collapseID.map { .custom($0) } ?? .reference, labels: given.labels, via: service,
                androidDisplay: androidDisplay, account: given.account, resuming: resuming)
        } catch {
            if let progress = error.partialSend, input.idempotencyKey != nil, let kept = try? JSONEncoder().encode(progress) {
                let problem = APIRequestMiddleware.problem(for: error)
                let sent = progress.handled.count
                throw PartialFailure(
                    problem: APIProblem(
                        problem.kind,
                        "\(problem.detail); \(sent) of \(Set(tokens).count) devices were sent to before it stopped: send the same request "
                            + "with the same Idempotency-Key and only the others are",
                        field: problem.field, headers: problem.headers),
                    kept: Array(kept))
            }
            throw error
        }
        return Answer(.ok, SendAccount(report))
    }

    /// The bytes of the body's `payload` object.
    private static func payloadBytes(of body: ByteBuffer) throws(APIProblem) -> Data {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any],
            let payload = object["payload"] as? [String: Any], JSONSerialization.isValidJSONObject(payload),
            let data = try? JSONSerialization.data(withJSONObject: payload)
        else {
            throw APIProblem.invalid("payload", "a JSON object with an aps object")
        }
        guard payload["aps"] is [String: Any] else { throw APIProblem.invalid("payload.aps", "missing: the payload needs an aps object") }
        return data
    }
}
