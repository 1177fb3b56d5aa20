import Foundation
import Testing

@testable import Relay

/// The document's unpublished changes (S20: readers see a transaction's models once it is durable; a failed write
/// leaves the document as it was), driven batch by batch.
@Suite("Pending models")
struct PendingModelsTests {
    private static func change(_ id: String, _ value: String?) -> ModelChange {
        ModelChange(collection: "c", id: id, encoded: value.map { Data($0.utf8) })
    }

    private static func text(_ shown: Data??) -> String?? {
        shown.map { $0.map { String(decoding: $0, as: UTF8.self) } }
    }

    @Test("S20: two batches on one model: readers see the value before both, then each batch's as it is published")
    func publishInOrder() {
        var pending = PendingModels()
        pending.note(Self.change("k", "A"), before: nil)
        let first = pending.seal(StorageTicket(position: 1))
        #expect(!first)
        pending.note(Self.change("k", nil), before: Data("A".utf8))
        let second = pending.seal(StorageTicket(position: 2))
        #expect(!second)
        #expect(Self.text(pending.shownValue("c", "k")) == .some(nil))
        let published = pending.publish(through: StorageTicket(position: 1))
        #expect(published)
        #expect(Self.text(pending.shownValue("c", "k")) == .some("A"))
        #expect(pending.shown(in: "c").map(\.id) == ["k"])
        let rest = pending.publish(through: StorageTicket(position: 2))
        #expect(rest)
        #expect(pending.isEmpty)
        #expect(pending.shownValue("c", "k") == nil)
        #expect(!pending.touches("c"))
    }

    @Test("S20: a failed write takes back its batch and every later one, newest first; earlier ones stay")
    func revertFromTheFailedOne() {
        var pending = PendingModels()
        pending.note(Self.change("k", "A"), before: Data("0".utf8))
        _ = pending.seal(StorageTicket(position: 1))
        pending.note(Self.change("k", "B"), before: Data("A".utf8))
        pending.note(Self.change("j", "J"), before: nil)
        _ = pending.seal(StorageTicket(position: 2))
        pending.note(Self.change("k", "C"), before: Data("B".utf8))
        let undo = pending.revert(from: StorageTicket(position: 2))
        #expect(undo.map(\.id) == ["k", "k", "j"] || undo.map(\.id) == ["k", "j", "k"])
        #expect(undo.last { $0.id == "k" }?.encoded == Data("A".utf8), "k goes back to what batch 1 made it")
        #expect(undo.first { $0.id == "j" }?.encoded == nil)
        #expect(Self.text(pending.shownValue("c", "k")) == .some("0"), "batch 1 is still unpublished")
        #expect(pending.shownValue("c", "j") == nil)
        let published = pending.publish(through: StorageTicket(position: 1))
        #expect(published)
        #expect(pending.isEmpty)
    }

    @Test("S20: a batch sealed with a durable ticket is published at once")
    func durableTicketPublishes() {
        var pending = PendingModels()
        pending.note(Self.change("k", "A"), before: nil)
        #expect(pending.hasOpenBatch)
        let shownAtOnce = pending.seal(.durable)
        #expect(shownAtOnce)
        #expect(pending.isEmpty)
        #expect(!pending.hasOpenBatch)
    }

    @Test("S20: a model changed twice in one batch shows its last value once published, its first before if reverted")
    func twiceInOneBatch() {
        var pending = PendingModels()
        pending.note(Self.change("k", "A"), before: Data("0".utf8))
        pending.note(Self.change("k", "B"), before: Data("A".utf8))
        _ = pending.seal(StorageTicket(position: 1))
        #expect(Self.text(pending.shownValue("c", "k")) == .some("0"))
        pending.note(Self.change("k", "C"), before: Data("B".utf8))
        pending.note(Self.change("k", "D"), before: Data("C".utf8))
        _ = pending.seal(StorageTicket(position: 2))
        _ = pending.publish(through: StorageTicket(position: 1))
        #expect(Self.text(pending.shownValue("c", "k")) == .some("B"), "the first batch's last value")
        pending.note(Self.change("k", "E"), before: Data("D".utf8))
        let undo = pending.revert(from: StorageTicket(position: 2))
        #expect(undo.map { String(decoding: $0.encoded ?? Data(), as: UTF8.self) } == ["D", "B"])
        #expect(pending.isEmpty)
    }
}
