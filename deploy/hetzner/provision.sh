#!/usr/bin/env bash
# Provisions a job's machines on Hetzner Cloud: an ssh key (or the one already there
# with the same fingerprint), a firewall that lets in only SSH and only from --ssh-from
# (default: this computer's public address), a private network in the location's zone,
# a spread placement group, a volume for the coordinator's checkpoints and results,
# and 1 + WORKERS servers, all labelled job=$JOB, each set up by cloud-init.yaml (a
# retro user, /opt/retro, /var/lib/retro). It returns once every machine answers SSH
# and cloud-init has finished there. If anything fails on the way, it destroys what it
# made (destroy.sh), says so, and exits non-zero.
#   deploy/hetzner/provision.sh [--job NAME] [--workers N] [--type ccx33] [--location fsn1]
#       [--ssh-from ADDRESS[/BITS]|any] [--volume-gb 50] [--dry-run]
# Settings: deploy/hetzner/common.sh. Undo with destroy.sh (same --job).
# shellcheck source=deploy/hetzner/common.sh
source "$(dirname "$0")/common.sh"
parse_common "$@"
need_token
[[ "$DRY_RUN" == 1 || -f "$SSH_KEY" ]] || die "no public key $SSH_KEY (set SSH_KEY)"
zone=$(network_zone)
sources=$(ssh_sources)
args=(--job "$JOB" --workers "$WORKERS")
[[ "$DRY_RUN" == 1 ]] && args+=(--dry-run)
# shellcheck disable=SC2154  # status is assigned inside the trap
trap 'status=$?; if [[ $status -ne 0 ]]; then say "provisioning failed; destroying what was made for job $JOB"; "$HERE/destroy.sh" "${args[@]}" || true; fi; exit $status' EXIT
label=(--label "job=$JOB")
key=$(job_key_name)
if [[ "$key" == "$JOB-key" ]]; then
  run hcloud ssh-key create --name "$key" --public-key-from-file "$SSH_KEY" "${label[@]}"
else
  say "using the ssh key \"$key\" already in the project (the same fingerprint as $SSH_KEY); destroy.sh leaves it"
fi
# Only SSH (and ping), and only from --ssh-from; the job's own ports are
# reached over the private network, which Hetzner firewalls do not filter.
run hcloud firewall create --name "$JOB-fw" "${label[@]}"
allow_ssh "$sources"
if [[ "$sources" == "0.0.0.0/0 ::/0" ]]; then
  say "SSH is open to every address (--ssh-from any)"
else
  echo "SSH let in from $sources only (another computer: deploy/hetzner/allow.sh --job $JOB --ssh-from ADDRESS)"
fi
run hcloud volume create --name "$JOB-data" --size "$VOLUME_GB" --location "$LOCATION" --format ext4 "${label[@]}"
run hcloud network create --name "$JOB-net" --ip-range 10.0.0.0/16 "${label[@]}"
run hcloud network add-subnet "$JOB-net" --network-zone "$zone" --type cloud --ip-range 10.0.1.0/24
run hcloud placement-group create --name "$JOB-spread" --type spread "${label[@]}"
for name in $(all_names); do
  role=worker; [[ "$name" == "$(coordinator_name)" ]] && role=coordinator
  create_server "$name" "$role"
done
for name in $(all_names); do wait_ready "$name"; done
echo "provisioned job $JOB: $(all_names | tr '\n' ' ')"
