#!/usr/bin/env bash
# Copies the tablebases and summary.json from the coordinator machine to --out and
# checks each file's SHA-256 against the summary (and every block with `coordinator verify`).
#   deploy/hetzner/fetch.sh [--job NAME] [--out DIR] [--bin DIR] [--dry-run]
# shellcheck source=deploy/hetzner/common.sh
source "$(dirname "$0")/common.sh"
parse_common "$@"
need_token
coord=$(coordinator_name)
run mkdir -p "$OUT"
run scp "${SSH_OPTS[@]}" "root@$(public_ip "$coord"):/var/lib/retro/tb/*" "$OUT/"
if [[ "$DRY_RUN" == 1 ]]; then
  echo "+ (check every tablebase's sha256 against $OUT/summary.json, then coordinator verify --tablebase $OUT)"
  exit 0
fi
[[ -f "$OUT/summary.json" ]] || die "no summary.json came back: did the job finish?"
for tb in "$OUT"/*.tb; do
  [[ -f "$tb" ]] || die "no tablebase came back"
  sha=$(sha256sum "$tb" | cut -d' ' -f1)
  grep -q "\"sha256\": \"$sha\"" "$OUT/summary.json" || die "$tb: sha256 $sha is not the one summary.json records"
  echo "$(basename "$tb"): sha256 ok"
done
"$BIN/coordinator" verify --tablebase "$OUT"
echo "results of job $JOB in $OUT"
