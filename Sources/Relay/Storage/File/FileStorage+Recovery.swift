import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Recovery and compaction: folding the snapshot and the journal into the state a DataPoint rebuilds itself from.
extension FileStorage {
    struct Folded {
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
    static func fold(_ paths: Paths, retention: RetentionPolicy?) throws -> Folded {
        var replay = StoredState.Replay(retention: retention)
        var snapshotHeader: StoreFormat.Header?
        if POSIXFile.exists(paths.snapshot) {
            let data = try read(paths.snapshot)
            let snapshot = try data.withUnsafeBytes { (bytes) throws in
                try StoreFormat.readSnapshot(bytes, file: "snapshot")
            }
            replay = StoredState.Replay(from: snapshot.state, retention: retention)
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
                        for record in records { replay.apply(record) }
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
        report.interruptedOperations = replay.interruptedCount
        let duplicateTerminals = replay.duplicateTerminals
        var state = replay.state()
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

    struct Opened: Sendable {
        var state: StoredState
        var lock: Int32
        var journal: Int32
        var generation: UInt64
        var journalSize: Int
    }

    /// Folds the files, truncates a torn tail, rewrites a store of an earlier format version in this one, and opens
    /// the journal for appending.
    static func recover(_ paths: Paths, retention: RetentionPolicy, lock: Int32) throws -> Opened {
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

    static func read(_ path: String) throws -> Data {
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)
        } catch {
            throw RelayError(.storageFailure, "cannot read \(path): \(error)")
        }
    }
}
