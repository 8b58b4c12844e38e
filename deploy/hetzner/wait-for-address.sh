#!/usr/bin/env bash
# Runs on a job machine before the coordinator or worker starts (the units'
# ExecStartPre): waits until this machine holds ADDRESS, its private-network
# address, so that a process listening only there does not fail at boot while
# the private interface is still coming up.
#   wait-for-address.sh ADDRESS [SECONDS]   (default: 120)
set -euo pipefail
address=${1:?usage: wait-for-address.sh ADDRESS [SECONDS]}
limit=${2:-120}
for ((i = 0; i < limit; i++)); do
  ip -o addr show | grep -qF " $address/" && exit 0
  sleep 1
done
echo "wait-for-address.sh: this machine has no address $address after $limit s (is it attached to the job's private network?)" >&2
exit 1
