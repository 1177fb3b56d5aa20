#!/usr/bin/env bash
# P17: a Hummingbird route that enqueues a webhook through Relay and awaits its delivery (volatile and file stores),
# beside the same route sending it through AsyncHTTPClient itself, each loaded by wrk at 64 connections on loopback for
# a warm-up and then for the measured run, against a receiver in a process of its own. Prints the goal lines that
# compare.sh prints; needs wrk (Debian's package).
#   WARMUP (seconds, 30 by default) and DURATION (seconds, 30 by default) set the two runs. The warm-up lasts until
#   RETAINED requests (100,000 by default, the DataPoint's default retention of finished calls) have been served, so
#   that memory is measured once the retained window is full, however fast the host.
set -euo pipefail
cd "$(dirname "$0")"
examples=../../Integrations/Examples
warmup=${WARMUP:-30}
duration=${DURATION:-30}
retained=${RETAINED:-100000}

if ! command -v wrk >/dev/null; then
    echo "P17 relay=missing baseline=AsyncHTTPClientDirect:missing ratio=n/a goal=ratio>=0.8 NOT-RUN (wrk is not installed)"
    exit 0
fi
swift build -c release --package-path "$examples" --product WebhookLoad >&2
bin="$(swift build -c release --package-path "$examples" --show-bin-path)/WebhookLoad"

work=$(mktemp -d)
pids=()
cleanup() {
    [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
cat >"$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"id":7,"item":"tea","quantity":2}'
wrk.headers["Content-Type"] = "application/json"
LUA

# A free port on 127.0.0.1, as the system picks it.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# Waits until a POST to the URL is answered; curl retries refused connections itself.
await_answer() { curl -s -o /dev/null --retry 100 --retry-connrefused --retry-delay 0 --retry-max-time 60 -X POST "$1"; }
resident_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
# wrk's latency in milliseconds, from a value such as 812.00us, 12.5ms or 1.02s.
to_ms() { awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n += 0; else if (v ~ /s$/) n *= 1000; printf "%.2f\n", n }'; }

receiver_port=$(free_port)
"$bin" receiver "$receiver_port" >"$work/receiver.log" 2>&1 &
pids+=($!)
await_answer "http://127.0.0.1:$receiver_port/webhooks"

# Warms `port` up for the warm-up's seconds, then on until `retained` requests have been served in all.
warm_up() {
    local port=$1 seconds=$warmup served=0 out rate
    while :; do
        out=$(wrk -t2 -c64 -d"${seconds}s" -s "$work/post.lua" "http://127.0.0.1:$port/orders")
        served=$((served + $(awk '/requests in/ { print $1 }' <<<"$out")))
        rate=$(awk '/^Requests\/sec:/ { printf "%.0f\n", $2 + 1 }' <<<"$out")
        [ "$served" -lt "$retained" ] || break
        seconds=$(((retained - served) / rate + 5))
    done
}

# The median of the resident kilobytes that `file` holds, one a line.
median_kb() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] + 0 }'; }

# Runs one mode; prints "requests-per-second p99-ms resident-MB-after-warm-up resident-MB-after errors". Resident
# memory after the run is the median of one reading a second over its last third: a compaction of the file store's
# journal lifts it for a few seconds, and a reading at one instant may fall in one.
measure() {
    local mode=$1 port pid rss_start rss_end out rate p99 errors sampler
    port=$(free_port)
    "$bin" "$mode" "$port" "http://127.0.0.1:$receiver_port" "$work/store-$mode" >"$work/$mode.log" 2>&1 &
    pid=$!
    pids+=("$pid")
    await_answer "http://127.0.0.1:$port/orders"
    warm_up "$port"
    rss_start=$(resident_kb "$pid")
    (
        sleep $((duration - duration / 3))
        for _ in $(seq $((duration / 3))); do resident_kb "$pid"; sleep 1; done
    ) >"$work/$mode.resident" &
    sampler=$!
    out=$(wrk -t2 -c64 -d"${duration}s" --latency -s "$work/post.lua" "http://127.0.0.1:$port/orders")
    wait "$sampler" || true
    rss_end=$(median_kb "$work/$mode.resident")
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null || true
    rate=$(awk '/^Requests\/sec:/ { printf "%.0f\n", $2 }' <<<"$out")
    p99=$(to_ms "$(awk '$1 == "99%" { print $2 }' <<<"$out")")
    errors=$(awk '/Non-2xx or 3xx responses:/ { n += $NF } /Socket errors:/ { for (i = 3; i <= NF; i++) if ($i ~ /^[0-9]+,?$/) n += $i + 0 } END { print n + 0 }' <<<"$out")
    echo "$rate $p99 $((rss_start / 1024)) $((rss_end / 1024)) $errors"
}

read -r direct direct_p99 _ _ direct_errors <<<"$(measure direct)"
for store in volatile file; do
    read -r relay relay_p99 rss_start rss_end errors <<<"$(measure "relay-$store")"
    ratio=$(awk -v a="$relay" -v b="$direct" 'BEGIN { printf "%.2f\n", a / b }')
    p99_ratio=$(awk -v a="$relay_p99" -v b="$direct_p99" 'BEGIN { printf "%.2f\n", a / b }')
    verdict() { awk "BEGIN { print (($1) ? \"PASS\" : \"FAIL\") }"; }
    echo "P17 relay=${relay}/s($store,errors=$errors) baseline=AsyncHTTPClientDirect:${direct}/s(errors=$direct_errors)" \
        "ratio=$ratio goal=ratio>=0.8 $(verdict "$ratio >= 0.8 && $errors == 0")"
    echo "P17 relay=p99:${relay_p99}ms($store) baseline=AsyncHTTPClientDirect:p99:${direct_p99}ms ratio=$p99_ratio" \
        "goal=p99<=3x $(verdict "$p99_ratio <= 3")"
    # Flat: the measured run adds at most a tenth to what the warm-up left resident, and 16 MB at least is allowed.
    echo "P17 relay=resident:${rss_start}MB->${rss_end}MB($store) baseline=after-warm-up:${rss_start}MB" \
        "ratio=$(awk -v a="$rss_end" -v b="$rss_start" 'BEGIN { printf "%.2f\n", a / b }') goal=flat" \
        "$(verdict "$rss_end <= $rss_start * 1.1 || $rss_end - $rss_start <= 16")"
done
