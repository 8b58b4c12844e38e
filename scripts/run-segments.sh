#!/usr/bin/env bash
# The wall time of a long run that was stopped and resumed, from its log: one row per process.
#   scripts/run-segments.sh LOG
# LOG is the coordinator's output appended across resumes, with a line starting `===` written
# before each resume, e.g.
#   echo "=== resume $(date -u +%FT%TZ)" >> LOG; coordinator --plan P >> LOG 2>&1
# A process's time is its first to its last `tracing` timestamp, so the table is a lower
# bound on each process's life and leaves out the gaps between processes. Prints a
# Markdown table and the total.
set -euo pipefail
log=${1:?usage: scripts/run-segments.sh LOG}
[[ -r "$log" ]] || { echo "cannot read $log" >&2; exit 2; }
TZ=UTC awk '
function epoch(stamp,   a) {
  gsub(/[-:TZ]/, " ", stamp); split(stamp, a, " ")
  return mktime(a[1] " " a[2] " " a[3] " " a[4] " " a[5] " " int(a[6]))
}
/^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T/ {
  t = epoch(substr($1, 1, 19))
  if (n == 0 || cut) { n++; first[n] = t; from[n] = substr($1, 1, 16); cut = 0 }
  last[n] = t; to[n] = substr($1, 1, 16)
}
/^===/ { cut = 1 }
END {
  if (n == 0) { print "no timestamped lines in the log" > "/dev/stderr"; exit 2 }
  print "| process | from (UTC) | to (UTC) | hours |"
  print "|---:|---|---|---:|"
  for (i = 1; i <= n; i++) {
    h = (last[i] - first[i]) / 3600; total += h
    printf "| %d | %s | %s | %.2f |\n", i, from[i], to[i], h
  }
  printf "| | | **total** | **%.2f** |\n", total
}' "$log"
