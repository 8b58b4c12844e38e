#!/usr/bin/env bash
# The ranked game's layer beside one first-winner layer of the same star, back
# to back, each from nothing in one process: `coordinator --plan
# plans/stage2-ranked.toml` until "layer top2(A) solved", then `coordinator
# --plan plans/stage2.toml` until "layer solo(A) solved" (each stopped there
# with SIGTERM; the first-winner job's other layers are not run). Prints each
# layer's seconds from the start of its process (move counts, init, rounds,
# the tablebase written), its rounds' seconds, its peak RSS, and the ratio.
#
#   scripts/bench-ranked.sh [--bin target/release/coordinator] [--dir DIR] [--order 2]
#
# --order 1 runs the stage-1 plans instead (seconds, for trying the script).
# DIR (default: a new temporary directory) holds each run's checkpoints,
# tablebase and log (ranked.err, first-winner.err); the checkpoints are
# removed after each run. Stage 2 needs about 15 GB of memory and 45 GB of disk
# and takes about an hour and a half on 2 cores; nothing else should run
# meanwhile. Not resumable: an interrupted pair is run again. Figures only,
# nothing asserted: docs/BENCHMARKS.md records them with the machine.
set -euo pipefail
usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; }
bin=target/release/coordinator; dir=""; order=2
while [[ $# -gt 0 ]]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --bin) bin=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --order) order=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; usage; exit 2 ;;
  esac
done
[[ -x $bin ]] || { echo "$bin is not an executable (cargo build --release)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "GNU time (/usr/bin/time) is needed" >&2; exit 2; }
case $order in
  1) ranked=plans/stage1-ranked.toml; first=plans/stage1.toml ;;
  2) ranked=plans/stage2-ranked.toml; first=plans/stage2.toml ;;
  *) echo "--order is 1 or 2" >&2; exit 2 ;;
esac
dir=${dir:-$(mktemp -d /tmp/bench-ranked.XXXXXX)}
mkdir -p "$dir"
echo "bench-ranked: $bin, $ranked then $first, in $dir"

# Runs one plan until its first layer is solved; prints "seconds round_seconds peak_kb".
layer_run() { # name plan layer
  local name=$1 plan=$2 layer=$3 start pid solved=""
  rm -rf "${dir:?}/$name"
  mkdir -p "$dir/$name"
  start=$(date +%s.%N)
  /usr/bin/time -v -o "$dir/$name.time" "$bin" --plan "$plan" --output "$dir/$name/tb" \
    --checkpoints "$dir/$name/ck" --ignore-resources > "$dir/$name.out" 2> "$dir/$name.err" &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    if grep -q "layer $layer solved" "$dir/$name.err"; then
      solved=$(date +%s.%N)
      pkill -TERM -P "$pid" 2>/dev/null || true
      break
    fi
    sleep 1
  done
  wait "$pid" || true
  # A small job can end between two looks: the line is there, and so is its end.
  if [[ -z "$solved" ]] && grep -q "layer $layer solved" "$dir/$name.err"; then solved=$(date +%s.%N); fi
  rm -rf "${dir:?}/$name/ck"
  [[ -n "$solved" ]] || { echo "$name: the layer was not solved; see $dir/$name.err" >&2; exit 1; }
  local rounds peak
  rounds=$(grep -o "round_seconds=[0-9.]*" "$dir/$name.err" | cut -d= -f2 | awk '{ s += $1 } END { printf "%.1f", s }')
  peak=$(awk -F': ' '/Maximum resident/ { print $2 }' "$dir/$name.time")
  echo "$(echo "$solved - $start" | bc) $rounds $peak"
}

read -r r_s r_rounds r_kb < <(layer_run ranked "$ranked" "top2(A)")
[[ -n ${r_s:-} ]] || exit 1
echo "ranked top2(A): $r_s s to the tablebase, rounds $r_rounds s, peak RSS $r_kb kB"
read -r f_s f_rounds f_kb < <(layer_run first-winner "$first" "solo(A)")
[[ -n ${f_s:-} ]] || exit 1
echo "first-winner solo(A): $f_s s to the tablebase, rounds $f_rounds s, peak RSS $f_kb kB"
echo "ratio ranked / first-winner: $(echo "scale=3; $r_s / $f_s" | bc)"
