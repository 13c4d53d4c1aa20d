import Foundation
import HTTPTypes
import Hummingbird
import Mustache
import NIOCore
import RetractCore
import RetractModel
import RetractStore

/// The console's templates (Mustache, every value escaped by ``ConsoleHTML``)
/// and its stylesheet and script, all compiled into the binary.
struct ConsolePages: Sendable {
    private let library: MustacheLibrary

    static let templates: [String: [UInt8]] = [
        "layout": PackageResources.layout_mustache, "signin": PackageResources.signin_mustache,
        "problem": PackageResources.problem_mustache, "notifications": PackageResources.notifications_mustache,
        "notification": PackageResources.notification_mustache, "confirm": PackageResources.confirm_mustache,
        "retraction": PackageResources.retraction_mustache, "audit": PackageResources.audit_mustache,
        "retract-many": PackageResources.retract_many_mustache,
    ]

    init(templates: [String: [UInt8]] = Self.templates) throws {
        var library = MustacheLibrary()
        for (name, bytes) in templates {
            library.register(try ConsoleHTML.template(String(decoding: bytes, as: UTF8.self), named: name), named: name)
        }
        self.library = library
    }

    /// Headers every console page carries: nothing from elsewhere runs or
    /// loads, no page is framed or cached.
    static let pageHeaders: HTTPFields = [
        .contentType: "text/html; charset=utf-8",
        .contentSecurityPolicy:
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        .xContentTypeOptions: "nosniff",
        // For browsers that predate CSP's frame-ancestors.
        .xFrameOptions: "DENY",
        .referrerPolicy: "same-origin",
        .cacheControl: "no-store",
    ]

    func render(_ template: String, _ page: Any, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: Self.pageHeaders, body: .init(byteBuffer: ByteBuffer(string: html(template, page))))
    }

    func html(_ template: String, _ page: Any) -> String {
        library.render(page, withTemplate: template) ?? "<!doctype html><title>Retract</title><p>No template \(template)."
    }

    func problem(_ status: HTTPResponse.Status, _ detail: String, session: ConsoleSessions.SignedIn?) -> Response {
        let heading =
            switch status.code {
            case 401: "Not signed in"
            case 403: "Not allowed"
            case 404: "Not found"
            case 400, 413, 415, 422: "That cannot be done"
            case 429: "Too many requests"
            case 503: "The database is unavailable"
            default: "Something went wrong"
            }
        let back = session == nil ? "/console/sign-in" : "/console/notifications"
        return render(
            "problem", ProblemPage(session: session.map(SessionView.init), heading: heading, detail: detail, back: back), status: status)
    }

    /// The stylesheet or the script, by file name.
    static func asset(named name: String) -> Response? {
        let (bytes, type): ([UInt8], String)
        switch name {
        case "console.css": (bytes, type) = (PackageResources.console_css, "text/css; charset=utf-8")
        case "console.js": (bytes, type) = (PackageResources.console_js, "text/javascript; charset=utf-8")
        default: return nil
        }
        return Response(
            status: .ok, headers: [.contentType: type, .cacheControl: "public, max-age=300", .xContentTypeOptions: "nosniff"],
            body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}

extension HTTPField.Name {
    static let contentSecurityPolicy = Self("Content-Security-Policy")!
    static let xContentTypeOptions = Self("X-Content-Type-Options")!
    static let xFrameOptions = Self("X-Frame-Options")!
    static let referrerPolicy = Self("Referrer-Policy")!
}
