import Foundation
import NIOConcurrencyHelpers
import NIOCore
import RetractFCM
import RetractKit
import RetractModel
import RetractPush
import RetractStore

/// Sends one app's pushes through an ``FCMClient``: each push's APNs-style
/// body becomes an FCM message (see ``FCMMessage``), built once per body.
package final class FCMTransport: PushTransport {
    private let client: FCMClient
    /// Messages by body and kind: a broadcast's pushes share a handful of bodies.
    private let messages = NIOLockedValueBox<[MessageKey: FCMMessage]>([:])

    private struct MessageKey: Hashable {
        var body: ByteBuffer
        var kind: OutgoingPush.Kind
    }

    package init(client: FCMClient) {
        self.client = client
    }

    /// FCM writes the custom data out as a JSON string, longer than the
    /// object, so its bodies are packed smaller than APNs's.
    package var bodyLimit: Int { FCMMessage.bodyLimit }

    /// What FCM would refuse: a reserved data key, a payload too large once written out.
    package func problem(with body: ByteBuffer, kind: OutgoingPush.Kind) -> String? {
        do {
            _ = try message(body: body, kind: kind)
            return nil
        } catch {
            return error.message
        }
    }

    package func send(_ push: OutgoingPush) async -> PushVerdict {
        let message: FCMMessage
        do {
            message = try self.message(body: push.body, kind: push.kind)
        } catch {
            return .failed(reason: "FCM message: \(error.message)")
        }
        do {
            _ = try await client.send(message.request(token: PushService.fcm.text(of: push.token)))
            return .delivered
        } catch {
            return PushVerdict(error)
        }
    }

    package func provision(inFlight: Int) {
        client.provision(inFlight: inFlight)
    }

    package func shutdown() async {
        await client.shutdown()
    }

    private func message(body: ByteBuffer, kind: OutgoingPush.Kind) throws(FCMMessageError) -> FCMMessage {
        let key = MessageKey(body: body, kind: kind)
        if let known = messages.withLockedValue({ $0[key] }) { return known }
        let made: FCMMessage
        switch kind {
        case .retraction(.background, _): made = try FCMMessage(body: body.readableBytesView, kind: .background)
        case .retraction(.serviceExtension, let collapseID):
            made = try FCMMessage(body: body.readableBytesView, kind: .serviceExtension, collapseID: collapseID)
        case .retraction(.replace, let collapseID):
            made = try FCMMessage(body: body.readableBytesView, kind: .alert, collapseID: collapseID)
        case .original(false, let collapseID, _):
            made = try FCMMessage(body: body.readableBytesView, kind: .background, collapseID: collapseID)
        case .original(true, let collapseID, let androidTag?):
            made = try FCMMessage(body: body.readableBytesView, kind: .alert, collapseID: collapseID, tag: androidTag)
        case .original(true, let collapseID, nil):
            made = try FCMMessage(body: body.readableBytesView, kind: .appShownAlert, collapseID: collapseID)
        }
        messages.withLockedValue { messages in
            if messages.count >= 1024 { messages.removeAll() }
            messages[key] = made
        }
        return made
    }
}
