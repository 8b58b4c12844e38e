# shellcheck shell=bash
# Shared settings and helpers of the Hetzner scripts (sourced, not run).
#
# Settings (environment; flags of the scripts override them):
#   HCLOUD_TOKEN   Hetzner Cloud API token: from the environment only, never a file in the repo
#   JOB            job label; every resource carries label job=$JOB (default: retro)
#   WORKERS        worker machines (default: 3)
#   SERVER_TYPE    server type (default: ccx33: 8 dedicated vCPU, 32 GB)
#   LOCATION       location (default: fsn1); the network zone follows it
#   IMAGE          image (default: debian-12, the glibc the binaries are built against)
#   SSH_KEY        public key file (default: ~/.ssh/id_ed25519.pub); its private half
#                  (the same name without .pub) is what ssh uses, when it exists
#   PLAN           plan file (default: plans/stage2.toml)
#   BIN            directory with the Linux coordinator and worker binaries
#                  (default: target/deploy, from `cargo build --profile deploy`)
#   OUT            where results land (default: results/$JOB)
#   SSH_FROM       who may reach the machines' SSH port (--ssh-from): an address or a CIDR
#                  block; default: this computer's public IPv4 address as https://api.ipify.org
#                  sees it; `any` lets in every address (0.0.0.0/0 and ::/0). Another
#                  computer is let in later with allow.sh
#   VOLUME_GB      size of the Hetzner Volume that holds the coordinator's checkpoints and
#                  results (--volume-gb; default: 50), so that a lost coordinator machine is
#                  replaced without losing the job (replace.sh --coordinator)
#   KEEP=1         keep the machines after the job ends (--keep)
#   DRY_RUN=1      print every hcloud/ssh/scp command instead of running it
#   RETRO_DEPLOY_STATE  where a job's known_hosts lives on this computer
#                  (default: ~/.local/state/retro-deploy; one directory per job)
#   READY_TRIES, READY_INTERVAL   SSH readiness: tries and seconds between them (60, 5)
#   CLOUD_INIT_TIMEOUT            seconds cloud-init may take on a new machine (900)
#   RECONNECT_INTERVAL            seconds before following again after a dropped connection (15)
#   COORDINATOR_IP the coordinator's public address, for attach.sh and status.sh on a
#                  computer with the job's SSH key but no API token (then attach.sh
#                  follows and fetches, but cannot destroy)
set -euo pipefail

JOB=${JOB:-retro}
WORKERS=${WORKERS:-3}
SERVER_TYPE=${SERVER_TYPE:-ccx33}
LOCATION=${LOCATION:-fsn1}
IMAGE=${IMAGE:-debian-12}
SSH_KEY=${SSH_KEY:-$HOME/.ssh/id_ed25519.pub}
PLAN=${PLAN:-plans/stage2.toml}
BIN=${BIN:-target/deploy}
OUT=${OUT:-}
KEEP=${KEEP:-0}
DRY_RUN=${DRY_RUN:-0}
SSH_FROM=${SSH_FROM:-}
VOLUME_GB=${VOLUME_GB:-50}
READY_TRIES=${READY_TRIES:-60}
READY_INTERVAL=${READY_INTERVAL:-5}
CLOUD_INIT_TIMEOUT=${CLOUD_INIT_TIMEOUT:-900}
RECONNECT_INTERVAL=${RECONNECT_INTERVAL:-15}
# shellcheck disable=SC2034  # HERE, PORT, PEER_PORT and STATUS_PORT are for the scripts that source this file
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck disable=SC2034
PORT=50051
# shellcheck disable=SC2034
PEER_PORT=50052
# The coordinator's /status listens on the machine's loopback only; status.sh
# reaches it through an SSH tunnel.
# shellcheck disable=SC2034
STATUS_PORT=8080
# Where the job's volume is mounted on the coordinator: its checkpoints (ck)
# and results (tb) live there, not on the machine's own disk.
JOB_DIR=/var/lib/retro/job

die() { echo "$(basename "$0"): $*" >&2; exit 1; }
say() { echo "$(basename "$0"): $*" >&2; }

usage() { sed -n '2,/^# shellcheck source/p' "$0" | grep '^#' | grep -v '^# shellcheck' | sed 's/^# \{0,1\}//'; }

# Common flags: --job --workers --type --location --plan --bin --out --ssh-from
# --volume-gb --keep --dry-run.
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
      --ssh-from) SSH_FROM=$2; shift 2 ;;
      --volume-gb) VOLUME_GB=$2; shift 2 ;;
      --keep) KEEP=1; shift ;;
      --dry-run) DRY_RUN=1; shift ;;
      -h|--help) usage; exit 0 ;;
      *)
        # A script's own flags, listed in EXTRA_FLAGS ("--json", or "--worker="
        # for one that takes a value), land in FLAG_<name>.
        local f=${1#--} v
        if [[ " ${EXTRA_FLAGS:-} " == *" --$f "* ]]; then
          printf -v "FLAG_${f//-/_}" 1; shift
        elif [[ " ${EXTRA_FLAGS:-} " == *" --$f= "* && $# -ge 2 ]]; then
          v=$2; printf -v "FLAG_${f//-/_}" '%s' "$v"; shift 2
        else
          die "unknown option $1 (see --help)"
        fi ;;
    esac
  done
  [[ "$JOB" =~ ^[a-z0-9-]+$ ]] || die "--job must match [a-z0-9-]+ (it names servers and labels)"
  [[ "$WORKERS" =~ ^[0-9]+$ && "$WORKERS" -ge 1 ]] || die "--workers must be a positive number"
  [[ "$VOLUME_GB" =~ ^[0-9]+$ && "$VOLUME_GB" -ge 10 ]] || die "--volume-gb must be a number of GB, at least 10 (Hetzner's smallest volume)"
  OUT=${OUT:-results/$JOB}
  JOB_STATE=${RETRO_DEPLOY_STATE:-$HOME/.local/state/retro-deploy}/$JOB
  # A known_hosts file per job: Hetzner hands out addresses again, so a global
  # file would refuse a new machine on an address another job used (or, worse,
  # trust an old key). Within the job a changed key is refused.
  SSH_OPTS=(-o "UserKnownHostsFile=$JOB_STATE/known_hosts" -o StrictHostKeyChecking=accept-new
    -o ServerAliveInterval=15 -o ServerAliveCountMax=4 -o ConnectTimeout=10 -o BatchMode=yes)
  local private=${SSH_KEY%.pub}
  [[ "$private" != "$SSH_KEY" && -f "$private" ]] && SSH_OPTS+=(-i "$private")
  [[ "$DRY_RUN" == 1 ]] || mkdir -p "$JOB_STATE"
}

# Like need_token, for the scripts that only talk to the coordinator
# (attach.sh, status.sh): with COORDINATOR_IP set they need no API token.
need_token_or_ip() {
  [[ -n "${COORDINATOR_IP:-}" ]] || need_token
}

need_token() {
  [[ "$DRY_RUN" == 1 || -n "${HCLOUD_TOKEN:-}" ]] || die "set HCLOUD_TOKEN in the environment (never in a file in the repo)"
  export HCLOUD_TOKEN=${HCLOUD_TOKEN:-dry-run}
}

# The network zone of a location (a private network lives in one zone).
network_zone() {
  if [[ -n "${NETWORK_ZONE:-}" ]]; then echo "$NETWORK_ZONE"; return; fi
  case "$LOCATION" in
    fsn1|nbg1|hel1) echo eu-central ;;
    ash) echo us-east ;;
    hil) echo us-west ;;
    sin) echo ap-southeast ;;
    *) die "unknown location $LOCATION (fsn1, nbg1, hel1, ash, hil, sin); set NETWORK_ZONE to use another" ;;
  esac
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
  if [[ -n "${COORDINATOR_IP:-}" && "$1" == "$(coordinator_name)" ]]; then echo "$COORDINATOR_IP"
  elif [[ "$DRY_RUN" == 1 ]]; then echo "<public-ip-of-$1>"
  else hcloud server ip "$1"; fi
}
private_ip() {
  if [[ "$DRY_RUN" == 1 ]]; then echo "<private-ip-of-$1>"; else
    hcloud server describe "$1" -o format='{{ (index .PrivateNet 0).IP }}'
  fi
}
on() { local host=$1; shift; run ssh "${SSH_OPTS[@]}" "root@$(public_ip "$host")" "$@"; }

# Waits until a new server answers SSH and cloud-init has finished on it, with
# bounded retries; fails with a message saying which step timed out.
wait_ready() {
  local name=$1 ip i
  ip=$(public_ip "$name")
  if [[ "$DRY_RUN" == 1 ]]; then
    run ssh "${SSH_OPTS[@]}" "root@$ip" true
    run ssh "${SSH_OPTS[@]}" "root@$ip" "timeout $CLOUD_INIT_TIMEOUT cloud-init status --wait"
    return
  fi
  local err
  for ((i = 1; ; i++)); do
    err=$(ssh "${SSH_OPTS[@]}" "root@$ip" true 2>&1 >/dev/null) && break
    ((i < READY_TRIES)) || die "$name ($ip) did not answer SSH after $READY_TRIES tries, $READY_INTERVAL s apart; the last try said: $err"
    sleep "$READY_INTERVAL"
  done
  local rc=0
  # shellcheck disable=SC2029  # the timeout is meant to expand here
  ssh "${SSH_OPTS[@]}" "root@$ip" "timeout $CLOUD_INIT_TIMEOUT cloud-init status --wait" >/dev/null || rc=$?
  case $rc in
    0) echo "$name ready" ;;
    124) die "cloud-init on $name did not finish within $CLOUD_INIT_TIMEOUT s (CLOUD_INIT_TIMEOUT); see /var/log/cloud-init-output.log there" ;;
    *) die "cloud-init on $name failed (exit $rc); see /var/log/cloud-init-output.log there" ;;
  esac
}

# Refuses binaries that are missing or not Linux ELF files (a macOS build would
# upload fine and then fail to start on every machine). A dry run warns
# instead, so that its printed sequence is complete.
check_binaries() {
  local b why
  for b in "$@"; do
    why=""
    if [[ ! -x "$BIN/$b" ]]; then
      why="no $BIN/$b: build it with 'cargo build --profile deploy' (or pass --bin DIR)"
    elif [[ "$(head -c 4 "$BIN/$b" | od -An -c | tr -d ' ')" != '177ELF' ]]; then
      why="$BIN/$b is not a Linux binary; see 'Building Linux binaries' in docs/OPERATIONS.md"
    fi
    [[ -z "$why" ]] && continue
    if [[ "$DRY_RUN" == 1 ]]; then say "warning: $why (a real run stops here)"; else die "$why"; fi
  done
}

# The source blocks the firewall lets in on SSH, from SSH_FROM (see above).
ssh_sources() {
  local from=$SSH_FROM
  if [[ -z "$from" ]]; then
    if [[ "$DRY_RUN" == 1 ]]; then echo "<this-computer's-public-address>/32"; return; fi
    from=$(curl -fsS --max-time 10 https://api.ipify.org 2>/dev/null) \
      || die "cannot tell this computer's public address (https://api.ipify.org did not answer): pass --ssh-from ADDRESS[/BITS], or --ssh-from any to let every address reach SSH"
  fi
  case "$from" in
    any) echo "0.0.0.0/0 ::/0"; return ;;
  esac
  [[ "$from" =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}(/[0-9]{1,2})?$ || "$from" =~ ^[0-9a-fA-F:]*:[0-9a-fA-F:]*(/[0-9]{1,3})?$ ]] \
    || die "--ssh-from $from is not an IPv4 or IPv6 address or CIDR block (or any)"
  case "$from" in
    */*) echo "$from" ;;
    *:*) echo "$from/128" ;;
    *) echo "$from/32" ;;
  esac
}

# Lets the source blocks $1 (from ssh_sources) through the job's firewall:
# SSH and ping, nothing else.
allow_ssh() {
  local from=() s
  for s in $1; do from+=(--source-ips "$s"); done
  run hcloud firewall add-rule "$JOB-fw" --direction in --protocol tcp --port 22 "${from[@]}" --description ssh
  run hcloud firewall add-rule "$JOB-fw" --direction in --protocol icmp "${from[@]}" --description ping
}

# The MD5 fingerprint of SSH_KEY, as Hetzner shows a key's.
key_fingerprint() {
  local fp
  fp=$(ssh-keygen -l -E md5 -f "$SSH_KEY" 2>/dev/null | awk '{ print $2 }') \
    || die "$SSH_KEY is not a public key ssh-keygen can read (set SSH_KEY)"
  [[ -n "$fp" ]] || die "$SSH_KEY is not a public key ssh-keygen can read (set SSH_KEY)"
  echo "${fp#MD5:}"
}

# The name of the project's key on Hetzner that holds SSH_KEY: one with the
# same fingerprint when there is one (Hetzner refuses a second copy of a
# key, so one uploaded before, by hand or by another job, is used as it is
# and never deleted by destroy.sh), else the job's own, $JOB-key.
job_key_name() {
  local found=""
  if [[ "$DRY_RUN" != 1 ]]; then
    local fp; fp=$(key_fingerprint)
    found=$(hcloud ssh-key list -o noheader -o columns=fingerprint,name \
      | awk -v fp="$fp" '!found && $1 == fp { found = 1; $1 = ""; sub(/^ +/, ""); print }')
  fi
  echo "${found:-$JOB-key}"
}

# Forgets a host key this job's known_hosts holds for an address (a machine
# made again may come back on the same address with a new key).
forget_host() {
  [[ "$DRY_RUN" == 1 || ! -f "$JOB_STATE/known_hosts" ]] && return 0
  ssh-keygen -R "$1" -f "$JOB_STATE/known_hosts" >/dev/null 2>&1 || true
}

# Creates one server of the job (role: coordinator or worker) with the job's
# key, firewall, private network and placement group; the coordinator gets
# the job's volume.
create_server() {
  local volume=()
  [[ "$2" == coordinator ]] && volume=(--volume "$JOB-data")
  run hcloud server create --name "$1" --type "$SERVER_TYPE" --image "$IMAGE" --location "$LOCATION" \
    --ssh-key "$(job_key_name)" --firewall "$JOB-fw" --network "$JOB-net" --placement-group "$JOB-spread" \
    "${volume[@]}" --user-data-from-file "$HERE/cloud-init.yaml" --label "job=$JOB" --label "role=$2"
}

# Mounts the job's volume at $JOB_DIR on the coordinator, and again at every
# boot (fstab; nofail: a machine whose volume is gone still boots).
mount_volume() {
  local dev
  if [[ "$DRY_RUN" == 1 ]]; then dev="<linux-device-of-$JOB-data>"; else
    dev=$(hcloud volume describe "$JOB-data" -o format='{{.LinuxDevice}}')
  fi
  on "$(coordinator_name)" "mkdir -p $JOB_DIR && { mountpoint -q $JOB_DIR || mount -o discard,defaults $dev $JOB_DIR; } \
&& chown retro:retro $JOB_DIR && { grep -q ' $JOB_DIR ' /etc/fstab || echo '$dev $JOB_DIR ext4 discard,nofail,defaults 0 0' >> /etc/fstab; }"
}

# Uploads what the coordinator machine runs: the coordinator, the plan and the address wait.
upload_coordinator() {
  run scp "${SSH_OPTS[@]}" "$BIN/coordinator" "$PLAN" "$HERE/wait-for-address.sh" "root@$(public_ip "$(coordinator_name)"):/opt/retro/"
}

# The coordinator's unit, given its private address: checkpoints and results on the volume.
coordinator_unit() {
  unit_file "retro coordinator ($JOB)" "$1" \
    "/opt/retro/coordinator --plan /opt/retro/$(basename "$PLAN") --listen $1:$PORT --status 127.0.0.1:$STATUS_PORT --expect-workers $WORKERS --output $JOB_DIR/tb --checkpoints $JOB_DIR/ck"
}

# A systemd unit: description, the machine's private address (waited for before
# the start, since the process listens only there), command line. A killed
# process is restarted and resumes; a clean error exit (a bad plan) is not.
# `systemctl stop` (and a shutdown) sends SIGTERM: the job makes its next
# round durable and exits 75, which counts as a clean stop; TimeoutStopSec
# leaves it the time a stage-2 round and its checkpoint take before SIGKILL.
# LimitNOFILE: systemd's default of 1024 descriptors is too few for a
# coordinator's gRPC, status and peer connections.
unit_file() {
  printf '[Unit]\nDescription=%s\nAfter=network-online.target\nWants=network-online.target\n\n' "$1"
  printf '[Service]\nUser=retro\nEnvironmentFile=/etc/retro/env\nWorkingDirectory=/var/lib/retro\n'
  printf 'ExecStartPre=/opt/retro/wait-for-address.sh %s\n' "$2"
  printf 'ExecStart=%s\nRestart=on-abnormal\nRestartSec=5\n' "$3"
  printf 'KillSignal=SIGTERM\nTimeoutStopSec=900\nSuccessExitStatus=75\nLimitNOFILE=65536\n'
  printf '\n[Install]\nWantedBy=multi-user.target\n'
}

# Uploads what a worker machine runs: the worker and the address wait.
upload_worker() {
  run scp "${SSH_OPTS[@]}" "$BIN/worker" "$HERE/wait-for-address.sh" "root@$(public_ip "$1"):/opt/retro/"
}

# Installs a unit file on a machine and (re)starts it: machine, unit name, file.
start_unit() {
  run scp "${SSH_OPTS[@]}" "$3" "root@$(public_ip "$1"):/etc/systemd/system/$2.service"
  on "$1" "systemctl daemon-reload && systemctl enable $2 && systemctl restart $2"
}

# The worker unit of worker I, given the coordinator's private address; extra
# worker flags (--replace wN) after them.
worker_unit() {
  local ip
  ip=$(private_ip "$(worker_name "$1")")
  unit_file "retro worker ($JOB)" "$ip" \
    "/opt/retro/worker --connect $2:$PORT --listen $ip:$PEER_PORT --data /var/lib/retro/worker${3:+ $3}"
}

# SHA-256 of a file (sha256sum on Linux, shasum on macOS).
sha256_of() {
  if command -v sha256sum >/dev/null; then sha256sum "$1" | cut -d' ' -f1; else shasum -a 256 "$1" | cut -d' ' -f1; fi
}

# Follows the coordinator's log until the job ends and returns the
# coordinator's exit status. A dropped connection is not the end of the job:
# it reconnects (every RECONNECT_INTERVAL seconds) until it sees the end.
# Ctrl-C stops following, never the job.
follow_job() {
  local coord lines=30 marker rc
  coord=$(coordinator_name)
  if [[ "$DRY_RUN" == 1 ]]; then
    on "$coord" "journalctl -n $lines -fu retro-coordinator & (follow until the unit stops)"
    return 0
  fi
  marker=$(mktemp)
  trap 'rm -f "$marker"; echo; say "stopped following; the job goes on (and bills). Follow again: deploy/hetzner/attach.sh --job $JOB; progress: status.sh --job $JOB; stop and delete: destroy.sh --job $JOB"; exit 130' INT TERM HUP
  while true; do
    : > "$marker"
    # The remote side prints the log until the unit is neither active nor
    # restarting, then one marker line with the coordinator's exit status.
    rc=0
    on "$coord" "journalctl -n $lines -fu retro-coordinator & j=\$!; \
while systemctl show -p ActiveState --value retro-coordinator | grep -qvxE 'inactive|failed'; do sleep 10; done; \
kill \$j; echo \"retro-job-ended \$(systemctl show -p ExecMainStatus --value retro-coordinator)\"" \
      | while IFS= read -r line; do
          case "$line" in
            "retro-job-ended "*) echo "${line#retro-job-ended }" > "$marker" ;;
            *) printf '%s\n' "$line" ;;
          esac
        done || rc=$?
    if [[ -s "$marker" ]]; then
      rc=$(cat "$marker"); rm -f "$marker"; trap - INT TERM HUP
      [[ "$rc" =~ ^[0-9]+$ ]] || rc=1
      return "$rc"
    fi
    say "lost the connection to $coord (the job goes on there); following again in $RECONNECT_INTERVAL s (Ctrl-C stops following, not the job)"
    sleep "$RECONNECT_INTERVAL"
    lines=5
  done
}
