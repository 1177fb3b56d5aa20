import Foundation
import Relay
import RelayTesting
import Testing

@Suite("S24 change streams", .timeLimit(.minutes(3)))
struct ChangeStreamTests {
    /// The first `count` changes a stream delivers, dropped notices included.
    private func first(_ count: Int, of stream: CallEventStream) async -> [CallEvent] {
        var received: [CallEvent] = []
        for await event in stream {
            received.append(event)
            if received.count == count { break }
        }
        return received
    }

    @Test("S24: a collection's stream delivers its upserts and removals in commit order, and nothing of others")
    func collectionStream() async throws {
        try await withManualPoint { point, _ in
            try point.register(Order.self, as: "orders")
            try point.register(Customer.self, as: "customers")
            let orders = try point.changes(of: Order.self)
            let everything = point.changes()
            let order = Order(id: UUID(), total: 1)
            try await point.transaction { tx in
                try tx.upsert(order)
                try tx.upsert(Customer(id: "ada", name: "Ada"))
            }
            try await point.transaction { tx in
                try tx.remove(Order.self, id: order.id)
                try tx.setValue(7, forKey: "cursor")
            }
            let seen = await first(2, of: orders).map { event -> DocumentChange? in
                guard case .modelChanged(let change) = event.kind.value else { return nil }
                return change
            }
            #expect(seen.map { $0?.snapshot } == [1, 2])
            #expect(try seen[0]?.model(as: Order.self) == order)
            #expect(seen[1]?.isRemoval == true)
            let all = await first(4, of: everything)
            #expect(
                all.map { "\($0.kind)" } == [
                    "orders/\(order.id) upserted in commit 1", "customers/ada upserted in commit 1",
                    "orders/\(order.id) removed in commit 2", "relay.values/cursor upserted in commit 2",
                ])
            #expect(zip(all, all.dropFirst()).allSatisfy { $0.sequenceNumber < $1.sequenceNumber })
            let unknown = #expect(throws: RelayError.self) { _ = try point.changes(of: Invoice.self) }
            #expect(unknown?.code == .unknownCollection)
        }
    }

    @Test("S24: a subscriber that falls behind gets a dropped count in place of the oldest changes")
    func slowSubscriberDrops() async throws {
        try await withManualPoint { point, _ in
            try point.register(Customer.self, as: "customers")
            let stream = try point.changes(of: Customer.self, bufferSize: 2)
            for index in 0..<5 {
                try await point.transaction { tx in try tx.upsert(Customer(id: "\(index)", name: "c\(index)")) }
            }
            let received = await first(3, of: stream)
            #expect(received.first?.kind == .dropped(DroppedEvents(count: 3)))
            #expect(
                received.dropFirst().map { "\($0.kind)" } == [
                    "customers/3 upserted in commit 4", "customers/4 upserted in commit 5",
                ])
        }
    }

    @Test("S24: a change reaches subscribers only once its transaction is durable")
    func changesWaitForDurability() async throws {
        let storage = GatedStorage()
        try await withManualPoint(storage: storage) { point, _ in
            try point.register(Customer.self, as: "customers")
            let recorder = EventRecorder(point)
            storage.holdDurability()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await point.transaction { tx in try tx.upsert(Customer(id: "ada", name: "Ada")) } }
                await storage.durable.waitForArrivals(1)
                #expect(recorder.events.isEmpty)
                storage.durable.open()
                try await group.waitForAll()
            }
            let changed = await recorder.waitFor { $0.kind.isModelChanged }
            #expect(changed.count == 1)
        }
    }
}
