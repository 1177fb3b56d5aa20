import Foundation
import Relay
import RelayTesting
import Testing

/// A model that owns others and is owned in turn, for erasure's cascades.
struct Node: Model, Equatable {
    let id: String
}

@Suite("S23 relations and erasure", .timeLimit(.minutes(3)))
struct RelationTests {
    private func ids(_ point: DataPoint) throws -> [String] {
        try point.models(Node.self).map(\.id)
    }

    private func registered(_ point: DataPoint) throws {
        try point.register(Node.self, as: "nodes")
        try point.register(Customer.self, as: "customers")
    }

    @Test("S23: relations resolve both ways, one-to-many and many-to-many, and ownedBy is owns turned around")
    func relationsResolve() async throws {
        try await withManualPoint { point, _ in
            try registered(point)
            let (order, lineA, lineB) = (Node(id: "order"), Node(id: "line-a"), Node(id: "line-b"))
            let ada = Customer(id: "ada", name: "Ada")
            try await point.transaction { tx in
                for node in [order, lineA, lineB] { try tx.upsert(node) }
                try tx.upsert(ada)
                try tx.relate(order, .owns, lineA)
                try tx.relate(lineB, .ownedBy, order)
                try tx.relate(ada, .free, order)
            }
            #expect(try point.related(to: order, by: .owns, as: Node.self) == [lineA, lineB])
            #expect(try point.related(to: lineB, by: .ownedBy, as: Node.self) == [order])
            #expect(try point.related(to: order, by: .free, as: Customer.self) == [ada])
            #expect(try point.related(to: ada, by: .free, as: Node.self) == [order])
            try await point.transaction { tx in try tx.unrelate(order, .owns, lineA) }
            #expect(try point.related(to: order, by: .owns, as: Node.self) == [lineB])
        }
    }

    @Test("S23: a relation resolved before reads anew after its models, its relations or its collection change")
    func resolvedRelationsFollowChanges() async throws {
        try await withManualPoint { point, _ in
            try registered(point)
            let team = Node(id: "team")
            let (ada, bob) = (Customer(id: "ada", name: "Ada"), Customer(id: "bob", name: "Bob"))
            try await point.transaction { tx in
                try tx.upsert(team)
                try tx.upsert(ada)
                try tx.upsert(bob)
                try tx.relate(team, .owns, ada)
            }
            #expect(try point.related(to: team, by: .owns, as: Customer.self) == [ada])
            // A change in another collection keeps what was resolved, and it still reads right.
            try await point.transaction { tx in try tx.upsert(Node(id: "other")) }
            #expect(try point.related(to: team, by: .owns, as: Customer.self) == [ada])
            // A related model changes.
            let renamed = Customer(id: "ada", name: "Ada L.")
            try await point.transaction { tx in try tx.upsert(renamed) }
            #expect(try point.related(to: team, by: .owns, as: Customer.self) == [renamed])
            // A relation is added, then one is removed.
            try await point.transaction { tx in try tx.relate(team, .owns, bob) }
            #expect(try point.related(to: team, by: .owns, as: Customer.self) == [renamed, bob])
            try await point.transaction { tx in try tx.unrelate(team, .owns, renamed) }
            #expect(try point.related(to: team, by: .owns, as: Customer.self) == [bob])
            // A related model is removed, not erased: the relation stays and names nothing.
            try await point.transaction { tx in try tx.remove(Customer.self, id: "bob") }
            #expect(try point.related(to: team, by: .owns, as: Customer.self).isEmpty)
            // A model read before reads anew after it changes.
            #expect(try point.model(Customer.self, id: "ada") == renamed)
            try await point.transaction { tx in try tx.upsert(ada) }
            #expect(try point.model(Customer.self, id: "ada") == ada)
        }
    }

    @Test("S23: erasing an owner erases what it owns, through any depth, unless another living owner keeps it")
    func ownerErasureCascades() async throws {
        try await withManualPoint { point, _ in
            try registered(point)
            let nodes = ["root", "child", "grandchild", "shared", "other-owner"].map(Node.init(id:))
            try await point.transaction { tx in
                for node in nodes { try tx.upsert(node) }
                try tx.relate(nodes[0], .owns, nodes[1])
                try tx.relate(nodes[1], .owns, nodes[2])
                try tx.relate(nodes[0], .owns, nodes[3])
                try tx.relate(nodes[4], .owns, nodes[3])
            }
            let changes = point.changes()
            try await point.transaction { tx in try tx.erase(nodes[0]) }
            #expect(try ids(point) == ["other-owner", "shared"])
            #expect(try point.related(to: nodes[4], by: .owns, as: Node.self) == [nodes[3]])
            // Subscribers hear of each erased model.
            var erased: [String] = []
            for await event in changes {
                guard case .modelChanged(let change) = event.kind.value, change.collection == "nodes" else { continue }
                erased.append(change.id)
                if erased.count == 3 { break }
            }
            #expect(erased == ["root", "child", "grandchild"])
        }
    }

    @Test("S23: erasing an owned model keeps its owner; a free link has no effect; a cycle of owners terminates")
    func erasureRules() async throws {
        try await withManualPoint { point, _ in
            try registered(point)
            let (owner, owned, friend) = (Node(id: "owner"), Node(id: "owned"), Node(id: "friend"))
            let (a, b, c) = (Node(id: "a"), Node(id: "b"), Node(id: "c"))
            try await point.transaction { tx in
                for node in [owner, owned, friend, a, b, c] { try tx.upsert(node) }
                try tx.relate(owner, .owns, owned)
                try tx.relate(owner, .free, friend)
                try tx.relate(a, .owns, b)
                try tx.relate(b, .owns, c)
                try tx.relate(c, .owns, a)
            }
            try await point.transaction { tx in try tx.erase(owned) }
            #expect(try ids(point) == ["a", "b", "c", "friend", "owner"])
            #expect(try point.related(to: owner, by: .owns, as: Node.self).isEmpty)
            try await point.transaction { tx in try tx.erase(owner) }
            #expect(try ids(point) == ["a", "b", "c", "friend"])
            #expect(try point.relatedAliases(to: friend, by: .free).isEmpty)
            try await point.transaction { tx in try tx.erase(a) }
            #expect(try ids(point) == ["friend"])
        }
    }

    @Test("S23/S25: relations persist, and resolve after a reopen")
    func relationsPersist() async throws {
        try await withTemporaryFolder { folder in
            let (order, line) = (Node(id: "order"), Node(id: "line"))
            try await DataPoint.with(storage: .file(at: folder.url), configuration: testConfiguration) { point in
                try point.register(Node.self, as: "nodes")
                try await point.transaction { tx in
                    try tx.upsert(order)
                    try tx.upsert(line)
                    try tx.relate(order, .owns, line)
                }
            }
            try await DataPoint.with(storage: .file(at: folder.url), configuration: testConfiguration) { point in
                try point.register(Node.self, as: "nodes")
                let lines = try point.related(to: order, by: .owns, as: Node.self)
                #expect(lines == [line])
                try await point.transaction { tx in try tx.erase(order) }
                let left = try point.count(of: Node.self)
                #expect(left == 0)
            }
        }
    }

    @Test("S23/S25: relations between ids with spaces, colons and digits persist whole, and erase after a reopen")
    func oddIdsPersist() async throws {
        try await withTemporaryFolder { folder in
            let owner = Node(id: "owns 5:nodes 3:x")
            let owned = [Node(id: " "), Node(id: "1:"), Node(id: "é 2:ü"), Node(id: "")]
            try await DataPoint.with(storage: .file(at: folder.url), configuration: testConfiguration) { point in
                try point.register(Node.self, as: "nodes")
                try await point.transaction { tx in
                    try tx.upsert(owner)
                    for node in owned {
                        try tx.upsert(node)
                        try tx.relate(owner, .owns, node)
                        try tx.relate(node, .free, owner)
                    }
                }
            }
            try await DataPoint.with(storage: .file(at: folder.url), configuration: testConfiguration) { point in
                try point.register(Node.self, as: "nodes")
                let resolved = try point.related(to: owner, by: .owns, as: Node.self)
                #expect(resolved == owned.sorted { $0.id < $1.id })
                let linked = try point.related(to: owner, by: .free, as: Node.self)
                #expect(linked == owned.sorted { $0.id < $1.id })
                try await point.transaction { tx in try tx.erase(owner) }
                let left = try point.count(of: Node.self)
                #expect(left == 0)
                #expect(try point.relatedAliases(to: owned[0], by: .free).isEmpty)
            }
        }
    }
}
