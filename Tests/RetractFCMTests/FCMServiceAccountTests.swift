import FCMSimulator
import Foundation
import RetractFCM
import Testing

@Suite("Service-account files")
struct FCMServiceAccountTests {
    @Test("a file written as Google writes it reads back the same")
    func roundTrip() throws {
        let account = try FCMSimulator.makeServiceAccount(projectID: "shop-app")
        let read = try FCMServiceAccount(json: account.json())
        #expect(read.projectID == "shop-app")
        #expect(read.clientEmail == account.clientEmail)
        #expect(read.privateKeyID == account.privateKeyID)
        #expect(read.tokenURI == FCMServiceAccount.defaultTokenURI)
        #expect(read.privateKey.publicKey.derRepresentation == account.privateKey.publicKey.derRepresentation)
        // Google's files carry more fields than Retract reads.
        var object = try #require(try JSONSerialization.jsonObject(with: account.json()) as? [String: Any])
        object["client_id"] = "1234"
        object["auth_provider_x509_cert_url"] = "https://www.googleapis.com/oauth2/v1/certs"
        _ = try FCMServiceAccount(json: JSONSerialization.data(withJSONObject: object))
    }

    @Test("a file that cannot be used says what is wrong with it")
    func badFiles() throws {
        let good = try #require(
            try JSONSerialization.jsonObject(with: FCMSimulator.makeServiceAccount(projectID: "shop-app").json()) as? [String: Any])
        func problem(_ change: (inout [String: Any]) -> Void) -> String? {
            var object = good
            change(&object)
            let data = try! JSONSerialization.data(withJSONObject: object)
            do {
                _ = try FCMServiceAccount(json: data, source: "sa.json")
                return nil
            } catch {
                return error.message
            }
        }
        #expect(problem { $0["type"] = "authorized_user" }?.contains(#""type" is "authorized_user", not "service_account""#) == true)
        #expect(problem { $0["project_id"] = nil }?.contains(#""project_id" is missing"#) == true)
        #expect(problem { $0["project_id"] = "Not A Project" }?.contains("not a Google Cloud project id") == true)
        #expect(problem { $0["client_email"] = "" }?.contains(#""client_email" is missing"#) == true)
        #expect(
            problem { $0["private_key"] = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n" }?.contains(
                "not an RSA private key") == true)
        #expect(problem { $0["token_uri"] = "http://oauth2.googleapis.com/token" }?.contains("not an https:// URL") == true)
        #expect(throws: FCMCredentialsError.self) { try FCMServiceAccount(json: Data("[]".utf8)) }
        #expect(throws: FCMCredentialsError.self) { try FCMServiceAccount(contentsOfFile: "/nonexistent/sa.json") }
    }
}
