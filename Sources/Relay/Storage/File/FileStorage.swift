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

    let state = Mutex(State())
    // Blocking file I/O runs here, off the cooperative thread pool.
    let io = DispatchQueue(label: "Relay.FileStorage")
    let paths: Paths
    let clock: ClockSource

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

    /// Runs blocking file work on the store's queue and awaits it.
    func onIO<Value: Sendable>(
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

    struct Waiter {
        let position: UInt64?
        let continuation: CheckedContinuation<Bool, any Error>
    }

    struct Round {
        let bytes: [UInt8]
        let target: UInt64
        let journal: Int32
        let sync: Bool
    }

    enum Phase {
        case unopened, open, closed
    }

    struct State {
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
