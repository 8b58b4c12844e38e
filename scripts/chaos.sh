#!/usr/bin/env bash
# Chaos tests on a local multi-host cluster (deploy/local/cluster.sh): the job of
# plans/chaos.toml runs once undisturbed on three namespaced workers, then again
# under each fault, and every faulted run must end with the same tablebase bytes.
#   1. a worker SIGKILLed in the middle of a round, started again with the same command
#   2. a worker's link cut for longer than the heartbeat timeout, then restored
#   3. the coordinator killed after a commit (the "SSH dropped" case), started again
#   4. a worker lost: the coordinator names its shards and what to do; a
#      replacement started with the same --data directory resumes
#   5. a worker lost for good, machine and disk: a new worker with an empty --data
#      takes its place (worker --replace ID); the layer in progress starts again
#   6. the coordinator sent SIGTERM mid-layer (a `systemctl stop`): it stops at its
#      next checkpoint with status 75, the workers with it; all started again resume
#   7. split brain: a worker frozen (SIGSTOP) while a copy of its --data directory
#      runs on another host as that worker; woken, the original is refused (two
#      processes cannot run as one worker) and the job ends with the same bytes
#   8. the coordinator's machine lost for good mid-layer: host and disk replaced, the
#      job resumes from a copy of its checkpoint and output directories (the volume
#      of a rented coordinator), the workers reconnecting to the new host
# Ends with `N passed, M failed` (non-zero exit on any failure). Skips with a message
# (exit 0) where network namespaces cannot be made. Needs release binaries:
#   cargo build --release && scripts/chaos.sh [--bin DIR] [--cases 1,3,8]
# --cases runs only the cases of those numbers (after the baseline), so that two
# scripts with different RETRO_CLUSTER_NAME and RETRO_CLUSTER_SUBNET can share the
# cases between them and run side by side (the test command does).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BIN=target/release
CASES=1,2,3,4,5,6,7,8
while [[ $# -gt 0 ]]; do
  case $1 in
    --bin) BIN=$2; shift 2 ;;
    --cases) CASES=$2; shift 2 ;;
    *) echo "unknown option $1 (--bin DIR, --cases N,N,...)" >&2; exit 2 ;;
  esac
done
[[ $CASES =~ ^[1-8](,[1-8])*$ ]] || { echo "--cases: numbers 1 to 8, comma-separated (got $CASES)" >&2; exit 2; }
PLAN=plans/chaos.toml
export RETRO_CLUSTER_NAME=${RETRO_CLUSTER_NAME:-chaos}
export RETRO_CLUSTER_SUBNET=${RETRO_CLUSTER_SUBNET:-10.78.0}
CLUSTER=deploy/local/cluster.sh
ROOT=$(mktemp -d /tmp/chaos.XXXXXX)
passed=0; failed=0

if ! ip netns add "$RETRO_CLUSTER_NAME-probe" 2>/dev/null; then
  echo "SKIPPED: network namespaces are not permitted here (needs root and ip netns)"
  exit 0
fi
ip netns del "$RETRO_CLUSTER_NAME-probe"
trap '$CLUSTER down >/dev/null 2>&1' EXIT

sums() { (cd "$1/tb" && sha256sum -- *.tb); }
log_has() { grep -q -- "$2" "$1/coordinator.log"; }
# Waits (up to 120 s) until the coordinator has committed round $2 of layer 0.
wait_round() {
  for _ in $(seq 1 1200); do
    grep -q " solo(1) round $2:" "$1/coordinator.log" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
wait_log() { for _ in $(seq 1 1200); do grep -q -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }
wait_file() { for _ in $(seq 1 1200); do [[ -f "$1" ]] && return 0; sleep 0.1; done; return 1; }

run_case() {
  local name=$1; shift
  local st=$ROOT/$name
  echo "--- $name"
  if "$@" "$st" && $CLUSTER wait >/dev/null && [[ "$(sums "$st")" == "$BASELINE" ]]; then
    echo "PASS $name"; passed=$((passed + 1))
  else
    echo "FAIL $name (state and logs in $st)"; failed=$((failed + 1))
    $CLUSTER status || true
  fi
  $CLUSTER down >/dev/null
}

up() { $CLUSTER up 3 --plan "$PLAN" --bin "$BIN" --state "$1" >/dev/null; }

baseline() { up "$1"; }

worker_killed_mid_round() {
  RETRO_FAULT_worker2=mid-apply:0:6 up "$1" || return 1
  wait_file "$1/worker2.rc" || return 1
  grep -q "RETRO_FAULT: killing" "$1/worker2.log" || return 1
  $CLUSTER start worker2 >/dev/null
}

link_cut() {
  up "$1" || return 1
  wait_round "$1" 4 || return 1
  $CLUSTER cut worker2 >/dev/null
  sleep 6   # twice the plan's heartbeat timeout
  log_has "$1" "presumed lost" || { echo "coordinator did not notice the cut"; $CLUSTER heal worker2; return 1; }
  $CLUSTER heal worker2 >/dev/null
}

coordinator_killed() {
  RETRO_FAULT_coordinator=after-commit:0:5 up "$1" || return 1
  wait_file "$1/coordinator.rc" || return 1
  $CLUSTER start coordinator >/dev/null
}

worker_lost_for_good() {
  up "$1" || return 1
  wait_round "$1" 4 || return 1
  $CLUSTER kill worker3 >/dev/null
  sleep 5
  # The coordinator says which shards are gone and what to do.
  log_has "$1" "worker w[0-9]* (shards \[.*\]) has been silent" || { echo "no message naming the lost shards"; return 1; }
  log_has "$1" "same --data directory" || return 1
  # The replacement: same command, same --data directory.
  $CLUSTER start worker3 >/dev/null
}

machine_lost_for_good() {
  up "$1" || return 1
  wait_round "$1" 4 || return 1
  $CLUSTER kill worker3 >/dev/null
  sleep 5
  local id
  id=$(grep -o "worker w[0-9]* (shards \[[^]]*\]) has been silent" "$1/coordinator.log" | head -n 1 | cut -d' ' -f2)
  [[ -n "$id" ]] || { echo "no message naming the lost worker"; return 1; }
  # Its machine is gone with its disk: a new one starts empty, in its place.
  $CLUSTER replace worker3 "$id" >/dev/null || return 1
  wait_file "$1/coordinator.rc" || return 1
  log_has "$1" "replaces worker $id" || { echo "the coordinator did not log the replacement"; return 1; }
  grep -q "discarding attempt 0" "$1/worker1.log" || { echo "worker1 kept the lost attempt"; return 1; }
}

coordinator_stopped() {
  up "$1" || return 1
  wait_round "$1" 4 || return 1
  $CLUSTER term coordinator >/dev/null
  [[ "$(cat "$1/coordinator.rc")" == 75 ]] || { echo "the coordinator's status was not 75"; return 1; }
  log_has "$1" "stopped at a checkpoint" || { echo "the coordinator did not say where it stopped"; return 1; }
  local w
  for w in worker1 worker2 worker3; do
    wait_file "$1/$w.rc" || return 1
    [[ "$(cat "$1/$w.rc")" == 75 ]] || { echo "$w's status was not 75"; return 1; }
  done
  for w in coordinator worker1 worker2 worker3; do $CLUSTER start "$w" >/dev/null; done
}

split_brain() {
  RETRO_FAULT_worker2=stop-after-apply:0:4 up "$1" || return 1
  wait_log "$1/worker2.log" "freezing this process" || return 1
  $CLUSTER copy worker2 >/dev/null || return 1
  wait_log "$1/worker2copy.log" "joined as worker" || { echo "the copy did not join"; return 1; }
  wait_round "$1" 6 || { echo "the job did not go on with the copy"; return 1; }
  $CLUSTER wake worker2 >/dev/null
  wait_file "$1/worker2.rc" || return 1
  [[ "$(cat "$1/worker2.rc")" != 0 ]] || { echo "the woken original exited 0"; return 1; }
  grep -q "two processes cannot run as one worker" "$1/worker2.log" || { echo "the original was not told why"; return 1; }
}

coordinator_machine_replaced() {
  up "$1" || return 1
  wait_round "$1" 4 || return 1
  $CLUSTER replace-coordinator >/dev/null || return 1
  wait_log "$1/coordinator.log" "resuming job" || { echo "the new coordinator did not resume"; return 1; }
}

echo "chaos: plan $PLAN, binaries $BIN, state under $ROOT"
st=$ROOT/baseline
if ! { up "$st" && $CLUSTER wait >/dev/null; }; then
  echo "FAIL baseline: the undisturbed run failed (logs in $st)"; $CLUSTER status; exit 1
fi
BASELINE=$(sums "$st")
$CLUSTER down >/dev/null
echo "baseline: $(echo "$BASELINE" | wc -l) tablebase files"

# The cases in the order of the list at the top, by number.
numbered=(
  "worker-killed-mid-round worker_killed_mid_round"
  "link-cut-and-restored link_cut"
  "coordinator-killed-and-restarted coordinator_killed"
  "worker-lost-and-replaced worker_lost_for_good"
  "machine-lost-for-good machine_lost_for_good"
  "coordinator-stopped-by-sigterm coordinator_stopped"
  "split-brain split_brain"
  "coordinator-machine-replaced coordinator_machine_replaced"
)
IFS=, read -ra chosen <<< "$CASES"
for n in "${chosen[@]}"; do
  # shellcheck disable=SC2086 # the entry is a name and a function, split on purpose
  run_case ${numbered[$((n - 1))]}
done

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]] && rm -rf "$ROOT"
[[ $failed -eq 0 ]]
