import RetractStore

/// The ledger in PostgreSQL is the workers' queue in production.
extension RetractStore: WorkQueue {}
