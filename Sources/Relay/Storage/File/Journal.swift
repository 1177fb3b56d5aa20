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
/// It syncs as the store's policy says. Once the journal outgrows the compaction threshold, the write that noticed
/// seals it (syncs it and sets it aside as `journal.sealed`) and starts the next journal, which takes a few
/// milliseconds; ``maintain()`` then folds the snapshot and the sealed journal into a new snapshot on a queue of its
/// own while writes go on, so acknowledgements never wait for a fold. Should the journal outgrow four thresholds before
/// that fold is done (no DataPoint runs ``maintain()``, or a fold failed), the write folds everything itself.
final class Journal: GroupCommitWriter, Sendable {
    private struct Files: Sendable {
        var lock: Int32 = -1
        var journal: Int32 = -1
        var generation: UInt64 = 0
        /// Where the frames end: the next write goes there.
        var size = 0
        /// The file's length: the frames, then zeros written ahead of them.
        var allocated = 0
        var lastSync: Int64?
        var syncs = 0
        /// How long finished operations stay through compactions: the DataPoint's retention, given at open.
        var retention = RetentionPolicy()
        /// A sealed journal waits to be folded.
        var sealedPending = false
        /// The last fold beside writes failed; the next full compaction retries it.
        var sealedFoldFailed = false
        var foldWaiters = Waiters<Bool>()
        var foldsBesideWrites = 0
        var fullCompactions = 0
    }

    let paths: FileStorage.Paths
    let options: FileStorage.Options
    private let clock: ClockSource
    private let files = Mutex(Files())
    /// The size of the last encoded batch, which the next reserves, so that a batch is encoded without regrowing.
    private let encodedBatchEstimate = Atomic<Int>(0)
    // Opening runs here, off the cooperative thread pool; writes run on the queue of the store's GroupCommit.
    private let io = DispatchQueue(label: "Relay.FileStorage")
    // Folds run here, one at a time, beside the writes on `io`.
    private let folds = DispatchQueue(label: "Relay.FileStorage.folds")

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

    /// How many sealed journals ``maintain()`` folded since the store opened.
    var foldsBesideWrites: Int { files.withLock { $0.foldsBesideWrites } }

    /// How many compactions, beside writes or by a write, since the store opened.
    var compactions: Int { files.withLock { $0.foldsBesideWrites + $0.fullCompactions } }

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
            files.allocated = opened.journalLength
        }
        return opened.state
    }

    /// Encodes each transition's records as a frame and writes them all in one write; says whether the policy asks
    /// for a sync, and whether the journal has grown large enough to seal or compact.
    ///
    /// ``GroupCommit`` calls it on its queue, outside the pipeline's lock, while the previous batch's sync runs: the
    /// encoding is off the lock and beside the sync, not before it.
    func write(_ batch: [[StorageRecord]]) throws -> GroupCommitWrite {
        var frames = ByteWriter()
        frames.bytes.reserveCapacity(encodedBatchEstimate.load(ordering: .relaxed))
        // One frame per transition: a torn tail keeps all of it or none of it.
        for records in batch { StoreFormat.appendFrame(records, to: &frames) }
        encodedBatchEstimate.store(frames.bytes.count, ordering: .relaxed)
        let (journal, offset, allocated, sync) = files.withLock { files in
            (files.journal, files.size, files.allocated, shouldSync(&files))
        }
        guard journal >= 0 else { throw RelayError(.storageFailure, "the store at \(paths.folder) is not open") }
        let end = offset + frames.bytes.count
        let grown = end > allocated ? Self.roundUp(end, to: growthStep) : allocated
        if grown > allocated { try POSIXFile.writeZeros(journal, from: allocated, to: grown, path: paths.journal) }
        try frames.bytes.withUnsafeBytes { (buffer) throws in
            try POSIXFile.writeAll(journal, buffer, at: offset, path: paths.journal)
        }
        let due = files.withLock { files in
            files.size = end
            files.allocated = grown
            return end >= options.compactionThreshold
        }
        return GroupCommitWrite(needsSync: sync, needsMaintenance: due)
    }

    /// How far ahead of the frames the journal is filled with zeros, each time it grows: a megabyte, or less for a
    /// store that compacts sooner.
    private var growthStep: Int {
        min(1 << 20, max(4096, Self.roundUp(options.compactionThreshold, to: 4096)))
    }

    private static func roundUp(_ value: Int, to step: Int) -> Int {
        (value + step - 1) / step * step
    }

    /// Syncs the journal, which holds every batch written so far.
    ///
    /// It runs beside the next write, never beside ``performMaintenance()``, which is the only one that replaces the
    /// journal's file.
    func sync() throws {
        let journal = files.withLock { $0.journal }
        guard journal >= 0 else { throw RelayError(.storageFailure, "the store at \(paths.folder) is not open") }
        // The frames overwrite zeros written ahead of them, so the sync writes data and, only when the file grew,
        // its length: half the time of a sync that grows the file on every write.
        try POSIXFile.syncData(journal, path: paths.journal)
        files.withLock { $0.syncs += 1 }
    }

    /// Seals the journal once it outgrew the compaction threshold, or compacts everything when folds beside writes
    /// fell four thresholds behind.
    func performMaintenance() throws {
        let (seal, compactNow) = files.withLock { files in
            guard files.size >= options.compactionThreshold else { return (false, false) }
            guard files.sealedPending else { return (true, false) }
            return (false, files.size >= 4 * options.compactionThreshold)
        }
        if seal { try sealJournal() }
        if compactNow { try compact() }
    }

    /// Sets the full journal aside for ``maintain()`` to fold, and starts the next one.
    ///
    /// The sealed journal is synced first, whatever the policy, so that no later record is durable while an earlier
    /// one is not.
    private func sealJournal() throws {
        let (journal, generation) = files.withLock { ($0.journal, $0.generation) }
        try POSIXFile.sync(journal, path: paths.journal)
        try POSIXFile.rename(paths.journal, to: paths.sealed)
        try POSIXFile.replace(
            paths.journal, with: StoreFormat.emptyJournal(generation: generation + 1), folder: paths.folder)
        POSIXFile.close(journal)
        let fresh = try POSIXFile.open(paths.journal, O_WRONLY)
        let waiters = files.withLock { files in
            files.journal = fresh
            files.generation = generation + 1
            files.size = StoreFormat.headerSize
            files.allocated = StoreFormat.headerSize
            files.sealedPending = true
            return files.foldWaiters.takeAll()
        }
        for waiter in waiters { waiter.resume(returning: true) }
    }

    /// Folds each sealed journal into the snapshot as it comes, beside writes, until the task is cancelled; a fold in
    /// progress then finishes first.
    func maintain() async {
        while !Task.isCancelled {
            let sealed = await Waiters<Bool>.wait(
                cancelled: false,
                park: { id, continuation in
                    files.withLock { files in
                        if files.sealedPending && !files.sealedFoldFailed { return true }
                        return files.foldWaiters.park(id, continuation) ? nil : false
                    }
                },
                cancel: { id in files.withLock { $0.foldWaiters.cancel(id) } },
                forget: { id in files.withLock { $0.foldWaiters.forget(id) } }
            )
            guard sealed else { return }
            let retention = files.withLock { $0.retention }
            let paths = self.paths
            let folded: Bool
            do {
                folded = try await onFolds { () throws -> Bool in try Self.foldSealed(paths, retention: retention) }
            } catch {
                files.withLock { $0.sealedFoldFailed = true }
                continue
            }
            files.withLock { files in
                if folded { files.sealedPending = false }
                files.foldsBesideWrites += 1
            }
        }
    }

    /// Folds the snapshot and the sealed journal into a new snapshot and removes the sealed journal; `false` when a
    /// full compaction took it first.
    private static func foldSealed(_ paths: FileStorage.Paths, retention: RetentionPolicy) throws -> Bool {
        guard POSIXFile.exists(paths.sealed) else { return true }
        let folded = try FileStorage.fold(paths, retention: retention, scope: .sealedOnly)
        try POSIXFile.replace(
            paths.snapshot, with: StoreFormat.snapshot(folded.state, generation: folded.generation),
            folder: paths.folder)
        try POSIXFile.remove(paths.sealed)
        try POSIXFile.syncFolder(paths.folder)
        return true
    }

    /// Folds the snapshot, a sealed journal if one waits, and the journal into a new snapshot, then starts an empty
    /// journal.
    ///
    /// Only the writer that has the log to itself calls it, after writing everything it took, so the files hold
    /// every acknowledged record; it runs on the folds' queue, after a fold beside writes that is in progress, and
    /// blocks the writer until it is done.
    func compact() throws {
        let (journal, generation, retention) = files.withLock { ($0.journal, $0.generation, $0.retention) }
        let paths = self.paths
        let fresh = try folds.sync { () throws -> Int32 in
            try Self.onThreadOfItsOwn { () throws -> Int32 in
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
                try POSIXFile.remove(paths.sealed)
                POSIXFile.close(journal)
                return try POSIXFile.open(paths.journal, O_WRONLY)
            }
        }
        files.withLock { files in
            files.journal = fresh
            files.generation = generation + 1
            files.size = StoreFormat.headerSize
            files.allocated = StoreFormat.headerSize
            files.sealedPending = false
            files.sealedFoldFailed = false
            files.fullCompactions += 1
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
        switch options.fsync.value {
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

    /// Runs blocking file work on the writes' queue and awaits it.
    private func onIO<Value: Sendable>(
        _ work: @escaping @Sendable () throws -> Value
    ) async throws(RelayError) -> Value {
        try await Self.run(work, on: io)
    }

    /// Runs a fold on the folds' queue, after the one in progress, and awaits it.
    private func onFolds<Value: Sendable>(
        _ work: @escaping @Sendable () throws -> Value
    ) async throws(RelayError) -> Value {
        try await Self.run({ try Self.onThreadOfItsOwn(work) }, on: folds)
    }

    /// Runs a fold on a thread that starts for it and ends with it, and waits for it.
    ///
    /// A fold decodes the whole store and frees all of it when done. The allocator serves a new thread from an arena
    /// that the last such thread gave back, which no other work holds on to, so what a fold frees goes back whole. On
    /// the queues' shared threads, each fold left up to its peak resident, in whichever arena its thread had: with
    /// 100,000 finished operations retained, resident memory rose by 60 to 110 MB at each compaction and was not given
    /// back (see EXPERIMENTS.md).
    private static func onThreadOfItsOwn<Value: Sendable>(
        _ work: @escaping @Sendable () throws -> Value
    ) throws -> Value {
        let outcome = Mutex<Result<Value, any Error>>(
            .failure(RelayError(.storageFailure, "the fold's thread did not run")))
        let done = DispatchSemaphore(value: 0)
        Thread {
            let result = Result { try work() }
            outcome.withLock { $0 = result }
            done.signal()
        }.start()
        done.wait()
        return try outcome.withLock { $0 }.get()
    }

    private static func run<Value: Sendable>(
        _ work: @escaping @Sendable () throws -> Value, on queue: DispatchQueue
    ) async throws(RelayError) -> Value {
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<Value, RelayError>, Never>) in
            queue.async {
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
