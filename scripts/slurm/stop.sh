#!/bin/bash
# scripts/slurm/stop.sh — cancel the jobs of the cluster started by start.sh and stop its
# daemons, by the pids in its pid files only (checked against the command name, so a stale
# pid file never kills a stranger). Safe to run when nothing is running. With the
# SLURM_NETNS start.sh was given, its clients run in that namespace and its name is deleted.
set -u
D=${BERTH_SLURM_DIR:-/tmp/berth-slurm}
export SLURM_CONF=$D/etc/slurm.conf
running() { kill -0 "$1" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null \
            && [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ]; }
NETNS=${SLURM_NETNS:-}
inns() { if [ -n "$NETNS" ] && [ -e "/run/netns/$NETNS" ]; then nsenter --net="/run/netns/$NETNS" -- "$@"; else "$@"; fi; }

# BERTH_SLURM_RELEASE=PID (a test file leaving): unregister PID and stop only when no live
# user is left, under start.sh's lock so no one registers in between. Without it: stop now
# (start.sh calls this holding that lock).
if [ -n "${BERTH_SLURM_RELEASE:-}" ]; then
  [ -d "$D" ] || exit 0
  exec 9>"$D/.lock"; flock 9
  rm -f "$D/test-users/$BERTH_SLURM_RELEASE"
  for u in "$D"/test-users/*; do
    [ -e "$u" ] || continue
    if kill -0 "${u##*/}" 2>/dev/null; then echo "[slurm/stop] still used by pid ${u##*/}"; exit 0; fi
    rm -f "$u"
  done
fi

# Cancel jobs while the daemons live, so their slurmstepd processes end cleanly.
if [ -s "$D/run/slurmctld.pid" ] && running "$(cat "$D/run/slurmctld.pid")" slurmctld; then
  jobs=$(inns squeue -h -o %i 2>/dev/null | tr '\n' ' ')
  if [ -n "${jobs// }" ]; then
    # shellcheck disable=SC2086
    inns scancel $jobs 2>/dev/null
    for _ in $(seq 50); do [ -z "$(inns squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.2; done
  fi
fi

stop_pidfile() {  # $1 = pid file, $2 = command name
  local f=$1 c=$2 p
  [ -s "$f" ] || { rm -f "$f"; return 0; }
  p=$(cat "$f")
  if running "$p" "$c"; then
    kill -TERM "$p" 2>/dev/null
    for _ in $(seq 100); do running "$p" "$c" || break; sleep 0.1; done
    running "$p" "$c" && { echo "[slurm/stop] SIGKILL $p ($f)"; kill -KILL "$p"; }
  fi
  rm -f "$f"
}
for f in "$D"/run/slurmd-*.pid; do [ -e "$f" ] && stop_pidfile "$f" slurmd; done
stop_pidfile "$D/run/slurmctld.pid" slurmctld   # its slurmscriptd child exits with it
stop_pidfile "$D/munge/run/munged.pid" munged
rm -f "$D/munge/run/munge.socket.2" "$D/munge/run/munge.socket.2.lock"
# The name goes; the namespace itself ends with the last process in it (a lease's holder).
[ -z "$NETNS" ] || ip netns delete "$NETNS" 2>/dev/null
echo "[slurm/stop] stopped"
