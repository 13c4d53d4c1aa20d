import NIOCore
import RetractFCM

/// How the engine talks to FCM, for every app alike.
package struct FCMSettings: Sendable {
    /// The base of `/v1/projects/<project>/messages:send` (Google's unless a proxy or the simulator).
    package var messagesBaseURL: String
    /// Extra root certificates (PEM) to trust: a proxy, the simulator.
    package var additionalTrustRootsPEM: [String]
    package var requestTimeout: TimeAmount

    package init(
        messagesBaseURL: String = FCMClientConfiguration.defaultMessagesBaseURL,
        additionalTrustRootsPEM: [String] = [],
        requestTimeout: TimeAmount = .seconds(30)
    ) {
        self.messagesBaseURL = messagesBaseURL
        self.additionalTrustRootsPEM = additionalTrustRootsPEM
        self.requestTimeout = requestTimeout
    }

    package var clientConfiguration: FCMClientConfiguration {
        FCMClientConfiguration(
            messagesBaseURL: messagesBaseURL, additionalTrustRootsPEM: additionalTrustRootsPEM, requestTimeout: requestTimeout)
    }
}
