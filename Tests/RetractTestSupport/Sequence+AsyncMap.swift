extension Sequence {
    /// `transform` applied to each element in turn.
    package func asyncMap<Value>(_ transform: (Element) async throws -> Value) async rethrows -> [Value] {
        var values: [Value] = []
        for element in self { values.append(try await transform(element)) }
        return values
    }
}

extension Sequence where Element: Sendable {
    /// `body` run for each element, at most `limit` at once.
    package func forEach(atATime limit: Int, _ body: @escaping @Sendable (Element) async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, element) in enumerated() {
                if index >= limit { try await group.next() }
                group.addTask { try await body(element) }
            }
            try await group.waitForAll()
        }
    }
}
