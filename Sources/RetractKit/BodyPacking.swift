/// Packs references into the fewest retraction bodies under a size limit.
///
/// Pure arithmetic over encoded lengths. First-fit decreasing packs; when its
/// count is above the lower bound and there are few enough references, an
/// exact search looks for a packing with fewer bodies. Within a body,
/// references keep their input order.
struct BodyPacking {
    /// Bytes of a body with one reference, besides the reference.
    var singleOverhead: Int
    /// Bytes of a body with several references, besides the references and
    /// the commas between them.
    var batchOverhead: Int
    var limit: Int
    /// The exact search runs for at most this many references...
    var searchedReferenceLimit = 64
    /// ...and tries at most this many placements before keeping the best packing found.
    var searchBudget = 20_000

    /// Indices into `lengths`, grouped per body.
    func pack(_ lengths: [Int]) throws -> [[Int]] {
        for length in lengths where singleOverhead + length > limit {
            throw RetractPayloadError.bodyTooLarge(size: singleOverhead + length, limit: limit)
        }
        let largestFirst = lengths.indices.sorted { lengths[$0] > lengths[$1] || (lengths[$0] == lengths[$1] && $0 < $1) }
        var best = firstFit(largestFirst, lengths)
        if best.count > lowerBound(lengths), lengths.count <= searchedReferenceLimit {
            var search = ExactSearch(packing: self, lengths: lengths, order: largestFirst, budget: searchBudget)
            if let fewer = search.fewestBins(below: best.count, atLeast: lowerBound(lengths)) { best = fewer }
        }
        return best.map { $0.sorted() }
    }

    /// The size of a body holding `count` references of `total` encoded bytes.
    func size(of count: Int, total: Int) -> Int {
        count == 1 ? singleOverhead + total : batchOverhead + total + count - 1
    }

    private func firstFit(_ order: [Int], _ lengths: [Int]) -> [[Int]] {
        var bins: [(indices: [Int], total: Int)] = []
        for index in order {
            let length = lengths[index]
            if let bin = bins.firstIndex(where: { size(of: $0.indices.count + 1, total: $0.total + length) <= limit }) {
                bins[bin].indices.append(index)
                bins[bin].total += length
            } else {
                bins.append(([index], length))
            }
        }
        return bins.map(\.indices)
    }

    /// No packing has fewer bodies: each reference costs its length and a
    /// comma, and no body holds more than the limit less the smaller overhead.
    private func lowerBound(_ lengths: [Int]) -> Int {
        let capacity = limit - min(singleOverhead, batchOverhead) + 1
        let total = lengths.reduce(0) { $0 + $1 + 1 }
        return (total + capacity - 1) / capacity
    }
}

/// Depth-first search for a packing into fewer bins, largest references first.
private struct ExactSearch {
    let packing: BodyPacking
    let lengths: [Int]
    let order: [Int]
    var budget: Int
    private var bins: [(indices: [Int], total: Int)] = []

    init(packing: BodyPacking, lengths: [Int], order: [Int], budget: Int) {
        self.packing = packing
        self.lengths = lengths
        self.order = order
        self.budget = budget
    }

    /// The packing with the fewest bins under `bound`, trying each count from
    /// `lowerBound` up; nil when none is found within the budget.
    mutating func fewestBins(below bound: Int, atLeast lowerBound: Int) -> [[Int]]? {
        for target in lowerBound..<bound {
            bins = []
            if place(0, target: target) { return bins.map(\.indices) }
            if budget <= 0 { return nil }
        }
        return nil
    }

    private mutating func place(_ position: Int, target: Int) -> Bool {
        guard position < order.count else { return true }
        budget -= 1
        guard budget > 0 else { return false }
        let index = order[position]
        let length = lengths[index]
        for bin in bins.indices {
            let fits = packing.size(of: bins[bin].indices.count + 1, total: bins[bin].total + length) <= packing.limit
            // Bins with the same count and total are interchangeable: try the first of them.
            let isFirstOfItsKind = !bins[..<bin].contains { $0.indices.count == bins[bin].indices.count && $0.total == bins[bin].total }
            guard fits, isFirstOfItsKind else { continue }
            bins[bin].indices.append(index)
            bins[bin].total += length
            if place(position + 1, target: target) { return true }
            bins[bin].indices.removeLast()
            bins[bin].total -= length
        }
        if bins.count < target {
            bins.append(([index], length))
            if place(position + 1, target: target) { return true }
            bins.removeLast()
        }
        return false
    }
}
