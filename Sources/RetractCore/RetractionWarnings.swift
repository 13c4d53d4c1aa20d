import RetractKit
import RetractModel
import RetractStore

/// What a caller should know about how a retraction's pushes reach phones:
/// iOS hands a suspended app only some of a burst of background pushes (it
/// coalesces them), so a device that needs many may keep some of what they
/// retract. Shown with a dry run, when a retraction is made, and with its
/// account.
package enum RetractionWarnings {
    /// Pushes to one device beyond which a burst may not all reach the app.
    package static let burst = 3

    /// Before anything is sent: in the legacy dialect, which carries one
    /// reference per push, a device with more references than ``burst``
    /// gets that many pushes. Known when counted: for dry runs, and for
    /// retractions by selector.
    package static func before(_ retraction: Retraction, dialect: PayloadDialect) -> [String] {
        guard dialect == .legacy, retraction.mode != .replace else { return [] }
        var warnings = [noHistory]
        if let most = retraction.mostReferences, most > burst {
            warnings.append(
                "the app's legacy dialect carries one reference per push, so some devices get up to \(most) pushes: "
                    + consequence(of: retraction.mode, pushes: most)
                    + "; the canonical dialect carries them all in one (docs/payload.md, \"Dialects\")")
        }
        return warnings
    }

    /// Why a legacy app's pushes cannot carry a device's earlier retractions.
    package static let noHistory =
        "the app's legacy dialect carries one reference per push, so earlier retractions cannot ride along: "
        + "a phone that keeps only the latest push (a suspended app woken once for a burst, an offline phone) "
        + "may keep a message deleted before; migrate the app to the canonical dialect (docs/payload.md, \"Earlier retractions ride along\")"

    /// Once pushes went out: some device needed more than ``burst`` of them.
    package static func after(_ retraction: Retraction) -> [String] {
        let most = retraction.pushes.mostToOneDevice
        guard most > burst, retraction.mode != .replace else { return [] }
        return ["some devices needed up to \(most) pushes: " + consequence(of: retraction.mode, pushes: most)]
    }

    private static func consequence(of mode: RetractionMode, pushes: Int) -> String {
        switch mode {
        case .background:
            "iOS may hand a suspended app only the last of a burst of background pushes, so such a phone can keep some of the messages"
        case .serviceExtension, .replace:
            "each is an alert; an extension without the filtering entitlement shows the retraction text for each"
        }
    }
}
