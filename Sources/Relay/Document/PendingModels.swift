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

    /// A model that a batch touches: its value before the batch, and after it; `nil` for a model that is not there.
    private struct Touch: Sendable {
        let key: Key
        let before: Data?
        var after: Data?
    }

    private struct Batch: Sendable {
        var ticket = StorageTicket.durable
        /// Each model the batch touches, once, in the order it first touched them.
        var touches: [Touch] = []
    }

    /// What readers see of a model that unpublished batches touch.
    private struct Shown: Sendable {
        var value: Data?
        /// How many unpublished batches touch the model.
        var batches: Int32 = 0
        /// The open batch that last touched the model, and where in it, so that a second change to it in the same
        /// batch costs no second lookup.
        var openBatch: UInt64 = 0
        var touch: Int32 = 0

        /// Counts the open batch `serial` touching the model at `touch`, unless it touched it already.
        ///
        /// - Returns: Where the open batch touched the model before, if it did, and whether the entry is new.
        mutating func enter(batch serial: UInt64, at touch: Int32) -> (earlier: Int32?, fresh: Bool) {
            if batches > 0, openBatch == serial { return (self.touch, false) }
            batches += 1
            openBatch = serial
            self.touch = touch
            return (nil, batches == 1)
        }
    }

    /// What readers see of each model that an unpublished batch touches.
    private var shown: [Key: Shown] = [:]
    /// Sealed batches, oldest first.
    private var sealed: [Batch] = []
    /// The batch of the commit being applied, until its transition is handed to the store, and its serial number.
    private var open = Batch()
    private var openSerial: UInt64 = 1
    private var collectionsTouched: [String: Int] = [:]

    /// Whether every change the document holds is published.
    var isEmpty: Bool { shown.isEmpty }

    /// Whether the commit being applied has changes.
    var hasOpenBatch: Bool { !open.touches.isEmpty }

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
        // One lookup: the entry is made, or found and updated, in place.
        let (earlier, fresh) = shown[key, default: Shown(value: before)]
            .enter(batch: openSerial, at: Int32(open.touches.count))
        if let earlier {
            open.touches[Int(earlier)].after = change.encoded
            return
        }
        open.touches.append(Touch(key: key, before: before, after: change.encoded))
        if fresh { collectionsTouched[key.collection, default: 0] += 1 }
    }

    /// Closes the commit's batch under the ticket of its transition; a durable ticket publishes it at once.
    ///
    /// - Returns: Whether what readers see changed.
    mutating func seal(_ ticket: StorageTicket) -> Bool {
        guard hasOpenBatch else { return false }
        var batch = open
        open = Batch()
        openSerial += 1
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
            for touch in sealed[count].touches { release(touch.key, showing: .some(touch.after)) }
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
        openSerial += 1
        while let last = sealed.last, last.ticket >= ticket {
            reverted.append(sealed.removeLast())
        }
        for batch in reverted {
            for touch in batch.touches {
                undo.append(ModelChange(collection: touch.key.collection, id: touch.key.id, encoded: touch.before))
                release(touch.key, showing: nil)
            }
        }
        return undo
    }

    /// One batch that touched `key` is published, and readers see `value` next if another batch still holds the
    /// key, or it is reverted (`value` is `nil`), and they see what they saw.
    private mutating func release(_ key: Key, showing value: Data??) {
        guard let index = shown.index(forKey: key) else { return }
        if shown.values[index].batches > 1 {
            shown.values[index].batches -= 1
            if let value { shown.values[index].value = value }
            return
        }
        shown.remove(at: index)
        collectionsTouched[key.collection, default: 1] -= 1
        if collectionsTouched[key.collection] == 0 { collectionsTouched[key.collection] = nil }
    }
}
