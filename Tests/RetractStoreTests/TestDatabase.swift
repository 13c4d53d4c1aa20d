import Foundation
import Logging
import PostgresNIO
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

/// Test data built by each test.
enum Fixture {
    static func token(_ number: Int) -> DeviceToken {
        var bytes = [UInt8](repeating: 0, count: 32)
        withUnsafeBytes(of: UInt64(number).bigEndian) { bytes.replaceSubrange(24..<32, with: $0) }
        return DeviceToken(bytes: bytes)
    }

    static func registerApp(_ store: RetractStore, name: String = "chat", dialect: PayloadDialect = .canonical) async throws -> App {
        try await store.registerApp(
            AppRegistration(
                name: name, topic: "com.example.\(name)", environment: .sandbox, dialect: dialect,
                authentication: .token(keyID: "KEY1234567", teamID: "TEAM123456", keyPath: "/keys/AuthKey.p8")),
            actor: "tests")
    }

    static func deliveries(app: App, reference: ReferenceID, tokens: some Sequence<Int>, at date: Date = Date()) -> [Delivery] {
        tokens.map { Delivery(appID: app.id, reference: reference, token: token($0), sentAt: date) }
    }

    /// Runs SQL the store has no operation for, to set up or inspect a test.
    static func scalar<Value: PostgresDecodable & Sendable>(_ store: RetractStore, _ query: PostgresQuery, as: Value.Type) async throws -> Value? {
        for try await row in try await store.client.query(query, logger: TestDatabase.logger) {
            return try row.makeRandomAccess()[0].decode(Value.self)
        }
        return nil
    }
}
