#!/usr/bin/env bash
# Provisions a job's machines on Hetzner Cloud: an ssh key, a firewall that lets in
# only SSH, a private network in the location's zone, a spread placement group and
# 1 + WORKERS servers, all labelled job=$JOB, each set up by cloud-init.yaml (a retro
# user, /opt/retro, /var/lib/retro). It returns once every machine answers SSH and
# cloud-init has finished there. If anything fails on the way, it destroys what it
# made (destroy.sh), says so, and exits non-zero.
#   deploy/hetzner/provision.sh [--job NAME] [--workers N] [--type ccx33] [--location fsn1] [--dry-run]
# Settings: deploy/hetzner/common.sh. Undo with destroy.sh (same --job).
# shellcheck source=deploy/hetzner/common.sh
source "$(dirname "$0")/common.sh"
parse_common "$@"
need_token
[[ "$DRY_RUN" == 1 || -f "$SSH_KEY" ]] || die "no public key $SSH_KEY (set SSH_KEY)"
zone=$(network_zone)
args=(--job "$JOB" --workers "$WORKERS")
[[ "$DRY_RUN" == 1 ]] && args+=(--dry-run)
# shellcheck disable=SC2154  # status is assigned inside the trap
trap 'status=$?; if [[ $status -ne 0 ]]; then say "provisioning failed; destroying what was made for job $JOB"; "$HERE/destroy.sh" "${args[@]}" || true; fi; exit $status' EXIT
label=(--label "job=$JOB")
run hcloud ssh-key create --name "$JOB-key" --public-key-from-file "$SSH_KEY" "${label[@]}"
# Only SSH (and ping) from outside; the job's own ports are reached over the
# private network, which Hetzner firewalls do not filter.
run hcloud firewall create --name "$JOB-fw" "${label[@]}"
run hcloud firewall add-rule "$JOB-fw" --direction in --protocol tcp --port 22 \
  --source-ips 0.0.0.0/0 --source-ips ::/0 --description ssh
run hcloud firewall add-rule "$JOB-fw" --direction in --protocol icmp \
  --source-ips 0.0.0.0/0 --source-ips ::/0 --description ping
run hcloud network create --name "$JOB-net" --ip-range 10.0.0.0/16 "${label[@]}"
run hcloud network add-subnet "$JOB-net" --network-zone "$zone" --type cloud --ip-range 10.0.1.0/24
run hcloud placement-group create --name "$JOB-spread" --type spread "${label[@]}"
for name in $(all_names); do
  role=worker; [[ "$name" == "$(coordinator_name)" ]] && role=coordinator
  create_server "$name" "$role"
done
for name in $(all_names); do wait_ready "$name"; done
echo "provisioned job $JOB: $(all_names | tr '\n' ' ')"
