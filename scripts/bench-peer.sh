#!/usr/bin/env bash
# Our solver beside the best public two-player solver, on the same machine, back
# to back: two-player Chinese checkers 7 x 7 with 3 pieces (559,352,640
# positions), N pairs (default 3), wall time, peak RSS and bytes written for
# each run, the medians and the ratios ours / theirs.
#
#   scripts/bench-peer.sh PEER_DIR [--pairs N] [--m 7] [--p 3] [--threads T] [--portable]
#
# --threads T gives each program T threads (the peer's --threads, ours the
# plan's [cluster] threads through RETRO_CLUSTER__THREADS); default: every core.
#
# Ours runs plans/cc2-mMpP.toml; with six pieces plans/cc2-mMp6-literal.toml,
# the reading of the part-2 rule the peer solves. With four pieces the peer
# gets --areas-sym, its name for the rhombus start area our rules use.
#
# Both programs are built for this machine's CPU: the peer's Makefile compiles
# with -O3 -march=native, so ours is built with RUSTFLAGS="-C target-cpu=native"
# (in target/native, beside the default build). --portable runs our default
# build instead (x86-64-v2, what `cargo build --release` gives).
#
# PEER_DIR is a local checkout of GitHub jh85/smallgames (its chinesecheckers/
# directory, or the repository root). The project never contains that code: the
# user fetches it (git clone https://github.com/jh85/smallgames) and names it
# here; it is built there with its own Makefile (`make src/solver`).
# Figures only, nothing asserted: docs/BENCHMARKS.md records them with the machine.
set -euo pipefail
usage() { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; }
[[ $# -ge 1 && "$1" != -h && "$1" != --help ]] || { usage; exit 2; }
peer=$1; shift
pairs=3; m=7; p=3; portable=0; threads=$(nproc)
while [[ $# -gt 0 ]]; do
  case $1 in
    --portable) portable=1; shift ;;
    --pairs) pairs=$2; shift 2 ;;
    --m) m=$2; shift 2 ;;
    --p) p=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; usage; exit 2 ;;
  esac
done
[[ -d "$peer/chinesecheckers" ]] && peer="$peer/chinesecheckers"
[[ -f "$peer/src/solver.cpp" ]] || { echo "error: $peer has no src/solver.cpp (want a checkout of jh85/smallgames)" >&2; exit 2; }
cd "$(dirname "$0")/.."
plan="plans/cc2-m${m}p${p}.toml"
[[ $p == 6 ]] && plan="plans/cc2-m${m}p6-literal.toml"
peer_areas=()
[[ $p == 4 ]] && peer_areas=(--areas-sym)
[[ -f "$plan" ]] || { echo "error: no plan $plan" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "error: GNU time (/usr/bin/time) is needed for peak RSS" >&2; exit 2; }
echo "== building"
if [[ $portable == 1 ]]; then
  cargo build --release --quiet --bin coordinator
  ours=target/release/coordinator; built="portable build, x86-64-v2"
else
  RUSTFLAGS="-C target-cpu=native" CARGO_TARGET_DIR=target/native cargo build --release --quiet --bin coordinator
  ours=target/native/release/coordinator; built="target-cpu=native, as the peer's -march=native"
fi
(cd "$peer" && make --quiet src/solver)
theirs="$peer/src/solver"
[[ $threads =~ ^[1-9][0-9]*$ ]] || { echo "error: --threads wants a positive number, not $threads" >&2; exit 2; }
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores," \
  "L2 $(lscpu | sed -n 's/^L2 cache: *//p'), L3 $(lscpu | sed -n 's/^L3 cache: *//p')," \
  "$(awk '/MemTotal/ {printf "%.0f GB", $2/1e6}' /proc/meminfo)"
echo "peer: $(git -C "$peer" rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout') ($theirs --m $m --p $p ${peer_areas[*]} --threads $threads)"
echo "ours: $(git rev-parse --short HEAD) ($ours --plan $plan, threads: $threads; $built)"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-peer.XXXXXX"); trap 'rm -rf "$tmp"' EXIT
# One timed run: prints "wall_s peak_rss_MB written_MB" (written: GNU time's
# file system outputs, in 512-byte blocks).
timed() {
  local log=$1; shift
  /usr/bin/time -f '%e %M %O' -o "$log.time" "$@" > "$log" 2>&1 || { echo "error: run failed, see $log" >&2; cat "$log" >&2; exit 1; }
  awk '{printf "%.1f %.0f %.0f\n", $1, $2 / 1024, $3 * 512 / 1e6}' "$log.time"
}
printf '%-6s %-6s %10s %12s %12s\n' pair who wall_s peak_rss_MB written_MB
for i in $(seq 1 "$pairs"); do
  rm -rf "$tmp/ours" "$tmp/theirs"; mkdir -p "$tmp/theirs"
  read -r w r o < <(timed "$tmp/ours.log" env RETRO_CLUSTER__THREADS="$threads" "$ours" --plan "$plan" --output "$tmp/ours/tb" --checkpoints "$tmp/ours/ck")
  printf '%-6s %-6s %10s %12s %12s\n' "$i" ours "$w" "$r" "$o"; echo "$w $r $o" >> "$tmp/ours.all"
  read -r w r o < <(timed "$tmp/theirs.log" "$theirs" --m "$m" --p "$p" "${peer_areas[@]}" --threads "$threads" --ckpt-mins 0 --dir "$tmp/theirs")
  printf '%-6s %-6s %10s %12s %12s\n' "$i" peer "$w" "$r" "$o"; echo "$w $r $o" >> "$tmp/theirs.all"
done
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
ow=$(cut -d' ' -f1 "$tmp/ours.all" | median); tw=$(cut -d' ' -f1 "$tmp/theirs.all" | median)
orss=$(cut -d' ' -f2 "$tmp/ours.all" | median); trss=$(cut -d' ' -f2 "$tmp/theirs.all" | median)
echo "median wall: ours $ow s, peer $tw s, ratio ours/peer $(awk -v a="$ow" -v b="$tw" 'BEGIN {printf "%.2f", a / b}') (target <= 0.5)"
echo "median peak RSS: ours $orss MB, peer $trss MB, ratio $(awk -v a="$orss" -v b="$trss" 'BEGIN {printf "%.1f", a / b}') (target <= 5)"
# The two programs' own counts of the last pair, to compare by eye (each is
# checked against the published Table 1 row by its own tests).
echo "our result (last pair):"; grep -E 'positions$|^both|^start' "$tmp/ours.log" | sed 's/^/  /' || true
echo "peer result (last pair):"; grep -E 'paper-style|TABLE-1' "$tmp/theirs.log" | sed 's/^/  /' || true
