import Foundation
import Testing

@testable import Relay

@Suite("S19 model tables")
struct ModelTableTests {
    @Test("S19: a collection stores, replaces and removes encoded models, and reads them back whole")
    func storesReplacesRemoves() {
        var table = ModelTable(["a": Data("one".utf8), "b": Data()])
        #expect(table.count == 2)
        #expect(table["a"] == Data("one".utf8))
        #expect(table["b"] == Data())
        #expect(table["c"] == nil)
        table.set(Data("three".utf8), for: "a")
        table.set(nil, for: "b")
        table.set(Data(repeating: 7, count: 100_000), for: "c")
        table.set(nil, for: "missing")
        #expect(table["a"] == Data("three".utf8))
        #expect(!table.contains("b"))
        #expect(table["c"] == Data(repeating: 7, count: 100_000))
        #expect(table.all == ["a": Data("three".utf8), "c": Data(repeating: 7, count: 100_000)])
    }

    @Test("S19: bytes of replaced and removed models are reclaimed, so the buffer stays near the live models' size")
    func reclaimsReplacedBytes() {
        var table = ModelTable()
        for round in 0..<1_000 {
            for id in 0..<10 { table.set(Data(repeating: UInt8(round % 256), count: 1_000), for: "\(id)") }
        }
        let live = 10 * (4 + 1_000)
        // Ten thousand writes of a kilobyte: without reclaiming, ten megabytes.
        #expect(table.storedBytes <= live + live / 3 + (64 << 10))
        for id in 0..<10 { #expect(table["\(id)"] == Data(repeating: UInt8(999 % 256), count: 1_000)) }
        for id in 0..<9 { table.set(nil, for: "\(id)") }
        table.set(Data(repeating: 1, count: 70_000), for: "9")
        #expect(table.count == 1)
        #expect(table.storedBytes <= 2 * (4 + 70_000) + (64 << 10))
        #expect(table["9"] == Data(repeating: 1, count: 70_000))
    }

    @Test("S19: a model of 16 MiB or more keeps its length in the buffer, and reads and reclaims the same")
    func longModels() {
        var table = ModelTable()
        let long = Data(repeating: 9, count: (1 << 24) + 10)
        table.set(Data("small".utf8), for: "small")
        table.set(long, for: "long")
        #expect(table["long"] == long)
        #expect(table["small"] == Data("small".utf8))
        table.set(Data("short now".utf8), for: "long")
        // The long model's bytes were counted as left behind, so the buffer was compacted.
        #expect(table.storedBytes < 1 << 10)
        #expect(table["long"] == Data("short now".utf8))
        #expect(table["small"] == Data("small".utf8))
    }
}
