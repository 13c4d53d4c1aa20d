import Foundation
import Logging
import NIOConcurrencyHelpers

/// Writes each log entry as one JSON object on a line of stderr, for log
/// collectors: `{"time", "level", "label", "message", ...metadata}`.
package struct JSONLogHandler: LogHandler {
    package var logLevel: Logger.Level = .info
    package var metadata: Logger.Metadata = [:]
    package var metadataProvider: Logger.MetadataProvider?
    private let label: String

    package init(label: String) {
        self.label = label
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var fields: [String: String] = [:]
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let given = event.metadata { merged.merge(given) { _, new in new } }
        for (key, value) in merged { fields[key] = "\(value)" }
        fields["time"] = Self.timestamp()
        fields["level"] = event.level.rawValue
        fields["label"] = label
        fields["message"] = "\(event.message)"
        guard var line = try? Self.encoder.encode(fields) else { return }
        line.append(0x0A)
        Self.output.withLockedValue { _ in FileHandle.standardError.write(line) }
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// Serialises writes so lines from several threads never interleave.
    private static let output = NIOLockedValueBox(())

    private static func timestamp() -> String {
        Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }
}
