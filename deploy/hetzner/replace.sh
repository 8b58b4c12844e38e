#!/usr/bin/env bash
# Replaces a machine of the job that is lost for good (dead server, lost disk).
#
# A worker: deletes what is left of it, creates the machine again with the same name,
# waits until it is ready, uploads the worker, hands it the cluster token (machine to
# machine, never through this computer's disk or a command line) and starts it with an
# empty --data and `--replace LOST`. The coordinator gives it the lost worker's shards
# and starts the layer in progress again (docs/RECOVERY.md, "A machine lost for good").
# LOST is the id the coordinator named ("worker w2 ... presumed lost"; status.sh shows it).
#   deploy/hetzner/replace.sh --job NAME --workers N --worker I --lost wK [--type ccx33] [--location fsn1] [--bin DIR] [--dry-run]
# --worker I is the machine's number (NAME-worker-I), --lost the coordinator's id.
#
# The coordinator: deletes what is left of it, creates it again with the same name and
# the job's volume (its checkpoints and results, which outlive the machine), uploads
# the coordinator and the plan, hands it the token from a worker, starts it, and points
# every worker at its new private address (each worker restarts and resumes from its
# own checkpoints). The job goes on from the last round the volume holds, to the same
# bytes (docs/RECOVERY.md, "The coordinator's machine lost").
#   deploy/hetzner/replace.sh --job NAME --workers N --coordinator --plan PLAN [--type ccx33] [--location fsn1] [--bin DIR] [--dry-run]
# shellcheck source=deploy/hetzner/common.sh
source "$(dirname "$0")/common.sh"
EXTRA_FLAGS="--worker= --lost= --coordinator"
parse_common "$@"
need_token
coord=$(coordinator_name)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Deletes what is left of a server, if anything, and forgets its host key.
remove_server() {
  if [[ "$DRY_RUN" == 1 ]] || hcloud server list --selector "job=$JOB" -o noheader -o columns=name | grep -x "$1" >/dev/null; then
    forget_host "$(public_ip "$1")"
    run hcloud server delete "$1"
  fi
}
if [[ -n "${FLAG_coordinator:-}" ]]; then
  [[ -z "${FLAG_worker:-}${FLAG_lost:-}" ]] || die "--coordinator replaces the coordinator; --worker and --lost are for a worker"
  check_binaries coordinator
  [[ -f "$PLAN" ]] || die "no plan $PLAN (pass the plan the job runs: --plan)"
  # The volume holds the job: without it the new coordinator would start from nothing.
  if [[ "$DRY_RUN" != 1 ]]; then
    hcloud volume list --selector "job=$JOB" -o noheader -o columns=name | grep -x "$JOB-data" >/dev/null \
      || die "job $JOB has no volume $JOB-data: nothing to resume from (a job provisioned before volumes? run it again)"
  fi
  remove_server "$coord"
  create_server "$coord" coordinator
  wait_ready "$coord"
  upload_coordinator
  if [[ "$DRY_RUN" == 1 ]]; then
    echo "+ ($(worker_name 1)'s /etc/retro/env piped to $coord's /etc/retro/env over ssh)"
  else
    on "$(worker_name 1)" "cat /etc/retro/env" | on "$coord" "umask 077 && cat > /etc/retro/env"
  fi
  mount_volume
  coord_ip=$(private_ip "$coord")
  coordinator_unit "$coord_ip" > "$tmp/coordinator.service"
  start_unit "$coord" retro-coordinator "$tmp/coordinator.service"
  # A new machine may have another private address: every worker's unit is
  # pointed at this one (its other flags, such as --replace, kept).
  for i in $(seq 1 "$WORKERS"); do
    on "$(worker_name "$i")" "sed -i 's|--connect [^ ]*:$PORT |--connect $coord_ip:$PORT |' /etc/systemd/system/retro-worker.service \
&& systemctl daemon-reload && systemctl restart retro-worker"
  done
  echo "$coord replaced; the job resumes from the checkpoints on volume $JOB-data (follow: attach.sh --job $JOB)"
  exit 0
fi
index=${FLAG_worker:-}
lost=${FLAG_lost:-}
[[ "$index" =~ ^[0-9]+$ && "$index" -ge 1 && "$index" -le "$WORKERS" ]] \
  || die "--worker must be a machine number from 1 to $WORKERS (NAME-worker-I)"
[[ "$lost" =~ ^w[0-9]+$ ]] || die "--lost must be the coordinator's id of the lost worker (w1, w2, ...)"
check_binaries worker
name=$(worker_name "$index")
remove_server "$name"
create_server "$name" worker
wait_ready "$name"
upload_worker "$name"
if [[ "$DRY_RUN" == 1 ]]; then
  echo "+ (the coordinator's /etc/retro/env piped to $name's /etc/retro/env over ssh)"
else
  on "$coord" "cat /etc/retro/env" | on "$name" "umask 077 && cat > /etc/retro/env"
fi
worker_unit "$index" "$(private_ip "$coord")" "--replace $lost" > "$tmp/worker.service"
start_unit "$name" retro-worker "$tmp/worker.service"
echo "$name started with --replace $lost; the coordinator restarts the layer in progress (follow: attach.sh --job $JOB)"
