#!/usr/bin/env bash
# Provision, run, fetch, destroy: the whole job on rented machines in one command.
# Whatever happens after provisioning starts (a failure, Ctrl-C), the machines are
# destroyed on exit, so nothing keeps billing; the results are in --out.
#   HCLOUD_TOKEN=... deploy/hetzner/up.sh --plan plans/stage2.toml --workers 3 [--job NAME] [--dry-run]
# --dry-run prints the complete sequence of commands without calling anything.
# shellcheck source=deploy/hetzner/common.sh
source "$(dirname "$0")/common.sh"
parse_common "$@"
need_token
args=(--job "$JOB" --workers "$WORKERS" --type "$SERVER_TYPE" --location "$LOCATION" --plan "$PLAN" --bin "$BIN" --out "$OUT")
[[ "$DRY_RUN" == 1 ]] && args+=(--dry-run)
# shellcheck disable=SC2154  # status is assigned inside the trap
trap 'status=$?; echo "up.sh: destroying job $JOB"; "$HERE/destroy.sh" "${args[@]}"; exit $status' EXIT
"$HERE/provision.sh" "${args[@]}"
"$HERE/run.sh" "${args[@]}"
"$HERE/fetch.sh" "${args[@]}"
