/// How many pushes one app keeps in flight through one service, found by
/// trying: the window doubles while it is what holds sending back and each
/// doubling raises the rate of answers; when a doubling does not (by at
/// least a tenth, measured over the interval after the one it settles in),
/// the CPU, the server or the connections set the rate, and the window goes
/// back to the last size that did.
///
/// At a round trip of R and a rate the CPU holds to C, the window settles at
/// the first doubling of the floor at or above the bandwidth-delay product
/// C × R: 400 (the floor) at loopback, 800 at 50 ms and 12,000 a second,
/// 3,200 at 200 ms. Latency alone cannot tell: when the CPU is the limit,
/// every push waits behind the window, so its answer takes window ÷ rate
/// however near the server is. After a failed doubling it holds for a
/// while, then tries again, so it follows a round trip that grows; after an
/// idle spell it starts over from the floor, so it follows one that shrinks.
///
/// A value driven by the answers, the window's waits and the time passed
/// in, tested without sockets.
struct WindowSizer {
    /// The smallest window: where it starts, and starts over after an idle spell.
    let floor: Int
    /// The largest: the memory the process may give pushes in flight.
    let cap: Int
    /// The window now.
    private(set) var size: Int

    /// The interval being measured: when it began, what was answered in it,
    /// and the window's count of waits then.
    private var intervalStart: ContinuousClock.Instant?
    private var answered = 0
    private var latencies: Duration = .zero
    private var waitsAtStart = 0
    /// The last answer, to tell an idle spell.
    private var lastAnswer: ContinuousClock.Instant?
    /// The size before the last doubling, and the rate it had: set while a
    /// doubling is being judged.
    private var before: (size: Int, rate: Double)?
    /// Whether the interval now is the first after a doubling: pushes sent
    /// before it are still being answered, so its rate is not judged.
    private var settling = false
    /// No doubling before this, after one that did not pay.
    private var holdUntil: ContinuousClock.Instant?

    /// A doubling pays when the rate rises by at least this much. A doubling
    /// kept that did not pay costs memory; one undone that did, throughput.
    static let gain = 1.1
    /// The shortest interval measured: shorter ones count too few answers,
    /// and the gaps between a lane's pages make their rate uneven.
    static let shortestInterval: Duration = .milliseconds(200)
    /// How long the window holds after a doubling that did not pay.
    static let hold: Duration = .seconds(5)
    /// A gap between answers this long starts the measuring over.
    static let idle: Duration = .seconds(1)

    init(floor: Int, cap: Int) {
        self.cap = max(cap, 1)
        self.floor = min(max(floor, 1), self.cap)
        size = self.floor
    }

    /// A push answered `latency` after it was sent, at `now`; `waits` is how
    /// many times a push has had to wait for the window so far. Returns the
    /// new window when an interval (twice its mean answer time, at least
    /// 200 ms) ends with a different one.
    mutating func answered(after latency: Duration, at now: ContinuousClock.Instant, waits: Int) -> Int? {
        defer { lastAnswer = now }
        guard let start = intervalStart, let last = lastAnswer, now - last < Self.idle else {
            // The first answer, or the first after an idle spell: a rate is measured from here, and the
            // window starts over from the floor (what the last burst needed, the next may not).
            intervalStart = now
            answered = 0
            latencies = .zero
            waitsAtStart = waits
            before = nil
            settling = false
            holdUntil = nil
            guard size != floor else { return nil }
            size = floor
            return size
        }
        answered += 1
        latencies += latency
        let elapsed = now - start
        guard elapsed >= max(Self.shortestInterval, latencies / answered * 2) else { return nil }
        let rate = Double(answered) / elapsed.inSeconds
        let full = waits > waitsAtStart
        intervalStart = now
        answered = 0
        latencies = .zero
        waitsAtStart = waits
        return judge(rate: rate, full: full, at: now)
    }

    /// The size after an interval answered at `rate`, the window `full` (a push waited for it) or not.
    private mutating func judge(rate: Double, full: Bool, at now: ContinuousClock.Instant) -> Int? {
        if settling {
            settling = false
            return nil
        }
        if let before {
            self.before = nil
            guard rate >= before.rate * Self.gain else {
                // The doubling did not pay: back to the size that had the rate, for a while.
                holdUntil = now + Self.hold
                size = before.size
                return size
            }
        }
        guard full, size < cap, holdUntil.map({ now >= $0 }) ?? true else { return nil }
        before = (size, rate)
        settling = true
        size = min(size * 2, cap)
        return size
    }
}
