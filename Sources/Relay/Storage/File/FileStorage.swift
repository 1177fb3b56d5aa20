import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A store in a folder on disk, and the default store of a ``DataPoint``.
///
/// It keeps an append-only journal of transitions and compacts it into snapshots.
///
/// Every transition is a checksummed record in the journal. Under the default ``FsyncPolicy/always`` policy nothing
/// is acknowledged before it is on disk, and transitions that arrive while one `fsync` is in flight share the next
/// (group commit). When the journal grows past ``Options/compactionThreshold``, and when the store closes, the state
/// is folded into a new snapshot that replaces the old one atomically, and the journal starts over.
///
/// Opening the folder again rebuilds the pipeline: operations that were running become pending with the interrupted
/// attempt counted, and run again. A torn last record is truncated and reported in ``recoveryReport``; damage
/// anywhere else is a ``RelayError/Code/corruptStore`` error. One DataPoint at a time may hold a folder.
///
/// ```swift
/// let point = try await DataPoint(storage: .file(at: URL(fileURLWithPath: "/var/lib/my-service/relay")))
/// ```
public final class FileStorage: Storage {
    /// The folder that holds the store.
    public let folder: URL
    /// How the store makes transitions durable.
    public let options: Options

    private let state = Mutex(State())
    // Blocking file I/O runs here, off the cooperative thread pool.
    private let io = DispatchQueue(label: "Relay.FileStorage")
    private let paths: Paths
    private let clock: ClockSource

    /// The folder `.relay` in the current directory: where a ``DataPoint`` keeps its state unless told otherwise.
    public static var defaultFolder: URL {
        URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(".relay")
    }

    /// Creates a store in `folder`; nothing touches the disk until the DataPoint opens it.
    ///
    /// - Parameters:
    ///   - folder: The folder; it is created with mode 0700 if missing.
    ///   - options: The fsync policy, retention and compaction threshold.
    ///   - clock: The clock that paces ``FsyncPolicy/interval(_:)``; pass the DataPoint's, so that tests drive both.
    public init(at folder: URL, options: Options = Options(), clock: some Clock<Duration> = ContinuousClock()) {
        self.folder = folder
        self.options = options
        self.clock = ClockSource(clock)
        paths = Paths(folder: folder.path)
    }

    deinit {
        state.withLock { state in
            for fd in [state.journal, state.lock] where fd >= 0 { POSIXFile.close(fd) }
        }
    }

    /// How many times the journal was synced since the store opened; group commit keeps it well below the number of
    /// transitions.
    package var syncCount: Int {
        state.withLock { $0.syncs }
    }

    /// What the store found and repaired when it last opened; `nil` before it opens.
    public var recoveryReport: RecoveryReport? {
        state.withLock { $0.report }
    }

    // MARK: - Storage

    /// Takes the folder's lock, replays the snapshot and journal, truncates a torn last record, and returns the
    /// state to rebuild from.
    ///
    /// - Returns: The stored state, with its ``StoredState/recovery`` report.
    /// - Throws: ``RelayError`` with ``RelayError/Code/storeLocked`` when another DataPoint holds the folder,
    ///   ``RelayError/Code/corruptStore`` or ``RelayError/Code/unsupportedFormat`` for a damaged or newer store, and
    ///   ``RelayError/Code/storageFailure`` when the files cannot be read or written.
    public func open() async throws -> StoredState {
        let paths = self.paths
        let retention = options.retention
        let opened = try await onIO { () throws -> Opened in
            try POSIXFile.makeFolder(paths.folder)
            let lock = try POSIXFile.lock(paths.lock)
            do {
                return try Self.recover(paths, retention: retention, lock: lock)
            } catch {
                POSIXFile.close(lock)
                throw error
            }
        }
        state.withLock { state in
            state.phase = .open
            state.lock = opened.lock
            state.journal = opened.journal
            state.generation = opened.generation
            state.journalSize = opened.journalSize
            state.report = opened.state.recovery
        }
        return opened.state
    }

    /// Encodes the records into the next write; called under the pipeline's lock, so it never blocks on I/O.
    ///
    /// - Parameter records: The transitions, oldest first.
    /// - Returns: The ticket of the last record.
    public func append(_ records: [StorageRecord]) -> StorageTicket {
        state.withLock { state in
            guard state.phase == .open else { return StorageTicket(position: state.appended) }
            // One frame per transition: a torn tail keeps all of it or none of it.
            StoreFormat.appendFrame(records, to: &state.pending)
            state.appended += UInt64(records.count)
            return StorageTicket(position: state.appended)
        }
    }

    /// Returns once the records up to `ticket` are written and, under ``FsyncPolicy/always``, synced.
    ///
    /// The first caller to find no write in flight writes everything appended so far; callers that arrive
    /// meanwhile wait and share the next write.
    ///
    /// - Parameter ticket: A ticket from ``append(_:)``.
    /// - Throws: ``RelayError`` with ``RelayError/Code/storageFailure`` when the write or sync fails, or the store
    ///   is closed.
    public func waitUntilDurable(_ ticket: StorageTicket) async throws {
        while true {
            let role = state.withLock { state -> Role in
                if state.durable >= ticket.position { return .done }
                if let failure = state.failure { return .failed(failure) }
                if state.flushing { return .follow }
                state.flushing = true
                return .lead
            }
            switch role {
            case .done: return
            case .failed(let failure): throw failure
            case .lead: try await leadOneRound()
            case .follow: if try await follow(until: ticket.position) { try await leadOneRound() }
            }
        }
    }

    /// Writes what remains, folds the journal into a new snapshot when it holds records, and releases the folder.
    ///
    /// - Throws: ``RelayError`` when the final write or compaction fails; the folder is released either way.
    public func close() async throws {
        defer { release(failure: RelayError(.storageFailure, "the store at \(paths.folder) is closed")) }
        guard state.withLock({ $0.phase == .open }) else { return }
        try await waitUntilDurable(StorageTicket(position: state.withLock { $0.appended }))
        // A journal with no records adds nothing to the snapshot, and rewriting a large one only makes closing slow.
        guard state.withLock({ $0.journalSize > StoreFormat.headerSize }) else { return }
        try await lead { try await self.compact() }
    }

    /// Drops the store as a crash would: nothing more is written, waiters fail, and the folder is released.
    ///
    /// What was acknowledged stays on disk; what was appended and not yet written is lost, as in a real crash.
    package func abandon() {
        release(failure: RelayError(.storageFailure, "the store at \(paths.folder) was abandoned"))
    }

    /// Reads a store's folder without opening it or changing it: the state it holds, and how many terminal records
    /// repeat one already recorded (zero in a sound store).
    package static func inspect(at folder: URL) throws -> (state: StoredState, duplicateTerminals: Int) {
        let folded = try fold(Paths(folder: folder.path), retention: .seconds(Int64.max / 4))
        return (folded.state, folded.duplicateTerminals)
    }

    // MARK: - Group commit

    private enum Role {
        case done, lead, follow
        case failed(RelayError)
    }

    /// Waits as a follower; `true` when handed the lead.
    private func follow(until position: UInt64?) async throws -> Bool {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Bool, any Error>) in
            let immediate = state.withLock { state -> Result<Bool, RelayError>? in
                if let position, state.durable >= position { return .success(false) }
                if let failure = state.failure { return .failure(failure) }
                if !state.flushing {
                    state.flushing = true
                    return .success(true)
                }
                state.waiters.append(Waiter(position: position, continuation: continuation))
                return nil
            }
            if let immediate { continuation.resume(with: immediate) }
        }
    }

    /// Runs `body` as the only writer, then passes the lead on.
    private func lead(_ body: () async throws -> Void) async throws {
        let leading = state.withLock { state in
            if state.flushing { return false }
            state.flushing = true
            return true
        }
        if !leading, !(try await follow(until: nil)) { return }
        do {
            try await body()
        } catch {
            fail(error)
            throw error
        }
        handOff()
    }

    /// Writes everything appended so far in one write and, as the policy says, one sync.
    private func leadOneRound() async throws {
        let round = state.withLock { state -> Round in
            guard state.phase == .open else {
                return Round(bytes: [], target: state.durable, journal: -1, sync: false)
            }
            let bytes = state.pending.bytes
            state.pending.bytes.removeAll(keepingCapacity: true)
            return Round(bytes: bytes, target: state.appended, journal: state.journal, sync: shouldSync(&state))
        }
        do {
            let path = paths.journal
            if round.journal < 0 {
                throw state.withLock { $0.failure } ?? RelayError(.storageFailure, "the store is not open")
            }
            if !round.bytes.isEmpty || round.sync {
                try await onIO { () throws in
                    try round.bytes.withUnsafeBytes { (buffer) throws in
                        try POSIXFile.writeAll(round.journal, buffer, path: path)
                    }
                    if round.sync { try POSIXFile.sync(round.journal, path: path) }
                }
            }
            let compactNow = state.withLock { state in
                state.durable = max(state.durable, round.target)
                if round.sync { state.syncs += 1 }
                state.journalSize += round.bytes.count
                return state.journalSize >= options.compactionThreshold
            }
            if compactNow { try await compact() }
        } catch {
            fail(error)
            throw error
        }
        handOff()
    }

    private func shouldSync(_ state: inout State) -> Bool {
        switch options.fsync {
        case .always:
            return true
        case .never:
            return false
        case .interval(let interval):
            let now = clock.now
            guard let last = state.lastSync, now - last < interval.relayNanoseconds else {
                state.lastSync = now
                return true
            }
            return false
        }
    }

    /// Resumes the waiters that are durable now and hands the lead to the first one that is not.
    private func handOff() {
        let (done, next, descriptors) = state.withLock { state -> ([Waiter], Waiter?, [Int32]) in
            var done: [Waiter] = []
            var remaining: [Waiter] = []
            for waiter in state.waiters {
                if let position = waiter.position, position <= state.durable {
                    done.append(waiter)
                } else {
                    remaining.append(waiter)
                }
            }
            let next = remaining.isEmpty ? nil : remaining.removeFirst()
            state.waiters = remaining
            if next == nil { state.flushing = false }
            return (done, next, state.takeDescriptorsIfReleased())
        }
        for fd in descriptors { POSIXFile.close(fd) }
        for waiter in done { waiter.continuation.resume(returning: false) }
        next?.continuation.resume(returning: true)
    }

    private func fail(_ error: any Error) {
        let failure = error as? RelayError ?? RelayError(.storageFailure, "the store failed: \(error)")
        let (waiters, descriptors) = state.withLock { state in
            state.failure = state.failure ?? failure
            state.flushing = false
            defer { state.waiters = [] }
            return (state.waiters, state.takeDescriptorsIfReleased())
        }
        for fd in descriptors { POSIXFile.close(fd) }
        for waiter in waiters { waiter.continuation.resume(throwing: failure) }
    }

    /// Stops the store: no more writes, waiters fail, and the files close once no write is in flight.
    private func release(failure: RelayError) {
        let (waiters, descriptors) = state.withLock { state -> ([Waiter], [Int32]) in
            state.phase = .closed
            state.failure = state.failure ?? failure
            state.pending.bytes = []
            let waiters = state.waiters
            state.waiters = []
            // A leader mid-write still uses the files; it closes them when its round ends.
            return (waiters, state.flushing ? [] : state.takeDescriptorsIfReleased())
        }
        for fd in descriptors { POSIXFile.close(fd) }
        for waiter in waiters { waiter.continuation.resume(throwing: failure) }
    }

    // MARK: - Compaction and recovery

    /// Folds the snapshot and the journal on disk into a new snapshot, then starts an empty journal.
    ///
    /// Only the leader calls it, after writing everything it took, so the files hold every acknowledged record.
    private func compact() async throws {
        let (journal, generation) = state.withLock { ($0.journal, $0.generation) }
        let paths = self.paths
        let retention = options.retention
        let fresh = try await onIO { () throws -> Int32 in
            let folded = try Self.fold(paths, retention: retention)
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
        state.withLock { state in
            state.journal = fresh
            state.generation = generation + 1
            state.journalSize = StoreFormat.headerSize
        }
    }

    private struct Folded {
        var state: StoredState
        /// The generation the next journal continues from: the snapshot's, or the journal's when it was replayed.
        var generation: UInt64
        /// Whether the journal holds transitions the snapshot lacks, and must be kept.
        var journalIsLive: Bool
        var journalLength: Int
        var validLength: Int
        var duplicateTerminals: Int
        /// Whether a file was written by an earlier format version, and the store must be rewritten in this one.
        var isOutdated: Bool
    }

    /// Reads the snapshot and the journal and folds them; the files are not changed.
    ///
    /// The two files' generations must agree (see ``StoreFormat``): a journal that is neither the snapshot's next nor
    /// the one it folded, a journal that follows a snapshot that is missing, and a snapshot whose journal is missing are
    /// damage, reported as ``RelayError/Code/corruptStore``, never read as an empty store.
    private static func fold(_ paths: Paths, retention: Duration) throws -> Folded {
        var builder = StoredStateBuilder()
        var snapshotHeader: StoreFormat.Header?
        if POSIXFile.exists(paths.snapshot) {
            let data = try read(paths.snapshot)
            let snapshot = try data.withUnsafeBytes { (bytes) throws in
                try StoreFormat.readSnapshot(bytes, file: "snapshot")
            }
            builder = StoredStateBuilder(snapshot.state)
            snapshotHeader = snapshot.header
        }
        var report = RecoveryReport()
        var journalHeader: StoreFormat.Header?
        var journalIsLive = false
        var journalLength = 0
        var validLength = 0
        if POSIXFile.exists(paths.journal) {
            let data = try read(paths.journal)
            journalLength = data.count
            let header = try data.withUnsafeBytes { (bytes) throws in
                try StoreFormat.readHeader(bytes, magic: StoreFormat.journalMagic, file: "journal")
            }
            journalHeader = header
            validLength = journalLength
            let folded = snapshotHeader?.generation ?? 0
            switch header.generation {
            case folded + 1:
                journalIsLive = true
            case folded where snapshotHeader != nil:
                // Folded into the snapshot just before a crash.
                break
            default:
                let expected = snapshotHeader == nil ? "1, since there is no snapshot" : "\(folded) or \(folded + 1)"
                throw RelayError(
                    .corruptStore,
                    "journal has generation \(header.generation) where the snapshot calls for \(expected)",
                    offset: 8
                )
            }
            if journalIsLive {
                let walked = try data.withUnsafeBytes { (bytes) throws in
                    try StoreFormat.readJournal(bytes, header: header, file: "journal") { records in
                        for record in records { builder.apply(record) }
                    }
                }
                validLength = walked.validLength
                report.recordsReplayed = walked.records
                if validLength < journalLength {
                    report.tornTailOffset = validLength
                    report.truncatedBytes = journalLength - validLength
                }
            }
        } else if snapshotHeader != nil {
            throw RelayError(.corruptStore, "the journal is missing beside the snapshot")
        }
        let cutoff = builder.latestDate.map { $0.addingTimeInterval(-retention.relaySeconds) }
        report.interruptedOperations = builder.interruptedCount
        let duplicateTerminals = builder.duplicateTerminals
        var state = builder.build(forgettingFinishedBefore: cutoff)
        report.operationsRecovered = state.operations.count
        state.recovery = report
        let versions = [snapshotHeader?.version, journalHeader?.version].compactMap { $0 }
        return Folded(
            state: state,
            generation: journalIsLive ? journalHeader!.generation : snapshotHeader?.generation ?? 0,
            journalIsLive: journalIsLive,
            journalLength: journalLength,
            validLength: validLength,
            duplicateTerminals: duplicateTerminals,
            isOutdated: versions.contains { $0 < StoreFormat.version }
        )
    }

    private struct Opened: Sendable {
        var state: StoredState
        var lock: Int32
        var journal: Int32
        var generation: UInt64
        var journalSize: Int
    }

    /// Folds the files, truncates a torn tail, rewrites a store of an earlier format version in this one, and opens
    /// the journal for appending.
    private static func recover(_ paths: Paths, retention: Duration, lock: Int32) throws -> Opened {
        let folded = try fold(paths, retention: retention)
        var generation = folded.generation
        var journalSize = folded.validLength
        let keepsJournal = folded.journalIsLive && !folded.isOutdated
        if folded.isOutdated {
            // Fold everything into a snapshot of this version, as a compaction would, and start a journal after it.
            try POSIXFile.replace(
                paths.snapshot,
                with: StoreFormat.snapshot(folded.state, generation: generation),
                folder: paths.folder
            )
        }
        if !keepsJournal {
            generation += 1
            try POSIXFile.replace(
                paths.journal,
                with: StoreFormat.emptyJournal(generation: generation),
                folder: paths.folder
            )
            journalSize = StoreFormat.headerSize
        }
        let journal = try POSIXFile.open(paths.journal, O_WRONLY | O_APPEND)
        if keepsJournal, folded.validLength < folded.journalLength {
            do {
                try POSIXFile.truncate(journal, to: folded.validLength, path: paths.journal)
                try POSIXFile.sync(journal, path: paths.journal)
            } catch {
                POSIXFile.close(journal)
                throw error
            }
        }
        return Opened(
            state: folded.state,
            lock: lock,
            journal: journal,
            generation: generation,
            journalSize: journalSize
        )
    }

    private static func read(_ path: String) throws -> Data {
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)
        } catch {
            throw RelayError(.storageFailure, "cannot read \(path): \(error)")
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

extension FileStorage {
    struct Paths: Sendable {
        let folder: String
        var journal: String { folder + "/journal" }
        var snapshot: String { folder + "/snapshot" }
        var lock: String { folder + "/lock" }
    }

    private struct Waiter {
        let position: UInt64?
        let continuation: CheckedContinuation<Bool, any Error>
    }

    private struct Round {
        let bytes: [UInt8]
        let target: UInt64
        let journal: Int32
        let sync: Bool
    }

    private enum Phase {
        case unopened, open, closed
    }

    private struct State {
        var phase = Phase.unopened
        var lock: Int32 = -1
        var journal: Int32 = -1
        var generation: UInt64 = 0
        var journalSize = 0
        var pending = ByteWriter()
        var appended: UInt64 = 0
        var durable: UInt64 = 0
        var flushing = false
        var waiters: [Waiter] = []
        var failure: RelayError?
        var lastSync: Int64?
        var syncs = 0
        var report: RecoveryReport?

        /// The open descriptors of a released store, for the one who closes them.
        mutating func takeDescriptorsIfReleased() -> [Int32] {
            guard phase == .closed else { return [] }
            defer {
                journal = -1
                lock = -1
            }
            return [journal, lock].filter { $0 >= 0 }
        }
    }
}

extension Storage where Self == FileStorage {
    /// A store in a folder on disk; see ``FileStorage``.
    ///
    /// - Parameters:
    ///   - folder: The folder; created with mode 0700 if missing.
    ///   - options: The fsync policy, retention and compaction threshold.
    ///   - clock: The clock that paces ``FileStorage/FsyncPolicy/interval(_:)``.
    /// - Returns: The store, opened when a DataPoint opens it.
    public static func file(
        at folder: URL,
        options: FileStorage.Options = FileStorage.Options(),
        clock: some Clock<Duration> = ContinuousClock()
    ) -> FileStorage {
        FileStorage(at: folder, options: options, clock: clock)
    }
}
