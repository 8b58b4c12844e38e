#!/usr/bin/env bash
# A multi-host cluster on one machine: the coordinator and N workers, each in
# its own network namespace with its own address on a private bridge, started
# the way the rented machines start them (coordinator --listen, worker --connect).
#
#   deploy/local/cluster.sh up N [--plan PLAN] [--bin DIR] [--state DIR]
#   deploy/local/cluster.sh wait      # until the coordinator exits; its exit status
#   deploy/local/cluster.sh status    # namespaces, processes, last log lines
#   deploy/local/cluster.sh down      # stop everything, remove namespaces, links, bridge
#   deploy/local/cluster.sh kill TAG  # SIGKILL one process (TAG: coordinator, worker1, ...)
#   deploy/local/cluster.sh term TAG  # SIGTERM it (a stop at the next checkpoint), wait for its exit
#   deploy/local/cluster.sh start TAG # start it again with the same command
#   deploy/local/cluster.sh replace TAG ID  # a machine lost for good: kill worker TAG,
#                                     # delete its --data, start it empty with --replace ID
#   deploy/local/cluster.sh replace-coordinator  # the coordinator's machine lost for good: kill it,
#                                     # copy its checkpoints and results (the volume), delete them with
#                                     # its host, make the host again and resume there from the copy
#   deploy/local/cluster.sh copy TAG  # a careless operator: copy worker TAG's --data and start a
#                                     # second process on the copy, on a new host (tag TAGcopy, e.g. worker2copy)
#   deploy/local/cluster.sh wake TAG  # SIGCONT a process stopped by a stop- fault (RETRO_FAULT)
#   deploy/local/cluster.sh cut TAG   # take its host's link down (a network partition)
#   deploy/local/cluster.sh heal TAG  # and up again
#
# Needs root (ip netns, veth, bridge). Environment:
#   RETRO_CLUSTER_NAME    prefix of every name it creates (default: retro; at most 6 characters)
#   RETRO_CLUSTER_SUBNET  first three octets of the private /24 (default: 10.77.0)
#   RETRO_TOKEN           cluster token (default: a random one, kept in the state directory)
#   RETRO_FAULT_<TAG>     RETRO_FAULT for that process's first start only (fault injection)
#   RETRO_CPUS_<TAG>      run that process pinned to these CPUs (taskset -c list, e.g. 0 or 0-1)
#   RETRO_CLUSTER_RATE    shape every host's link to this rate, both ways (tc tbf rate, e.g.
#                         1gbit or 200mbit; default: unshaped)
#   RETRO_CLUSTER_TIME    when 1, run every process under GNU time (/usr/bin/time -v), which
#                         appends its wall time and peak RSS to $STATE/<tag>.time at each exit
# The state directory (default: /tmp/<name>-cluster) holds the logs, the worker
# data directories, the checkpoints, the tablebases (tb/) and the pids.
# `up` cleans up everything it made when it fails part-way; `down` is safe to
# run at any time, also twice.
set -euo pipefail

NAME=${RETRO_CLUSTER_NAME:-retro}
SUBNET=${RETRO_CLUSTER_SUBNET:-10.77.0}
STATE=/tmp/$NAME-cluster
BIN=target/release
PLAN=plans/stage1.toml
BRIDGE=$NAME-br
COORD_NS=$NAME-c
PORT=50051

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit "${1:-2}"; }
die() { echo "cluster.sh: $*" >&2; exit 1; }

parse_opts() {
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --plan) PLAN=$2; shift 2 ;;
      --bin) BIN=$2; shift 2 ;;
      --state) STATE=$2; shift 2 ;;
      -h|--help) usage 0 ;;
      *) die "unknown option $1 (see --help)" ;;
    esac
  done
}

worker_ns() { echo "$NAME-w$1"; }

# Every namespace this cluster made (by prefix), also after a crash of `up`.
our_namespaces() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$NAME-(c|w[0-9]+)$" || true; }

# Creates namespace $1 with address $2 on the bridge (veth $1-v inside as eth0).
add_host() {
  local ns=$1 addr=$2 host_end="${1}h"
  ip netns add "$ns"
  ip link add "$host_end" type veth peer name "${ns}p"
  ip link set "${ns}p" netns "$ns"
  ip link set "$host_end" master "$BRIDGE" up
  ip netns exec "$ns" ip link set "${ns}p" name eth0
  ip netns exec "$ns" ip addr add "$addr/24" dev eth0
  ip netns exec "$ns" ip link set eth0 up
  ip netns exec "$ns" ip link set lo up
  if [[ -n "${RETRO_CLUSTER_RATE:-}" ]]; then
    # Egress of the host (what it sends) and of its bridge end (what it receives).
    local rate=$RETRO_CLUSTER_RATE
    ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst 1mb latency 100ms
    tc qdisc add dev "$host_end" root tbf rate "$rate" burst 1mb latency 100ms
  fi
}

# Starts "$@" inside namespace $1 detached from this shell (as a systemd unit
# would be), writing $STATE/$2.log, $STATE/$2.pid and, at exit, $STATE/$2.rc.
start_in() {
  local ns=$1 tag=$2; shift 2
  printf '%q ' "$@" > "$STATE/$tag.cmd"
  echo "$ns" > "$STATE/$tag.ns"
  local fault_var="RETRO_FAULT_$tag" cpus_var="RETRO_CPUS_$tag"
  local -a fault=(env -u RETRO_FAULT)
  [[ -n "${!fault_var:-}" ]] && fault=(env "RETRO_FAULT=${!fault_var}")
  local -a pin=()
  [[ -n "${!cpus_var:-}" ]] && pin=(taskset -c "${!cpus_var}")
  # GNU time outside taskset, so that it measures the process, pinned or not.
  [[ "${RETRO_CLUSTER_TIME:-0}" == 1 ]] && pin=(/usr/bin/time -v -a -o "$STATE/$tag.time" "${pin[@]}")
  rm -f "$STATE/$tag.rc"
  # shellcheck disable=SC2016  # the inner script expands its own "$@" and "$0"
  "${fault[@]}" ip netns exec "$ns" setsid bash -c \
    '"$@" >> "$0.log" 2>&1; echo $? > "$0.rc"' "$STATE/$tag" "${pin[@]}" "$@" < /dev/null 2> /dev/null &
  echo $! > "$STATE/$tag.pid"
}

# The namespace of process TAG in the running cluster.
ns_of() {
  local st; st=$(state_dir)
  [[ -f "$st/$1.ns" ]] || die "no process $1 in cluster $NAME (coordinator, worker1, ...)"
  cat "$st/$1.ns"
}

# The processes in namespace $1 themselves, not their wrappers: stopping
# those lets the wrappers record the exit, the shell its status, GNU time
# (RETRO_CLUSTER_TIME) the peak RSS.
process_pids() {
  local pid
  for pid in $(ip netns pids "$1" 2>/dev/null); do
    case "$(cat "/proc/$pid/comm" 2>/dev/null)" in
      bash | time) ;;
      *) echo "$pid" ;;
    esac
  done
}

cmd_kill() {
  local ns; ns=$(ns_of "$1")
  local st; st=$(state_dir)
  local signal=${2:-KILL}
  for pid in $(process_pids "$ns"); do kill "-$signal" "$pid" 2>/dev/null || true; done
  while [[ ! -f "$st/$1.rc" ]]; do sleep 0.1; done
  echo "$1 ended on SIG$signal (status $(cat "$st/$1.rc"))"
}

cmd_start() {
  local ns; ns=$(ns_of "$1")
  local st; st=$(state_dir)
  STATE=$st
  export RETRO_TOKEN; RETRO_TOKEN=$(cat "$st/token")
  local -a argv
  eval "argv=($(cat "$st/$1.cmd"))"
  unset "RETRO_FAULT_$1"
  start_in "$ns" "$1" "${argv[@]}"
  echo "$1 started again"
}

cmd_replace() {
  local tag=$1 lost=$2
  [[ "$tag" == worker* ]] || die "replace takes a worker (worker1, worker2, ...)"
  local st; st=$(state_dir)
  [[ -f "$st/$tag.rc" ]] || cmd_kill "$tag" >/dev/null
  local -a argv
  eval "argv=($(cat "$st/$tag.cmd"))"
  local data="" i
  for i in "${!argv[@]}"; do
    [[ "${argv[$i]}" == --data ]] && data=${argv[$((i + 1))]}
  done
  [[ -n "$data" ]] || die "no --data in the command of $tag"
  # The disk goes with the machine.
  rm -rf -- "$data"
  # The new machine's command: empty --data, --replace (kept for later restarts of it).
  printf '%q ' "${argv[@]}" --replace "$lost" > "$st/$tag.cmd"
  cmd_start "$tag" >/dev/null
  echo "$tag replaces worker $lost with an empty --data"
}

# The coordinator's machine lost for good, as on rented machines whose
# coordinator keeps its checkpoints and results on a volume: the process
# killed, the volume's contents copied, the machine's disk (the originals)
# and its host (namespace) gone, a new host made at the same address, the
# copy put back where the new coordinator reads it, and the coordinator
# started there with the same command.
cmd_replace_coordinator() {
  local st; st=$(state_dir)
  STATE=$st
  [[ -f "$st/coordinator.cmd" ]] || die "no coordinator in cluster $NAME"
  [[ -f "$st/coordinator.rc" ]] || cmd_kill coordinator >/dev/null
  local -a argv
  eval "argv=($(cat "$st/coordinator.cmd"))"
  local i ck="" out=""
  for i in "${!argv[@]}"; do
    case "${argv[$i]}" in
      --checkpoints) ck=${argv[$((i + 1))]} ;;
      --output) out=${argv[$((i + 1))]} ;;
    esac
  done
  [[ -n "$ck" && -n "$out" ]] || die "no --checkpoints or --output in the coordinator's command"
  local volume=$st/volume
  rm -rf -- "$volume"; mkdir -p "$volume"
  cp -a -- "$ck" "$volume/ck"
  [[ -d "$out" ]] && cp -a -- "$out" "$volume/tb"
  rm -rf -- "$ck" "$out"
  ip netns del "$COORD_NS"
  add_host "$COORD_NS" "$SUBNET.1"
  mv -- "$volume/ck" "$ck"
  [[ -d "$volume/tb" ]] && mv -- "$volume/tb" "$out"
  rmdir -- "$volume"
  cmd_start coordinator >/dev/null
  echo "coordinator replaced: a new host at $SUBNET.1 resumes from the copy of $ck"
}

# The split-brain case: worker TAG's directory copied (while TAG still lives,
# frozen or not) and a second process started on the copy, on a host of its
# own, as an operator who took TAG for lost would.
cmd_copy() {
  local tag=$1
  [[ "$tag" == worker* && "$tag" != *copy ]] || die "copy takes a worker (worker1, worker2, ...)"
  local st; st=$(state_dir)
  STATE=$st
  [[ -f "$st/$tag.cmd" ]] || die "no process $tag in cluster $NAME"
  [[ ! -f "$st/${tag}copy.cmd" ]] || die "$tag already has a copy (${tag}copy)"
  local -a argv
  eval "argv=($(cat "$st/$tag.cmd"))"
  local i n=$(( $(our_namespaces | grep -c -- "-w") + 1 )) data=""
  local addr="$SUBNET.$((10 + n))"
  for i in "${!argv[@]}"; do
    case "${argv[$i]}" in
      --data) data=${argv[$((i + 1))]}; argv[i + 1]="$data-copy" ;;
      --listen) argv[i + 1]="$addr:50052" ;;
    esac
  done
  [[ -n "$data" ]] || die "no --data in the command of $tag"
  cp -a -- "$data" "$data-copy"
  add_host "$(worker_ns "$n")" "$addr"
  export RETRO_TOKEN; RETRO_TOKEN=$(cat "$st/token")
  start_in "$(worker_ns "$n")" "${tag}copy" "${argv[@]}"
  echo "${tag}copy started on a copy of $data, at $addr"
}

cmd_link() {
  local ns; ns=$(ns_of "$1")
  ip netns exec "$ns" ip link set eth0 "$2"
  echo "$1 link $2"
}

cmd_up() {
  local n=${1:-}; shift || true
  [[ "$n" =~ ^[0-9]+$ && "$n" -ge 1 ]] || die "up needs a worker count, e.g. up 3"
  parse_opts "$@"
  [[ ${#NAME} -le 6 ]] || die "RETRO_CLUSTER_NAME must have at most 6 characters (interface names are short)"
  [[ $(id -u) -eq 0 ]] || die "needs root for network namespaces"
  [[ -x "$BIN/coordinator" && -x "$BIN/worker" ]] || die "no binaries in $BIN (cargo build --release, or --bin DIR)"
  [[ -f "$PLAN" ]] || die "no plan $PLAN"
  if [[ "${RETRO_CLUSTER_TIME:-0}" == 1 ]]; then
    /usr/bin/time -v true >/dev/null 2>&1 || die "RETRO_CLUSTER_TIME=1 needs GNU time at /usr/bin/time"
  fi
  if [[ -n "$(our_namespaces)" ]] || ip link show "$BRIDGE" >/dev/null 2>&1; then
    die "a cluster named $NAME is already up (cluster.sh down first, or set RETRO_CLUSTER_NAME)"
  fi
  BIN=$(cd "$BIN" && pwd); PLAN=$(cd "$(dirname "$PLAN")" && pwd)/$(basename "$PLAN")
  mkdir -p "$STATE"; STATE=$(cd "$STATE" && pwd)
  echo "$STATE" > "/tmp/$NAME-cluster.state"
  trap 'echo "cluster.sh: up failed; cleaning up" >&2; cmd_down >/dev/null 2>&1 || true' ERR
  local token=${RETRO_TOKEN:-}
  if [[ -z "$token" ]]; then
    token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  fi
  echo "$token" > "$STATE/token"; chmod 600 "$STATE/token"
  export RETRO_TOKEN=$token

  ip link add "$BRIDGE" type bridge
  ip addr add "$SUBNET.254/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  add_host "$COORD_NS" "$SUBNET.1"
  start_in "$COORD_NS" coordinator "$BIN/coordinator" --plan "$PLAN" --listen "$SUBNET.1:$PORT" \
    --expect-workers "$n" --output "$STATE/tb" --checkpoints "$STATE/ck"
  for i in $(seq 1 "$n"); do
    local ns; ns=$(worker_ns "$i")
    add_host "$ns" "$SUBNET.$((10 + i))"
    start_in "$ns" "worker$i" "$BIN/worker" --connect "$SUBNET.1:$PORT" --listen "$SUBNET.$((10 + i)):50052" \
      --data "$STATE/w$i"
  done
  trap - ERR
  echo "cluster $NAME up: coordinator $SUBNET.1:$PORT, $n workers; state in $STATE"
}

# The state directory of the running (or last) cluster of this name.
state_dir() { cat "/tmp/$NAME-cluster.state" 2>/dev/null || echo "$STATE"; }

cmd_wait() {
  local st; st=$(state_dir)
  [[ -f "$st/coordinator.pid" ]] || die "no cluster $NAME was started"
  while [[ ! -f "$st/coordinator.rc" ]]; do
    kill -0 "$(cat "$st/coordinator.pid")" 2>/dev/null || break
    sleep 0.5
  done
  [[ -f "$st/coordinator.rc" ]] || die "the coordinator died without an exit status; see $st/coordinator.log"
  local rc; rc=$(cat "$st/coordinator.rc")
  echo "coordinator exited with status $rc (log: $st/coordinator.log)"
  return "$rc"
}

cmd_status() {
  local st; st=$(state_dir)
  echo "namespaces: $(our_namespaces | tr '\n' ' ')"
  ip link show "$BRIDGE" >/dev/null 2>&1 && echo "bridge: $BRIDGE" || echo "bridge: none"
  for pidfile in "$st"/*.pid; do
    [[ -f "$pidfile" ]] || continue
    local tag; tag=$(basename "$pidfile" .pid)
    local state
    if [[ -f "$st/$tag.rc" ]]; then state="exited $(cat "$st/$tag.rc")"
    elif kill -0 "$(cat "$pidfile")" 2>/dev/null; then state=running
    else state=gone; fi
    echo "$tag: $state"
  done
  [[ -f "$st/coordinator.log" ]] && tail -n 3 "$st/coordinator.log"
  return 0
}

cmd_down() {
  local st; st=$(state_dir)
  # Stop the processes: first the programs themselves, for up to 5 s, so that
  # their wrappers record the exit (a long job stopped and resumed keeps each
  # segment's peak RSS); then whatever is left in each namespace, then
  # whatever the pid files name.
  local ns pid i
  for ns in $(our_namespaces); do
    for pid in $(process_pids "$ns"); do kill -TERM "$pid" 2>/dev/null || true; done
  done
  for i in $(seq 50); do
    [[ -z "$(for ns in $(our_namespaces); do ip netns pids "$ns" 2>/dev/null; done)" ]] && break
    sleep 0.1
  done
  for ns in $(our_namespaces); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -TERM "$pid" 2>/dev/null || true; done
  done
  sleep 0.5
  for ns in $(our_namespaces); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
  done
  for pidfile in "$st"/*.pid; do
    [[ -f "$pidfile" ]] && { kill -KILL "$(cat "$pidfile")" 2>/dev/null || true; rm -f "$pidfile" "${pidfile%.pid}.ns"; }
  done
  # Deleting a namespace deletes its end of each veth, and with it the peer.
  for ns in $(our_namespaces); do ip netns del "$ns"; done
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E "^$NAME-(c|w[0-9]+)h$" || true); do
    ip link del "$link" 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
  rm -f "/tmp/$NAME-cluster.state"
  echo "cluster $NAME down (logs and data kept in $st)"
}

case "${1:-}" in
  up) shift; cmd_up "$@" ;;
  wait) cmd_wait ;;
  status) cmd_status ;;
  down) cmd_down ;;
  kill) cmd_kill "${2:?kill needs a process tag}" ;;
  term) cmd_kill "${2:?term needs a process tag}" TERM ;;
  start) cmd_start "${2:?start needs a process tag}" ;;
  replace) cmd_replace "${2:?replace needs a worker tag}" "${3:?replace needs the id of the lost worker}" ;;
  replace-coordinator) cmd_replace_coordinator ;;
  copy) cmd_copy "${2:?copy needs a worker tag}" ;;
  wake) ns=$(ns_of "${2:?wake needs a process tag}"); for pid in $(process_pids "$ns"); do kill -CONT "$pid"; done ;;
  cut) cmd_link "${2:?cut needs a process tag}" down ;;
  heal) cmd_link "${2:?heal needs a process tag}" up ;;
  -h|--help|help) usage 0 ;;
  *) usage ;;
esac
