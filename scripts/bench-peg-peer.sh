#!/usr/bin/env bash
# Our peg-solitaire job beside the public Rust BFS solver, on the same machine,
# back to back: the English board from the central vacancy, N pairs (default
# 3), wall time and peak RSS of each run, the medians and the ratios ours /
# theirs (targets: time at most 0.15, peak RSS at most 1.0).
#
#   scripts/bench-peg-peer.sh PEER_DIR [--pairs N] [--build DIR] [--plan PLAN]
#
# PEER_DIR is a local checkout of GitHub BerndAmend/peg-solitaire-rust (git
# clone https://github.com/BerndAmend/peg-solitaire-rust); the project never
# contains its code. Its naive CPU backend is what runs: the checkout is copied
# to DIR (default ${XDG_CACHE_HOME:-~/.cache}/retro-bench/peg-solitaire-rust,
# outside this repository), its LLVM and OpenCL backends are removed from the
# copy (they need an LLVM 10 and an OpenCL toolchain, and take no part in the
# naive run), and the copy is built with its own .cargo/config.toml
# (target-cpu=native). Ours is built with RUSTFLAGS="-C target-cpu=native" in
# target/native, as scripts/bench-peer.sh does, and runs PLAN (default
# plans/peg-english.toml: every level, then the ledger checked against the six
# OEIS sequences). The peer keeps every level in memory and counts positions up
# to symmetry; its count is printed beside ours to compare by eye.
# Figures only, nothing asserted: docs/BENCHMARKS.md records them with the machine.
set -euo pipefail
usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; }
[[ $# -ge 1 && "$1" != -h && "$1" != --help ]] || { usage; exit 2; }
peer=$1; shift
pairs=3; build="${XDG_CACHE_HOME:-$HOME/.cache}/retro-bench/peg-solitaire-rust"; plan=plans/peg-english.toml
while [[ $# -gt 0 ]]; do
  case $1 in
    --pairs) pairs=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --plan) plan=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; usage; exit 2 ;;
  esac
done
[[ -f "$peer/src/naive.rs" && -f "$peer/src/main.rs" ]] ||
  { echo "error: $peer has no src/naive.rs (want a checkout of BerndAmend/peg-solitaire-rust)" >&2; exit 2; }
[[ $pairs =~ ^[1-9][0-9]*$ ]] || { echo "error: --pairs wants a positive number, not $pairs" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "error: GNU time (/usr/bin/time) is needed for peak RSS" >&2; exit 2; }
peer=$(cd "$peer" && pwd)
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-common.sh
source scripts/bench-common.sh
[[ -f "$plan" ]] || { echo "error: no plan $plan" >&2; exit 2; }

echo "== building the peer's naive backend in $build"
rm -rf "$build"; mkdir -p "$build"
(cd "$peer" && tar --exclude=./target --exclude=./.git -cf - .) | (cd "$build" && tar -xf -)
rm -f "$build/src/llvm.rs" "$build/src/opencl.rs"
# The two GPU/JIT backends: their modules, their match arms and their crates.
sed -i -e '/^mod llvm;$/d' -e '/^mod opencl;$/d' -e '/"llvm" => /d' -e '/"opencl" => /d' "$build/src/main.rs"
sed -i -e '/^inkwell *=/d' -e '/^ocl *=/d' "$build/Cargo.toml"
grep -qE 'llvm::|opencl::' "$build/src/main.rs" &&
  { echo "error: the peer's main.rs still names a removed backend; its layout changed" >&2; exit 1; }
(cd "$build" && CARGO_TARGET_DIR="$build/target" cargo build --release --quiet)
theirs="$build/target/release/peg_solitaire"
board=$(sed -n 's/^board *= *"\(.*\)".*/\1/p' "$plan" | head -1)
case $board in english) peer_board=english ;; european) peer_board=euro ;;
  *) echo "error: the peer solves the English and European boards, not '$board'" >&2; exit 2 ;; esac

echo "== building ours (target-cpu=native, as the peer's)"
RUSTFLAGS="-C target-cpu=native" CARGO_TARGET_DIR=target/native cargo build --release --quiet --bin coordinator
ours=target/native/release/coordinator
bench_machine
echo "peer: $(git -C "$peer" rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout') ($theirs $peer_board naive)"
echo "ours: $(git rev-parse --short HEAD) ($ours --plan $plan)"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-peg-peer.XXXXXX"); trap 'rm -rf "$tmp"' EXIT
printf '%-6s %-6s %10s %12s\n' pair who wall_s peak_rss_MB
for i in $(seq 1 "$pairs"); do
  rm -rf "$tmp/ours"
  read -r w r _ < <(bench_timed "$tmp/ours.log" "$ours" --plan "$plan" --output "$tmp/ours/out" --checkpoints "$tmp/ours/ck")
  printf '%-6s %-6s %10s %12s\n' "$i" ours "$w" "$r"; echo "$w $r" >> "$tmp/ours.all"
  read -r w r _ < <(bench_timed "$tmp/theirs.log" "$theirs" "$peer_board" naive)
  printf '%-6s %-6s %10s %12s\n' "$i" peer "$w" "$r"; echo "$w $r" >> "$tmp/theirs.all"
done
ow=$(cut -d' ' -f1 "$tmp/ours.all" | bench_median); tw=$(cut -d' ' -f1 "$tmp/theirs.all" | bench_median)
orss=$(cut -d' ' -f2 "$tmp/ours.all" | bench_median); trss=$(cut -d' ' -f2 "$tmp/theirs.all" | bench_median)
echo "median wall: ours $ow s, peer $tw s, ratio ours/peer $(bench_ratio "$ow" "$tw") (target <= 0.15)"
echo "median peak RSS: ours $orss MB, peer $trss MB, ratio $(bench_ratio "$orss" "$trss") (target <= 1.0)"
echo "our result (last pair):"; grep -iE 'oeis|sequence|positions' "$tmp/ours.log" | tail -8 | sed 's/^/  /' || true
echo "peer result (last pair):"; grep -E 'number of possible fields' "$tmp/theirs.log" | sed 's/^/  /' || true
