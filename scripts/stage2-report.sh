#!/usr/bin/env bash
# After `coordinator --plan plans/stage2.toml` has finished: checks the run against every
# published stage-2 number, finds the witnesses in its tablebases, keeps the summary
# under docs/results/ and regenerates docs/RESULTS.md (scripts/ledger.sh).
#   scripts/stage2-report.sh [TABLEBASE_DIR [RUN_LOG]]
# TABLEBASE_DIR defaults to tablebases/stage2 (the plan's output). RUN_LOG, the run's output
# appended across resumes (see scripts/run-segments.sh), adds the run's wall time per process.
# Writes docs/results/stage2-summary.json and docs/results/stage2-notes.md; exits non-zero
# (after writing the notes) when a published number is not reproduced.
set -euo pipefail
cd "$(dirname "$0")/.."
tb=${1:-tablebases/stage2}
log=${2:-}
[[ -f "$tb/summary.json" ]] || { echo "no $tb/summary.json: has the stage-2 run finished?" >&2; exit 2; }
cargo build --release --quiet --bin coordinator
bin=target/release/coordinator
notes=docs/results/stage2-notes.md
mkdir -p docs/results
cp "$tb/summary.json" docs/results/stage2-summary.json
status=0
{
  echo "## Stage 2: every published number"
  echo
  # shellcheck disable=SC2016  # the backquotes are Markdown
  echo 'From `coordinator check --summary docs/results/stage2-summary.json` (the run'"'"'s own summary):'
  echo
  "$bin" check --summary docs/results/stage2-summary.json || status=$?
  echo
  echo "## Stage 2: witnesses from the tablebases"
  echo
  for kind in solo-win spoiler-draw kingmaker draw-cycle; do
    # shellcheck disable=SC2016
    printf '`coordinator probe --tablebase %s --witness %s`:\n\n```\n' "$tb" "$kind"
    RUST_LOG=warn "$bin" probe --tablebase "$tb" --witness "$kind"
    printf '```\n\n'
  done
  if [[ -n "$log" ]]; then
    echo "## Stage 2: the run's wall time"
    echo
    # shellcheck disable=SC2016
    echo 'From `scripts/run-segments.sh` over the run'"'"'s log (each process resumed the committed state of the one before; the layer seconds in the table below add up each layer'"'"'s time across processes):'
    echo
    scripts/run-segments.sh "$log"
    echo
  fi
} > "$notes"
echo "wrote $notes"
scripts/ledger.sh
exit "$status"
