#!/usr/bin/env bash
# Scaling of a cluster job over N workers, each on its own namespaced host
# (deploy/local/cluster.sh), each pinned to its own CPU where the machine has
# enough (taskset), with every link shaped to a fixed rate if asked (tc tbf).
# For each worker count it prints: wall time, rounds, move-count seconds, the
# records and payload bytes the workers exchanged, every byte that crossed the
# bridge (all hosts, framing included), and per worker the seconds it was busy
# in rounds against the rounds' wall time (the rest is waiting: for the
# slowest worker, for the network, for the coordinator).
#
#   sudo scripts/bench-scaling.sh [--plan FILE] [--workers "1 2 3"] [--rate RATE] [--bin DIR]
#
# Defaults: plans/cc2-m7p3.toml, 1 2 3 workers, links unshaped, target/release.
# Needs root (network namespaces), taskset, tc (only with --rate) and release
# binaries. The last line of each count is machine-readable:
#   SCALING workers=N wall=S rounds=R counts=S payload=B wire=B decided=D busy=S,S,..
set -euo pipefail
cd "$(dirname "$0")/.."

plan=plans/cc2-m7p3.toml
counts="1 2 3"
rate=""
bin=target/release
while [ $# -gt 0 ]; do
  case "$1" in
    --plan) plan=$2; shift 2 ;;
    --workers) counts=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "needs root (network namespaces)" >&2; exit 1; }
command -v taskset >/dev/null || { echo "taskset is missing" >&2; exit 1; }
if [ -n "$rate" ] && ! command -v tc >/dev/null; then
  echo "tc is missing: run without --rate (links unshaped)" >&2; exit 1
fi
export RETRO_CLUSTER_NAME=${RETRO_CLUSTER_NAME:-scale}
export RETRO_CLUSTER_SUBNET=${RETRO_CLUSTER_SUBNET:-10.79.0}
export RETRO_CLUSTER_RATE=$rate
cluster=deploy/local/cluster.sh
cpus=$(nproc)
root=$(mktemp -d /tmp/scaling.XXXXXX)
trap '$cluster down >/dev/null 2>&1 || true' EXIT

# Bytes that entered the bridge from every host (each host end's rx counter).
bridge_bytes() {
  local sum=0 f
  for f in /sys/class/net/"$RETRO_CLUSTER_NAME"-*h/statistics/rx_bytes; do
    [ -f "$f" ] && sum=$((sum + $(cat "$f")))
  done
  echo "$sum"
}

echo "plan $plan; $cpus CPUs; links ${rate:-unshaped}; state under $root"
for n in $counts; do
  st=$root/w$n
  for i in $(seq 1 "$n"); do
    export "RETRO_CPUS_worker$i=$(((i - 1) % cpus))"
  done
  [ "$n" -le "$cpus" ] || echo "note: $n workers on $cpus CPUs: some share a CPU"
  started=$(date +%s.%N)
  $cluster up "$n" --plan "$plan" --bin "$bin" --state "$st" >/dev/null
  $cluster wait >/dev/null || { echo "the job failed; logs in $st" >&2; exit 1; }
  ended=$(date +%s.%N)
  wire=$(bridge_bytes)
  $cluster down >/dev/null
  for i in $(seq 1 "$n"); do unset "RETRO_CPUS_worker$i"; done

  log=$st/coordinator.log
  # Rounds and their wall time, decided positions, exchanged records and bytes,
  # from the fields after each round line ("new_decided=D round_seconds=S
  # records_sent=N bytes_sent=B").
  read -r rounds round_secs decided records payload < <(awk '
    / new_decided=[0-9]+ / {
      r++
      for (i = 1; i <= NF; i++) {
        split($i, kv, "=")
        if (kv[1] == "new_decided") d += kv[2]
        if (kv[1] == "round_seconds") s += kv[2]
        if (kv[1] == "records_sent") n += kv[2]
        if (kv[1] == "bytes_sent") b += kv[2]
      }
    }
    END { printf "%d %.1f %d %d %d\n", r, s, d, n, b }' "$log")
  # Move counts: the init step's seconds ("layer Q init: ..., S.SSs").
  init=$(awk '/ init: / { s += $NF + 0 } END { printf "%.1f", s }' "$log")
  busy=""
  for i in $(seq 1 "$n"); do
    # Worker lines "...; scan As, route Bs, undo Cs, apply Ds, settle Es, commit Fs".
    b=$(awk '/ decided here, frontier / {
          for (i = 1; i <= NF; i++) if ($i ~ /^[0-9.]+s,?$/) s += $i + 0
        } END { printf "%.1f", s }' "$st/worker$i.log")
    busy="$busy${busy:+,}$b"
  done
  wall=$(echo "$ended - $started" | bc)
  printf '%s workers: wall %.1f s, %s rounds (%s s of rounds), init with move counts %s s\n' \
    "$n" "$wall" "$rounds" "$round_secs" "$init"
  printf '  exchanged %s records, %s payload bytes; %s bytes crossed the bridge (%s per decided position)\n' \
    "$records" "$payload" "$wire" "$(awk -v w="$wire" -v d="$decided" 'BEGIN { printf "%.3f", (d > 0) ? w / d : 0 }')"
  i=1
  for b in ${busy//,/ }; do
    printf '  worker %s busy %s s of %s s of rounds (%s%% waiting)\n' "$i" "$b" "$round_secs" \
      "$(awk -v b="$b" -v r="$round_secs" 'BEGIN { printf "%.0f", (r > 0) ? 100 * (1 - b / r) : 0 }')"
    i=$((i + 1))
  done
  echo "SCALING workers=$n wall=$wall rounds=$rounds counts=$init payload=$payload wire=$wire decided=$decided busy=$busy"
  sha256sum "$st"/tb/*.tb | awk '{ print "  tablebase sha256 " $1 }'
done
