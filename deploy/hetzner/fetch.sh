#!/usr/bin/env bash
# Copies the tablebases, summary.json and the coordinator's log from the coordinator
# machine to --out and checks each tablebase's SHA-256 against the summary, then every
# block with `coordinator verify` (a coordinator that runs on this computer: $BIN's,
# else target/release's, else one on PATH; on macOS build one with cargo build --release).
#   deploy/hetzner/fetch.sh [--job NAME] [--out DIR] [--bin DIR] [--dry-run]
# shellcheck source=deploy/hetzner/common.sh
source "$(dirname "$0")/common.sh"
parse_common "$@"
need_token_or_ip
coord=$(coordinator_name)
run mkdir -p "$OUT"
run scp "${SSH_OPTS[@]}" "root@$(public_ip "$coord"):$JOB_DIR/tb/*" "$OUT/"
if [[ "$DRY_RUN" == 1 ]]; then
  echo "+ (check every tablebase's sha256 against $OUT/summary.json, then coordinator verify --tablebase $OUT)"
  exit 0
fi
on "$coord" "journalctl -u retro-coordinator --no-pager" > "$OUT/coordinator.log" 2>/dev/null \
  || say "could not copy the coordinator's log (the results are not affected)"
[[ -f "$OUT/summary.json" ]] || die "no summary.json came back: did the job finish?"
for tb in "$OUT"/*.tb; do
  [[ -f "$tb" ]] || die "no tablebase came back"
  sha=$(sha256_of "$tb")
  grep -q "\"sha256\": \"$sha\"" "$OUT/summary.json" || die "$tb: sha256 $sha is not the one summary.json records"
  echo "$(basename "$tb"): sha256 ok"
done
verifier=""
for c in "$BIN/coordinator" target/release/coordinator "$(command -v coordinator || true)"; do
  if [[ -n "$c" && -x "$c" ]] && "$c" --version >/dev/null 2>&1; then verifier=$c; break; fi
done
if [[ -n "$verifier" ]]; then
  "$verifier" verify --tablebase "$OUT"
else
  say "no coordinator that runs here, so the blocks were not verified; build one (cargo build --release) and run: coordinator verify --tablebase $OUT"
fi
echo "results of job $JOB in $OUT"
