import Foundation
import NIOCore
import RetractAPNs
import RetractKit
import RetractPush

/// Sends one app's pushes through an ``APNsClient``.
package final class APNsTransport: PushTransport {
    private let client: APNsClient
    private let topic: String

    package init(client: APNsClient, topic: String) {
        self.client = client
        self.topic = topic
    }

    package var bodyLimit: Int { PayloadBuilder.maximumBodySize }

    package func problem(with body: ByteBuffer, kind: OutgoingPush.Kind) -> String? {
        let request = self.request(OutgoingPush(token: DeviceToken(bytes: [0]), body: body, kind: kind))
        do {
            try request.validate()
            return nil
        } catch {
            return "\(error)"
        }
    }

    package func send(_ push: OutgoingPush) async -> PushVerdict {
        do {
            _ = try await client.send(request(push))
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

    private func request(_ push: OutgoingPush) -> APNsRequest {
        switch push.kind {
        case .retraction(.background, _):
            APNsRequest(deviceToken: push.token.hex, topic: topic, pushType: .background, body: push.body)
        case .retraction(.serviceExtension, let collapseID), .retraction(.replace, let collapseID):
            APNsRequest(deviceToken: push.token.hex, topic: topic, pushType: .alert, collapseID: collapseID, body: push.body)
        case .original(let visible, let collapseID, _):
            APNsRequest(
                deviceToken: push.token.hex, topic: topic, pushType: visible ? .alert : .background, collapseID: collapseID,
                body: push.body)
        }
    }
}

/// Why a file cannot be read, in a few words.
func fileProblem(_ path: String) -> String {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return "no such file" }
    if isDirectory.boolValue { return "it is a directory" }
    return FileManager.default.isReadableFile(atPath: path) ? "unreadable" : "permission denied"
}
