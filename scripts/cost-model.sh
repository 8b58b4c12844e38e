#!/usr/bin/env bash
# What a job costs on rented machines: hours and euros for N machines of a type,
# from per-position work measured on the reference machine (docs/BENCHMARKS.md,
# docs/OPERATIONS.md "Cost model"). Prints the formula with every term.
#
#   scripts/cost-model.sh [--job JOB] [--machine TYPE] [--count "1 2 4 8"]
#                         [--core-speed X] [--link-gbit G] [--price EUR_PER_HOUR] [--check]
#
#   JOB          stage2 (default), cc2-m7p3, cc2-m7p4, cc2-m5p6, cc2-m6p6, cc2-m7p6, stage3
#   TYPE         ccx33 (default: 8 dedicated vCPU, 32 GB), ccx63 (48, 192 GB),
#                ref (the reference machine itself: 2 cores, 24 GB, price 0), or
#                node:CORES:GB (a node of a cluster you already have, e.g. a Slurm
#                partition's node:64:256; price 0 unless --price, no setup time)
#   --core-speed one core of TYPE against one core of the reference machine
#                (default 1.0; estimate it from `coordinator bench --threads 1` on the
#                rented machine against the reference figures in docs/BENCHMARKS.md)
#   --link-gbit  each machine's link rate (default 1)
#   --price      euros per machine-hour (default: the list price below; check
#                hetzner.com/cloud before spending, prices change)
#   --check      then run the job's plan embedded on this machine (target/release,
#                a temporary directory) and print the measured wall time beside the
#                projection for one reference machine (times --core-speed): how far
#                the model is off here. cc2-m7p3 takes under a minute; stage2 hours.
#
# Model, for n workers of c cores at relative speed s, plus one coordinator:
#   T = setup + P*count/(n*c*s) + K*P*layer/(n*c*s*e(n)) + R*round + W(n)/(L) + P*analysis/(c*s)
#   e(n) = 1/(1 + alpha*(n-1))             parallel efficiency (measured, bench-scaling.sh)
#   W(n) = b*D*(n-1)/n^2                  bytes each machine sends (D = K*P decided at most)
#   euros = (n + 1) * price * ceil(T in hours)   (Hetzner bills every started hour)
#   memory per worker = 1.1*P/n bytes + 1 GB (the layer's byte per position resident;
#   the move counts are mapped a shard at a time); refused above 90 % of the machine's
#   memory, and then the smallest count that fits is shown too
set -euo pipefail

job=stage2
machine=ccx33
counts="1 2 4 8"
speed=1.0
link=1
price=""
check=0
while [ $# -gt 0 ]; do
  case "$1" in
    --job) job=$2; shift 2 ;;
    --machine) machine=$2; shift 2 ;;
    --count) counts=$2; shift 2 ;;
    --core-speed) speed=$2; shift 2 ;;
    --link-gbit) link=$2; shift 2 ;;
    --price) price=$2; shift 2 ;;
    --check) check=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

# Machine types: cores, memory (GB), euros per hour (list price, Hetzner Cloud,
# Germany, excluding VAT; the monthly cap is irrelevant for jobs of hours).
case "$machine" in
  ccx33) cores=8; mem_gb=32; list_price=0.0925 ;;
  ccx63) cores=48; mem_gb=192; list_price=0.5501 ;;
  ref) cores=2; mem_gb=24; list_price=0 ;;
  node:*:*)
    IFS=: read -r _ cores mem_gb <<<"$machine"
    [[ $cores =~ ^[1-9][0-9]*$ && $mem_gb =~ ^[1-9][0-9]*$ ]] || { echo "--machine node:CORES:GB wants two whole numbers, not $machine" >&2; exit 2; }
    list_price=0 ;;
  *) echo "unknown machine type $machine (ccx33, ccx63, ref, node:CORES:GB)" >&2; exit 2 ;;
esac
price=${price:-$list_price}

# Job profiles, per stored position, in core-seconds of the reference machine
# (the one docs/BENCHMARKS.md calls epyc-l2-2m: AMD EPYC, 2 vCPU, L2 2 MiB, L3 32 MiB):
#   P stored positions, K layers, R rounds in all, count / layer / analysis
#   core-seconds per position, b wire bytes per decided position when every
#   record crosses the network, alpha (parallel loss per added worker), round
#   (seconds of fixed cost per round: barrier, coordinator, latency), setup
#   (seconds to provision and start).
# cc2-m7p3: `scripts/bench-scaling.sh --workers "1 2 3" --rate 1gbit` on 2026-12-04
# (43ff7fc, an idle machine; docs/OPERATIONS.md "Cost model"): count and layer
# from one pinned worker, 4.1 s of move counts and 32.8 s busy in rounds on one
# core for 141,219,540 stored positions; round from its 0.3 s of rounds beyond its
# busy time in 50 rounds; alpha from two workers (rounds 33.1 s -> 21.2 s); b from
# the bridge bytes of two and three workers (0.273 and 0.352 per decided position
# with 1/2 and 2/3 of the records remote).
case "$job" in
  cc2-m7p3) P=141219540; K=1; R=50; count=2.90e-8; layer=2.32e-7; analysis=0; b=0.54; alpha=0.28; round=0.006 ;;
  # stage 2: its cluster run of 2026-12-03/04 on this machine (3 workers sharing
  # 2 cores, 15f5dd7: before the sorted apply of 43ff7fc, so an upper bound):
  # move counts 276 s, the three layers 8,842 s less those counts, the analysis
  # 2,054 s, all on 2 cores (core-seconds = 2 x wall); 187 rounds; b from 0.225
  # payload bytes per decided position with 2/3 remote, plus cc2's framing (19 %).
  stage2) P=14841300390; K=3; R=187; count=3.72e-8; layer=3.85e-7; analysis=2.77e-7; b=0.40; alpha=0.28; round=0.006 ;;
  # Two-player 7 x 7 with 4 pieces, folded by colour and mirror (about a
  # quarter stored: 0.2525 for 3 pieces, 0.2508 for 4): a state far beyond any
  # cache, like stage 2's, so stage 2's work per position; 60 rounds measured.
  cc2-m7p4) P=15835337595; K=1; R=60; count=3.72e-8; layer=3.85e-7; analysis=0; b=0.40; alpha=0.28; round=0.006 ;;
  # Six pieces: the rates of the 5 x 5 x 6 run on this machine (2026-12-06,
  # 14489c9, an Intel Xeon, 2 cores, the literal reading, embedded, 2
  # threads; docs/BENCHMARKS.md): move counts 139 s, the layer 790.4 s in 69
  # rounds for 2,410,949,520 stored positions (core-seconds = 2 x wall), a
  # 2.4 GB state already far beyond the cache, as 6 x 6 and 7 x 7 are. Stored
  # counts: `coordinator estimate` on plans/cc2-m6p6.toml and cc2-m7p6.toml;
  # their rounds guessed (the depth grows with the board: 38 on 4 x 4, 69 on 5 x 5).
  cc2-m5p6) P=2410949520; K=1; R=69; count=1.153e-7; layer=6.557e-7; analysis=0; b=0.40; alpha=0.28; round=0.006 ;;
  cc2-m6p6) P=578944875600; K=1; R=110; count=1.153e-7; layer=6.557e-7; analysis=0; b=0.40; alpha=0.28; round=0.006 ;;
  cc2-m7p6) P=42645604101646; K=1; R=160; count=1.153e-7; layer=6.557e-7; analysis=0; b=0.40; alpha=0.28; round=0.006 ;;
  # Stage 3: 1.30e21 positions (coordinator estimate --plan plans/stage3.toml),
  # beyond u64 ranks; twice stage 2's work per position (6 pieces, not 3). The
  # figures show why it is out of reach.
  stage3) P=1300023027202861390968; K=3; R=300; count=7.44e-8; layer=7.70e-7; analysis=5.54e-7; b=0.40; alpha=0.28; round=0.006 ;;
  *) echo "unknown job $job (stage2, cc2-m7p3, cc2-m7p4, cc2-m5p6, cc2-m6p6, cc2-m7p6, stage3)" >&2; exit 2 ;;
esac
setup=300
[ "$machine" = ref ] && setup=0
[[ $machine == node:* ]] && setup=0
if [ "$check" -eq 1 ]; then
  case "$job" in
    cc2-m7p3|cc2-m7p4|stage2) plan=plans/$job.toml ;;
    cc2-m5p6) plan=plans/cc2-m5p6-literal.toml ;;
    *) echo "--check: no plan for $job (cc2-m7p3, cc2-m7p4, cc2-m5p6, stage2)" >&2; exit 2 ;;
  esac
fi

echo "job $job: P = $P positions, K = $K layers, R = $R rounds; $machine: $cores cores, $mem_gb GB, $price EUR/h, core speed $speed, link $link Gbit/s"
echo "per position (reference core-seconds): count $count, layer $layer, analysis $analysis; b = $b B; alpha = $alpha; round = $round s; setup = $setup s"
# model COUNTS CORES MEM_GB SETUP MODE: the table (MODE table) or, for the
# first count, the projected seconds alone (MODE seconds).
model() {
  awk -v P="$P" -v K="$K" -v R="$R" -v cnt="$count" -v lay="$layer" -v ana="$analysis" -v b="$b" \
    -v alpha="$alpha" -v round="$round" -v setup="$4" -v c="$2" -v mem="$3" -v s="$speed" \
    -v L="$link" -v price="$price" -v counts="$1" -v mode="$5" '
  function hours(x) { return x / 3600 }
  BEGIN {
    if (mode == "table")
      printf "%8s %10s %10s %10s %10s %10s %12s %10s %12s\n", "workers", "counts h", "layers h", "rounds h", "net h", "analysis h", "total h", "EUR", "GB/worker"
    n_list = split(counts, ns, " ")
    need = 1.1 * P / 1e9 / (0.9 * mem - 1); if (need > int(need)) need = int(need) + 1
    if (mode == "table" && need > ns[n_list] + 0) ns[++n_list] = need
    for (i = 1; i <= n_list; i++) {
      n = ns[i] + 0
      e = 1 / (1 + alpha * (n - 1))
      t_count = P * cnt / (n * c * s)
      t_layers = K * P * lay / (n * c * s * e)
      t_rounds = R * round
      t_net = (n > 1) ? b * K * P * (n - 1) / (n * n) / (L * 1e9 / 8) : 0
      t_ana = P * ana / (c * s)
      total = setup + t_count + t_layers + t_rounds + t_net + t_ana
      if (mode == "seconds") { printf "%.1f\n", total; exit }
      gb = (1.1 * P / n) / 1e9 + 1
      fits = (gb <= 0.9 * mem)
      billed = int(hours(total)); if (billed < hours(total)) billed++
      euros = (n + 1) * price * billed
      if (fits)
        printf "%8.4g %10.4g %10.4g %10.4g %10.4g %10.4g %12.4g %10.4g %12.4g\n", n, hours(t_count), hours(t_layers), hours(t_rounds), hours(t_net), hours(t_ana), hours(total), euros, gb
      else
        printf "%8.4g does not fit: %.4g GB per worker, %d GB each; needs at least %.0f workers\n", n, gb, mem, need
    }
  }'
}
model "$counts" "$cores" "$mem_gb" "$setup" table

[ "$check" -eq 1 ] || exit 0
# The check: the same job embedded on this machine, timed, beside the
# projection for one reference machine (2 cores, no setup) at --core-speed.
cd "$(dirname "$0")/.."
bin=target/release/coordinator
[ -x "$bin" ] || { echo "--check needs $bin: cargo build --release" >&2; exit 1; }
projected=$(model 1 2 24 0 seconds)
dir=$(mktemp -d /tmp/cost-check.XXXXXX)
trap 'rm -rf "$dir"' EXIT
echo "check: $bin --plan $plan (embedded, all cores of this machine; state in $dir)"
started=$(date +%s.%N)
"$bin" --plan "$plan" --checkpoints "$dir/ck" --output "$dir/tb" > "$dir/log" 2>&1 \
  || { echo "the run failed:" >&2; tail -5 "$dir/log" >&2; exit 1; }
ended=$(date +%s.%N)
awk -v t0="$started" -v t1="$ended" -v p="$projected" -v s="$speed" 'BEGIN {
  m = t1 - t0
  printf "check: measured %.1f s; projected %.1f s for one reference machine at core speed %s: %+.0f %%\n", m, p, s, (p / m - 1) * 100
}'
