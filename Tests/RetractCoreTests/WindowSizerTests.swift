import Testing

@testable import RetractCore

/// The window's sizing, driven by answers and a clock of the test's own.
@Suite("Window sizing")
struct WindowSizerTests {
    /// Feeds `sizer` the answers a transport sees for `seconds`: the window
    /// full (pushes waiting for it) unless `supply` holds sending lower, each
    /// answered after the round trip plus its wait behind the others when
    /// the CPU, at `rate` a second, is the limit. Returns each size it moved to.
    static func run(
        _ sizer: inout WindowSizer, roundTrip: Duration, rate: Double = 1_000_000, supply: Int = .max, seconds: Double,
        from start: ContinuousClock.Instant
    ) -> [Int] {
        var sizes: [Int] = []
        var now = start
        var waits = 0
        let end = start + .seconds(seconds)
        while now < end {
            let inFlight = min(sizer.size, supply)
            if supply > sizer.size { waits += 1 }
            // Little's law: what is in flight over the round trip, unless the CPU holds it lower.
            let answersPerSecond = min(Double(inFlight) / roundTrip.inSeconds, rate)
            let latency = Duration.seconds(Double(inFlight) / answersPerSecond)
            now += .seconds(1 / answersPerSecond)
            if let size = sizer.answered(after: latency, at: now, waits: waits) { sizes.append(size) }
        }
        return sizes
    }

    static let start = ContinuousClock.now

    @Test func atFiftyMillisecondsItSettlesAtTheFirstDoublingAboveTheBandwidthDelayProduct() {
        var sizer = WindowSizer(floor: 400, cap: 5000)
        // 12,000 a second × 50 ms = 600 in flight: 800 has the rate, 1,600 adds nothing.
        let sizes = Self.run(&sizer, roundTrip: .milliseconds(50), rate: 12_000, seconds: 3, from: Self.start)
        #expect(sizes.prefix(3) == [800, 1600, 800], "\(sizes)")
        #expect(sizer.size == 800, "\(sizes)")
    }

    @Test func atTwoHundredMillisecondsItDoublesUpTo3200() {
        var sizer = WindowSizer(floor: 400, cap: 5000)
        // 2,400 in flight needed: 3,200 has the rate; the cap, 5,000, adds nothing.
        let sizes = Self.run(&sizer, roundTrip: .milliseconds(200), rate: 12_000, seconds: 6, from: Self.start)
        #expect(sizes.prefix(5) == [800, 1600, 3200, 5000, 3200], "\(sizes)")
        #expect(sizer.size == 3200)
    }

    @Test func atLoopbackItTriesTwiceTheFloorAndComesBack() {
        var sizer = WindowSizer(floor: 400, cap: 5000)
        // Every answer waits behind the window (400 ÷ 12,000 a second, 33 ms), yet more in flight buys nothing.
        let sizes = Self.run(&sizer, roundTrip: .microseconds(500), rate: 12_000, seconds: 12, from: Self.start)
        #expect(Set(sizes) == [800, 400], "\(sizes)")
        // One try, then one after each hold of 5 s.
        #expect(sizes.count <= 6, "\(sizes)")
        #expect(sizer.size == 400)
    }

    @Test func withoutTheCPUAsALimitItGrowsToTheCap() {
        var sizer = WindowSizer(floor: 400, cap: 5000)
        _ = Self.run(&sizer, roundTrip: .milliseconds(50), seconds: 2, from: Self.start)
        #expect(sizer.size == 5000)
    }

    @Test func aWindowThatIsNotFullDoesNotGrow() {
        var sizer = WindowSizer(floor: 400, cap: 5000)
        // The ledger hands out 300 pushes at a time: the window never holds sending back.
        let sizes = Self.run(&sizer, roundTrip: .milliseconds(200), supply: 300, seconds: 3, from: Self.start)
        #expect(sizes.isEmpty)
        #expect(sizer.size == 400)
    }

    @Test func anIdleSpellStartsOverFromTheFloor() {
        var sizer = WindowSizer(floor: 400, cap: 5000)
        _ = Self.run(&sizer, roundTrip: .milliseconds(50), seconds: 0.3, from: Self.start)
        #expect(sizer.size > 400)
        // A minute later, the next burst: measured from its first answer, from the floor.
        #expect(sizer.answered(after: .milliseconds(50), at: Self.start + .seconds(61), waits: 0) == 400)
        let sizes = Self.run(&sizer, roundTrip: .milliseconds(50), rate: 12_000, seconds: 3, from: Self.start + .seconds(61))
        #expect(sizes.prefix(3) == [800, 1600, 800], "\(sizes)")
    }

    @Test func aCapBelowTheFloorIsTheWindow() {
        var sizer = WindowSizer(floor: 400, cap: 100)
        #expect(sizer.size == 100)
        _ = Self.run(&sizer, roundTrip: .milliseconds(200), seconds: 2, from: Self.start)
        #expect(sizer.size == 100)
    }

    @Test func aGrownWindowLetsWaitersInAndAShrunkOneHoldsThemUntilBelowIt() async {
        let window = PushWindow(size: 1)
        await window.acquire()
        let second = Task { await window.acquire() }
        while window.waits == 0 { await Task.yield() }
        window.resize(to: 2)
        await second.value
        // Two in flight; shrunk to one, a third waits until both are answered.
        window.resize(to: 1)
        let third = Task {
            await window.acquire()
            return true
        }
        while window.waits == 1 { await Task.yield() }
        window.release()
        #expect(window.size == 1)
        window.release()
        #expect(await third.value)
        window.release()
    }
}
