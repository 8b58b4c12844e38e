#!/usr/bin/env bash
# A running job's progress from the coordinator's /status, through an SSH tunnel to
# its loopback port (nothing of the job listens on a public address): phase, each
# layer's rounds, positions decided and rate, workers, and the time left.
#   deploy/hetzner/status.sh [--job NAME] [--json]
# --json prints the whole status document instead. Needs curl on this computer.
# STATUS_LOCAL_PORT picks this computer's end of the tunnel (default: a random port);
# COORDINATOR_IP=<its public address> works without HCLOUD_TOKEN.
# shellcheck source=deploy/hetzner/common.sh
source "$(dirname "$0")/common.sh"
EXTRA_FLAGS="--json"
parse_common "$@"
need_token_or_ip
command -v curl >/dev/null || [[ "$DRY_RUN" == 1 ]] || die "needs curl"
local_port=${STATUS_LOCAL_PORT:-$((20000 + RANDOM % 20000))}
# The tunnel closes by itself when `sleep` ends and no connection uses it.
run ssh "${SSH_OPTS[@]}" -f -o ExitOnForwardFailure=yes -L "$local_port:127.0.0.1:$STATUS_PORT" \
  "root@$(public_ip "$(coordinator_name)")" sleep 10 \
  || die "no SSH tunnel to $(coordinator_name) (is the job's machine up? try another STATUS_LOCAL_PORT)"
[[ "$DRY_RUN" == 1 ]] && { echo "+ curl http://127.0.0.1:$local_port/status"; exit 0; }
doc=$(curl -fsS --retry 3 --retry-connrefused "http://127.0.0.1:$local_port/status") \
  || die "the coordinator of job $JOB does not answer on /status (has the job ended? deploy/hetzner/attach.sh --job $JOB)"
if [[ -n "${FLAG_json:-}" ]]; then printf '%s\n' "$doc"; exit 0; fi
# The document is pretty-printed JSON with one key per line; this reads the
# fields a person needs without a JSON tool.
printf '%s\n' "$doc" | awk -v job="$JOB" '
  function val(line) { sub(/^[^:]*: */, "", line); sub(/,$/, "", line); gsub(/"/, "", line); return line }
  function group(n) { s = sprintf("%.0f", n); out = ""; while (length(s) > 3) { out = "," substr(s, length(s) - 2) out; s = substr(s, 1, length(s) - 3) } return s out }
  /^  "phase":/ { phase = val($0) }
  /^  "positions":/ { positions = val($0) }
  /^  "expected_workers":/ { expected = val($0) }
  /^  "layers_left":/ { left = val($0) }
  /^  "estimated_seconds_left":/ { eta = val($0) }
  /"id":/ { workers++; id = val($0) }
  /"lost": true/ { lost++; lost_ids = lost_ids " " id }
  /"question":/ { q[++n] = val($0) }
  /"committed_round":/ { r[n] = val($0) }
  /"solved":/ { done[n] = val($0) }
  /"decided":/ { d[n] = val($0) }
  /"last_round_rate":/ { rate[n] = val($0) }
  END {
    printf "job %s: %s\n", job, phase
    printf "workers: %d of %d joined, %d presumed lost%s\n", workers, expected, lost, (lost ? ":" lost_ids : "")
    for (i = 1; i <= n; i++) {
      line = sprintf("  %-12s ", q[i])
      if (done[i] == "true") line = line "solved"
      else if (r[i] == "null") line = line "not started"
      else line = line "round " r[i]
      if (d[i] > 0) line = line sprintf(", %s of %s decided (%.1f %%)", group(d[i]), group(positions), 100 * d[i] / positions)
      if (rate[i] != "" && rate[i] != "null" && done[i] != "true") line = line sprintf(", %s positions/s", group(rate[i]))
      print line
    }
    if (eta == "null" || eta == "") printf "layers left: %s; time left: not known until a layer is solved\n", left
    else printf "layers left: %s; time left: about %.1f h\n", left, eta / 3600
  }'
