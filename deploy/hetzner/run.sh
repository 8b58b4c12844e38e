#!/usr/bin/env bash
# Starts the job on provisioned machines: uploads the binaries and the plan, starts
# the coordinator and the workers as systemd units (so no SSH session owns them:
# a dropped connection changes nothing, a reboot restarts them and they resume
# from their checkpoints), then follows the coordinator's log until the job ends
# and exits with the coordinator's exit status.
#   deploy/hetzner/run.sh [--job NAME] [--workers N] [--plan PLAN] [--bin DIR] [--no-follow] [--dry-run]
# --no-follow returns once the units run (follow later with attach.sh).
# The coordinator and the workers listen only on the private network, /status only
# on the coordinator's loopback (status.sh tunnels to it). The coordinator keeps its
# checkpoints and results on the job's volume (/var/lib/retro/job). The cluster token is made
# here and kept only on the machines (/etc/retro/env, mode 600). Running run.sh
# again while the job runs is refused (use attach.sh); after the job stopped with an
# error it starts every unit again with a fresh token, and the job resumes from its
# checkpoints.
# shellcheck source=deploy/hetzner/common.sh
source "$(dirname "$0")/common.sh"
EXTRA_FLAGS="--no-follow"
parse_common "$@"
need_token
check_binaries coordinator worker
[[ -f "$PLAN" ]] || die "no plan $PLAN"
coord=$(coordinator_name)
if [[ "$DRY_RUN" != 1 ]]; then
  state=$(on "$coord" "systemctl show -p ActiveState --value retro-coordinator" 2>/dev/null || true)
  case "$state" in
    active|activating|reloading|deactivating)
      die "job $JOB is already running on $coord; follow it with deploy/hetzner/attach.sh --job $JOB" ;;
  esac
fi
mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }
size() { if [[ -f "$1" ]]; then wc -c < "$1" | tr -d ' '; else echo 0; fi; }
coord_bytes=$(( $(size "$BIN/coordinator") + $(size "$PLAN") + $(size "$HERE/wait-for-address.sh") ))
worker_bytes=$(( $(size "$BIN/worker") + $(size "$HERE/wait-for-address.sh") ))
echo "uploading $(mb "$coord_bytes") to the coordinator and $(mb "$worker_bytes") to each of $WORKERS workers ($(mb $((coord_bytes + WORKERS * worker_bytes))) in all)"
token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
coord_ip=$(private_ip "$coord")
# Secrets on stdin, so the token shows in no command line or log.
put_token() { on "$1" "umask 077 && cat > /etc/retro/env" <<< "RETRO_TOKEN=$token"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
upload_coordinator
put_token "$coord"
mount_volume
for i in $(seq 1 "$WORKERS"); do
  name=$(worker_name "$i")
  upload_worker "$name"
  put_token "$name"
done
coordinator_unit "$coord_ip" > "$tmp/coordinator.service"
start_unit "$coord" retro-coordinator "$tmp/coordinator.service"
for i in $(seq 1 "$WORKERS"); do
  worker_unit "$i" "$coord_ip" > "$tmp/worker-$i.service"
  start_unit "$(worker_name "$i")" retro-worker "$tmp/worker-$i.service"
done
echo "job $JOB running"
[[ -z "${FLAG_no_follow:-}" ]] || exit 0
echo "following the coordinator (Ctrl-C stops following, not the job)"
follow_job
