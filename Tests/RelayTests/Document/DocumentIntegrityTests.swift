import Foundation
import Relay
import RelayTesting
import Testing

/// S23's integrity rules: relations name stored models, and a removed model takes its relations with it.
@Suite("S23 document integrity", .timeLimit(.minutes(3)))
struct DocumentIntegrityTests {
    @Test("S23: relating a model that is not stored is a typed error, and the transaction changes nothing")
    func relatingAPhantomFails() async throws {
        try await withManualPoint { point, _ in
            try point.register(Node.self, as: "nodes")
            let (owner, line) = (Node(id: "owner"), Node(id: "line"))
            try await point.transaction { tx in try tx.upsert(line) }
            let error = await #expect(throws: RelayError.self) {
                try await point.transaction { tx in
                    try tx.upsert(Node(id: "other"))
                    try tx.relate(owner, .owns, line)
                }
            }
            #expect(error?.code == .modelNotFound)
            #expect(error?.message.contains("nodes/owner") == true, "\(String(describing: error))")
            #expect(try point.models(Node.self).map(\.id) == ["line"], "nothing of the transaction applied")
            #expect(try point.related(to: line, by: .ownedBy, as: Node.self).isEmpty)

            // Upserted earlier in the same transaction, the owner may be related; removed before, it may not.
            try await point.transaction { tx in
                try tx.upsert(owner)
                try tx.relate(owner, .owns, line)
            }
            #expect(try point.related(to: line, by: .ownedBy, as: Node.self) == [owner])
            let removedFirst = await #expect(throws: RelayError.self) {
                try await point.transaction { tx in
                    try tx.remove(line)
                    try tx.relate(owner, .owns, line)
                }
            }
            #expect(removedFirst?.code == .modelNotFound)
        }
    }

    @Test("S23: removing a model removes its relations, so erasing its former owner leaves the rest alone")
    func removingRemovesRelations() async throws {
        try await withManualPoint { point, _ in
            try point.register(Node.self, as: "nodes")
            let (order, kept, line) = (Node(id: "order"), Node(id: "kept"), Node(id: "line"))
            try await point.transaction { tx in
                for node in [order, kept, line] { try tx.upsert(node) }
                try tx.relate(order, .owns, line)
                try tx.relate(kept, .owns, line)
                try tx.relate(order, .free, kept)
            }
            try await point.transaction { tx in try tx.remove(kept) }
            #expect(try point.related(to: line, by: .ownedBy, as: Node.self) == [order])
            #expect(try point.related(to: order, by: .free, as: Node.self).isEmpty)
            #expect(try point.relatedAliases(to: line, by: .ownedBy).map(\.id) == ["order"])

            // The removed owner no longer keeps the line alive: erasing the other owner takes it.
            try await point.transaction { tx in try tx.erase(Node.self, id: "order") }
            #expect(try point.models(Node.self).isEmpty)
        }
    }
}
