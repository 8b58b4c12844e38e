# shellcheck shell=bash
# Shared settings and helpers of the Hetzner scripts (sourced, not run).
#
# Settings (environment; flags of the scripts override them):
#   HCLOUD_TOKEN   Hetzner Cloud API token: from the environment only, never a file in the repo
#   JOB            job label; every resource carries label job=$JOB (default: retro)
#   WORKERS        worker machines (default: 3)
#   SERVER_TYPE    server type (default: ccx33: 8 dedicated vCPU, 32 GB)
#   LOCATION       location (default: fsn1); the removed --datacenter flag is never used
#   IMAGE          image (default: debian-12, the glibc the binaries are built against)
#   SSH_KEY        public key file (default: ~/.ssh/id_ed25519.pub)
#   PLAN           plan file (default: plans/stage2.toml)
#   BIN            directory with the coordinator and worker binaries (default: target/release)
#   OUT            where fetch.sh puts tablebases and summary.json (default: results/$JOB)
#   DRY_RUN=1      print every hcloud/ssh/scp command instead of running it
set -euo pipefail

JOB=${JOB:-retro}
WORKERS=${WORKERS:-3}
SERVER_TYPE=${SERVER_TYPE:-ccx33}
LOCATION=${LOCATION:-fsn1}
IMAGE=${IMAGE:-debian-12}
SSH_KEY=${SSH_KEY:-$HOME/.ssh/id_ed25519.pub}
PLAN=${PLAN:-plans/stage2.toml}
BIN=${BIN:-target/release}
OUT=${OUT:-}
DRY_RUN=${DRY_RUN:-0}
# shellcheck disable=SC2034  # HERE and PORT are for the scripts that source this file
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SSH_OPTS=(-o StrictHostKeyChecking=accept-new -o ServerAliveInterval=15 -o ConnectTimeout=10)
# shellcheck disable=SC2034
PORT=50051

die() { echo "$(basename "$0"): $*" >&2; exit 1; }

# Common flags: --job --workers --type --location --plan --bin --out --dry-run.
parse_common() {
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --job) JOB=$2; shift 2 ;;
      --workers) WORKERS=$2; shift 2 ;;
      --type) SERVER_TYPE=$2; shift 2 ;;
      --location) LOCATION=$2; shift 2 ;;
      --plan) PLAN=$2; shift 2 ;;
      --bin) BIN=$2; shift 2 ;;
      --out) OUT=$2; shift 2 ;;
      --dry-run) DRY_RUN=1; shift ;;
      -h|--help) sed -n '2,/^set -e/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
      *) die "unknown option $1 (see --help)" ;;
    esac
  done
  [[ "$JOB" =~ ^[a-z0-9-]+$ ]] || die "--job must match [a-z0-9-]+ (it names servers and labels)"
  [[ "$WORKERS" =~ ^[0-9]+$ && "$WORKERS" -ge 1 ]] || die "--workers must be a positive number"
  OUT=${OUT:-results/$JOB}
}

need_token() {
  [[ "$DRY_RUN" == 1 || -n "${HCLOUD_TOKEN:-}" ]] || die "set HCLOUD_TOKEN in the environment (never in a file in the repo)"
  export HCLOUD_TOKEN=${HCLOUD_TOKEN:-dry-run}
}

# Runs (or, with DRY_RUN=1, prints) one command.
run() {
  if [[ "$DRY_RUN" == 1 ]]; then
    printf '+'; printf ' %q' "$@"; printf '\n'
  else
    "$@"
  fi
}

# Server names.
coordinator_name() { echo "$JOB-coordinator"; }
worker_name() { echo "$JOB-worker-$1"; }
all_names() { coordinator_name; for i in $(seq 1 "$WORKERS"); do worker_name "$i"; done; }

# Public and private address of a server (placeholders in a dry run).
public_ip() {
  if [[ "$DRY_RUN" == 1 ]]; then echo "<public-ip-of-$1>"; else hcloud server ip "$1"; fi
}
private_ip() {
  if [[ "$DRY_RUN" == 1 ]]; then echo "<private-ip-of-$1>"; else
    hcloud server describe "$1" -o format='{{ (index .PrivateNet 0).IP }}'
  fi
}
on() { local host=$1; shift; run ssh "${SSH_OPTS[@]}" "root@$(public_ip "$host")" "$@"; }
