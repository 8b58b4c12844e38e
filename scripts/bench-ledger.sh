#!/usr/bin/env bash
# Coordinator builds side by side on a peg ledger plan (default the English
# board, plans/peg-english.toml), run in turn, N rounds (default 5): for each
# build and round, the whole job from nothing, then a ledger-only run (the
# output removed, every level resumed from that run's checkpoints). Prints wall
# seconds, user and system seconds and peak RSS of each run, then the medians per build.
#
#   scripts/bench-ledger.sh [--plan plans/peg-english.toml] [--rounds N] BIN...
#
# BIN is a coordinator binary, for example target/release/coordinator and a
# copy of an older build kept outside the repository. Runs go under a
# temporary directory that is removed at the end. Needs GNU time
# (/usr/bin/time). Figures only, nothing asserted: docs/BENCHMARKS.md records
# them with the machine.
set -euo pipefail
usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; }
plan=plans/peg-english.toml; rounds=5; bins=()
while [[ $# -gt 0 ]]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --plan) plan=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    -*) echo "unknown option $1" >&2; usage; exit 2 ;;
    *) bins+=("$1"); shift ;;
  esac
done
[[ ${#bins[@]} -ge 1 ]] || { usage; exit 2; }
[[ -x /usr/bin/time ]] || { echo "GNU time (/usr/bin/time) is needed" >&2; exit 2; }
[[ -f $plan ]] || { echo "no plan at $plan" >&2; exit 2; }
for b in "${bins[@]}"; do [[ -x $b ]] || { echo "$b is not an executable" >&2; exit 2; }; done
plan=$(realpath "$plan")
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-ledger.XXXXXX")
trap 'rm -rf "$work"' EXIT

# One timed run: prints "wall user system peak_rss_kb".
timed() {
  local out=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$out.time" "$@" >"$out.log" 2>&1 || {
    echo "run failed, log:" >&2; tail -20 "$out.log" >&2; exit 1; }
  cat "$out.time"
}

for r in $(seq "$rounds"); do
  for i in "${!bins[@]}"; do
    b=${bins[$i]}; d=$work/$i; rm -rf "$d"; mkdir -p "$d"
    full=$(timed "$d/full" "$b" --plan "$plan" --checkpoints "$d/ck" --output "$d/out")
    rm -rf "$d/out"
    ledger=$(timed "$d/ledger" "$b" --plan "$plan" --checkpoints "$d/ck" --output "$d/out")
    echo "round $r build $i ($b): full wall/user/sys/rssKB = $full; ledger-only = $ledger"
    echo "$i $full $ledger" >>"$work/all"
  done
done

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
echo
echo "medians over $rounds rounds (wall s, peak RSS MB):"
for i in "${!bins[@]}"; do
  sel() { awk -v i="$i" -v c="$1" '$1==i {print $c}' "$work/all" | median; }
  awk -v b="${bins[$i]}" -v fw="$(sel 2)" -v fm="$(sel 5)" -v lw="$(sel 6)" -v lm="$(sel 9)" \
    'BEGIN {printf "  %s: full %s s, %.0f MB; ledger-only %s s, %.0f MB\n", b, fw, fm/1024, lw, lm/1024}'
done
