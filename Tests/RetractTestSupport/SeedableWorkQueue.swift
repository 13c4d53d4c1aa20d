import Foundation
import RetractCore
import RetractKit
import RetractModel
import RetractStore

/// A work queue a test can fill: the in-memory one or the ledger, so that
/// one contract suite runs against both (`WorkQueueContractTests`).
package protocol SeedableWorkQueue: WorkQueue {
    /// Registers an app named `name` that sends through APNs with a token key.
    func seedApp(_ name: String) async throws -> App
    func seed(_ deliveries: [Delivery]) async throws
    func seedRetraction(_ request: RetractionRequest) async throws -> Retraction
    func seedDead(_ tokens: [DeadToken], appID: Int64) async throws
    /// Cancels a retraction: whether this call did.
    func seedCancel(_ id: UUID, by actor: String, reason: String) async throws -> Bool
}

extension SeedableWorkQueue {
    static func registration(_ name: String) -> AppRegistration {
        AppRegistration(
            name: name, topic: "com.example.\(name)", environment: .sandbox, dialect: .canonical,
            authentication: .token(keyID: "KEY1234567", teamID: "TEAM123456", keyPath: "/keys/AuthKey.p8"))
    }
}

extension RetractStore: SeedableWorkQueue {
    package func seedApp(_ name: String) async throws -> App {
        try await registerApp(Self.registration(name), actor: "tests")
    }

    package func seed(_ deliveries: [Delivery]) async throws {
        _ = try await record(deliveries)
    }

    package func seedRetraction(_ request: RetractionRequest) async throws -> Retraction {
        try await createRetraction(request).retraction
    }

    package func seedDead(_ tokens: [DeadToken], appID: Int64) async throws {
        try await markDead(tokens, appID: appID)
    }

    package func seedCancel(_ id: UUID, by actor: String, reason: String) async throws -> Bool {
        try await cancelRetraction(id: id, by: actor, reason: reason).cancelled
    }
}

extension InMemoryWorkQueue: SeedableWorkQueue {
    package func seedApp(_ name: String) async throws -> App {
        register(Self.registration(name))
    }

    package func seed(_ deliveries: [Delivery]) async throws {
        record(deliveries)
    }

    package func seedRetraction(_ request: RetractionRequest) async throws -> Retraction {
        createRetraction(request)
    }

    package func seedDead(_ tokens: [DeadToken], appID: Int64) async throws {
        markDead(tokens, appID: appID)
    }

    package func seedCancel(_ id: UUID, by actor: String, reason: String) async throws -> Bool {
        try cancel(id, by: actor, reason: reason)
    }
}
