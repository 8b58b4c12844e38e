#!/usr/bin/env bash
# Replaces a worker machine that is lost for good (dead server, lost disk): deletes
# what is left of it, creates the machine again with the same name, waits until it is
# ready, uploads the worker, hands it the cluster token (machine to machine, never
# through this computer's disk or a command line) and starts it with an empty --data
# and `--replace LOST`. The coordinator gives it the lost worker's shards and starts
# the layer in progress again (docs/RECOVERY.md, "A machine lost for good"). LOST is
# the id the coordinator named ("worker w2 ... presumed lost"; status.sh shows it).
#   deploy/hetzner/replace.sh --job NAME --workers N --worker I --lost wK [--type ccx33] [--location fsn1] [--bin DIR] [--dry-run]
# --worker I is the machine's number (NAME-worker-I), --lost the coordinator's id.
# shellcheck source=deploy/hetzner/common.sh
source "$(dirname "$0")/common.sh"
EXTRA_FLAGS="--worker= --lost="
parse_common "$@"
need_token
index=${FLAG_worker:-}
lost=${FLAG_lost:-}
[[ "$index" =~ ^[0-9]+$ && "$index" -ge 1 && "$index" -le "$WORKERS" ]] \
  || die "--worker must be a machine number from 1 to $WORKERS (NAME-worker-I)"
[[ "$lost" =~ ^w[0-9]+$ ]] || die "--lost must be the coordinator's id of the lost worker (w1, w2, ...)"
check_binaries worker
name=$(worker_name "$index")
coord=$(coordinator_name)
if [[ "$DRY_RUN" == 1 ]] || hcloud server list --selector "job=$JOB" -o noheader -o columns=name | grep -qx "$name"; then
  run hcloud server delete "$name"
fi
create_server "$name" worker
wait_ready "$name"
upload_worker "$name"
if [[ "$DRY_RUN" == 1 ]]; then
  echo "+ (the coordinator's /etc/retro/env piped to $name's /etc/retro/env over ssh)"
else
  on "$coord" "cat /etc/retro/env" | on "$name" "umask 077 && cat > /etc/retro/env"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
worker_unit "$index" "$(private_ip "$coord")" "--replace $lost" > "$tmp/worker.service"
start_unit "$name" retro-worker "$tmp/worker.service"
echo "$name started with --replace $lost; the coordinator restarts the layer in progress (follow: attach.sh --job $JOB)"
