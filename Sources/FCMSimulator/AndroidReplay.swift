import Foundation

/// Simulated Android phones' screens, worked out by RetractKit for Android
/// itself: the Java library's command-line entry (`replay`, in
/// clients/android/tools) run as a process, fed what each phone received
/// (``AndroidPhone/delivery(of:)``), one phone per line.
public enum AndroidReplay {
    /// A notification left showing on a phone.
    public struct Shown: Sendable, Hashable {
        /// Its tag, `tag#id` when its id is not 0.
        public var name: String
        /// The references it stands for: its tag and those in its extras.
        public var references: [String]
        /// What it shows: its title, if any, and its text (an edit's, once edited).
        public var title: String?
        public var text: String?
        /// For a conversation notification (`MessagingStyle`), the messages
        /// it holds, oldest first; nil for a notification of one message.
        public var messages: [Message]?

        /// One message of a conversation notification.
        public struct Message: Sendable, Hashable {
            public var reference: String
            public var text: String
        }
    }

    /// How the phone's app shows the originals Retract sends it to show.
    public enum Style: String, Sendable, Hashable {
        /// One notification per message, under its tag.
        case message
        /// One notification per conversation, holding its last messages
        /// (RetractKit for Android's `Conversations`): an original with a
        /// conversation (`thread`) goes into its conversation's notification.
        case conversation
    }

    /// What one phone shows, and how many times it alerted (sound,
    /// vibration, heads-up) on the way: every post but a silent re-post.
    public struct Screen: Sendable, Hashable {
        public var showing: [Shown]
        public var alerts: Int
    }

    /// Why the screens could not be worked out, in a sentence.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String

        public init(description: String) {
            self.description = description
        }
    }

    /// Where an app that starts (``AndroidPhone/Event/appStart``) reads the
    /// device feed: Retract's API, with a `client` key.
    public struct Feed: Sendable, Hashable {
        public var baseURL: URL
        public var apiKey: String
        public var app: String?

        public init(baseURL: URL, apiKey: String, app: String? = nil) {
            self.baseURL = baseURL
            self.apiKey = apiKey
            self.app = app
        }
    }

    /// The screens of `phones`, by device, from the library built in `classes`
    /// (scripts/android-test --build puts it in `.build/android/classes`).
    /// A phone whose app starts reads `feed`; one whose feed cannot be read
    /// fails the whole, naming the problem.
    public static func screens(
        of phones: [(device: String, events: [AndroidPhone.Event])], classes: URL, feed: Feed? = nil, java: String = "java"
    ) throws -> [String: [Shown]] {
        try phoneScreens(of: phones, classes: classes, feed: feed, java: java).mapValues(\.showing)
    }

    /// The screens of `phones`, whose app shows originals in `style`, with
    /// how many times each alerted; as ``screens(of:classes:feed:java:)``.
    public static func phoneScreens(
        of phones: [(device: String, events: [AndroidPhone.Event])], style: Style = .message, classes: URL, feed: Feed? = nil,
        java: String = "java"
    ) throws -> [String: Screen] {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("retract-android-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let input = scratch.appendingPathComponent("phones.jsonl")
        var lines = Data()
        for phone in phones {
            let events: [[String: Any]] = try phone.events.map { event in
                switch event {
                case .display(let tag, let title, let body):
                    var display: [String: Any] = ["tag": tag, "id": 0, "channel": AndroidPhone.firebaseDefaultChannel]
                    display["title"] = title
                    display["body"] = body
                    return ["display": display]
                case .data(let data): return ["data": data]
                case .appStart:
                    guard let feed else { throw Failure(description: "an app starts on \(phone.device), and no device feed was given") }
                    var start = ["feed": feed.baseURL.absoluteString, "key": feed.apiKey]
                    start["app"] = feed.app
                    return ["start": start]
                }
            }
            lines.append(try JSONSerialization.data(withJSONObject: ["device": phone.device, "style": style.rawValue, "events": events]))
            lines.append(UInt8(ascii: "\n"))
        }
        try lines.write(to: input)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            java, "-cp", "\(classes.path)/retractkit:\(classes.path)/tools", "dev.retract.kit.tools.Main", "replay",
        ]
        process.standardInput = try FileHandle(forReadingFrom: input)
        let output = Pipe()
        let errors = scratch.appendingPathComponent("stderr")
        guard FileManager.default.createFile(atPath: errors.path, contents: nil) else {
            throw Failure(description: "cannot create \(errors.path) for RetractKit for Android's standard error")
        }
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: errors)
        do {
            try process.run()
        } catch {
            throw Failure(description: "cannot run \(java) for RetractKit for Android: \(error)")
        }
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let message = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
            throw Failure(description: "RetractKit for Android's replay exited \(process.terminationStatus): \(message)")
        }
        var screens: [String: Screen] = [:]
        for line in printed.split(separator: UInt8(ascii: "\n")) {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                let device = object["device"] as? String, let showing = object["showing"] as? [[String: Any]]
            else {
                throw Failure(
                    description:
                        "RetractKit for Android's replay printed a line that is not a phone: \(String(decoding: line, as: UTF8.self))")
            }
            if let problem = object["feedError"] as? String {
                throw Failure(description: "RetractKit for Android could not read the device feed for \(device): \(problem)")
            }
            let shown = showing.map {
                Shown(
                    name: $0["name"] as? String ?? "", references: $0["references"] as? [String] ?? [], title: $0["title"] as? String,
                    text: $0["text"] as? String,
                    messages: ($0["messages"] as? [[String: Any]])?.map {
                        Shown.Message(reference: $0["reference"] as? String ?? "", text: $0["text"] as? String ?? "")
                    })
            }
            screens[device] = Screen(showing: shown, alerts: object["alerts"] as? Int ?? 0)
        }
        guard screens.count == Set(phones.map(\.device)).count else {
            throw Failure(description: "RetractKit for Android's replay answered for \(screens.count) of \(phones.count) phones")
        }
        return screens
    }

    /// The library's classes under `root` (a checkout of Retract), built
    /// with `scripts/android-test --build` when they are not there yet.
    /// `RETRACT_ANDROID_CLASSES` names another folder.
    public static func classes(root: URL) throws -> URL {
        if let given = ProcessInfo.processInfo.environment["RETRACT_ANDROID_CLASSES"] { return URL(fileURLWithPath: given) }
        let classes = root.appendingPathComponent(".build/android/classes")
        if FileManager.default.fileExists(atPath: classes.appendingPathComponent("tools").path) { return classes }
        let script = root.appendingPathComponent("scripts/android-test")
        guard FileManager.default.isExecutableFile(atPath: script.path) else {
            throw Failure(
                description:
                    "the Android phones run RetractKit for Android, which is not built: run this from a checkout of Retract "
                    + "(where scripts/android-test builds it with a JDK), or set RETRACT_ANDROID_CLASSES to its classes")
        }
        let build = Process()
        build.executableURL = script
        build.arguments = ["--build"]
        build.currentDirectoryURL = root
        build.standardOutput = FileHandle.nullDevice
        try build.run()
        build.waitUntilExit()
        guard build.terminationStatus == 0 else {
            throw Failure(
                description:
                    "scripts/android-test --build failed (exit \(build.terminationStatus)); run it to see why (it needs a JDK 11 or later)")
        }
        return classes
    }
}
