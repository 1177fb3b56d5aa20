import Foundation
import Relay
import RelayTesting
import Synchronization
import Testing

/// A second backend, written against Relay's public storage seams only: it keeps each transition's encoded records in
/// a medium that outlives the store, as a table or a remote log would, and shares its writes through group commit.
private final class MediumStorage: Storage {
    /// What outlives the store: the frames written, oldest first, each the encoded records of one transition.
    final class Medium: Sendable {
        let frames = Mutex<[[Data]]>([])
        let writes = Mutex(0)
    }

    /// Writes batches of frames to the medium.
    struct Writer: GroupCommitWriter {
        let medium: Medium

        func write(_ batch: [[Data]]) throws -> GroupCommitWrite {
            medium.frames.withLock { $0 += batch }
            medium.writes.withLock { $0 += 1 }
            return .durable
        }
    }

    private let medium: Medium
    private let commits: GroupCommit<Writer>

    init(on medium: Medium) {
        self.medium = medium
        commits = GroupCommit(writer: Writer(medium: medium), empty: [])
    }

    func open() async throws -> StoredState {
        try await open(retention: RetentionPolicy())
    }

    func open(retention: RetentionPolicy) async throws -> StoredState {
        let journal = medium.frames.withLock { $0.joined() }
        var replay = StoredState.Replay(retention: retention)
        for encoded in journal { replay.apply(try StorageRecord(encoded: encoded)) }
        return replay.state()
    }

    func append(_ records: [StorageRecord]) -> StorageTicket {
        commits.append(transitions: 1) { $0.append(records.map { $0.encoded() }) }
    }

    func waitUntilDurable(_ ticket: StorageTicket) async throws {
        try await commits.waitUntilDurable(ticket)
    }

    func close() async throws {
        try await commits.waitUntilDurable(commits.lastTicket)
        commits.close(failure: RelayError(.storageFailure, "closed")) {}
    }
}

@Suite("Storage seams", .timeLimit(.minutes(3)))
struct StorageSeamTests {
    @Test("S16: a store built on the public seams keeps what was acknowledged, and a new DataPoint resumes from it")
    func secondBackendRestores() async throws {
        let medium = MediumStorage.Medium()
        let first = CallOperation(kind: .noop)
        let second = CallOperation(kind: .noop, dependencies: [first.id])
        let heldUntil = try await withManualPoint(storage: MediumStorage(on: medium)) { point, _ in
            point.registerBasics()
            let until = point.now.addingTimeInterval(3600)
            let handles = try await point.enqueue([first, second])
            try await point.hold(second.id, until: until)
            #expect(try await handles[0].outcome == .completed(Data()))
            return until
        }
        #expect(medium.writes.withLock { $0 } >= 1)

        try await withManualPoint(storage: MediumStorage(on: medium)) { point, _ in
            point.registerBasics()
            #expect(try await point.status(of: first.id)?.state == .finished(.completed(Data())))
            #expect(try await point.status(of: second.id)?.state == .pending(.held(until: heldUntil)))
            try await point.hold(second.id, until: nil)
            #expect(try await point.handle(for: second.id).outcome == .completed(Data()))
        }
    }

    @Test("S17: every record reads back as written; bytes that are not one whole record are a typed error")
    func recordsRoundTrip() async throws {
        let medium = MediumStorage.Medium()
        try await withManualPoint(storage: MediumStorage(on: medium)) { point, _ in
            point.registerBasics()
            try await point.suspend()
            let handles = try await point.enqueue([CallOperation(kind: .noop), CallOperation(kind: .echo)])
            try await point.resume()
            for handle in handles { _ = try await handle.outcome }
        }
        let encoded = medium.frames.withLock { $0 }.flatMap { $0 }
        let kinds = Set(try encoded.map { try StorageRecord(encoded: $0).kind })
        #expect(kinds.isSuperset(of: [.commit, .started, .finished, .suspensionChanged]))
        for data in encoded { #expect(try StorageRecord(encoded: data).encoded() == data) }

        let commit = try #require(encoded.first)
        for damaged in [Data([0xFF]), commit.dropLast(), commit + Data([0])] {
            let error = #expect(throws: RelayError.self) { try StorageRecord(encoded: damaged) }
            #expect(error?.code == .corruptStore)
        }
    }
}
