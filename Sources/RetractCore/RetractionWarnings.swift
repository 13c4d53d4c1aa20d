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
        if retraction.edit != nil { return [editReach(retraction.mode)] }
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

    /// Which phones an edit in `mode` leaves with the old text, or shows the
    /// new text on although the user had dismissed the original: the account
    /// of an edit says which (docs/payload.md, "Edits").
    package static func editReach(_ mode: RetractionMode) -> String {
        switch mode {
        case .background:
            "an edit in background mode reaches only apps iOS hands background pushes to: a phone whose app was force-quit, "
                + "in Low Power Mode or over its budget keeps the old text (service-extension and replace reach it)"
        case .serviceExtension:
            "phones with the app's extension show the new text in the original's place, force-quit or not; where the user had "
                + "dismissed the original, only an extension with the filtering entitlement keeps it gone (without one, or "
                + "without an extension, the new text shows)"
        case .replace:
            "every phone shows the new text in the original's place, force-quit or not, and also where the user had dismissed "
                + "the original (an alert cannot know); service-extension with the filtering entitlement keeps those gone"
        }
    }

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
