#!/usr/bin/env bash
# What a job costs on rented machines: hours and euros for N machines of a type,
# from per-position work measured on the reference machine (docs/BENCHMARKS.md,
# docs/OPERATIONS.md "Cost model"). Prints the formula with every term.
#
#   scripts/cost-model.sh [--job JOB] [--machine TYPE] [--count "1 2 4 8"]
#                         [--core-speed X] [--link-gbit G] [--price EUR_PER_HOUR]
#
#   JOB          stage2 (default), cc2-m7p3, cc2-m7p4, cc2-m7p6, stage3
#   TYPE         ccx33 (default: 8 dedicated vCPU, 32 GB), ccx63 (48, 192 GB),
#                or ref (the reference machine itself: 2 cores, 24 GB, price 0)
#   --core-speed one core of TYPE against one core of the reference machine
#                (default 1.0; estimate it from `coordinator bench --threads 1` on the
#                rented machine against the reference figures in docs/BENCHMARKS.md)
#   --link-gbit  each machine's link rate (default 1)
#   --price      euros per machine-hour (default: the list price below; check
#                hetzner.com/cloud before spending, prices change)
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
while [ $# -gt 0 ]; do
  case "$1" in
    --job) job=$2; shift 2 ;;
    --machine) machine=$2; shift 2 ;;
    --count) counts=$2; shift 2 ;;
    --core-speed) speed=$2; shift 2 ;;
    --link-gbit) link=$2; shift 2 ;;
    --price) price=$2; shift 2 ;;
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
  *) echo "unknown machine type $machine (ccx33, ccx63, ref)" >&2; exit 2 ;;
esac
price=${price:-$list_price}

# Job profiles, per stored position, in core-seconds of the reference machine
# (AMD EPYC, 2 cores, 1 MiB L2 per core, 32 MiB L3; docs/BENCHMARKS.md):
#   P stored positions, K layers, R rounds in all, count / layer / analysis
#   core-seconds per position, b wire bytes per decided position when every
#   record crosses the network, alpha (parallel loss per added worker), round
#   (seconds of fixed cost per round: barrier, coordinator, latency), setup
#   (seconds to provision and start).
# cc2-m7p3: scripts/bench-scaling.sh --rate 1gbit on 2026-12-01 (count and layer
# from one pinned worker: 35.8 s and 168.1 s on one core; alpha from two workers,
# rounds 168.4 s -> 100.4 s; b from the bridge bytes of two and three workers,
# 0.225 and 0.288 per decided position with 1/2 and 2/3 of the records remote;
# round from one worker, 0.3 s of rounds beyond its busy time in 50 rounds).
# The other jobs take alpha, b and round from it.
case "$job" in
  cc2-m7p3) P=279676320; K=1; R=50; count=1.28e-7; layer=6.01e-7; analysis=0; b=0.45; alpha=0.19; round=0.01 ;;
  # stage 2: the run of 2026-11-29/30 (move counts 18 min 45 s on 2 cores;
  # enable(A>C) 85 min on 2 cores, an idle machine, the kernel before the routed
  # round: an upper bound); analysis 4,491 core-seconds; 187 rounds.
  stage2) P=14841300390; K=3; R=187; count=1.52e-7; layer=6.87e-7; analysis=3.03e-7; b=0.45; alpha=0.19; round=0.01 ;;
  # Two-player 7 x 7 with 4 and 6 pieces, colour symmetry folded (half the
  # positions stored): cc2-m7p3's work per position times pieces/3 (moves per
  # position grow with the pieces), rounds guessed.
  cc2-m7p4) P=31568464620; K=1; R=70; count=1.71e-7; layer=8.01e-7; analysis=0; b=0.45; alpha=0.19; round=0.01 ;;
  cc2-m7p6) P=85251690988464; K=1; R=100; count=2.56e-7; layer=1.20e-6; analysis=0; b=0.45; alpha=0.19; round=0.01 ;;
  # Stage 3: 1.30e21 positions (coordinator estimate --plan plans/stage3.toml),
  # beyond u64 ranks; the figures show why it is out of reach.
  stage3) P=1300023027202861390968; K=3; R=300; count=3.0e-7; layer=1.4e-6; analysis=6.0e-7; b=0.45; alpha=0.19; round=0.01 ;;
  *) echo "unknown job $job (stage2, cc2-m7p3, cc2-m7p4, cc2-m7p6, stage3)" >&2; exit 2 ;;
esac
setup=300
[ "$machine" = ref ] && setup=0

echo "job $job: P = $P positions, K = $K layers, R = $R rounds; $machine: $cores cores, $mem_gb GB, $price EUR/h, core speed $speed, link $link Gbit/s"
echo "per position (reference core-seconds): count $count, layer $layer, analysis $analysis; b = $b B; alpha = $alpha; round = $round s; setup = $setup s"
awk -v P="$P" -v K="$K" -v R="$R" -v cnt="$count" -v lay="$layer" -v ana="$analysis" -v b="$b" \
  -v alpha="$alpha" -v round="$round" -v setup="$setup" -v c="$cores" -v mem="$mem_gb" -v s="$speed" \
  -v L="$link" -v price="$price" -v counts="$counts" '
  function hours(x) { return x / 3600 }
  BEGIN {
    printf "%8s %10s %10s %10s %10s %10s %12s %10s %12s\n", "workers", "counts h", "layers h", "rounds h", "net h", "analysis h", "total h", "EUR", "GB/worker"
    n_list = split(counts, ns, " ")
    need = 1.1 * P / 1e9 / (0.9 * mem - 1); if (need > int(need)) need = int(need) + 1
    if (need > ns[n_list] + 0) ns[++n_list] = need
    for (i = 1; i <= n_list; i++) {
      n = ns[i] + 0
      e = 1 / (1 + alpha * (n - 1))
      t_count = P * cnt / (n * c * s)
      t_layers = K * P * lay / (n * c * s * e)
      t_rounds = R * round
      t_net = (n > 1) ? b * K * P * (n - 1) / (n * n) / (L * 1e9 / 8) : 0
      t_ana = P * ana / (c * s)
      total = setup + t_count + t_layers + t_rounds + t_net + t_ana
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
