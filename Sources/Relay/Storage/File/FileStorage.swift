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
/// (group commit). When the journal grows past ``Options/compactionThreshold``, it is sealed and a new one starts; a
/// running DataPoint folds the snapshot and the sealed journal into a new snapshot beside the writes that go on (see
/// ``maintain()``), so acknowledgements never wait for a fold. When the store closes, everything is folded, and the
/// journal starts over.
///
/// Opening the folder again rebuilds the pipeline: operations that were running become pending with the interrupted
/// attempt counted, and run again. A torn last record is truncated and reported in ``recoveryReport``; damage
/// anywhere else is a ``RelayError/Code/corruptStore`` error. One DataPoint at a time may hold a folder.
///
/// ```swift
/// let point = try await DataPoint(storage: .file(at: folder))
/// ```
public final class FileStorage: Storage {
    /// The folder that holds the store.
    public let folder: URL
    /// How the store makes transitions durable.
    public let options: Options

    let journal: Journal
    let commits: GroupCommit<Journal>
    private let state = Mutex(State())

    private struct State {
        var opened = false
        var released = false
        var report: RecoveryReport?
    }

    /// The folder `.relay` in the current directory: where a ``DataPoint`` keeps its state unless told otherwise.
    public static var defaultFolder: URL {
        URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(".relay")
    }

    /// Creates a store in `folder`; nothing touches the disk until the DataPoint opens it.
    ///
    /// - Parameters:
    ///   - folder: The folder; it is created with mode 0700 if missing, with any missing parent folders.
    ///   - options: The fsync policy, retention and compaction threshold.
    ///   - clock: The clock that paces ``FsyncPolicy/interval(_:)``; pass the DataPoint's, so that tests drive both.
    public init(at folder: URL, options: Options = Options(), clock: some Clock<Duration> = ContinuousClock()) {
        self.folder = folder
        self.options = options
        journal = Journal(paths: Paths(folder: folder.path), options: options, clock: ClockSource(clock))
        commits = GroupCommit(writer: journal, empty: [])
    }

    /// How many times the journal was synced since the store opened; group commit keeps it well below the number of
    /// transitions.
    package var syncCount: Int {
        journal.syncCount
    }

    /// How many times the store folded its journal into a new snapshot since it opened: beside writes (see
    /// ``maintain()``), or by a write or the close when none was running.
    public var compactionCount: Int {
        journal.compactions
    }

    /// How many journals were folded beside writes since the store opened (see ``maintain()``).
    package var foldsBesideWrites: Int {
        journal.foldsBesideWrites
    }

    /// What the store found and repaired when it last opened; `nil` before it opens.
    public var recoveryReport: RecoveryReport? {
        state.withLock { $0.report }
    }

    // MARK: - Storage

    /// Takes the folder's lock, replays the snapshot and journal, truncates a torn last record, and returns the
    /// state to rebuild from.
    ///
    /// A store opens once; to open the folder again, create another store.
    ///
    /// - Returns: The stored state, with its ``StoredState/recovery`` report.
    /// - Throws: ``RelayError`` with ``RelayError/Code/storeLocked`` when another DataPoint holds the folder,
    ///   ``RelayError/Code/corruptStore`` or ``RelayError/Code/unsupportedFormat`` for a damaged or newer store, and
    ///   ``RelayError/Code/storageFailure`` when the files cannot be read or written, or the store was opened before.
    public func open() async throws -> StoredState {
        try await open(retention: RetentionPolicy())
    }

    /// Opens the store, keeping finished operations for `retention`, the DataPoint's window: through the recovery
    /// that opening is, and through every compaction after it.
    ///
    /// - Parameter retention: How long finished operations stay in the store once they end.
    /// - Returns: The stored state, with its ``StoredState/recovery`` report.
    /// - Throws: The errors of ``open()``.
    public func open(retention: RetentionPolicy) async throws -> StoredState {
        let first = state.withLock { state in
            defer { state.opened = true }
            return !state.opened
        }
        guard first else {
            throw RelayError(
                .storageFailure, "the store at \(folder.path) was opened before; create another to reopen it")
        }
        let stored = try await journal.open(retention: retention)
        state.withLock { $0.report = stored.recovery }
        return stored
    }

    /// Encodes the records into the next write; called under the pipeline's lock, so it never blocks on I/O.
    ///
    /// - Parameter records: The transitions, oldest first.
    /// - Returns: The ticket of the last record.
    public func append(_ records: [StorageRecord]) -> StorageTicket {
        // Encoded by the journal as it writes, outside the pipeline's lock.
        commits.append(transitions: records.count) { $0.append(records) }
    }

    /// Returns once the records up to `ticket` are written and, under ``FsyncPolicy/always``, synced.
    ///
    /// One write at a time takes everything appended so far; transitions that arrive while it is in flight share the
    /// next one (see ``GroupCommit``).
    ///
    /// - Parameter ticket: A ticket from ``append(_:)``.
    /// - Throws: ``RelayError`` with ``RelayError/Code/storageFailure`` when the write or sync fails, or the store
    ///   is closed.
    public func waitUntilDurable(_ ticket: StorageTicket) async throws {
        try await commits.waitUntilDurable(ticket)
    }

    /// Folds each journal that a write set aside once it outgrew ``Options/compactionThreshold`` into a new snapshot,
    /// beside new writes, until the task is cancelled; the running DataPoint runs it.
    public func maintain() async {
        await journal.maintain()
    }

    /// Writes what remains, folds the journal into a new snapshot when it holds records, and releases the folder.
    ///
    /// - Throws: ``RelayError`` when the final write or compaction fails; the folder is released either way.
    public func close() async throws {
        defer { release(failure: RelayError(.storageFailure, "the store at \(folder.path) is closed")) }
        guard state.withLock({ $0.opened && !$0.released }) else { return }
        try await commits.waitUntilDurable(commits.lastTicket)
        // A journal with no records adds nothing to the snapshot, and rewriting a large one only makes closing slow.
        guard journal.holdsRecords else { return }
        try await commits.exclusively { [journal] in try journal.compact() }
    }

    /// Drops the store as a crash would: nothing more is written, waiters fail, and the folder is released.
    ///
    /// What was acknowledged stays on disk; what was appended and not yet written is lost, as in a real crash.
    package func abandon() {
        release(failure: RelayError(.storageFailure, "the store at \(folder.path) was abandoned"))
    }

    /// Reads the state a store's folder holds, read-only: it takes no lock and changes no file, so it can read a
    /// store that a running DataPoint holds, for example to list what is queued.
    ///
    /// It sees what was written when it reads: transitions acknowledged after that are not there. A torn last
    /// frame is ignored and left in place, as the next open would truncate it; the recovery report says where it
    /// starts. A store of an earlier format version is read as it is, not rewritten. A compaction that replaces the
    /// files while it reads them makes it read them again.
    ///
    /// - Parameters:
    ///   - folder: The store's folder.
    ///   - retention: How long finished operations are kept, as the DataPoint's configuration says; `nil` keeps them
    ///     all.
    /// - Returns: The stored state, with its ``StoredState/recovery`` report.
    /// - Throws: ``RelayError`` with ``RelayError/Code/corruptStore`` or ``RelayError/Code/unsupportedFormat`` for a
    ///   damaged or newer store, and ``RelayError/Code/storageFailure`` when the files cannot be read.
    public static func read(at folder: URL, retention: Duration? = nil) throws -> StoredState {
        let paths = Paths(folder: folder.path)
        for _ in 1..<3 {
            // The generations disagree only for a reader that read one file before a compaction and one after.
            if let folded = try? fold(paths, retention: retention.map(RetentionPolicy.window)) { return folded.state }
        }
        return try fold(paths, retention: retention.map(RetentionPolicy.window)).state
    }

    /// Reads a store's folder without opening it or changing it: the state it holds, and how many terminal records
    /// repeat one already recorded (zero in a sound store).
    package static func inspect(at folder: URL) throws -> (state: StoredState, duplicateTerminals: Int) {
        let folded = try fold(Paths(folder: folder.path), retention: nil)
        return (folded.state, folded.duplicateTerminals)
    }

    /// Stops the store: no more writes, waiters fail, and the files close once no write is in flight.
    private func release(failure: RelayError) {
        state.withLock { $0.released = true }
        let journal = self.journal
        commits.close(failure: failure) { journal.closeFiles() }
    }
}

extension FileStorage {
    struct Paths: Sendable {
        let folder: String
        var journal: String { folder + "/journal" }
        /// A journal set aside by a compaction that folds it beside new writes.
        var sealed: String { folder + "/journal.sealed" }
        var snapshot: String { folder + "/snapshot" }
        var lock: String { folder + "/lock" }
    }
}

extension Storage where Self == FileStorage {
    /// A store in a folder on disk; see ``FileStorage``.
    ///
    /// - Parameters:
    ///   - folder: The folder; created with mode 0700 if missing, with any missing parent folders.
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
