import Foundation
import PostgresNIO
import Relay
import RelayPostgres
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A process on PostgreSQL killed with SIGKILL: what it acknowledged is in the database, and the store is free again.
@Suite(
    "S26 crash recovery on PostgreSQL with SIGKILL", .serialized, .timeLimit(.minutes(2)),
    .enabled(if: TestDatabase.isAvailable, "RELAY_POSTGRES_URL names no PostgreSQL server"))
struct PostgresCrashTests {
    @Test("S26/S16: after SIGKILL, every operation the process acknowledged is in the store, and the store opens")
    func killedProcessLosesNothing() async throws {
        try await TestDatabase.with { client, database in
            let configuration = try TestDatabase.connectionConfiguration(database: database)
            let worker = Process()
            worker.executableURL = try Self.builtProduct("RelayPostgresWorker")
            worker.arguments = [
                configuration.host ?? "127.0.0.1", String(configuration.port ?? 5432), configuration.username, database,
            ]
            let output = Pipe()
            worker.standardOutput = output
            try worker.run()
            let lines = await Self.readLines(from: output.fileHandleForReading) { $0.count >= 300 }
            kill(worker.processIdentifier, SIGKILL)
            worker.waitUntilExit()
            let acknowledged = Set(
                lines.compactMap { line in line.hasPrefix("acked ") ? UUID(uuidString: String(line.dropFirst(6))) : nil
                })
            #expect(acknowledged.count >= 300)
            // The killed process's connection ends with it, and its lock with the connection: waiting for the lock,
            // then letting it go, waits exactly that long.
            try await client.withConnection { connection in
                try await connection.query(
                    "SELECT pg_advisory_lock(\(PostgresStorage.ownerKey))", logger: TestDatabase.logger)
                try await connection.query(
                    "SELECT pg_advisory_unlock(\(PostgresStorage.ownerKey))", logger: TestDatabase.logger)
            }
            let storage = PostgresStorage(configuration: configuration)
            let state = try await storage.open()
            try await storage.close()
            let lost = acknowledged.subtracting(state.operations.map(\.operation.id))
            #expect(lost.isEmpty, "\(lost.count) of \(acknowledged.count) acknowledged operations were lost")
        }
    }

    /// Reads lines, off the cooperative pool, until `enough` says so or the output ends.
    private static func readLines(from output: FileHandle, until enough: @escaping @Sendable ([String]) -> Bool) async
        -> [String]
    {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var lines: [String] = []
                var buffer = Data()
                while !enough(lines) {
                    let chunk = output.availableData
                    if chunk.isEmpty { break }
                    buffer.append(chunk)
                    while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                        lines.append(String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self))
                        buffer.removeSubrange(buffer.startIndex...newline)
                    }
                }
                continuation.resume(returning: lines)
            }
        }
    }

    /// An executable the package builds beside the test binary.
    private static func builtProduct(_ name: String) throws -> URL {
        var folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<5 {
            let candidate = folder.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            folder.deleteLastPathComponent()
        }
        throw CocoaError(.fileNoSuchFile)
    }
}
