import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file store's open files: the journal that ``GroupCommit`` writes frames to, and the folder's lock.
///
/// It syncs as the store's policy says and, once the journal outgrows the compaction threshold, folds it into a new
/// snapshot before the write returns, while it still has the log to itself.
final class Journal: GroupCommitWriter, Sendable {
    private struct Files: Sendable {
        var lock: Int32 = -1
        var journal: Int32 = -1
        var generation: UInt64 = 0
        var size = 0
        var lastSync: Int64?
        var syncs = 0
        /// How long finished operations stay through compactions: the DataPoint's retention, given at open.
        var retention = RetentionPolicy()
    }

    let paths: FileStorage.Paths
    let options: FileStorage.Options
    private let clock: ClockSource
    private let files = Mutex(Files())
    // Blocking file I/O runs here, off the cooperative thread pool.
    private let io = DispatchQueue(label: "Relay.FileStorage")

    init(paths: FileStorage.Paths, options: FileStorage.Options, clock: ClockSource) {
        self.paths = paths
        self.options = options
        self.clock = clock
    }

    deinit {
        closeFiles()
    }

    /// How many times the journal was synced since the store opened.
    var syncCount: Int { files.withLock { $0.syncs } }

    /// Whether the journal holds records beyond its header.
    var holdsRecords: Bool { files.withLock { $0.size > StoreFormat.headerSize } }

    /// Takes the folder's lock, folds the snapshot and the journal, repairs what recovery repairs, and keeps the
    /// files open for writing.
    func open(retention: RetentionPolicy) async throws -> StoredState {
        let paths = self.paths
        files.withLock { $0.retention = retention }
        let opened = try await onIO { () throws -> FileStorage.Opened in
            try POSIXFile.makeFolder(paths.folder)
            let lock = try POSIXFile.lock(paths.lock)
            do {
                return try FileStorage.recover(paths, retention: retention, lock: lock)
            } catch {
                POSIXFile.close(lock)
                throw error
            }
        }
        files.withLock { files in
            files.lock = opened.lock
            files.journal = opened.journal
            files.generation = opened.generation
            files.size = opened.journalSize
        }
        return opened.state
    }

    /// Writes the frames in one write and, as the policy says, one sync; compacts when the journal has grown too
    /// large.
    func write(_ batch: ByteWriter) async throws {
        let (journal, sync) = files.withLock { files in (files.journal, shouldSync(&files)) }
        guard journal >= 0 else { throw RelayError(.storageFailure, "the store at \(paths.folder) is not open") }
        let path = paths.journal
        let bytes = batch.bytes
        try await onIO { () throws in
            try bytes.withUnsafeBytes { (buffer) throws in try POSIXFile.writeAll(journal, buffer, path: path) }
            if sync { try POSIXFile.sync(journal, path: path) }
        }
        let compactNow = files.withLock { files in
            if sync { files.syncs += 1 }
            files.size += bytes.count
            return files.size >= options.compactionThreshold
        }
        if compactNow { try await compact() }
    }

    /// Folds the snapshot and the journal on disk into a new snapshot, then starts an empty journal.
    ///
    /// Only the writer that has the log to itself calls it, after writing everything it took, so the files hold
    /// every acknowledged record.
    func compact() async throws {
        let (journal, generation, retention) = files.withLock { ($0.journal, $0.generation, $0.retention) }
        let paths = self.paths
        let fresh = try await onIO { () throws -> Int32 in
            let folded = try FileStorage.fold(paths, retention: retention)
            try POSIXFile.replace(
                paths.snapshot,
                with: StoreFormat.snapshot(folded.state, generation: generation),
                folder: paths.folder
            )
            try POSIXFile.replace(
                paths.journal,
                with: StoreFormat.emptyJournal(generation: generation + 1),
                folder: paths.folder
            )
            POSIXFile.close(journal)
            return try POSIXFile.open(paths.journal, O_WRONLY | O_APPEND)
        }
        files.withLock { files in
            files.journal = fresh
            files.generation = generation + 1
            files.size = StoreFormat.headerSize
        }
    }

    /// Closes the journal and releases the folder's lock.
    func closeFiles() {
        let descriptors = files.withLock { files in
            defer {
                files.journal = -1
                files.lock = -1
            }
            return [files.journal, files.lock].filter { $0 >= 0 }
        }
        for fd in descriptors { POSIXFile.close(fd) }
    }

    private func shouldSync(_ files: inout Files) -> Bool {
        switch options.fsync {
        case .always:
            return true
        case .never:
            return false
        case .interval(let interval):
            let now = clock.now
            guard let last = files.lastSync, now - last < interval.relayNanoseconds else {
                files.lastSync = now
                return true
            }
            return false
        }
    }

    /// Runs blocking file work on the store's queue and awaits it.
    private func onIO<Value: Sendable>(
        _ work: @escaping @Sendable () throws -> Value
    ) async throws(RelayError) -> Value {
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<Value, RelayError>, Never>) in
            io.async {
                do {
                    continuation.resume(returning: .success(try work()))
                } catch {
                    let failure = error as? RelayError ?? RelayError(.storageFailure, "file store: \(error)")
                    continuation.resume(returning: .failure(failure))
                }
            }
        }
        return try result.get()
    }
}
