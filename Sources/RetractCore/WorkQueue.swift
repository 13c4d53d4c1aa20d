import Foundation
import RetractKit
import RetractModel

/// What a ``RetractionWorker`` needs of the ledger: the queue of work items
/// (claims with leases, splits, releases, finishes), the reads a page of
/// devices takes, and word of new work. `RetractStore` is the one in
/// production; the tests' in-memory queue keeps the same contract (one
/// suite runs against both), so the worker's rules are tested without a
/// database.
///
/// Every method may throw ``StoreError``; ``StoreError/Code/connectionLost``
/// is the one a worker waits out.
package protocol WorkQueue: Sendable {
    // MARK: The queue

    /// Claims up to `limit` due items for `worker`, oldest due first; no two
    /// claimers get the same item. An item not finished, split or released
    /// within `lease` is due again for any worker. With `retractions`, only
    /// their items are claimed.
    func claimWork(worker: String, limit: Int, lease: Duration, retractions: [UUID]?) async throws(StoreError) -> [ClaimedWorkItem]

    /// Moves the end of these claims' lease to `lease` from now.
    ///
    /// - Returns: the ids still held.
    @discardableResult
    func extendLease(_ items: [ClaimedWorkItem], by lease: Duration) async throws(StoreError) -> Set<Int64>

    /// Narrows a claimed page to the devices up to `token`, and queues the
    /// rest of the page as a new item, due at once.
    ///
    /// - Returns: false when the claim lapsed; nothing changed then.
    func splitPage(_ item: ClaimedWorkItem, at token: DeviceToken) async throws(StoreError) -> Bool

    /// Gives a claimed item back unfinished, due after the reason's delay;
    /// the claim counts as an attempt only for ``ReleaseReason/failed(_:retryAfter:)``.
    ///
    /// - Returns: false when the claim lapsed (or the item was finished).
    @discardableResult
    func release(_ item: ClaimedWorkItem, _ reason: ReleaseReason) async throws(StoreError) -> Bool

    /// Gives up on a claimed item: its devices count as failed with
    /// `reason` (those of a page known dead, as dead and skipped).
    ///
    /// - Returns: how many devices were counted failed; 0 when the claim lapsed.
    @discardableResult
    func giveUp(_ item: ClaimedWorkItem, of retraction: Retraction, reason: String) async throws(StoreError) -> Int

    /// Finishes claimed items, all at once: each still held is deleted, its
    /// counts added to its retraction, its retries and remainders queued,
    /// its dead tokens marked; a retraction left with no work is `done`, one
    /// with a stop reason `failed` (its other work dropped).
    ///
    /// - Returns: the items that were still held, and the retractions these
    ///   finishes completed with how long each took from being made.
    func finishReporting(_ results: [WorkResult]) async throws(StoreError) -> (held: Set<Int64>, completed: [UUID: Duration])

    /// Runs `operation`, and again while it fails with
    /// ``StoreError/Code/connectionLost``, for at most `patience`: for a
    /// write that must not be lost to a short outage and is safe to repeat.
    func waitingOutLostConnections<Result>(
        for patience: Duration, _ operation: () async throws(StoreError) -> Result
    ) async throws(StoreError) -> Result

    /// Calls `wake` once as soon as it listens and for each new piece of work,
    /// and `cancelled` with each retraction cancelled, until the task is cancelled.
    func listenForWork(
        _ wake: @escaping @Sendable () -> Void, cancelled: @escaping @Sendable (UUID) -> Void
    ) async throws(StoreError)

    // MARK: What a work item reads

    func retraction(id: UUID) async throws(StoreError) -> Retraction?
    func app(id: Int64) async throws(StoreError) -> App?

    /// The devices of `references` in the app with `after < token <= through`,
    /// in token order, at most `limit`; each with every one of those
    /// references it received. Devices whose every delivery is dead are
    /// skipped (``DevicePage/skipped``).
    func devicePage(
        appID: Int64, references: [ReferenceID], after: DeviceToken?, through: DeviceToken?, limit: Int
    ) async throws(StoreError) -> DevicePage

    /// The same for every delivery `selector` takes.
    func devicePage(
        appID: Int64, selector: RetractionSelector, after: DeviceToken?, through: DeviceToken?, limit: Int
    ) async throws(StoreError) -> DevicePage

    /// The app's record of `token` being dead, if it has one.
    func deadToken(_ token: DeviceToken, appID: Int64) async throws(StoreError) -> DeadToken?

    /// Of each device's `retracted` references sent under a collapse id,
    /// those a newer delivery to it, not being retracted, took the place of.
    func supersededReferences(
        appID: Int64, devices: [DeviceReferences], retracted: [ReferenceID]
    ) async throws(StoreError) -> [DeviceToken: Set<ReferenceID>]

    /// What the app's retractions made since `since` (not dry runs, not
    /// `retractionID`) took from each device, newest first.
    func recentRetractions(
        appID: Int64, devices: [DeviceToken], since: Date, excluding retractionID: UUID, listLimit: Int
    ) async throws(StoreError) -> [DeviceToken: [PayloadBuilder.Retracted]]
}
