import Foundation
import Logging
import RetractModel
import RetractStore

/// Delivers the completion webhooks the ledger queued: claims due
/// deliveries (`FOR UPDATE SKIP LOCKED`, with a lease), POSTs each
/// retraction's final account through a ``WebhookSender``, and records the
/// outcome: delivered on 2xx, otherwise retried with backoff until the
/// retry window ends, then given up. Runs beside a ``RetractionWorker``'s
/// lanes and never holds them up; woken by the same signal.
package struct WebhookCourier: Sendable {
    let engine: RetractEngine
    let sender: WebhookSender
    let worker: String

    /// Deliveries claimed, and POSTed at once, per look at the queue.
    static let batch = 8

    package init(engine: RetractEngine, sender: WebhookSender, worker: String) {
        self.engine = engine
        self.sender = sender
        self.worker = worker
    }

    private var store: RetractStore { engine.store }
    private var logger: Logger { engine.logger }

    /// Delivers until `keepGoing` turns false (checked between batches) or
    /// the task is cancelled; database errors are logged and waited out.
    /// - Parameter mayClaim: false while claims must wait (the ledger takes no writes).
    package func run(while keepGoing: @escaping @Sendable () -> Bool, mayClaim: @escaping @Sendable () -> Bool = { true }) async {
        let wake = engine.sender.wake
        while !Task.isCancelled && keepGoing() {
            let seen = wake.generation
            guard mayClaim() else {
                await wake.wait(after: seen, atMost: sender.settings.poll)
                continue
            }
            do {
                let claimed = try await store.claimWebhookDeliveries(worker: worker, limit: Self.batch, lease: sender.settings.lease)
                guard !claimed.isEmpty else {
                    await wake.wait(after: seen, atMost: sender.settings.poll)
                    continue
                }
                await withTaskGroup(of: Void.self) { group in
                    for delivery in claimed { group.addTask { await deliver(delivery) } }
                }
            } catch {
                if Task.isCancelled { break }
                logger.warning("webhook deliveries could not be claimed; trying again", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// One attempt at one delivery, its outcome recorded. A failure to
    /// record it leaves the claim to lapse, and the delivery is tried again.
    func deliver(_ delivery: ClaimedWebhookDelivery) async {
        let outcome = await attempt(delivery)
        switch outcome {
        case .delivered: logger.debug("webhook delivered", metadata: ["retraction": "\(delivery.retractionID)"])
        case .retry(_, _, let error, let delay):
            logger.info(
                "webhook not delivered; trying again",
                metadata: ["retraction": "\(delivery.retractionID)", "error": "\(error)", "in": "\(delay)"])
        case .gaveUp(_, _, let error):
            logger.warning("webhook given up", metadata: ["retraction": "\(delivery.retractionID)", "error": "\(error)"])
        }
        do {
            try await store.finishWebhookDelivery(delivery, outcome)
        } catch {
            logger.warning("a webhook's outcome could not be recorded; it is tried again", metadata: ["error": "\(error)"])
        }
    }

    private func attempt(_ delivery: ClaimedWebhookDelivery) async -> WebhookOutcome {
        guard let webhook = delivery.webhook else {
            return .gaveUp(url: nil, status: nil, error: "the app's webhook was removed")
        }
        let (url, secret) = webhook
        let body: [UInt8]
        do {
            let status = try await engine.status(of: delivery.retractionID)
            guard let app = try await engine.app(id: status.retraction.appID) else {
                return .gaveUp(url: url, status: nil, error: "the app was removed")
            }
            let event = WebhookEvent(deliveryID: delivery.id, retraction: RetractionView(status, app: app.name))
            body = Array(try APIJSON.encoder.encode(event))
        } catch {
            // What is stored is shown to every key that may read the retraction: the error goes to the log.
            logger.warning(
                "a webhook's account could not be read", metadata: ["retraction": "\(delivery.retractionID)", "error": "\(error)"])
            return failed(delivery, url: url, status: nil, error: "the account could not be read")
        }
        switch await sender.post(body, to: url, secret: secret, deliveryID: delivery.id) {
        case .status(let code) where (200..<300).contains(code):
            return .delivered(url: url, status: code)
        case .status(let code):
            return failed(delivery, url: url, status: code, error: "the receiver answered \(code)")
        case .failed(let failure) where !failure.isRetried:
            // The operator's settings refuse the destination: trying again would change nothing.
            return .gaveUp(url: url, status: nil, error: failure.description)
        case .failed(let failure):
            return failed(delivery, url: url, status: nil, error: failure.description)
        }
    }

    /// A failed attempt: retried after a backoff, or given up once the retry window is over.
    private func failed(_ delivery: ClaimedWebhookDelivery, url: String, status: Int?, error: String) -> WebhookOutcome {
        var generator = SystemRandomNumberGenerator()
        guard
            let delay = sender.settings.retryDelay(
                afterAttempt: delivery.attempts, firstAttempt: delivery.firstAttemptAt, now: Date(), using: &generator)
        else {
            return .gaveUp(url: url, status: status, error: "\(error); given up after \(delivery.attempts) attempts")
        }
        return .retry(url: url, status: status, error: error, delay: delay)
    }
}
