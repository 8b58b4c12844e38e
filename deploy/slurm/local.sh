#!/usr/bin/env bash
# A real Slurm on this one machine, for trying and testing deploy/slurm/retro.sbatch:
# munged, slurmctld and one slurmd (with CPUS cpus, more than the machine has
# if asked), all under DIR, talking over loopback on ports the OS chose. Needs
# root and Debian's slurm-wlm and munge packages.
#
#   deploy/slurm/local.sh up DIR [CPUS]   start it; prints `export SLURM_CONF=DIR/slurm.conf`
#   deploy/slurm/local.sh down DIR        stop every daemon it started (DIR is kept)
#
# Then, with SLURM_CONF exported: sbatch, squeue, scontrol, scancel as on any cluster.
set -euo pipefail

usage() { echo "usage: $0 up DIR [CPUS] | down DIR" >&2; exit 2; }
[[ $# -ge 2 ]] || usage
cmd=$1
dir=$(mkdir -p "$2" && cd "$2" && pwd)
cpus=${3:-4}

# A port the OS gives free now (bound, then released).
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Waits until `test` succeeds, or fails naming `what` and its log.
wait_for() {
    local what=$1 log=$2; shift 2
    for _ in $(seq 100); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
    echo "error: $what did not start; its log, $log:" >&2
    tail -n 20 "$log" >&2 || true
    exit 1
}

down() {
    for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munged.pid"; do
        [[ -f $pidfile ]] || continue
        pid=$(cat "$pidfile")
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        rm -f "$pidfile"
    done
}

case $cmd in
down)
    down
    exit 0
    ;;
up) ;;
*) usage ;;
esac

for tool in munged slurmctld slurmd sbatch scontrol python3; do
    command -v "$tool" >/dev/null || { echo "error: $tool is missing (apt-get install slurm-wlm munge)" >&2; exit 1; }
done
[[ $(id -u) == 0 ]] || { echo "error: run as root (the daemons run as root here)" >&2; exit 1; }
down # a previous start of the same DIR

mkdir -p "$dir/munge" "$dir/ctld" "$dir/spool"
chmod 700 "$dir/munge"
if [[ ! -f $dir/munge/munge.key ]]; then
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$dir/munge/munge.key"
fi
socket=$dir/munge/munge.socket
munged --force --key-file="$dir/munge/munge.key" --socket="$socket" \
    --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/seed"
wait_for munged "$dir/munged.log" test -S "$socket"

ctld_port=$(free_port)
slurmd_port=$(free_port)
memory_mb=$(awk '/MemTotal/ { print int($2 / 1024 / 2) }' /proc/meminfo)
cat >"$dir/slurm.conf" <<EOF
# Written by deploy/slurm/local.sh: one node on loopback.
ClusterName=retro-local
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
JobRequeue=1
ReturnToService=2
MinJobAge=3600
SlurmdParameters=config_overrides
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory_mb State=UNKNOWN
PartitionName=local Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$dir/slurm.conf
slurmctld -f "$SLURM_CONF"
wait_for slurmctld "$dir/slurmctld.log" scontrol ping
slurmd -f "$SLURM_CONF" -N localhost
node_up() { scontrol show node localhost | grep -Eq 'State=(IDLE|MIXED|ALLOCATED)'; }
wait_for slurmd "$dir/slurmd.log" node_up
echo "export SLURM_CONF=$SLURM_CONF"
