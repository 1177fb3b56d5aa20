import Foundation

/// Model changes that the document holds before the store has made them durable, and what readers see meanwhile.
///
/// A transaction's changes go into the document when it commits, so that the next transaction, its validation and
/// its erasure cascade build on them; readers and change subscribers must see them only once they are durable (S20,
/// S24). Each commit's changes form a batch that remembers, for every model it touches, the value before it and the
/// value after it. Until the batch is published, a reader of a touched model gets the value the oldest unpublished
/// batch found there. Publishing a durable batch moves what readers see forward; a failed write reverts the batches
/// from the failed one on, newest first, so that the document is as it was.
///
/// Batches are published in the order of their tickets: stores make writes durable in that order.
struct PendingModels: Sendable {
    struct Key: Hashable, Sendable {
        let collection: String
        let id: String
    }

    private struct Batch: Sendable {
        var ticket = StorageTicket.durable
        /// Each touched model's value before the batch, and after it; `nil` for a model that is not there.
        var before: [Key: Data?] = [:]
        var after: [Key: Data?] = [:]
    }

    /// What readers see of each model that an unpublished batch touches, and how many such batches touch it.
    private var shown: [Key: (value: Data?, batches: Int)] = [:]
    /// Sealed batches, oldest first.
    private var sealed: [Batch] = []
    /// The batch of the commit being applied, until its transition is handed to the store.
    private var open = Batch()
    private var collectionsTouched: [String: Int] = [:]

    /// Whether every change the document holds is published.
    var isEmpty: Bool { shown.isEmpty }

    /// Whether the commit being applied has changes.
    var hasOpenBatch: Bool { !open.after.isEmpty }

    /// What readers see of a model: `nil` when no unpublished change touches it, `.some(nil)` when it is not there.
    func shownValue(_ collection: String, _ id: String) -> Data?? {
        guard !shown.isEmpty, let entry = shown[Key(collection: collection, id: id)] else { return nil }
        return .some(entry.value)
    }

    /// Whether unpublished changes touch `collection`.
    func touches(_ collection: String) -> Bool {
        collectionsTouched[collection] != nil
    }

    /// The models of `collection` that unpublished changes touch, with what readers see of each.
    func shown(in collection: String) -> [(id: String, value: Data?)] {
        guard touches(collection) else { return [] }
        return shown.compactMap { key, entry in key.collection == collection ? (key.id, entry.value) : nil }
    }

    /// Notes a change of the commit being applied, with the model's value before it.
    mutating func note(_ change: ModelChange, before: Data?) {
        let key = Key(collection: change.collection, id: change.id)
        if open.before[key] == nil {
            open.before[key] = .some(before)
            if let entry = shown[key] {
                shown[key] = (entry.value, entry.batches + 1)
            } else {
                shown[key] = (before, 1)
                collectionsTouched[key.collection, default: 0] += 1
            }
        }
        open.after[key] = .some(change.encoded)
    }

    /// Closes the commit's batch under the ticket of its transition; a durable ticket publishes it at once.
    ///
    /// - Returns: Whether what readers see changed.
    mutating func seal(_ ticket: StorageTicket) -> Bool {
        guard hasOpenBatch else { return false }
        var batch = open
        open = Batch()
        batch.ticket = ticket
        sealed.append(batch)
        return ticket == .durable ? publish(through: ticket) : false
    }

    /// Publishes the batches whose tickets are durable, oldest first.
    ///
    /// - Returns: Whether what readers see changed.
    mutating func publish(through ticket: StorageTicket) -> Bool {
        var count = 0
        while count < sealed.count, sealed[count].ticket <= ticket {
            for (key, value) in sealed[count].after { release(key, showing: .some(value)) }
            count += 1
        }
        sealed.removeFirst(count)
        return count > 0
    }

    /// Takes back the batches from `ticket` on, and the open one, newest first.
    ///
    /// - Returns: The changes that put the document back as it was before them, in order.
    mutating func revert(from ticket: StorageTicket) -> [ModelChange] {
        var undo: [ModelChange] = []
        var reverted = [open]
        open = Batch()
        while let last = sealed.last, last.ticket >= ticket {
            reverted.append(sealed.removeLast())
        }
        for batch in reverted {
            for (key, value) in batch.before {
                undo.append(ModelChange(collection: key.collection, id: key.id, encoded: value))
                release(key, showing: nil)
            }
        }
        return undo
    }

    /// One batch that touched `key` is published, and readers see `value` next if another batch still holds the
    /// key, or it is reverted (`value` is `nil`), and they see what they saw.
    private mutating func release(_ key: Key, showing value: Data??) {
        guard let entry = shown[key] else { return }
        if entry.batches > 1 {
            shown[key] = (value ?? entry.value, entry.batches - 1)
            return
        }
        shown[key] = nil
        collectionsTouched[key.collection, default: 1] -= 1
        if collectionsTouched[key.collection] == 0 { collectionsTouched[key.collection] = nil }
    }
}
