import Foundation

/// What the poll looks up for the handles awaited here: the backstop behind `LISTEN`.
///
/// While the store listens, the transaction that ends an operation announces it on the finished channel, and the store
/// looks up everything awaited each time it starts listening; the poll then reads only what no announcement covers:
/// operations whose commits joined a transaction of the application's and that the database was not yet seen to hold
/// (that transaction may roll back, which nothing announces), and operations whose ends the listener may have passed
/// over, announced while this process held their claims (it leaves those to the process, which then did not record
/// them: its claim was lost, or its commit's answer was). Without a listener (the poll-only mode, or a connection lost
/// and not listened on again yet) the poll reads every operation awaited. So a process awaiting 100,000 operations
/// does not read all of them on every poll while it listens.
struct PostgresBackstop: Sendable {
    /// What the poll reads.
    enum Sweep: Equatable, Sendable {
        /// Every operation awaited here.
        case everything
        /// Those of these operations that are still awaited.
        case only(Set<UUID>)
    }

    private var listening = false
    /// Operations whose commits joined a transaction of the application's, not yet seen in the database.
    private var unseen: Set<UUID> = []
    /// Operations this process let go of without recording their ends, not yet seen ended.
    private var released: Set<UUID> = []

    /// The listener looked up everything awaited after it started listening: announcements cover what ends later.
    mutating func listened() {
        listening = true
    }

    /// The listener's connection was lost: until it listens again, announcements may be missed.
    mutating func lostListener() {
        listening = false
    }

    /// A commit joined a transaction of the application's, which may still roll back.
    mutating func joined(_ ids: [UUID]) {
        unseen.formUnion(ids)
    }

    /// This process let go of the claims of these operations without recording their ends: their ends may have been
    /// announced while it held them, and passed over.
    mutating func released(_ ids: some Sequence<UUID>) {
        released.formUnion(ids)
    }

    /// Whether the store listens now, so that announcements reach it.
    var isListening: Bool { listening }

    /// What the poll reads now.
    func sweep() -> Sweep {
        listening ? .only(unseen.union(released)) : .everything
    }

    /// These joined commits need no more polling: the database holds them, they never will (their handles failed), or
    /// no handle here awaits them any more.
    mutating func settled(_ ids: some Sequence<UUID>) {
        unseen.subtract(ids)
    }

    /// These need no more polling at all: they ended, the database no longer holds them, or no handle here awaits
    /// them any more.
    mutating func ended(_ ids: some Sequence<UUID>) {
        let ids = Set(ids)
        unseen.subtract(ids)
        released.subtract(ids)
    }
}
