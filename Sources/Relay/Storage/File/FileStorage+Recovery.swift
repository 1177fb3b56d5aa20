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
    struct Opened: Sendable {
        var state: StoredState
        var lock: Int32
        var journal: Int32
        var generation: UInt64
        var journalSize: Int
        /// The journal file's length: its frames and the zeros after them.
        var journalLength: Int
    }

    /// Folds the files, truncates a torn tail, rewrites a store of an earlier format version in this one, and opens
    /// the journal for writing after its frames.
    static func recover(_ paths: Paths, retention: RetentionPolicy, lock: Int32) throws -> Opened {
        let folded = try fold(paths, retention: retention)
        var generation = folded.generation
        var journalSize = folded.validLength
        var journalLength = folded.journalLength
        let keepsJournal = folded.journalIsLive && !folded.isOutdated && !folded.hasSealed
        if folded.isOutdated || folded.hasSealed {
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
            journalLength = StoreFormat.headerSize
        }
        if folded.hasSealed {
            try POSIXFile.remove(paths.sealed)
            try POSIXFile.syncFolder(paths.folder)
        }
        // Written at the frames' end, over the zeros the journal is filled with ahead of its writes.
        let journal = try POSIXFile.open(paths.journal, O_WRONLY)
        if keepsJournal, folded.tornTail {
            // Cut, so that later frames never sit beside what is left of a torn one.
            journalLength = folded.validLength
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
            journalSize: journalSize,
            journalLength: journalLength
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
