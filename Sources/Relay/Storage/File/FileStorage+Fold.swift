import Foundation

/// Folding: the snapshot, the sealed journal a compaction is folding beside writes, if any, and the journal, into the
/// state a DataPoint rebuilds itself from.
extension FileStorage {
    struct Folded {
        var state: StoredState
        /// The generation the next journal continues from: the last one replayed, or the snapshot's.
        var generation: UInt64
        /// Whether the journal holds transitions the snapshot lacks, and must be kept.
        var journalIsLive: Bool
        /// Whether the live journal ends in a torn or damaged transition, which opening cuts.
        var tornTail: Bool
        /// The journal's length: its frames, anything torn after them, and the zeros it is filled with ahead.
        var journalLength: Int
        /// Where its valid frames end.
        var validLength: Int
        var duplicateTerminals: Int
        /// Whether a file was written by an earlier format version, and the store must be rewritten in this one.
        var isOutdated: Bool
        /// Whether a sealed journal is there, folded in or not: opening folds everything and removes it.
        var hasSealed: Bool
    }

    /// What folding reads: everything, or only what a compaction beside writes folds (the snapshot and the sealed
    /// journal).
    enum FoldScope {
        case everything
        case sealedOnly
    }

    /// Reads the snapshot and the journals and folds them; the files are not changed.
    ///
    /// The generations must agree (see ``StoreFormat``): a journal that is neither the next after what precedes it nor
    /// one folded already, a journal that follows a snapshot that is missing, and a snapshot whose journal is missing
    /// are damage, reported as ``RelayError/Code/corruptStore``, never read as an empty store.
    static func fold(_ paths: Paths, retention: RetentionPolicy?, scope: FoldScope = .everything) throws -> Folded {
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
        var versions = [snapshotHeader?.version].compactMap { $0 }
        var folded = snapshotHeader?.generation ?? 0

        let hasSealed = POSIXFile.exists(paths.sealed)
        if hasSealed {
            let sealed = try replayJournal(
                at: paths.sealed, file: "sealed journal", after: folded, foldedIfOlder: true, into: &replay)
            versions.append(sealed.header.version)
            if sealed.isLive {
                // A sealed journal was synced whole before it was set aside: a short one is damage.
                guard sealed.validLength == sealed.writtenEnd else {
                    throw RelayError(.corruptStore, "the sealed journal is cut short", offset: sealed.validLength)
                }
                folded = sealed.header.generation
                report.recordsReplayed += sealed.records
            }
        }

        var journalIsLive = false
        var tornTail = false
        var journalLength = 0
        var validLength = 0
        if scope == .everything, POSIXFile.exists(paths.journal) {
            let journal = try replayJournal(
                at: paths.journal, file: "journal", after: folded, foldedIfOlder: false, into: &replay)
            versions.append(journal.header.version)
            journalLength = journal.length
            validLength = journal.isLive ? journal.validLength : journal.length
            if journal.isLive {
                journalIsLive = true
                folded = journal.header.generation
                report.recordsReplayed += journal.records
                if journal.writtenEnd > journal.validLength {
                    tornTail = true
                    report.tornTailOffset = validLength
                    report.truncatedBytes = journal.writtenEnd - validLength
                    report.tailWasDamaged = journal.damagedTail
                }
            }
        } else if scope == .everything, snapshotHeader != nil, !hasSealed {
            // Without a sealed journal, only a compaction that set one aside can have left no journal behind.
            throw RelayError(.corruptStore, "the journal is missing beside the snapshot")
        }
        report.interruptedOperations = replay.interruptedCount
        let duplicateTerminals = replay.duplicateTerminals
        var state = replay.state()
        report.operationsRecovered = state.operations.count
        state.recovery = report
        return Folded(
            state: state,
            generation: folded,
            journalIsLive: journalIsLive,
            tornTail: tornTail,
            journalLength: journalLength,
            validLength: validLength,
            duplicateTerminals: duplicateTerminals,
            isOutdated: versions.contains { $0 < StoreFormat.version },
            hasSealed: hasSealed
        )
    }

    private struct Replayed {
        var header: StoreFormat.Header
        var isLive: Bool
        var length: Int
        var validLength: Int
        var writtenEnd: Int
        var records: Int
        var damagedTail = false
    }

    /// Replays a journal whose generation follows `folded`.
    ///
    /// One whose generation is `folded` (or, with `foldedIfOlder`, earlier) was folded in already and is skipped. Any
    /// other generation is damage.
    private static func replayJournal(
        at path: String, file: String, after folded: UInt64, foldedIfOlder: Bool,
        into replay: inout StoredState.Replay
    ) throws -> Replayed {
        let data = try read(path)
        let header = try data.withUnsafeBytes { (bytes) throws in
            try StoreFormat.readHeader(bytes, magic: StoreFormat.journalMagic, file: file)
        }
        var replayed = Replayed(
            header: header, isLive: false, length: data.count, validLength: data.count, writtenEnd: data.count,
            records: 0)
        switch header.generation {
        case folded + 1:
            replayed.isLive = true
        case folded where folded > 0, ..<folded where foldedIfOlder:
            // Folded in just before a crash.
            return replayed
        default:
            let expected = folded == 0 ? "1, since nothing precedes it" : "\(folded) or \(folded + 1)"
            throw RelayError(
                .corruptStore, "\(file) has generation \(header.generation) where \(expected) is due", offset: 8)
        }
        let walked = try data.withUnsafeBytes { (bytes) throws in
            try StoreFormat.readJournal(bytes, header: header, file: file) { records in
                for record in records { replay.apply(record) }
            }
        }
        replayed.validLength = walked.validLength
        replayed.writtenEnd = walked.writtenEnd
        replayed.records = walked.records
        replayed.damagedTail = walked.damagedTail
        return replayed
    }
}
