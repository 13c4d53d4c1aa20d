import Foundation

extension Duration {
    /// The duration in seconds, for rates and messages.
    package var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// `250 ms`, `30 s`, `5 min`, `2 h`: for messages and logs.
    package var spoken: String {
        if self < .seconds(1) { return "\(Int((inSeconds * 1000).rounded())) ms" }
        let seconds = Int(inSeconds)
        if seconds % 3600 == 0 { return "\(seconds / 3600) h" }
        if seconds % 60 == 0 { return "\(seconds / 60) min" }
        return "\(seconds) s"
    }
}
