#!/usr/bin/env bash
# Lets one more computer reach a job's machines over SSH (and ping): adds --ssh-from
# (default: this computer's public address) to the job's firewall. For attach.sh,
# status.sh or fetch.sh from a computer other than the one that provisioned the job,
# whose firewall lets in only that one.
#   deploy/hetzner/allow.sh --job NAME [--ssh-from ADDRESS[/BITS]|any] [--dry-run]
# shellcheck source=deploy/hetzner/common.sh
source "$(dirname "$0")/common.sh"
parse_common "$@"
need_token
sources=$(ssh_sources)
allow_ssh "$sources"
echo "job $JOB's machines now let in SSH from $sources too"
