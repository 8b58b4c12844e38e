#!/usr/bin/env bash
# Follows a running job again, from any computer with HCLOUD_TOKEN and the job's SSH
# key (after a dropped connection, a closed laptop, or from another machine); with
# only the key, COORDINATOR_IP=<its public address> instead of the token (then the
# machines are not destroyed at the end: that needs the token). A
# dropped connection while following reconnects by itself; Ctrl-C stops following,
# never the job. When the job ends:
#   - it succeeded: fetch.sh copies and checks the results into --out, then
#     destroy.sh deletes the machines (unless --keep);
#   - it failed: the machines are kept, so nothing is lost, and it says how to look,
#     resume (run.sh) or delete (destroy.sh); the exit status is the coordinator's.
#   deploy/hetzner/attach.sh [--job NAME] [--workers N] [--out DIR] [--bin DIR] [--keep] [--dry-run]
# shellcheck source=deploy/hetzner/common.sh
source "$(dirname "$0")/common.sh"
parse_common "$@"
need_token_or_ip
args=(--job "$JOB" --workers "$WORKERS" --out "$OUT" --bin "$BIN")
[[ "$DRY_RUN" == 1 ]] && args+=(--dry-run)
echo "following job $JOB (Ctrl-C stops following, not the job)"
status=0
follow_job || status=$?
if [[ $status -ne 0 ]]; then
  say "the job ended with exit status $status; the machines are kept (and bill) so nothing is lost"
  say "  look:    ssh root@$(public_ip "$(coordinator_name)") journalctl -u retro-coordinator"
  say "  resume:  fix the cause, then deploy/hetzner/run.sh --job $JOB --workers $WORKERS --plan PLAN"
  say "  delete:  deploy/hetzner/destroy.sh --job $JOB"
  exit "$status"
fi
echo "job $JOB finished; fetching the results"
if ! "$HERE/fetch.sh" "${args[@]}"; then
  say "the results could not be fetched; the machines are kept (and bill) so nothing is lost"
  say "  try again: deploy/hetzner/fetch.sh --job $JOB --out $OUT, then deploy/hetzner/destroy.sh --job $JOB"
  exit 1
fi
if [[ "$KEEP" == 1 ]]; then
  echo "machines of job $JOB kept (--keep); delete them with deploy/hetzner/destroy.sh --job $JOB"
elif [[ -z "${HCLOUD_TOKEN:-}" ]]; then
  say "no HCLOUD_TOKEN here, so the machines of job $JOB are not destroyed (they bill): run deploy/hetzner/destroy.sh --job $JOB where the token is"
else
  "$HERE/destroy.sh" "${args[@]}"
fi
