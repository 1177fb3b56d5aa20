import Foundation
import Relay
import RelayTesting
import Testing

@Suite("S20/S24 the document shows what is durable", .timeLimit(.minutes(3)))
struct DocumentDurabilityTests {
    @Test("S20: a transaction's models are invisible to readers until its write is durable, then visible")
    func modelsWaitForDurability() async throws {
        let storage = GatedStorage()
        try await DataPoint.with(storage: storage) { point in
            try point.register(Customer.self, as: "customers")
            storage.holdDurability()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await point.transaction { tx in
                        try tx.upsert(Customer(id: "c1", name: "Ada"))
                        try tx.setValue("Ada", forKey: "last")
                    }
                }
                await storage.durable.waitForArrivals(1)
                #expect(try point.model(Customer.self, id: "c1") == nil)
                #expect(try point.models(Customer.self).isEmpty)
                #expect(try point.count(of: Customer.self) == 0)
                #expect(try point.value(String.self, forKey: "last") == nil)
                storage.durable.open()
                try await group.waitForAll()
            }
            #expect(try point.model(Customer.self, id: "c1")?.name == "Ada")
            #expect(try point.count(of: Customer.self) == 1)
            #expect(try point.value(String.self, forKey: "last") == "Ada")
        }
    }

    @Test("S20/S23: a failed write leaves the document as it was: upserts, removals and relations taken back")
    func failedWriteReverts() async throws {
        let storage = GatedStorage()
        let ada = Customer(id: "c1", name: "Ada")
        let bob = Customer(id: "c2", name: "Bob")
        try await DataPoint.with(storage: storage) { point in
            try point.register(Customer.self, as: "customers")
            try await point.transaction { tx in
                try tx.upsert(ada)
                try tx.upsert(bob)
                try tx.relate(ada, .owns, bob)
            }
            storage.holdDurability()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    let error = await #expect(throws: RelayError.self) {
                        try await point.transaction { tx in
                            try tx.upsert(Customer(id: "c1", name: "Ada Lovelace"))
                            try tx.upsert(Customer(id: "c3", name: "Cy"))
                            try tx.erase(bob)
                        }
                    }
                    #expect(error?.code == .storageFailure)
                }
                await storage.durable.waitForArrivals(1)
                #expect(try point.models(Customer.self).map(\.name).sorted() == ["Ada", "Bob"])
                storage.failWrites(with: RelayError(.storageFailure, "the disk is gone"))
                storage.durable.open()
                try await group.waitForAll()
            }
            #expect(try point.model(Customer.self, id: "c1") == ada)
            #expect(try point.model(Customer.self, id: "c2") == bob)
            #expect(try point.model(Customer.self, id: "c3") == nil)
            #expect(try point.related(to: ada, by: .owns, as: Customer.self) == [bob])
        }
    }
}
