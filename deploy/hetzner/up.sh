#!/usr/bin/env bash
# The whole job on rented machines in one command: provision, start, follow, fetch,
# destroy. The machines are destroyed automatically only while provisioning or
# starting fails (or is interrupted). Once the job runs it no longer depends on this
# computer: Ctrl-C or a lost connection stops following, not the job (a dropped
# connection is followed again by itself), and the machines stay until the job ends
# and its results are fetched (then they are destroyed, unless --keep), or until
# destroy.sh is run. Follow again from anywhere with attach.sh; progress: status.sh.
#   HCLOUD_TOKEN=... deploy/hetzner/up.sh --plan plans/stage2.toml --workers 3 [--job NAME] [--type ccx33]
#       [--location fsn1] [--ssh-from ADDRESS[/BITS]|any] [--volume-gb 50] [--bin target/deploy]
#       [--out results/NAME] [--keep] [--dry-run]
# --dry-run prints the complete sequence of commands without calling anything.
# shellcheck source=deploy/hetzner/common.sh
source "$(dirname "$0")/common.sh"
parse_common "$@"
need_token
# What run.sh needs is checked before anything is made (and billed).
check_binaries coordinator worker
[[ -f "$PLAN" ]] || die "no plan $PLAN"
args=(--job "$JOB" --workers "$WORKERS" --type "$SERVER_TYPE" --location "$LOCATION" --plan "$PLAN" --bin "$BIN" --out "$OUT"
  --volume-gb "$VOLUME_GB")
[[ -n "$SSH_FROM" ]] && args+=(--ssh-from "$SSH_FROM")
[[ "$DRY_RUN" == 1 ]] && args+=(--dry-run)
[[ "$KEEP" == 1 ]] && args+=(--keep)
# provision.sh destroys what it made when it fails; this trap covers the start.
"$HERE/provision.sh" "${args[@]}"
# shellcheck disable=SC2154  # status is assigned inside the trap
trap 'status=$?; if [[ $status -ne 0 ]]; then say "the job could not be started; destroying job $JOB"; "$HERE/destroy.sh" "${args[@]}" || true; fi; exit $status' EXIT
trap 'exit 130' INT TERM HUP
"$HERE/run.sh" --no-follow "${args[@]}"
trap - EXIT INT TERM HUP
exec "$HERE/attach.sh" "${args[@]}"
