#!/usr/bin/env bash
# Starts the job on provisioned machines: uploads the binaries and the plan, starts
# the coordinator and the workers as systemd units (so no SSH session owns them:
# a dropped connection changes nothing, a reboot restarts them and they resume
# from their checkpoints), then follows the coordinator's log until the job ends.
#   deploy/hetzner/run.sh [--job NAME] [--workers N] [--plan PLAN] [--bin DIR] [--dry-run]
# The cluster token is made here and kept only on the machines (/etc/retro/env, mode 600).
# shellcheck source=deploy/hetzner/common.sh
source "$(dirname "$0")/common.sh"
parse_common "$@"
need_token
[[ "$DRY_RUN" == 1 || ( -x "$BIN/coordinator" && -x "$BIN/worker" ) ]] || die "no binaries in $BIN (cargo build --release)"
[[ -f "$PLAN" ]] || die "no plan $PLAN"
token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
coord=$(coordinator_name)
coord_ip=$(private_ip "$coord")
unit() { # name, description, command line
  printf '[Unit]\nDescription=%s\nAfter=network-online.target\nWants=network-online.target\n\n' "$2"
  printf '[Service]\nUser=retro\nEnvironmentFile=/etc/retro/env\nWorkingDirectory=/var/lib/retro\n'
  printf 'ExecStart=%s\nRestart=on-abnormal\nRestartSec=5\n\n[Install]\nWantedBy=multi-user.target\n' "$3"
}
for name in $(all_names); do
  run scp "${SSH_OPTS[@]}" "$BIN/coordinator" "$BIN/worker" "$PLAN" "root@$(public_ip "$name"):/opt/retro/"
  # On stdin, so the token shows in no command line or log.
  on "$name" "umask 077 && cat > /etc/retro/env" <<< "RETRO_TOKEN=$token"
done
plan=/opt/retro/$(basename "$PLAN")
unit retro-coordinator "retro coordinator ($JOB)" \
  "/opt/retro/coordinator --plan $plan --listen 0.0.0.0:$PORT --expect-workers $WORKERS --output /var/lib/retro/tb --checkpoints /var/lib/retro/ck" \
  > "${TMPDIR:-/tmp}/retro-coordinator.service"
run scp "${SSH_OPTS[@]}" "${TMPDIR:-/tmp}/retro-coordinator.service" "root@$(public_ip "$coord"):/etc/systemd/system/"
on "$coord" "systemctl daemon-reload && systemctl enable --now retro-coordinator"
for i in $(seq 1 "$WORKERS"); do
  name=$(worker_name "$i")
  unit retro-worker "retro worker ($JOB)" \
    "/opt/retro/worker --connect $coord_ip:$PORT --listen 0.0.0.0:50052 --data /var/lib/retro/worker" \
    > "${TMPDIR:-/tmp}/retro-worker.service"
  run scp "${SSH_OPTS[@]}" "${TMPDIR:-/tmp}/retro-worker.service" "root@$(public_ip "$name"):/etc/systemd/system/"
  on "$name" "systemctl daemon-reload && systemctl enable --now retro-worker"
done
echo "job $JOB running; following the coordinator (Ctrl-C stops following, not the job)"
# Follows until the unit stops; exits with the coordinator's exit status. A killed
# coordinator is restarted by systemd (Restart=on-abnormal) and resumes; a clean
# error exit (a bad plan, say) is not retried.
on "$coord" "journalctl -fu retro-coordinator & while systemctl is-active -q retro-coordinator; do sleep 10; done; \
  kill %1; exit \$(systemctl show -p ExecMainStatus --value retro-coordinator)"
