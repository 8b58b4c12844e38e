#!/usr/bin/env bash
# Provisions a job's machines on Hetzner Cloud: an ssh key, a private network, a
# spread placement group and 1 + WORKERS servers, all labelled job=$JOB, each set
# up by cloud-init.yaml (a retro user, /opt/retro, /var/lib/retro).
#   deploy/hetzner/provision.sh [--job NAME] [--workers N] [--type ccx33] [--location fsn1] [--dry-run]
# Settings: deploy/hetzner/common.sh. Undo with destroy.sh (same --job).
# shellcheck source=deploy/hetzner/common.sh
source "$(dirname "$0")/common.sh"
parse_common "$@"
need_token
[[ "$DRY_RUN" == 1 || -f "$SSH_KEY" ]] || die "no public key $SSH_KEY (set SSH_KEY)"
label=(--label "job=$JOB")
run hcloud ssh-key create --name "$JOB-key" --public-key-from-file "$SSH_KEY" "${label[@]}"
run hcloud network create --name "$JOB-net" --ip-range 10.0.0.0/16 "${label[@]}"
run hcloud network add-subnet "$JOB-net" --network-zone eu-central --type cloud --ip-range 10.0.1.0/24
run hcloud placement-group create --name "$JOB-spread" --type spread "${label[@]}"
for name in $(all_names); do
  role=worker; [[ "$name" == "$(coordinator_name)" ]] && role=coordinator
  run hcloud server create --name "$name" --type "$SERVER_TYPE" --image "$IMAGE" --location "$LOCATION" \
    --ssh-key "$JOB-key" --network "$JOB-net" --placement-group "$JOB-spread" \
    --user-data-from-file "$HERE/cloud-init.yaml" "${label[@]}" --label "role=$role"
done
echo "provisioned job $JOB: $(all_names | tr '\n' ' ')"
