#!/usr/bin/env bash
# Deletes everything labelled job=$JOB: servers, the volume (with the checkpoints and
# results on it: fetch them first), firewall, placement group, network, ssh key (a key
# reused because it was there before the job is not labelled, and stays), and this
# computer's known_hosts for the job. Works from the labels
# alone, so it also cleans up after a crash of the machine that ran provision.sh;
# running it twice is harmless, and a run that could not delete something says
# what and can simply be run again.
#   deploy/hetzner/destroy.sh [--job NAME] [--dry-run]
# shellcheck source=deploy/hetzner/common.sh
source "$(dirname "$0")/common.sh"
parse_common "$@"
need_token
list() { # resource kind
  if [[ "$DRY_RUN" == 1 ]]; then echo "<each-$1-labelled-job=$JOB>"; else
    hcloud "$1" list --selector "job=$JOB" -o noheader -o columns=name
  fi
}
# Best effort: one failed delete must not leave the rest running (and billing).
# Servers first: a volume, firewall, network or placement group in use cannot go.
failed=()
for kind in server volume firewall placement-group network ssh-key; do
  names=$(list "$kind") || { failed+=("the list of ${kind}s"); continue; }
  for name in $names; do
    run hcloud "$kind" delete "$name" || failed+=("$kind $name")
  done
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "destroy.sh: could not delete: ${failed[*]}; run deploy/hetzner/destroy.sh --job $JOB again" >&2
  exit 1
fi
[[ "$DRY_RUN" == 1 ]] || rm -rf "$JOB_STATE"
echo "destroyed everything labelled job=$JOB"
