import PostgresNIO

extension RetractStore {
    /// The channel the ledger notifies when work becomes due now (migration 0008).
    static let workChannel = "retract_work"

    /// Listens for work becoming due, calling `wake` for each notification,
    /// and once as soon as it listens, for work made while it was not. Holds
    /// one pooled connection until the task is cancelled, and returns then.
    ///
    /// - Throws: when the connection is lost or cannot be had; the caller
    ///   listens again after a pause, and polls meanwhile.
    package func listenForWork(_ wake: @escaping @Sendable () -> Void) async throws(StoreError) {
        do {
            try await client.withConnection { connection in
                try await connection.listen(on: Self.workChannel) { notifications in
                    wake()
                    for try await _ in notifications { wake() }
                }
            }
        } catch {
            if Task.isCancelled { return }
            throw StoreError.from(error, during: "listening for new work")
        }
    }
}
