/// Splits a SQL script into its statements, so a migration file can run over
/// PostgreSQL's extended protocol, which takes one statement at a time.
///
/// Knows enough of PostgreSQL's lexical rules to find the semicolons that end
/// statements: quoted strings (`'it''s'`, `E'\''`), quoted identifiers,
/// dollar-quoted bodies (`$$ ... $$`, `$fn$ ... $fn$`), line comments and
/// nested block comments.
enum SQLScript {
    struct Unterminated: Error, Equatable {
        /// What was left open: a quote, a dollar-quoted body or a comment.
        var construct: String
        /// 1-based line where it opened.
        var line: Int
    }

    static func statements(in script: String) throws(Unterminated) -> [String] {
        let text = Array(script.utf8)
        var statements: [String] = []
        var start = 0
        var index = 0
        var line = 1

        func emit(upTo end: Int) {
            let statement = String(decoding: text[start..<end], as: UTF8.self)
            if !isBlank(statement) { statements.append(statement.trimmingWhitespace()) }
        }

        while index < text.count {
            let byte = text[index]
            switch byte {
            case UInt8(ascii: "\n"):
                line += 1
                index += 1
            case UInt8(ascii: ";"):
                emit(upTo: index)
                index += 1
                start = index
            case UInt8(ascii: "-") where next(text, index) == UInt8(ascii: "-"):
                while index < text.count, text[index] != UInt8(ascii: "\n") { index += 1 }
            case UInt8(ascii: "/") where next(text, index) == UInt8(ascii: "*"):
                let opened = line
                var depth = 0
                repeat {
                    if text[index] == UInt8(ascii: "/"), next(text, index) == UInt8(ascii: "*") {
                        depth += 1
                        index += 2
                    } else if text[index] == UInt8(ascii: "*"), next(text, index) == UInt8(ascii: "/") {
                        depth -= 1
                        index += 2
                    } else {
                        if text[index] == UInt8(ascii: "\n") { line += 1 }
                        index += 1
                    }
                } while depth > 0 && index < text.count
                if depth > 0 { throw Unterminated(construct: "block comment", line: opened) }
            case UInt8(ascii: "'"), UInt8(ascii: "\""):
                let escapes = byte == UInt8(ascii: "'") && index > 0 && (text[index - 1] | 0x20) == UInt8(ascii: "e")
                let opened = line
                index += 1
                var closed = false
                while index < text.count {
                    let current = text[index]
                    if current == UInt8(ascii: "\n") { line += 1 }
                    if escapes, current == UInt8(ascii: "\\") {
                        index += 2
                        continue
                    }
                    index += 1
                    if current == byte {
                        // A doubled quote is the quote itself.
                        if index < text.count, text[index] == byte {
                            index += 1
                            continue
                        }
                        closed = true
                        break
                    }
                }
                if !closed { throw Unterminated(construct: byte == UInt8(ascii: "'") ? "string" : "quoted identifier", line: opened) }
            case UInt8(ascii: "$"):
                guard let tag = dollarTag(text, at: index) else {
                    index += 1
                    continue
                }
                let opened = line
                index += tag.count
                guard let end = find(tag, in: text, from: index) else {
                    throw Unterminated(construct: "dollar-quoted body \(String(decoding: tag, as: UTF8.self))", line: opened)
                }
                line += text[index..<end].lazy.filter { $0 == UInt8(ascii: "\n") }.count
                index = end + tag.count
            default:
                index += 1
            }
        }
        emit(upTo: text.count)
        return statements
    }

    private static func next(_ text: [UInt8], _ index: Int) -> UInt8? {
        index + 1 < text.count ? text[index + 1] : nil
    }

    /// `$$` or `$tag$` at `index`, where a tag is a letter or underscore then
    /// letters, digits or underscores (`$1` is a parameter, not a tag).
    private static func dollarTag(_ text: [UInt8], at index: Int) -> [UInt8]? {
        var end = index + 1
        while end < text.count, text[end] != UInt8(ascii: "$") {
            let byte = text[end]
            let isLetter = (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z") || byte == UInt8(ascii: "_")
            let isDigit = byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
            guard isLetter || (isDigit && end > index + 1) else { return nil }
            end += 1
        }
        guard end < text.count else { return nil }
        return Array(text[index...end])
    }

    private static func find(_ tag: [UInt8], in text: [UInt8], from start: Int) -> Int? {
        guard text.count >= tag.count else { return nil }
        var index = start
        while index + tag.count <= text.count {
            if text[index] == tag[0], text[index..<index + tag.count].elementsEqual(tag) { return index }
            index += 1
        }
        return nil
    }

    /// Whether `statement` holds only white space and comments.
    private static func isBlank(_ statement: String) -> Bool {
        statement.split(separator: "\n").allSatisfy { line in
            let trimmed = line.trimmingWhitespace()
            return trimmed.isEmpty || trimmed.hasPrefix("--")
        }
    }
}

extension StringProtocol {
    fileprivate func trimmingWhitespace() -> String {
        let characters = Array(self)
        guard let first = characters.firstIndex(where: { !$0.isWhitespace }),
            let last = characters.lastIndex(where: { !$0.isWhitespace })
        else { return "" }
        return String(characters[first...last])
    }
}
