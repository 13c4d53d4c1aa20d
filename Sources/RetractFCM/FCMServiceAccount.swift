import Foundation
import _CryptoExtras

/// The service-account credentials Google issues as a JSON file: who signs
/// the token request, with which key, for which Firebase project.
///
/// Only the fields FCM needs are read; the others (`client_id`, the
/// certificate URLs) are ignored.
public struct FCMServiceAccount: Sendable {
    /// The Firebase project, as in `projects/<project>/messages:send`.
    public var projectID: String
    /// The account's address: the assertion's issuer.
    public var clientEmail: String
    /// The key's id, sent as the assertion's `kid`.
    public var privateKeyID: String?
    /// Where the assertion is exchanged for an access token.
    public var tokenURI: String
    public var privateKey: _RSA.Signing.PrivateKey

    public init(projectID: String, clientEmail: String, privateKeyID: String?, tokenURI: String, privateKey: _RSA.Signing.PrivateKey) {
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.tokenURI = tokenURI
        self.privateKey = privateKey
    }

    /// Google's token endpoint, used when the file names none.
    public static let defaultTokenURI = "https://oauth2.googleapis.com/token"

    /// Reads the JSON file at `path`.
    ///
    /// - Throws: ``FCMCredentialsError``, naming the file and what is wrong with it.
    public init(contentsOfFile path: String) throws(FCMCredentialsError) {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw FCMCredentialsError("the service account file \(path) cannot be read (\(error.localizedDescription))")
        }
        try self.init(json: data, source: path)
    }

    /// Parses the JSON of a service-account file; `source` names it in errors.
    public init(json: Data, source: String = "the service account") throws(FCMCredentialsError) {
        struct File: Decodable {
            var type: String?
            var project_id: String?
            var private_key_id: String?
            var private_key: String?
            var client_email: String?
            var token_uri: String?
        }
        guard let file = try? JSONDecoder().decode(File.self, from: json) else {
            throw FCMCredentialsError("\(source) is not a JSON object (expected the service account key file Google issues)")
        }
        guard file.type == "service_account" else {
            throw FCMCredentialsError(
                "\(source): \"type\" is \(file.type.map { "\"\($0)\"" } ?? "missing"), not \"service_account\"")
        }
        func required(_ value: String?, _ field: String) throws(FCMCredentialsError) -> String {
            guard let value, !value.isEmpty else { throw FCMCredentialsError("\(source): \"\(field)\" is missing") }
            return value
        }
        let project = try required(file.project_id, "project_id")
        guard project.range(of: #"^[a-z][a-z0-9-]{3,62}$"#, options: .regularExpression) != nil else {
            throw FCMCredentialsError("\(source): \"project_id\" \"\(project.prefix(80))\" is not a Google Cloud project id")
        }
        let email = try required(file.client_email, "client_email")
        let pem = try required(file.private_key, "private_key")
        let tokenURI = file.token_uri ?? Self.defaultTokenURI
        guard let url = URL(string: tokenURI), url.scheme == "https", url.host != nil else {
            throw FCMCredentialsError("\(source): \"token_uri\" \"\(tokenURI.prefix(200))\" is not an https:// URL")
        }
        let key: _RSA.Signing.PrivateKey
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw FCMCredentialsError("\(source): \"private_key\" is not an RSA private key of 2048 bits or more in PEM form")
        }
        self.init(projectID: project, clientEmail: email, privateKeyID: file.private_key_id, tokenURI: tokenURI, privateKey: key)
    }

    /// The file's JSON, as Google writes it: for tests, the simulator and the demo.
    public func json() -> Data {
        var object: [String: String] = [
            "type": "service_account",
            "project_id": projectID,
            "private_key": privateKey.pkcs8PEMRepresentation,
            "client_email": clientEmail,
            "token_uri": tokenURI,
        ]
        object["private_key_id"] = privateKeyID
        // Sorted keys: the same account always writes the same file.
        return (try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]))
            ?? Data()
    }
}

/// A service-account file that cannot be used, with what is wrong with it.
public struct FCMCredentialsError: Error, CustomStringConvertible, Sendable, Hashable {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
