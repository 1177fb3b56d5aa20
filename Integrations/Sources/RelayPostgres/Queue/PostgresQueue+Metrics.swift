import Foundation
import PostgresNIO
import Relay

extension PostgresQueue {
    /// The whole fleet's metrics, as the database holds them: counts per sequence and state (finished operations
    /// while the fleet keeps them), what runs, and the percentiles of the `window` operations that finished last;
    /// a window of 0 reads counts alone.
    func metrics(window: Int) async throws -> MetricsSnapshot {
        guard window >= 0 else {
            throw RelayError(.invalidArgument, "the percentiles cover 0 operations or more; the window was \(window)")
        }
        return try await Self.mapping("reading the fleet's metrics") {
            let found = try await read(
                "reading the fleet's metrics", "SELECT to_regclass('relay_operations') IS NOT NULL")
            guard try found.first?.decode(Bool.self) == true else {
                return MetricsSnapshot(sequences: [:], running: 0, queueWait: .empty, runTime: .empty)
            }
            var sequences: [CallSequence.Name: MetricsSnapshot.Counts] = [:]
            for name in try await read("reading the fleet's sequences", "SELECT name FROM relay_sequences") {
                sequences[CallSequence.Name(rawValue: try name.decode(String.self))] = MetricsSnapshot.Counts()
            }
            for row in try await read(
                "counting the fleet's operations",
                """
                SELECT o.sequence, o.state, o.state = 1 AND d.destination IS NOT NULL, count(*)
                FROM relay_operations o LEFT JOIN relay_destinations d ON d.destination = o.destination
                GROUP BY 1, 2, 3
                """)
            {
                let (name, state, offline, count) = try row.decode((String, Int16, Bool, Int64).self)
                guard let phase = PostgresOperationState(rawValue: state) else {
                    throw RelayError(.corruptStore, "\(count) operations have state \(state), which no Relay writes")
                }
                sequences[CallSequence.Name(rawValue: name), default: MetricsSnapshot.Counts()].add(
                    Int(count), phase.queryState, offline: offline)
            }
            let total = sequences.values.reduce(0) { $0 + $1.running }
            guard window > 0 else {
                return MetricsSnapshot(sequences: sequences, running: total, queueWait: .empty, runTime: .empty)
            }
            let recent = try await read(
                "reading the fleet's latencies",
                """
                WITH recent AS (
                    SELECT extract(epoch FROM started_at - enqueued_at)::double precision AS wait, run_time
                    FROM relay_operations WHERE state >= 3 ORDER BY finished_at DESC LIMIT \(window)
                )
                SELECT
                    percentile_disc(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY wait) FILTER (WHERE wait IS NOT NULL),
                    count(wait),
                    percentile_disc(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY run_time)
                        FILTER (WHERE run_time IS NOT NULL),
                    count(run_time)
                FROM recent
                """)
            guard let row = recent.first else {
                throw RelayError(.storageFailure, "the database answered no latencies for the fleet's metrics")
            }
            let (waits, waitCount, runTimes, runCount) = try row.decode(([Double]?, Int64, [Int64]?, Int64).self)
            return MetricsSnapshot(
                sequences: sequences, running: total,
                queueWait: Self.percentiles(waits?.map { Duration.seconds($0) }, samples: waitCount),
                runTime: Self.percentiles(runTimes?.map { Duration.nanoseconds($0) }, samples: runCount))
        }
    }

    private static func percentiles(_ values: [Duration]?, samples: Int64) -> MetricsSnapshot.Percentiles {
        guard let values, values.count == 3, samples > 0 else { return .empty }
        return MetricsSnapshot.Percentiles(p50: values[0], p90: values[1], p99: values[2], samples: Int(samples))
    }
}

extension MetricsSnapshot.Counts {
    /// Adds `count` operations in `state`, of which `offline` wait for an offline destination.
    fileprivate mutating func add(_ count: Int, _ state: OperationQuery.State, offline: Bool) {
        switch state {
        case .pending:
            pending += count
            if offline { self.offline += count }
        case .running: running += count
        case .completed: completed += count
        case .skipped: skipped += count
        case .failed: failed += count
        case .cancelled: cancelled += count
        }
    }
}
