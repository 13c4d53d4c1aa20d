import Foundation
import RetractCore

/// What `retract serve` runs.
package enum ServeMode: String, CaseIterable, Sendable {
    /// The API and the fan-out workers in one process.
    case all
    /// The API only; other processes run the workers.
    case api
    /// The workers only, with /healthz, /readyz and /metrics.
    case workers

    package var servesAPI: Bool { self != .workers }
    package var runsWorkers: Bool { self != .api }
}

/// How the server listens and behaves; `retract serve` fills it from flags
/// and the environment (docs/operations.md has the table).
package struct ServerSettings: Sendable {
    package var host: String
    /// 0 picks a free port (tests).
    package var port: Int
    package var mode: ServeMode
    /// The largest request body, in bytes.
    package var maxBodySize: Int
    /// How long SIGTERM waits for in-flight requests and work items before
    /// cancelling; cancelled work items go back to the queue.
    package var drainTimeout: Duration
    /// How often the database is pinged, and the queue depth sampled.
    package var healthInterval: Duration
    /// How often the retention pass runs.
    package var retentionInterval: Duration
    /// The hosts (`host`, or `host:port`) an app registered over the API may
    /// name as its `endpoint`: the push services' own by default.
    package var allowedEndpoints: [String]
    /// The folder credential files named over the API must be in; none
    /// means `POST /v1/apps` takes no credential files.
    package var credentialsDirectory: String?
    /// Where webhooks may go (none by default, so no webhook can be set
    /// until the operator allows its host), and how the workers of this
    /// process send and retry them.
    package var webhooks: WebhookSettings
    /// Console cookies without `Secure` and the `__Host-` prefix, for a
    /// console reached over plain HTTP in development: a browser refuses
    /// such cookies from an `http://` origin other than localhost.
    package var consolePlainHTTP: Bool
    /// Requests per second per API key, and the device feed's while sending.
    package var rateLimits: RateLimits

    /// Apple's APNs hosts and Google's FCM hosts.
    package static let pushServiceHosts = [
        "api.push.apple.com", "api.sandbox.push.apple.com", "api.development.push.apple.com", "fcm.googleapis.com",
        "oauth2.googleapis.com",
    ]

    package init(
        host: String = "127.0.0.1",
        port: Int = 8080,
        mode: ServeMode = .all,
        maxBodySize: Int = 1 << 20,
        drainTimeout: Duration = .seconds(25),
        healthInterval: Duration = .seconds(1),
        retentionInterval: Duration = .seconds(3600),
        allowedEndpoints: [String] = ServerSettings.pushServiceHosts,
        credentialsDirectory: String? = nil,
        webhooks: WebhookSettings = WebhookSettings(),
        consolePlainHTTP: Bool = false,
        rateLimits: RateLimits = RateLimits()
    ) {
        self.host = host
        self.port = port
        self.mode = mode
        self.maxBodySize = maxBodySize
        self.drainTimeout = drainTimeout
        self.healthInterval = healthInterval
        self.retentionInterval = retentionInterval
        self.allowedEndpoints = allowedEndpoints
        self.credentialsDirectory = credentialsDirectory
        self.webhooks = webhooks
        self.consolePlainHTTP = consolePlainHTTP
        self.rateLimits = rateLimits
    }

    /// The first setting that cannot work, naming its flag, or nil.
    package var problem: String? {
        if !(0...65535).contains(port) { return "--port \(port): 0 to 65535" }
        if maxBodySize < 1024 || maxBodySize > 64 << 20 { return "--max-body-size \(maxBodySize): 1024 to \(64 << 20) bytes" }
        if drainTimeout < .zero || drainTimeout > .seconds(3600) { return "--drain-timeout: 0 to 3600 seconds" }
        if let bad = allowedEndpoints.first(where: { EndpointAllowList.Entry($0) == nil }) {
            return "--allowed-endpoint \(bad.prefix(100)): a host name or address, optionally with :PORT"
        }
        if let bad = webhooks.destinations.allowedHosts.first(where: { EndpointAllowList.Entry($0) == nil }) {
            return "--allowed-webhook-host \(bad.prefix(100)): a host name or address, optionally with :PORT"
        }
        if rateLimits.readsPerSecond < 0 || rateLimits.writesPerSecond < 0 || rateLimits.feedCallsWhileSending < 0 {
            return "--key-read-rate, --key-write-rate, --feed-rate-while-sending: 0 (no limit) or more"
        }
        if let directory = credentialsDirectory {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
                return "--credentials-dir \(directory): not a folder"
            }
        }
        return nil
    }
}
