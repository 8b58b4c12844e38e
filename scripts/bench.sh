#!/usr/bin/env bash
# Benchmarks that print figures (docs/BENCHMARKS.md records them with the machine):
#   1. stage-2 building blocks: unrank, rank, move generation, predecessors, the init
#      pass and a round on stage-2 positions (`coordinator bench --order 2`), peak RSS;
#   2. a whole solve: two-player 7 x 7 with 3 pieces (559,352,640 positions), wall
#      time and peak RSS (skip with --quick).
# Nothing is asserted: compare the figures with docs/BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin coordinator
bin=target/release/coordinator
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GB", $2/1e6}' /proc/meminfo), $(uname -m)"
peak() { grep -E "Maximum resident|Elapsed" "$1" | sed 's/^\s*/  /'; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "== coordinator bench --order 2"
/usr/bin/time -v "$bin" bench --order 2 2> "$tmp/time1"
peak "$tmp/time1"
if [[ "${1:-}" != --quick ]]; then
  echo "== coordinator --plan plans/cc2-m7p3.toml"
  /usr/bin/time -v "$bin" --plan plans/cc2-m7p3.toml --output "$tmp/tb" --checkpoints "$tmp/ck" > "$tmp/out" 2> "$tmp/time2"
  grep -E "positions|both|start|layer" "$tmp/out"
  peak "$tmp/time2"
fi
