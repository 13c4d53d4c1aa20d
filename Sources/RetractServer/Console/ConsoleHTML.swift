import Mustache

/// The console's one HTML escaping, and the only way its templates are made.
///
/// swift-mustache 2.1.1 escapes by `Character`: a `"` or `<` that forms one
/// grapheme cluster with its neighbour (U+0600 before it, a combining mark
/// after it) is not equal to `"` and is printed raw (docs/security.md,
/// "HTML escaping"). Here every value is escaped by UTF-8 byte, which is
/// exact: the five bytes escaped never occur inside a multi-byte sequence.
/// ``template(_:named:)`` puts this escaping at the head of every template
/// and refuses the template syntax that would print a value another way.
enum ConsoleHTML {
    /// The name templates select this escaping by, in `{{% CONTENT_TYPE: ... }}`.
    static let contentTypeName = "RETRACT_HTML"

    /// `text` with `& < > " '` replaced by their character references, byte
    /// by byte of its UTF-8: every scalar is seen on its own, whatever cluster it is in.
    static func escape(_ text: String) -> String {
        var escaped: [UInt8] = []
        escaped.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "&"): escaped += Array("&amp;".utf8)
            case UInt8(ascii: "<"): escaped += Array("&lt;".utf8)
            case UInt8(ascii: ">"): escaped += Array("&gt;".utf8)
            case UInt8(ascii: "\""): escaped += Array("&quot;".utf8)
            case UInt8(ascii: "'"): escaped += Array("&#39;".utf8)
            default: escaped.append(byte)
            }
        }
        return String(decoding: escaped, as: UTF8.self)
    }

    /// What swift-mustache calls for every `{{value}}` of a template made by ``template(_:named:)``.
    struct ContentType: MustacheContentType {
        func escapeText(_ text: String) -> String { ConsoleHTML.escape(text) }
    }

    /// swift-mustache looks content types up by name, in a registry of its own.
    private static let registered: Void = MustacheContentTypes.register(ContentType(), named: contentTypeName)

    /// Template syntax that would print a value unescaped (`{{{x}}}`, `{{&x}}`),
    /// choose another escaping (`{{% ... }}`) or hide either behind new
    /// delimiters (`{{=<% %>=}}`).
    static let refusedSyntax = ["{{{", "{{&", "{{%", "{{="]

    /// A problem with a console template's source.
    struct TemplateProblem: Error, CustomStringConvertible {
        var description: String
    }

    /// The template `source`, made to escape every value with ``escape(_:)``.
    /// - Throws: ``TemplateProblem`` when the source uses ``refusedSyntax``, or
    ///   whatever swift-mustache finds wrong with it.
    static func template(_ source: String, named name: String) throws -> MustacheTemplate {
        if let refused = refusedSyntax.first(where: { source.contains($0) }) {
            throw TemplateProblem(description: "the console template \(name) uses \(refused): every value goes through ConsoleHTML.escape")
        }
        _ = registered
        return try MustacheTemplate(string: "{{% CONTENT_TYPE: \(contentTypeName) }}" + source)
    }
}
