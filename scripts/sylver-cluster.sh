#!/usr/bin/env bash
# The Sylver table as a task job on three local worker processes, checked against the
# embedded run of the same plan: table.tsv must agree in every column but the seconds.
#   scripts/sylver-cluster.sh [M_HI] [CAP]    rows 4 <= m <= M_HI (default 17), n <= 40,
#                                             memo cap per class (default 10000000)
# Prints both wall times and the per-worker peak RSS; exits non-zero on any difference.
set -euo pipefail
cd "$(dirname "$0")/.."
m_hi=${1:-17}
cap=${2:-10000000}
cargo build --release --quiet --bin coordinator --bin worker
bin=$PWD/target/release
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
plan() { # $1 = name, $2 = workers
  cat <<PLAN
[job]
name = "$1"
game = "sylver"
ranges = [[4, $m_hi, 40]]
cap = $cap
threads = 1
[cluster]
workers = $2
listen = "127.0.0.1:0"
[output]
dir = "$dir/$1/out"
checkpoints = "$dir/$1/ck"
PLAN
}
plan embedded 0 > "$dir/embedded.toml"
plan cluster 3 > "$dir/cluster.toml"

start=$EPOCHREALTIME
RUST_LOG=warn "$bin/coordinator" --plan "$dir/embedded.toml" > /dev/null
echo "embedded (1 thread): $(awk "BEGIN { printf \"%.1f\", $EPOCHREALTIME - $start }") s"

start=$EPOCHREALTIME
RUST_LOG=warn "$bin/coordinator" --plan "$dir/cluster.toml" > "$dir/coordinator.out" 2> "$dir/coordinator.err" &
coordinator=$!
for _ in $(seq 100); do grep -q "^listening on" "$dir/coordinator.err" && break; sleep 0.1; done
addr=$(sed -n 's/^listening on //p' "$dir/coordinator.err")
for i in 0 1 2; do
  timer=()
  if [[ -x /usr/bin/time ]]; then timer=(/usr/bin/time -f "worker $i: peak RSS %M KB"); fi
  RUST_LOG=warn "${timer[@]}" "$bin/worker" --connect "$addr" 2> "$dir/w$i.err" &
done
wait "$coordinator"
wait
echo "three workers: $(awk "BEGIN { printf \"%.1f\", $EPOCHREALTIME - $start }") s"
grep -h "peak RSS" "$dir"/w*.err || true

# Every column but `seconds` (the 7th).
strip() { cut -f1-6,8 "$1"; }
if diff <(strip "$dir/embedded/out/table.tsv") <(strip "$dir/cluster/out/table.tsv"); then
  echo "identical: $(($(wc -l < "$dir/cluster/out/table.tsv") - 1)) rows (m = 4..$m_hi, n <= 40, cap $cap)"
else
  echo "the tables differ" >&2
  exit 1
fi
