import ArgumentParser
import Foundation
import RetractCore
import RetractModel
import RetractServer
import RetractStore

/// `retract keys`: the API keys of `retract serve`.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Create, list and revoke API keys.",
        subcommands: [Create.self, List.self, Revoke.self]
    )

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an API key and print it once.",
            discussion: """
                Scopes: admin (every scope), record, send, retract, read, client, approve (approves or \
                rejects retractions other keys asked for, on apps with an approval threshold). A key touches only \
                the apps it names; an admin key naming no app touches every app and may register \
                apps. Only the key's SHA-256 is stored: the key is printed once, as the last line \
                of stdout.

                Exit codes: 0 created; 2 bad scope or missing --app; 4 database unreachable; 6 unknown app.
                """
        )

        @Option(name: .customLong("app"), help: "An app the key may touch; repeatable.")
        var apps: [String] = []

        @Option(help: "Comma-separated: admin, record, send, retract, read, client, approve.")
        var scopes: String

        @Option(help: "A name for logs and the audit log, such as chat-backend.")
        var name: String?

        @Flag(help: "Print JSON (the key included).")
        var json = false

        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            do {
                let scopes = try parsedScopes()
                if apps.isEmpty && scopes != [.admin] {
                    throw RetractError(.invalidInput, "--app: name the apps the key may touch (only an admin-only key may name none)")
                }
                let key = APIKeySecret.generate()
                let record = try await database.withStore { store in
                    var appIDs: Set<Int64> = []
                    for name in apps {
                        guard let app = try await store.app(named: name) else {
                            throw RetractError(.unknownApp, "no app named \"\(name)\"")
                        }
                        appIDs.insert(app.id)
                    }
                    let record = APIKeyRecord(
                        name: name ?? "key-\(UUID().uuidString.prefix(8).lowercased())", keyHash: APIKeySecret.hash(key), scopes: scopes,
                        appIDs: appIDs, createdBy: AppsCommand.Add.actor)
                    try await store.createAPIKey(record)
                    return record
                }
                if json {
                    try printJSON(KeyView(record, apps: apps.sorted(), key: key))
                } else {
                    let reach = apps.isEmpty ? "every app" : apps.sorted().joined(separator: ", ")
                    print("created key \(record.id.uuidString.lowercased()) (\(record.name)): \(describe(scopes)) on \(reach)")
                    print("the key is shown once; store it now:")
                    print(key)
                }
            } catch {
                throw fail("keys create", error)
            }
        }

        private func parsedScopes() throws(RetractError) -> Set<APIKeyRecord.Scope> {
            var parsed: Set<APIKeyRecord.Scope> = []
            for text in scopes.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !text.isEmpty {
                guard let scope = APIKeyRecord.Scope(rawValue: text) else {
                    throw RetractError(
                        .invalidInput, "--scopes: \"\(text)\" is not a scope (admin, record, send, retract, read, client, approve)")
                }
                parsed.insert(scope)
            }
            guard !parsed.isEmpty else { throw RetractError(.invalidInput, "--scopes: at least one scope") }
            return parsed
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List API keys (never the keys themselves).")

        @Flag(help: "Print JSON.")
        var json = false

        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            do {
                let (keys, names) = try await database.withStore { store in
                    let apps = try await store.apps()
                    return (try await store.apiKeys(), Dictionary(uniqueKeysWithValues: apps.map { ($0.id, $0.name) }))
                }
                let views = keys.map { KeyView($0, apps: $0.appIDs.map { names[$0] ?? "\($0)" }.sorted(), key: nil) }
                if json {
                    try printJSON(views)
                } else if views.isEmpty {
                    print("no keys yet: retract keys create --app APP --scopes record,retract")
                } else {
                    for view in views {
                        let state = view.revokedAt == nil ? "active" : "revoked"
                        print(
                            "\(view.id)\t\(view.name)\t\(view.scopes.joined(separator: ","))\t\(view.apps.isEmpty ? "*" : view.apps.joined(separator: ","))\t\(state)"
                        )
                    }
                }
            } catch {
                throw fail("keys list", error)
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke an API key; it authenticates nothing from the next request on.",
            discussion: "Exit codes: 0 revoked; 2 not a key id; 4 database unreachable; 7 no active key has that id."
        )

        @Argument(help: "The key's id, as `keys create` and `keys list` print it.")
        var id: String

        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            do {
                guard let uuid = UUID(uuidString: id) else { throw RetractError(.invalidInput, "\"\(id)\" is not a key id (a UUID)") }
                let revoked = try await database.withStore { store in try await store.revokeAPIKey(id: uuid, actor: AppsCommand.Add.actor) }
                guard revoked else { throw RetractError(.unknownKey, "no active key \(uuid.uuidString.lowercased())") }
                print("revoked key \(uuid.uuidString.lowercased())")
            } catch {
                throw fail("keys revoke", error)
            }
        }
    }
}

private struct KeyView: Encodable {
    var id: String
    var name: String
    var scopes: [String]
    var apps: [String]
    var createdAt: Date?
    var revokedAt: Date?
    var key: String?

    init(_ record: APIKeyRecord, apps: [String], key: String?) {
        id = record.id.uuidString.lowercased()
        name = record.name
        scopes = record.scopes.map(\.rawValue).sorted()
        self.apps = apps
        createdAt = record.createdAt
        revokedAt = record.revokedAt
        self.key = key
    }
}

private func describe(_ scopes: Set<APIKeyRecord.Scope>) -> String {
    "scopes " + scopes.map(\.rawValue).sorted().joined(separator: ",")
}
