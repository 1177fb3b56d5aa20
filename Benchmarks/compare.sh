#!/usr/bin/env bash
# Runs the engine, HTTP and document benchmarks once and prints one line per performance goal, each computed from medians of that run:
#   P1 relay=… baseline=… ratio=… goal=… PASS|FAIL
# Extra arguments go to `swift package benchmark` (for example --filter 'P1.*'). A full run, without them, also runs P1's
# pairing of Relay and the task group on one core, as context for P1's ratio.
set -euo pipefail
cd "$(dirname "$0")"

results=$(mktemp -d)
one_core=$(mktemp -d)
loaded=$(mktemp -d)
loaders=()
stop_loaders() { [ ${#loaders[@]} -eq 0 ] || kill "${loaders[@]}" 2>/dev/null || true; }
trap 'stop_loaders; rm -rf "$results" "$one_core" "$loaded"' EXIT
# The fleet's benchmarks (P13 to P15) run on the PostgreSQL server that RELAY_POSTGRES_URL names; without it, their
# lines print NOT-RUN. P15 kills the Integrations package's worker process, built here.
if [ -n "${RELAY_POSTGRES_URL:-}" ]; then
    swift build --package-path ../Integrations -c release --product RelayPostgresWorker >&2
    RELAY_FLEET_WORKER="$(swift build --package-path ../Integrations -c release --show-bin-path)/RelayPostgresWorker"
    export RELAY_FLEET_WORKER
fi
swift package --allow-writing-to-directory "$results" benchmark --target '^(Engine|HTTP|Document|Server|Fleet)$' \
    --format histogramPercentiles --path "$results" --no-progress "$@" >&2
# Context for P1's ratio: its Relay and task group workloads again with the whole process on one core, where no wake
# crosses cores. Only on a full run, and where taskset exists.
if [ $# -eq 0 ] && command -v taskset >/dev/null; then
    taskset -c 0 swift package --allow-writing-to-directory "$one_core" benchmark --target '^Engine$' \
        --filter 'P1 Relay bunch 64 against .*' --format histogramPercentiles --path "$one_core" \
        --no-progress >&2
fi
# P1o: P1's pairing again while two busy loops load both cores; with P1's filter too, so it can be run alone.
if [ $# -eq 0 ] || [[ "$*" == *P1* ]]; then
    for _ in 1 2; do
        (while :; do :; done) &
        loaders+=($!)
    done
    swift package --allow-writing-to-directory "$loaded" benchmark --target '^Engine$' \
        --filter 'P1 Relay bunch 64 against .*' --format histogramPercentiles --path "$loaded" --no-progress >&2
    stop_loaders
    loaders=()
fi

# The median of a benchmark's metric, converted to base units (seconds for time, counts or bytes otherwise), from the
# main run or from the directory given third.
median() {
    local file
    file=$(ls "${3:-$results}"/Current_run.*."${1// /_}.$2.histogram.percentiles.tsv" 2>/dev/null | head -n 1)
    [ -n "$file" ] && [ -f "$file" ] || { echo "missing"; return; }
    awk -F'\t' '
        NR == 1 {
            scale = 1
            if ($2 ~ /\(ns\)/) scale = 1e-9; else if ($2 ~ /\(μs\)/) scale = 1e-6
            else if ($2 ~ /\(ms\)/) scale = 1e-3; else if ($2 ~ /\(K\)/) scale = 1e3
            else if ($2 ~ /\(M\)/) scale = 1e6
        }
        $1 == "50" { printf "%.9g\n", $2 * scale; exit }
    ' "$file"
}

# Operations (or events) per second of a benchmark: the median of the rates its iterations recorded, each timed inside
# the task that ran the workload on every core (see Benchmarks/Support/Measuring).
rate() {
    local value
    value=$(median "$1" operationsPerSecond "${2:-$results}")
    [ "$value" = "missing" ] && { echo "missing"; return; }
    awk -v v="$value" 'BEGIN { printf "%.0f\n", v }'
}

shown() { awk -v r="$1" 'BEGIN { if (r == "n/a") print r; else printf "%.3f\n", r }'; }

# goal <id> <relay> <baseline label> <baseline> <ratio> <goal text> <pass expression over r (ratio) and v (relay)>
# The test sees the ratio unrounded, and a goal on an absolute figure tests the figure itself (`v`, its leading
# number): printed to three decimals, 1.3996 against a line of 1.4 would read 1.400, and 10,047 ms against 10,000 1.005.
goal() {
    local id=$1 relay=$2 label=$3 baseline=$4 ratio=$5 text=$6 test=$7 verdict
    if [[ "$relay" == missing* || "$baseline" == missing* ]]; then
        echo "$id relay=$relay baseline=$label:$baseline ratio=n/a goal=$text NOT-RUN"
        return
    fi
    verdict=$(awk -v r="$ratio" -v v="$relay" "BEGIN { print (($test) ? \"PASS\" : \"FAIL\") }")
    echo "$id relay=$relay baseline=$label:$baseline ratio=$(shown "$ratio") goal=$text $verdict"
}

# The medians of a paired benchmark (see Benchmarks/Support/Measuring): both rates, then the ratio metric, recorded per
# thousand, as a plain ratio; from the main run or from the directory given fifth.
paired() {
    local ratio
    ratio=$(median "$1" "$4" "${5:-}")
    [ "$ratio" = "missing" ] || ratio=$(awk -v r="$ratio" 'BEGIN { printf "%.3f\n", r / 1000 }')
    echo "$(median "$1" "$2" "${5:-}") $(median "$1" "$3" "${5:-}") $ratio"
}

# The ratio of two figures, unrounded; `shown` prints it to three decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "missing" || b == "missing" || b == 0) print "n/a"; else printf "%.9g\n", a / b }'; }

# P1: Relay and the task group are paired in each iteration; their ratio is the median of the iterations' ratios, and
# the other two lines use Relay's median rate from the same benchmark.
p1_pair="P1 Relay bunch 64 against TaskGroup width 64 n=100000"
read -r p1 p1_group p1_ratio <<<"$(paired "$p1_pair" \
    relayOperationsPerSecond taskGroupOperationsPerSecond relayPerMilleOfTaskGroup)"
p1_queue=$(rate "P1 OperationQueue width 64 n=100000")
goal P1 "$p1/s" TaskGroup64 "$p1_group/s" "$p1_ratio" "ratio>=1.4" "r >= 1.4"
goal P1 "$p1/s" OperationQueue64 "$p1_queue/s" "$(ratio "$p1" "$p1_queue")" "ratio>=4.5" "r >= 4.5"
goal P1 "$p1/s" absolute "1000000/s" "$(ratio "$p1" 1000000)" "relay>=1000000/s" "r >= 1"
# P1o: Relay's ratio to the task group with both cores loaded, against 0.7 times its ratio without the load.
read -r p1o p1o_group p1o_ratio <<<"$(paired "$p1_pair" \
    relayOperationsPerSecond taskGroupOperationsPerSecond relayPerMilleOfTaskGroup "$loaded")"
if [[ "$p1o_ratio" == missing* || "$p1_ratio" == missing* ]]; then
    echo "P1o relay=$p1o/s baseline=unloaded-ratio:$p1_ratio ratio=n/a goal=loaded-ratio>=0.7*unloaded NOT-RUN"
else
    goal P1o "$p1o/s" unloaded-ratio "$p1_ratio" "$(ratio "$p1o_ratio" "$p1_ratio")" \
        "loaded-ratio>=0.7*unloaded(loaded=$p1o_ratio,taskgroup=$p1o_group/s)" "r >= 0.7"
fi

# P2: the chain and the independent operations are paired in each iteration; the ratio is the median of the
# iterations' cost ratios (chain cost per operation over independent cost, that is independent rate over chain rate).
read -r independent chain p2_ratio <<<"$(paired "P2 Relay chain against independent n=100000" \
    independentOperationsPerSecond chainOperationsPerSecond chainCostPerMilleOfIndependent)"
goal P2 "$chain/s" independent "$independent/s" "$p2_ratio" "cost-ratio<=1.5" "r <= 1.5"

p3=$(rate "P3 Relay bunch 1 n=100000")
p3_group=$(rate "P3 TaskGroup width 1 n=100000")
goal P3 "$p3/s" TaskGroup1 "$p3_group/s" "$(ratio "$p3" 200000)" "relay>=200000/s" "r >= 1"

p4=$(rate "P4 Relay file store group commit n=20000")
p4_sync=$(rate "P4 one fsync per operation n=2000")
goal P4 "$p4/s" one-fsync-per-op "$p4_sync/s" "$(ratio "$p4" "$p4_sync")" "relay>=50000/s" "v + 0 >= 50000"

# With a scaling factor of one million, the medians read per operation: the reopen took a million times as long.
p5_seconds=$(median "P5 Relay reopen n=1000000" wallClock)
[ "$p5_seconds" = "missing" ] || p5_seconds=$(awk -v s="$p5_seconds" 'BEGIN { printf "%.2f\n", s * 1e6 }')
p5_bytes=$(median "P5 Relay reopen n=1000000" memoryLeakedBytes)
goal P5 "${p5_seconds}s" limit "3s" "$(ratio "$p5_seconds" 3)" "reopen<=3s" "r <= 1"
goal P5 "${p5_bytes}B/op" limit "512B/op" "$(ratio "$p5_bytes" 512)" "memory<=512B/op" "r <= 1"

# P6: HTTP calls on the same loopback server, Relay at bunch 8 against raw URLSession in a task group of 8, paired in
# each iteration; the ratio is the median of the iterations' ratios.
read -r p6 p6_session p6_ratio <<<"$(paired "P6 Relay bunch 8 against URLSession TaskGroup width 8 n=1000" \
    relayRequestsPerSecond sessionRequestsPerSecond relayPerMilleOfSession)"
goal P6 "$p6/s" URLSession8 "$p6_session/s" "$p6_ratio" "ratio>=0.9" "r >= 0.9"

# P6a: the same calls through AsyncHTTPClientTransport (the Integrations package's RelayServer), paired in each
# iteration with AsyncHTTPClient alone at 8 at once, and with Relay over URLSession.
read -r p6a p6a_client p6a_ratio <<<"$(paired \
    "P6a Relay over AsyncHTTPClient bunch 8 against AsyncHTTPClient TaskGroup width 8 n=1000" \
    relayRequestsPerSecond clientRequestsPerSecond relayPerMilleOfClient)"
goal P6a "$p6a/s" AsyncHTTPClient8 "$p6a_client/s" "$p6a_ratio" "ratio>=0.9" "r >= 0.9"
read -r p6a_over p6a_session p6a_session_ratio <<<"$(paired \
    "P6a Relay over AsyncHTTPClient against Relay over URLSession bunch 8 n=1000" \
    clientTransportRequestsPerSecond sessionTransportRequestsPerSecond clientTransportPerMilleOfSession)"
goal P6a "$p6a_over/s" RelayOverURLSession8 "$p6a_session/s" "$p6a_session_ratio" "ratio>=2.5" "r >= 2.5"

# P16: P4's durable workload with the logging, metrics and tracing observers on no-op backends, paired in each
# iteration with the same workload without observers.
read -r p16 p16_plain p16_ratio <<<"$(paired "P16 Relay file store with observers against without n=20000" \
    observedOperationsPerSecond plainOperationsPerSecond observedPerMilleOfPlain)"
goal P16 "$p16/s" no-observers "$p16_plain/s" "$p16_ratio" "ratio>=0.9" "r >= 0.9"

p7=$(rate "P7 Relay events n=300000")
p7_stream=$(rate "P7 AsyncStream one per yield n=300000")
goal P7 "$p7/s" AsyncStream "$p7_stream/s" "$(ratio "$p7" 1000000)" "relay>=1000000/s" "r >= 1"

# Download: peak resident memory of the process while it downloads 200 MB on loopback from a server that serves byte
# ranges, beside FoundationNetworking alone writing from a data delegate, in the same iterations. The info line: Relay
# from a server that ignores ranges, where nothing bounds the body in flight but the disk keeping pace; no goal.
download_name="Download Relay 200 MB against URLSession data delegate"
download=$(median "$download_name" relayPeakResidentMB)
download_whole=$(median "$download_name" relayWholeBodyPeakResidentMB)
download_session=$(median "$download_name" sessionPeakResidentMB)
goal Download "${download}MB" URLSessionDelegate "${download_session}MB" "$(ratio "$download" 64)" "peak<=64MB" "r <= 1"
echo "info download from a server that ignores ranges: relay=${download_whole}MB session=${download_session}MB"

# Soak: resident memory over a million operations through a file store at the default retention, beside a retention
# of zero; after the warm-up the line must stay flat: under 1 MB per 100,000 operations.
soak_name="Soak Relay file store default retention n=1000000"
soak=$(median "$soak_name" relaySlopeKBPer100k)
soak_zero=$(median "$soak_name" zeroRetentionSlopeKBPer100k)
goal Soak "${soak}KB/100k(peak=$(median "$soak_name" relayPeakMB)MB)" zero-retention \
    "${soak_zero}KB/100k(peak=$(median "$soak_name" zeroRetentionPeakMB)MB)" "$(ratio "$soak" 1024)" \
    "slope<=1024KB/100k" "r <= 1"

# Ack: p99 from arrival to durable acknowledgement at a steady 4,000 enqueues a second across at least three
# compactions, beside the same load on a store that does not compact: at most 50 ms.
ack_name="Ack Relay file store p99 across compactions n=96000"
ack=$(median "$ack_name" ackP99Microseconds)
ack_steady=$(median "$ack_name" noCompactionAckP99Microseconds)
[ "$ack" = "missing" ] || ack=$(awk -v v="$ack" 'BEGIN { printf "%.1f\n", v / 1000 }')
[ "$ack_steady" = "missing" ] || ack_steady=$(awk -v v="$ack_steady" 'BEGIN { printf "%.1f\n", v / 1000 }')
goal Ack "${ack}ms(compactions=$(median "$ack_name" compactions))" no-compaction "${ack_steady}ms" \
    "$(ratio "$ack" 50)" "p99<=50ms" "r <= 1"

# P8: volatile transactions of one model upsert against the same upsert (the model encoded, stored by id) in a
# Dictionary behind a Mutex, paired in each iteration.
read -r p8 p8_dictionary p8_ratio <<<"$(paired "P8 Relay transactions of one upsert against Dictionary behind Mutex n=20000" \
    relayTransactionsPerSecond dictionaryUpsertsPerSecond relayPerMilleOfDictionary)"
goal P8 "$p8/s" Dictionary "$p8_dictionary/s" "$p8_ratio" "ratio>=0.25" "r >= 0.25"
# P9: durable transactions of one model upsert and one enqueued operation from 64 tasks, against GRDB on SQLite in WAL
# mode with synchronous = FULL doing the same upsert and outbox row: at least ten times GRDB, and 50,000 a second.
p9=$(rate "P9 Relay durable transactions with an operation tasks=64 n=32000")
p9_grdb=$(rate "P9 GRDB WAL synchronous FULL transactions tasks=64 n=2560")
goal P9 "$p9/s" GRDB "$p9_grdb/s" "$(ratio "$p9" "$p9_grdb")" "ratio>=10,relay>=50000/s" "r >= 10 && v + 0 >= 50000"
# P11: resolving an alias, and a one-to-many relation, read again (the document keeps what reads decoded), in
# nanoseconds, beside a Dictionary lookup; the relation resolved cold is context.
p11_name="P11 Relay alias and relation against Dictionary lookup n=100000"
p11_alias=$(median "$p11_name" aliasNanoseconds)
p11_relation=$(median "$p11_name" relationNanoseconds)
p11_lookup=$(median "$p11_name" dictionaryNanoseconds)
goal P11 "alias=${p11_alias}ns" Dictionary "${p11_lookup}ns" "$(ratio "$p11_alias" 200)" "alias<=200ns" "r <= 1"
goal P11 "relation=${p11_relation}ns" Dictionary "${p11_lookup}ns" "$(ratio "$p11_relation" 200)" "relation<=200ns" "r <= 1"
echo "info P11 relation resolved cold, after a change to its collection: $(median "$p11_name" coldRelationNanoseconds)ns"
# P12: changes delivered to one subscriber, from transactions of 100 removals (the producer encodes nothing; P8 measures
# encoding); the same with upserts is context.
p12=$(rate "P12 Relay changes to one subscriber from removals n=100000")
goal P12 "$p12/s" absolute "1000000/s" "$(ratio "$p12" 1000000)" "relay>=1000000/s" "r >= 1"
echo "info P12 from upserts: $(rate "P12 Relay changes to one subscriber from upserts n=100000")/s"

# P10: reopening a store of a million models of about 200 bytes: time, and memory kept per model beyond its encoded
# size; beside it, the same models read from a flat file into a Dictionary, and by GRDB from SQLite.
p10_seconds=$(median "P10 Relay reopen of models n=1000000" wallClock)
[ "$p10_seconds" = "missing" ] || p10_seconds=$(awk -v s="$p10_seconds" 'BEGIN { printf "%.2f\n", s * 1e6 }')
p10_flat=$(median "P10 flat file of models into a Dictionary n=1000000" wallClock)
[ "$p10_flat" = "missing" ] || p10_flat=$(awk -v s="$p10_flat" 'BEGIN { printf "%.2f\n", s * 1e6 }')
p10_grdb=$(median "P10 GRDB open and read models into a Dictionary n=1000000" wallClock)
[ "$p10_grdb" = "missing" ] || p10_grdb=$(awk -v s="$p10_grdb" 'BEGIN { printf "%.2f\n", s * 1e6 }')
p10_grdb_bytes=$(median "P10 GRDB open and read models into a Dictionary n=1000000" memoryLeakedBytes)
p10_bytes=$(median "P10 Relay reopen of models n=1000000" memoryLeakedBytes)
# The benchmark's model encodes to 194 bytes (see Benchmarks/Document).
p10_encoded=194
p10_beyond=$(awk -v b="$p10_bytes" -v e="$p10_encoded" 'BEGIN { if (b == "missing" || e == "missing") print "missing"; else print b - e }')
goal P10 "${p10_seconds}s" flat-file "${p10_flat}s" "$(ratio "$p10_seconds" 2)" "reopen<=2s" "v + 0 <= 2"
goal P10 "${p10_beyond}B/model-beyond-${p10_encoded}B" limit "64B" "$(ratio "$p10_beyond" 64)" "memory<=64B/model" "v + 0 <= 64"
echo "info P10 GRDB opening and reading the same rows into a Dictionary: ${p10_grdb}s, ${p10_grdb_bytes}B/model kept"

# P13: durable no-op operations through the fleet's store, one process, bunch 64, enqueue to completion, paired in each
# iteration with a queue over postgres-nio that claims one row and completes it in one transaction each (8 workers).
read -r p13 p13_sql p13_ratio <<<"$(paired \
    "P13 Relay fleet bunch 64 against a one-row-per-transaction SQL queue n=5000" \
    relayOperationsPerSecond sqlQueueOperationsPerSecond relayPerMilleOfSQLQueue)"
goal P13 "$p13/s" SQLQueue8 "$p13_sql/s" "$p13_ratio" "ratio>=5,relay>=20000/s" "r >= 5 && v + 0 >= 20000"
# P14: from an enqueue in one process to its handle's result, the operation run by another, through LISTEN; beside it,
# the same with polling alone every 10 ms. The median of the iterations' p99s, in milliseconds.
p14_name="P14 Relay fleet enqueue to result across processes"
p14=$(median "$p14_name LISTEN n=200" p99EnqueueToResultMicroseconds)
p14_poll=$(median "$p14_name polling 10 ms n=200" p99EnqueueToResultMicroseconds)
[ "$p14" = "missing" ] || p14=$(awk -v v="$p14" 'BEGIN { printf "%.1f\n", v / 1000 }')
[ "$p14_poll" = "missing" ] || p14_poll=$(awk -v v="$p14_poll" 'BEGIN { printf "%.1f\n", v / 1000 }')
goal P14 "${p14}ms(p50=$(median "$p14_name LISTEN n=200" p50EnqueueToResultMicroseconds)us)" polling-10ms \
    "${p14_poll}ms" "$(ratio "$p14" 10)" "p99<=10ms" "v + 0 <= 10"
# P15: from the SIGKILL of a process holding 1,000 claimed operations under leases of 5 seconds until two other
# processes have run them all: within the lease and 5 seconds.
p15=$(median "P15 Relay fleet SIGKILL of a process holding 1000 claims lease 5 s" killToAllFinishedMilliseconds)
goal P15 "${p15}ms" lease+5s "10000ms" "$(ratio "$p15" 10000)" "recovery<=lease+5s" "v + 0 <= 10000"

# Context for the goals: the other workloads beside their baselines, allocations and memory.
for pair in "DAG Relay fan-out fan-in n=10002|DAG TaskGroup fan-out fan-in n=10002" \
    "Mixed Relay three sequences n=30000|Mixed TaskGroup width 16 n=30000" \
    "Events Relay lifecycle n=300000|P7 AsyncStream one per yield n=300000" \
    "Ids Relay new operations n=100000|Ids Foundation UUID new operations n=100000"; do
    relay=$(rate "${pair%%|*}")
    baseline=$(rate "${pair##*|}")
    echo "info ${pair%%|*}: relay=$relay/s baseline=$baseline/s ratio=$(shown "$(ratio "$relay" "$baseline")")"
done
apart="P1 Relay commit and run apart n=100000"
echo "info P1 apart: commit=$(median "$apart" commitNanosecondsPerOperation)ns/op" \
    "run=$(median "$apart" runNanosecondsPerOperation)ns/op"
read -r one_relay one_group one_ratio <<<"$(paired "$p1_pair" \
    relayOperationsPerSecond taskGroupOperationsPerSecond relayPerMilleOfTaskGroup "$one_core")"
if [ "$one_relay" != "missing" ]; then
    echo "info P1 on one core: relay=$one_relay/s baseline=$one_group/s ratio=$one_ratio"
fi
echo "info mallocs per operation: relay=$(median "Malloc Relay per operation bunch 64" mallocCountTotal)" \
    "taskgroup=$(median "Malloc TaskGroup per operation width 64" mallocCountTotal)"
echo "info bytes per pending operation at 1M pending: $(median "Memory Relay bytes per pending operation n=1000000" memoryLeakedBytes)"

# P17: a Hummingbird route through Relay under wrk, beside the same route calling AsyncHTTPClient itself (see
# Load/webhooks.sh); on a full run, or when the arguments name P17.
if [ $# -eq 0 ] || [[ "$*" == *P17* ]]; then
    bash Load/webhooks.sh
fi
