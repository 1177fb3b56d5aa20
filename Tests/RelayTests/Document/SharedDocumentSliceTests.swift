import Foundation
import Testing

@testable import Relay

/// What a shared store reads of its document to commit relations, removals and erasures, and what it writes.
@Suite("S23 a shared store's slice of the document")
struct SharedDocumentSliceTests {
    static func node(_ id: String) -> Alias { Alias(collection: "nodes", id: id) }

    static func removal(of model: Alias) -> ModelChange {
        ModelChange(collection: model.collection, id: model.id, encoded: nil)
    }

    @Test("S23: a shared store's slice decides as a DataPoint does: erasure keeps what a living owner keeps")
    func erasureOverSlice() throws {
        let (order, line, shared, keeper, tag) = (
            Self.node("order"), Self.node("line"), Self.node("shared"), Self.node("keeper"), Self.node("tag")
        )
        let changes: [ModelChange] = []
        let erasures = [order]
        let demand = SharedDocumentSlice.Demand(changes: changes, erasures: erasures)
        #expect(demand.ownershipRoots == [order] && demand.removed.isEmpty && demand.endpoints.isEmpty)
        // Under the lock that orders commits, the store loads what `demand` names.
        let heldModels = [order, line, shared, keeper, tag]
        let heldRelations = [
            Relation(order, .owns, line), Relation(order, .owns, shared), Relation(keeper, .owns, shared),
            Relation(tag, .free, order),
        ]
        let slice = SharedDocumentSlice(existing: heldModels, relations: heldRelations)
        let committed = try slice.resolve(changes, erasures: erasures)
        let removedModels = committed.filter { $0.relation == nil }.map { Alias(collection: $0.collection, id: $0.id) }
        #expect(removedModels == [order, line], "what the keeper owns too stays")
        #expect(
            Set(committed.compactMap(\.relation))
                == [Relation(order, .owns, line), Relation(order, .owns, shared), Relation(tag, .free, order)])
        #expect(committed.allSatisfy { $0.encoded == nil })
    }

    @Test("S23: a shared store's slice refuses a relation to a model it lacks, and removals take their relations")
    func relationsOverSlice() throws {
        let (order, line, ghost) = (Self.node("order"), Self.node("line"), Self.node("ghost"))
        let upserts = [ModelChange(collection: "nodes", id: "line", encoded: Data("{}".utf8))]
        #expect(SharedDocumentSlice.Demand(changes: upserts, erasures: []).isEmpty, "plain upserts read nothing")

        let relating = upserts + [Relation(order, .owns, line).change(removing: false)]
        let demand = SharedDocumentSlice.Demand(changes: relating, erasures: [])
        #expect(demand.endpoints == [order, line] && demand.ownershipRoots.isEmpty)
        let slice = SharedDocumentSlice(existing: [order], relations: [])
        #expect(try slice.resolve(relating, erasures: []) == relating, "the line is upserted before it is related")
        let haunted = [Relation(order, .free, ghost).change(removing: false)]
        let error = #expect(throws: RelayError.self) { try slice.resolve(haunted, erasures: []) }
        #expect(error?.code == .modelNotFound)

        let removing = [Self.removal(of: order)]
        #expect(SharedDocumentSlice.Demand(changes: removing, erasures: []).removed == [order])
        let related = SharedDocumentSlice(existing: [order, line], relations: [Relation(order, .owns, line)])
        #expect(
            try related.resolve(removing, erasures: [])
                == removing + [Relation(order, .owns, line).change(removing: true)])
    }
}
