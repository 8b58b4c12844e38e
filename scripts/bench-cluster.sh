#!/usr/bin/env bash
# A cluster job on this machine's loopback: one coordinator and N workers, each
# under /usr/bin/time, then wall time, peak RSS per process, the records and
# payload bytes the workers exchanged (from the coordinator's per-round log),
# and every byte that crossed the loopback interface meanwhile (all processes,
# gRPC and TCP/IP framing included; anything else using loopback counts too).
#
#   scripts/bench-cluster.sh [--workers N] [--threads T] [--plan FILE] [--keep DIR]
#
# Defaults: 3 workers, 1 kernel thread each, plans/cc2-m7p3.toml. Compare the
# tablebase sha256 it prints with the embedded run's (`coordinator --plan FILE`).
# Builds the release binaries first (a stale worker would run another
# version's game) and needs GNU time.
set -euo pipefail
cd "$(dirname "$0")/.."

workers=3
threads=1
plan=plans/cc2-m7p3.toml
keep=""
while [ $# -gt 0 ]; do
  case "$1" in
    --workers) workers="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --plan) plan="$2"; shift 2 ;;
    --keep) keep="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
bin=target/release
cargo build --release --quiet --bin coordinator --bin worker
[ -x /usr/bin/time ] || { echo "/usr/bin/time (GNU time) is missing" >&2; exit 1; }

dir="${keep:-$(mktemp -d)}"
mkdir -p "$dir"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -n "$keep" ] || rm -rf "$dir"
}
trap cleanup EXIT

lo_bytes() { awk -F'[: ]+' '$2 == "lo" {print $3}' /proc/net/dev; }
lo_before=$(lo_bytes)
started=$(date +%s.%N)
/usr/bin/time -v -o "$dir/coordinator.time" "$bin/coordinator" --plan "$plan" --listen 127.0.0.1:0 \
  --expect-workers "$workers" --output "$dir/tb" --checkpoints "$dir/ck" > "$dir/coordinator.log" 2>&1 &
pids+=($!)
addr=""
for _ in $(seq 1 200); do
  # `listening on ADDR` starts a line for every kind of job (a level or task
  # job logs nothing else that names the address).
  addr=$(sed -n 's/^listening on \([0-9.:]*\).*/\1/p' "$dir/coordinator.log" | head -1)
  [ -n "$addr" ] && break
  sleep 0.1
done
[ -n "$addr" ] || { echo "the coordinator did not start; see $dir/coordinator.log" >&2; cat "$dir/coordinator.log" >&2; exit 1; }
for i in $(seq 1 "$workers"); do
  /usr/bin/time -v -o "$dir/worker$i.time" "$bin/worker" --connect "$addr" --listen 127.0.0.1:0 \
    --advertise 127.0.0.1 --threads "$threads" --data "$dir/w$i" > "$dir/worker$i.log" 2>&1 &
  pids+=($!)
done
status=0
wait "${pids[0]}" || status=$?
for p in "${pids[@]:1}"; do wait "$p" || true; done
pids=()
ended=$(date +%s.%N)
lo_after=$(lo_bytes)
[ "$status" = 0 ] || { echo "the coordinator failed (exit $status); see $dir/coordinator.log" >&2; tail -5 "$dir/coordinator.log" >&2; exit 1; }

rss() { awk -F': ' '/Maximum resident/ {printf "%.0f", $2 / 1024}' "$1"; }
printf 'plan %s, %s workers x %s threads, wall %.1f s\n' "$plan" "$workers" "$threads" "$(echo "$ended - $started" | bc)"
printf 'coordinator peak RSS %s MB\n' "$(rss "$dir/coordinator.time")"
sum=0
for i in $(seq 1 "$workers"); do
  r=$(rss "$dir/worker$i.time"); sum=$((sum + r))
  printf 'worker %s peak RSS %s MB\n' "$i" "$r"
done
printf 'workers together %s MB\n' "$sum"
# The fields after each round line: "new_decided=D ... records_sent=N bytes_sent=B".
# shellcheck disable=SC2016  # awk code, expanded by awk
round_fields='{ for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "new_decided") d += kv[2];
                if (kv[1] == "records_sent") n += kv[2]; if (kv[1] == "bytes_sent") b += kv[2] } }'
awk "/ new_decided=[0-9]+ / $round_fields"'
     END { printf "exchanged %d records, %d payload bytes, %.3f bytes per decided position (%d decided)\n", n, b, (d ? b / d : 0), d }' \
  "$dir/coordinator.log"
decided=$(awk "/ new_decided=[0-9]+ / $round_fields"' END { print d + 0 }' "$dir/coordinator.log")
awk -v b="$((lo_after - lo_before))" -v d="$decided" \
  'BEGIN { printf "loopback bytes during the job %d, %.3f per decided position\n", b, (d ? b / d : 0) }'
sha256sum "$dir"/tb/*.tb
