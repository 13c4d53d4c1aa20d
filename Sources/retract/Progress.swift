import Foundation
import RetractCore
import RetractModel
import RetractStore

/// Shows a retraction's progress on stderr while it runs: a bar with rate
/// and ETA redrawn in place on a terminal, a plain line every few seconds
/// otherwise (logs, CI).
struct ProgressDisplay {
    let isTerminal: Bool
    private let started = ContinuousClock.now
    private var lastLine = ContinuousClock.now - .seconds(60)

    init(isTerminal: Bool = isatty(STDERR_FILENO) == 1) {
        self.isTerminal = isTerminal
    }

    mutating func show(_ retraction: Retraction) {
        let counts = retraction.counts
        let settled = counts.sent + counts.dead + counts.failed
        let elapsed = ContinuousClock.now - started
        let seconds = max(elapsed.inSeconds, 0.001)
        let rate = Double(settled) / seconds
        let remaining = max(counts.total - settled, 0)
        let eta = rate > 0 ? "\(Int((Double(remaining) / rate).rounded(.up)))s" : "?"
        if isTerminal {
            let fraction = counts.total > 0 ? min(Double(settled) / Double(counts.total), 1) : 1
            let filled = Int(fraction * 30)
            let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: 30 - filled)
            let line =
                "\r\(bar) \(Int(fraction * 100))% \(settled)/\(counts.total) devices · \(Int(rate))/s · ETA \(eta) · retrying \(counts.retrying)"
            FileHandle.standardError.write(Data((line + Self.waiting(retraction, separator: " · ") + "\u{1B}[K").utf8))
        } else if ContinuousClock.now - lastLine >= .seconds(2) {
            lastLine = .now
            printError(
                "progress: \(settled)/\(counts.total) settled (sent \(counts.sent), unregistered \(counts.dead), failed \(counts.failed), retrying \(counts.retrying)), \(Int(rate))/s, ETA \(eta)"
                    + Self.waiting(retraction, separator: "; "))
        }
    }

    /// The devices waiting for their service to come back, and why, if any.
    static func waiting(_ retraction: Retraction, separator: String) -> String {
        guard retraction.counts.waiting > 0 else { return "" }
        return "\(separator)waiting \(retraction.counts.waiting) for the service (\(retraction.waitingReason ?? "unreachable"))"
    }

    /// Ends the bar's line before other output.
    func finish() {
        if isTerminal { FileHandle.standardError.write(Data("\n".utf8)) }
    }

    var elapsedSeconds: Double {
        (ContinuousClock.now - started).inSeconds
    }
}

/// A retraction's final account, as text and as JSON.
extension RetractionView {
    /// The account as the commands print it.
    var printed: String {
        let inMode = mode == RetractionMode.background.rawValue ? "" : ", \(mode) mode"
        let ofAccount = account.map { ", account \($0)" } ?? ""
        var lines = ["\(edit == nil ? "retraction" : "edit") \(id) of \(subject) (app \(app)\(ofAccount)\(inMode)): \(state)"]
        if let edit { lines.append("  new text: " + (edit.title.map { "\($0): " } ?? "") + edit.body) }
        if let referencesMatched { lines.append("  matched: \(referencesMatched) references on \(total) devices") }
        if dryRun {
            let known = skipped > 0 ? " (\(skipped) more are known dead and would be skipped)" : ""
            lines.append(
                "  dry run: \(total - skipped) devices would get \(edit == nil ? "a removal" : "an edit") push\(known); nothing was sent")
            if let mostReferencesPerDevice { lines.append("  at most \(mostReferencesPerDevice) references on one device") }
            for warning in warnings ?? [] { lines.append("  warning: \(warning)") }
            return lines.joined(separator: "\n")
        }
        for warning in warnings ?? [] { lines.append("  warning: \(warning)") }
        var reached = "  devices: \(total) · sent \(sent) · unregistered \(unregistered)"
        if skipped > 0 { reached += " (\(skipped) known dead, skipped)" }
        reached += " · failed \(failed)"
        if spared > 0 { reached += " · spared \(spared)" }
        if pending > 0 { reached += " · pending \(pending)" }
        if let seconds, seconds > 0 {
            reached += String(format: " · %.1fs, %.0f devices/s", seconds, Double(sent + unregistered + failed) / seconds)
        }
        lines.append(reached)
        if mostPushesToOneDevice > 1 { lines.append("  pushes: \(pushes), up to \(mostPushesToOneDevice) to one device") }
        if historyCarried + historyLeftOut > 0 {
            var line = "  earlier retractions: \(historyCarried) references and threads rode along"
            if historyLeftOut > 0 { line += ", \(historyLeftOut) left out (no room in the body)" }
            lines.append(line)
        }
        if waiting > 0 { lines.append("  waiting: \(waiting) devices for the service to come back (\(waitingReason ?? "unreachable"))") }
        for (reason, count) in failures.sorted(by: { $0.value > $1.value }) { lines.append("  failed: \(count) × \(reason)") }
        for hint in hints ?? [] { lines.append("  hint: \(hint)") }
        if let failure { lines.append("  stopped: \(failure)") }
        if let text { lines.append("  alert text: \(text)") }
        if let cancelled {
            lines.append("  cancelled by \(cancelled.by) at \(cancelled.at.formatted(.iso8601)): \(cancelled.reason)")
        }
        if let approval {
            switch approval.state {
            case "awaiting":
                let until = approval.expiresAt.map { " until \($0.formatted(.iso8601))" } ?? ""
                lines.append("  awaiting approval by another key\(until): retract approve \(id) --reason ... (or reject)")
            case "expired": lines.append("  expired: no one approved it in time; nothing was sent")
            case "withdrawn": lines.append("  withdrawn before anyone approved it")
            default:
                let at = approval.at.map { " at \($0.formatted(.iso8601))" } ?? ""
                lines.append("  \(approval.state) by \(approval.by ?? "?")\(at): \(approval.reason ?? "")")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// What it retracts: its references, or its selector and range.
    var subject: String {
        let selected = [("thread", thread), ("sender", sender), ("recipient", recipient), ("campaign", campaign)]
        guard let (kind, value) = selected.first(where: { $0.1 != nil }), let value else { return references.joined(separator: ", ") }
        var text = "\(kind) \"\(value)\""
        if let sentAfter { text += " sent from \(sentAfter.formatted(.iso8601))" }
        if let sentBefore { text += " sent before \(sentBefore.formatted(.iso8601))" }
        return text
    }

    /// 0 when every device was reached or is dead (or the retraction is
    /// still queued, for `--no-wait`); otherwise why not (a cancel, too).
    var exitCode: Int32 {
        switch state {
        case "failed": RetractExitCode.retractionFailed
        case "done": failed > 0 ? RetractExitCode.someFailed : 0
        case "cancelling", "cancelled": RetractExitCode.cancelled
        case "awaiting-approval": RetractExitCode.awaitingApproval
        case "rejected", "expired": RetractExitCode.notApproved
        default: 0
        }
    }
}
