/// Two deletions of a chat app's messages, two seconds apart, on phones that
/// keep only the latest background push: what a chat backend does most, by
/// reference or by selector. Each scenario has messages of its own, so many
/// run side by side: m1, m2 and m3, each in a thread, by a sender, to a
/// recipient and of a campaign of its own (`T1-3`, `S1-3`, ...).
public struct DeletionScenario: Sendable, CustomStringConvertible {
    /// How a deletion selects the one message it takes.
    public enum Selection: String, Sendable, CaseIterable {
        case reference, thread, sender, recipient, campaign
    }

    public var number: Int
    /// The first deletion, which takes m1.
    public var first: Selection
    /// The second, which takes m2.
    public var second: Selection

    public init(_ number: Int, _ first: Selection, _ second: Selection) {
        self.number = number
        self.first = first
        self.second = second
    }

    /// Every row of the table in docs/payload.md ("Earlier retractions ride
    /// along"): each kind of deletion first and second.
    public static let all: [DeletionScenario] = {
        let pairs: [(Selection, Selection)] = [
            (.reference, .reference), (.thread, .reference), (.sender, .reference), (.reference, .thread), (.thread, .thread),
            (.reference, .sender), (.recipient, .reference), (.reference, .recipient), (.campaign, .reference),
            (.reference, .campaign), (.sender, .thread),
        ]
        return pairs.enumerated().map { DeletionScenario($0, $1.0, $1.1) }
    }()

    public var description: String { "\(first.rawValue) then \(second.rawValue)" }

    /// Message `index` (1, 2 or 3).
    public func reference(_ index: Int) -> String { "m\(index)-\(number)" }

    /// Message `index`'s label of `kind`.
    public func label(_ kind: Selection, of index: Int) -> String {
        let letter =
            switch kind {
            case .reference: "m"
            case .thread: "T"
            case .sender: "S"
            case .recipient: "R"
            case .campaign: "C"
            }
        return "\(letter)\(index)-\(number)"
    }

    /// `retract send` flags that label message `index`.
    public func labelFlags(of index: Int) -> [String] {
        [Selection.thread, .sender, .recipient, .campaign].flatMap { ["--\($0.rawValue)", label($0, of: index)] }
    }

    /// The labels of message `index` as JSON fields, for `POST /v1/notifications`.
    public func labelFields(of index: Int) -> String {
        [Selection.thread, .sender, .recipient, .campaign].map { #""\#($0.rawValue)":"\#(label($0, of: index))""# }.joined(separator: ",")
    }

    /// `retract notification` arguments that delete message `index` by `selection`.
    public func deletionArguments(_ selection: Selection, of index: Int) -> [String] {
        selection == .reference ? [reference(index)] : ["--\(selection.rawValue)", label(selection, of: index)]
    }

    /// The `POST /v1/retractions` field that deletes message `index` by `selection`.
    public func deletionField(_ selection: Selection, of index: Int) -> String {
        selection == .reference
            ? #""references":["\#(reference(index))"]"# : #""\#(selection.rawValue)":"\#(label(selection, of: index))""#
    }
}
