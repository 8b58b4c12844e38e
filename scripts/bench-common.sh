#!/usr/bin/env bash
# Shared by the side-by-side benchmarks (bench-peer.sh, bench-peg-peer.sh):
# sourced, not run. Defines:
#   bench_machine          one line naming this machine (CPU, cores, caches, memory)
#   bench_timed LOG CMD..  runs CMD under GNU time, output to LOG; prints
#                          "wall_s peak_rss_MB written_MB" (written: file system
#                          outputs, 512-byte blocks); stops the script if CMD fails
#   bench_median           the median of the numbers on standard input
#   bench_ratio A B        A / B to two decimals
bench_machine() {
  echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores," \
    "L2 $(lscpu | sed -n 's/^L2 cache: *//p'), L3 $(lscpu | sed -n 's/^L3 cache: *//p')," \
    "$(awk '/MemTotal/ {printf "%.0f GB", $2/1e6}' /proc/meminfo)"
}
bench_timed() {
  local log=$1; shift
  /usr/bin/time -f '%e %M %O' -o "$log.time" "$@" > "$log" 2>&1 || { echo "error: run failed, see $log" >&2; cat "$log" >&2; exit 1; }
  awk '{printf "%.2f %.0f %.0f\n", $1, $2 / 1024, $3 * 512 / 1e6}' "$log.time"
}
bench_median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
bench_ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
