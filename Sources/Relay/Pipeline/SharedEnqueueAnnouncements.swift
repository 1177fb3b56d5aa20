import Foundation

/// What a DataPoint on a shared store notes so that each operation's enqueued event reaches its streams once, and
/// before the operation's start.
///
/// An operation's enqueued event reaches a process by one of three routes: its own commit's answer, the store's event
/// log (for any commit), or a first claim here that comes before either. The log brings events later
/// than a claim may: a claim here announces the operation itself when nothing did yet, and the log's event is passed
/// over when it comes. Entries leave once the log's event is read and the operation starts, wherever, so the sets hold
/// only operations between their enqueue and their first start, and only while a stream of every event is open.
struct SharedEnqueueAnnouncements {
    /// Announced here, by this process's commit or a claim, before the log's enqueued event was read.
    private var aheadOfLog: Set<UUID> = []
    /// Announced here, and not started yet, here or elsewhere.
    private var unstarted: Set<UUID> = []

    /// Notes an operation announced as enqueued by this process's commit.
    mutating func announced(_ id: UUID) {
        aheadOfLog.insert(id)
        unstarted.insert(id)
    }

    /// Whether the log's enqueued event for `id` is to be published: not when this process announced it first.
    mutating func logged(_ id: UUID) -> Bool {
        guard aheadOfLog.remove(id) == nil else { return false }
        unstarted.insert(id)
        return true
    }

    /// Whether a first claim here of `id` is to announce it as enqueued: when nothing announced it yet.
    mutating func claimed(_ id: UUID) -> Bool {
        guard unstarted.remove(id) == nil else { return false }
        aheadOfLog.insert(id)
        return true
    }

    /// Forgets `id`, which started or ended in another process.
    mutating func started(_ id: UUID) {
        unstarted.remove(id)
    }
}
