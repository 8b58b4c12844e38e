#!/usr/bin/env bash
# How fast the explorer answers positions drawn at random from a solved job:
# solves PLAN (unless --tablebase names a solved directory), serves it with
# `coordinator serve` on a loopback port, asks `/api/position?rank=R` for
# SAMPLES random legal ranks one after another, and prints the latency
# percentiles (p50, p95, p99, max) and how many answers lacked the plies to
# the end of a decided value.
#
#   scripts/bench-explorer.sh [--bin target/release/coordinator] [--plan plans/cc2-m7p3.toml]
#                             [--tablebase DIR] [--samples 1000] [--seed 1]
#
# Figures only, nothing asserted: docs/BENCHMARKS.md records them with the
# machine. Needs python3 (standard library only).
set -euo pipefail
usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; }
bin=target/release/coordinator; plan=plans/cc2-m7p3.toml; tb=""; samples=1000; seed=1
while [[ $# -gt 0 ]]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --bin) bin=$2; shift 2 ;;
    --plan) plan=$2; shift 2 ;;
    --tablebase) tb=$2; shift 2 ;;
    --samples) samples=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; usage; exit 2 ;;
  esac
done
[[ -x $bin ]] || { echo "$bin is not an executable (cargo build --release)" >&2; exit 2; }
# shellcheck source=scripts/bench-common.sh
source scripts/bench-common.sh
bench_machine
work=$(mktemp -d /tmp/bench-explorer.XXXXXX)
server=""
cleanup() { [[ -n $server ]] && kill "$server" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
if [[ -z $tb ]]; then
  echo "solving $plan into $work/tb"
  "$bin" --plan "$plan" --output "$work/tb" --checkpoints "$work/ck" -q > "$work/solve.out" 2> "$work/solve.err" \
    || { cat "$work/solve.err" >&2; exit 1; }
  tb=$work/tb
fi
"$bin" serve --tablebase "$tb" --listen 127.0.0.1:0 -q 2> "$work/serve.err" &
server=$!
for _ in $(seq 100); do
  addr=$(sed -n 's/^listening on //p' "$work/serve.err")
  [[ -n $addr ]] && break
  sleep 0.1
done
[[ -n $addr ]] || { echo "the explorer did not start:" >&2; cat "$work/serve.err" >&2; exit 1; }
echo "explorer on $addr over $tb; $samples random positions, seed $seed"
python3 - "$addr" "$tb" "$samples" "$seed" <<'PY'
import glob, json, random, struct, sys, time, urllib.error, urllib.request
addr, tb, samples, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
# The positions in the first tablebase file's header (docs/FORMAT.md, section 1).
with open(sorted(glob.glob(tb + "/*.tb"))[0], "rb") as f:
    head = f.read(16)
    positions = json.loads(f.read(struct.unpack("<I", head[12:16])[0]))["positions"]
rng = random.Random(seed)
times, unknown, illegal = [], 0, 0
while len(times) < samples:
    rank = rng.randrange(positions)
    t = time.perf_counter()
    try:
        with urllib.request.urlopen(f"http://{addr}/api/position?rank={rank}") as r:
            body = json.loads(r.read())
    except urllib.error.HTTPError as e:
        if e.code == 404:  # an illegal placement: drawn again
            illegal += 1
            continue
        raise
    times.append(time.perf_counter() - t)
    # Plies missing: a decided two-player value without them, or a
    # three-player answer's depth line without them.
    decided = body.get("position", {}).get("value") in ("win", "loss")
    missing = (decided and body.get("plies") is None) or any(d.get("plies") is None for d in body.get("depth", []))
    unknown += bool(missing)
times.sort()
pct = lambda p: times[min(len(times) - 1, int(p * len(times)))] * 1000
print(f"{len(times)} answers ({illegal} illegal ranks drawn again): p50 {pct(0.5):.1f} ms, p95 {pct(0.95):.1f} ms, "
      f"p99 {pct(0.99):.1f} ms, max {times[-1] * 1000:.1f} ms; {unknown} with plies to the end unknown")
PY
