import Foundation
import RetractKit
import RetractModel
import Testing

/// ``AppChange``: what a change to an app's settings makes of it, without a database.
@Suite("App changes")
struct AppChangeTests {
    static let tokenApp = App(
        id: 1, name: "news", topic: "com.example.news", environment: .sandbox, dialect: .canonical,
        authentication: .token(keyID: "ABCDEFGHIJ", teamID: "TEAM000001", keyPath: "/keys/news.p8"), createdAt: Date())

    @Test func tokenFieldsNotGivenAreKeptAndACertificateReplacesThem() throws {
        let rotated = try AppChange(keyPath: "/keys/news-2.p8").applied(to: Self.tokenApp)
        #expect(rotated.authentication == .token(keyID: "ABCDEFGHIJ", teamID: "TEAM000001", keyPath: "/keys/news-2.p8"))
        let certified = try AppChange(certificatePath: "/keys/news.p12").applied(to: Self.tokenApp)
        #expect(certified.authentication == .certificate(path: "/keys/news.p12"))
        // Back to a token key from a certificate: all three are needed.
        #expect(throws: FieldProblem("keyID", "missing: app news has no token key yet, so token auth takes keyID, teamID and keyPath")) {
            try AppChange(keyPath: "/keys/news.p8").applied(to: certified)
        }
        #expect(throws: FieldProblem("keyPath", "give either certificatePath or keyID, teamID and keyPath, not both")) {
            try AppChange(keyPath: "/keys/news.p8", certificatePath: "/keys/news.p12").applied(to: Self.tokenApp)
        }
    }

    @Test func eachFieldIsCheckedAsRegistrationChecksIt() throws {
        #expect(throws: FieldProblem.self) { try AppChange(keyID: "short").applied(to: Self.tokenApp) }
        #expect(throws: FieldProblem.self) { try AppChange(endpoint: .some("http://127.0.0.1")).applied(to: Self.tokenApp) }
        #expect(throws: FieldProblem.self) { try AppChange(retractionText: " ").applied(to: Self.tokenApp) }
        // An app that sends through FCM only keeps its service account.
        var fcmOnly = Self.tokenApp
        fcmOnly.authentication = .fcmOnly
        fcmOnly.fcmServiceAccountPath = "/keys/firebase.json"
        #expect(throws: FieldProblem("fcmServiceAccountPath", "app news sends through FCM only: it keeps its service account")) {
            try AppChange(fcmServiceAccountPath: .some(nil)).applied(to: fcmOnly)
        }
        // Removing the endpoint goes back to the environment's.
        var proxied = Self.tokenApp
        proxied.endpoint = "https://proxy.example"
        #expect(try AppChange(endpoint: .some(nil)).applied(to: proxied).endpoint == nil)
        #expect(AppChange().isEmpty && !AppChange(endpoint: .some(nil)).isEmpty)
    }

    @Test func theDifferencesAreTheFieldsThatChanged() throws {
        let changed = try AppChange(keyPath: "/keys/news-2.p8", retractionMode: .replace).applied(to: Self.tokenApp)
        let differences = AppChange.differences(from: Self.tokenApp, to: changed).map {
            "\($0.field): \($0.from ?? "-") -> \($0.to ?? "-")"
        }
        #expect(differences == ["keyPath: /keys/news.p8 -> /keys/news-2.p8", "retractionMode: background -> replace"])
        let certified = try AppChange(certificatePath: "/keys/news.p12").applied(to: Self.tokenApp)
        #expect(
            AppChange.differences(from: Self.tokenApp, to: certified).map(\.field) == [
                "auth", "certificatePath", "keyID", "keyPath", "teamID",
            ])
        #expect(AppChange.differences(from: Self.tokenApp, to: Self.tokenApp).isEmpty)
    }
}
