#!/bin/bash
# scripts/slurm/start.sh — install (if needed), configure and start a throw-away Slurm
# cluster on this one machine, for berth's Slurm tests and for trying berth under Slurm.
# Debian bookworm's packages (Slurm 22.05). Must run as root; touches nothing under /etc:
# every file lives in $BERTH_SLURM_DIR. Clients then need:  source $BERTH_SLURM_DIR/env.sh
#
# Idempotent and serialized (flock): a second call with the same settings returns at once;
# changed settings restart the cluster with fresh state. Never restart it while an
# `sbatch --wait` is pending: that call would then wait forever.
#
# Knobs (environment):
#   BERTH_SLURM_DIR   everything lives here                 (default /tmp/berth-slurm)
#   SLURM_NODES       emulated nodes                         (default 1 -> one node named
#                     `hostname -s`; N>1 -> n1..nN, one slurmd each, all on 127.0.0.1, so
#                     they share one port space and the names n1..nN do not resolve)
#   SLURM_CPUS        CPUs per node (may exceed nproc)      (default 8)
#   SLURM_FAKE_GPUS   fake GPUs per node, 0 = no gres       (default 4; gres files are
#                     symlinks to /dev/null: jobs get CUDA_VISIBLE_DEVICES / SLURM_*_GPUS)
#   SLURM_AUTH        none | munge                          (default none: one fewer daemon)
#   SLURM_PORT_BASE   slurmctld port; slurmd i uses +i      (default 17817)
#   SLURM_WAIT_S      seconds to wait for idle nodes         (default 60)
#   SLURM_RESV_PORTS  ports for srun --resv-ports           (default 12000-12999)
#   SLURM_NETNS       run the daemons (and so every job) in the named network namespace
#                     NAME (`ip netns`), made afresh whenever the cluster (re)starts; stop.sh
#                     deletes it. Its own ports, leases and loopback: two clusters on one
#                     host (two test suites at once) share no port, lease or job id. Clients
#                     then run there too: ip netns exec NAME sbatch …   (default: none, the host's)
#   BERTH_SLURM_USER  a pid to register as a user of the cluster (test files); stop.sh with
#                     BERTH_SLURM_RELEASE=that pid stops it only when no live user is left
set -euo pipefail

D=${BERTH_SLURM_DIR:-/tmp/berth-slurm}
NODES=${SLURM_NODES:-1}
CPUS=${SLURM_CPUS:-8}
NGPU=${SLURM_FAKE_GPUS:-4}
AUTH=${SLURM_AUTH:-none}
PORT=${SLURM_PORT_BASE:-17817}
WAIT_S=${SLURM_WAIT_S:-60}
RESV=${SLURM_RESV_PORTS:-12000-12999}
H=$(hostname -s)
NETNS=${SLURM_NETNS:-}
CONF=$D/etc/slurm.conf
export SLURM_CONF=$CONF
HERE=$(cd "$(dirname "$0")" && pwd)

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.2f", b-a}'; }
log() { echo "[slurm/start] $*"; }
alive() {  # $1 = pid file naming a live, non-zombie process called $2
  local p; [ -s "$1" ] || return 1; p=$(cat "$1")
  kill -0 "$p" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null \
    && [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$2" ]; }

[ "$(id -u)" = 0 ] || { echo "[slurm/start] must run as root" >&2; exit 1; }
case $AUTH in none|munge) ;; *) echo "[slurm/start] SLURM_AUTH must be none or munge" >&2; exit 1;; esac
mkdir -p "$D"; chmod 755 "$D"
# Concurrent callers (parallel test files) must not both restart the cluster.
exec 9>"$D/.lock"; flock 9
# Registered under the lock that stop.sh's BERTH_SLURM_RELEASE takes too: a cluster found
# running here cannot be stopped by a last user leaving before this one is counted.
if [ -n "${BERTH_SLURM_USER:-}" ]; then mkdir -p "$D/test-users"; : > "$D/test-users/$BERTH_SLURM_USER"; fi
[[ $NETNS =~ ^[A-Za-z0-9_-]*$ ]] || { echo "[slurm/start] SLURM_NETNS: a name of letters, digits, - and _" >&2; exit 1; }
# Runs "$@" in the cluster's network namespace (as is, without SLURM_NETNS).
inns() { if [ -n "$NETNS" ]; then nsenter --net="/run/netns/$NETNS" -- "$@"; else "$@"; fi; }

# ---- 1. install ----------------------------------------------------------------------
pkgs="slurmctld slurmd slurm-client"
[ "$AUTH" = munge ] && pkgs="$pkgs munge"
need=0
for b in slurmctld slurmd sbatch srun sinfo scontrol; do command -v $b >/dev/null || need=1; done
[ "$AUTH" = munge ] && { command -v munged >/dev/null || need=1; }
if [ $need = 1 ]; then
  t=$(now)
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # The packages' postinst may try to start the daemons with the default /etc config;
  # policy-rc.d 101 stops that (we run our own, from $D).
  prc=/usr/sbin/policy-rc.d; made_prc=0
  if [ ! -e $prc ]; then printf '#!/bin/sh\nexit 101\n' > $prc; chmod 755 $prc; made_prc=1; fi
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $pkgs >/dev/null || { [ $made_prc = 1 ] && rm -f $prc; exit 1; }
  [ $made_prc = 1 ] && rm -f $prc
  log "installed $pkgs in $(since "$t")s"
fi

# ---- 2. configure (into a temp dir; compare with the running config) --------------------
if [ "$NODES" -le 1 ]; then NAMES=$H; else NAMES=$(seq -f 'n%g' 1 "$NODES"); fi
mkdir -p "$D"/etc "$D"/log "$D"/run "$D"/dev
new=$D/etc/.new; rm -rf "$new"; mkdir -p "$new"
if [ "$AUTH" = munge ]; then
  authlines="AuthType=auth/munge
AuthInfo=socket=$D/munge/run/munge.socket.2
CredType=cred/munge"
else
  authlines="AuthType=auth/none
CredType=cred/none"
fi
{
cat <<CONF
ClusterName=berth
SlurmctldHost=$H(127.0.0.1)
SlurmUser=root
SlurmdUser=root
$authlines
SlurmctldPort=$PORT
StateSaveLocation=$D/state/ctld
SlurmdSpoolDir=$D/state/d/%n
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd-%n.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$D/log/jobcomp.txt
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
# srun --resv-ports takes ports from here (SLURM_STEP_RESV_PORTS, berth --source resv).
MpiParams=ports=$RESV
MailProg=/bin/true
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=300
CONF
[ "$NGPU" -gt 0 ] && echo "GresTypes=gpu"
gres=""; [ "$NGPU" -gt 0 ] && gres=" Gres=gpu:$NGPU"
i=0
for n in $NAMES; do
  i=$((i+1))
  echo "NodeName=$n NodeHostname=$H NodeAddr=127.0.0.1 Port=$((PORT+i)) CPUs=$CPUS RealMemory=1000$gres State=UNKNOWN"
done
echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
} > "$new/slurm.conf"
if [ "$NGPU" -gt 0 ]; then
  # gres File= must name a char/block device: symlinks to /dev/null make fake GPUs.
  for ((g=0; g<NGPU; g++)); do ln -sfn /dev/null "$D/dev/nvidia$g"; done
  { echo "AutoDetect=off"
    for n in $NAMES; do echo "NodeName=$n Name=gpu File=$D/dev/nvidia[0-$((NGPU-1))]"; done
  } > "$new/gres.conf"
else
  : > "$new/gres.conf"
fi

nodes_idle() {
  local out
  out=$(inns sinfo -h -N -o '%N %t' 2>/dev/null) || return 1
  [ -n "$out" ] || return 1
  ! echo "$out" | awk '{print $2}' | grep -qv '^idle$'
}
all_alive() {
  alive "$D/run/slurmctld.pid" slurmctld || return 1
  for n in $NAMES; do alive "$D/run/slurmd-$n.pid" slurmd || return 1; done
  [ "$AUTH" != munge ] || alive "$D/munge/run/munged.pid" munged || return 1
  # In the namespace of that name (not one an earlier run left under it, nor the host's).
  [ -z "$NETNS" ] || [ "$(readlink "/proc/$(cat "$D/run/slurmctld.pid")/ns/net")" = "$(inns readlink /proc/self/ns/net 2>/dev/null)" ]
}
# Running with this config and nodes up (idle, or busy with jobs): nothing to do.
if cmp -s "$new/slurm.conf" "$CONF" && cmp -s "$new/gres.conf" "$D/etc/gres.conf" && all_alive \
   && inns sinfo -h -N -o '%t' 2>/dev/null | grep -Eq '^(idle|mix|alloc)$'; then
  rm -rf "$new"; log "already running (SLURM_CONF=$CONF)"; exit 0
fi

# Something differs or is down: full restart with fresh state.
BERTH_SLURM_DIR=$D SLURM_NETNS=$NETNS "$HERE/stop.sh" >/dev/null 2>&1 || true
if [ -n "$NETNS" ]; then
  # A fresh namespace: nothing of a cluster before (leases with a ttl, its jobs' ports) is in it.
  ip netns delete "$NETNS" 2>/dev/null || true
  ip netns add "$NETNS"
  ip -n "$NETNS" link set lo up
  # Slurm resolves even "127.0.0.1" with AF_INET + AI_ADDRCONFIG, which glibc answers only
  # where an IPv4 address other than 127.0.0.1 itself is configured: give lo a second one.
  ip -n "$NETNS" addr add 127.0.0.2/8 dev lo
fi
mv "$new/slurm.conf" "$CONF"; mv "$new/gres.conf" "$D/etc/gres.conf"; rm -rf "$new"
rm -rf "$D/state"; mkdir -p "$D/state/ctld"
for n in $NAMES; do mkdir -p "$D/state/d/$n"; done
echo "export SLURM_CONF=$CONF" > "$D/env.sh"

# ---- 3. start ----------------------------------------------------------------------------
t0=$(now)
if [ "$AUTH" = munge ]; then
  # munged insists: key owned by its user, mode 0400; socket dir world-executable;
  # log/seed dirs not world-writable.
  mkdir -p "$D/munge/run" "$D/munge/lib" "$D/munge/log"
  chmod 711 "$D/munge"; chmod 755 "$D/munge/run"; chmod 700 "$D/munge/lib" "$D/munge/log"
  if [ ! -s "$D/munge/munge.key" ]; then
    dd if=/dev/urandom of="$D/munge/munge.key" bs=1024 count=1 2>/dev/null
    chmod 400 "$D/munge/munge.key"
  fi
  munged --key-file="$D/munge/munge.key" --socket="$D/munge/run/munge.socket.2" \
         --pid-file="$D/munge/run/munged.pid" --log-file="$D/munge/log/munged.log" \
         --seed-file="$D/munge/lib/munged.seed" --force 9>&-
  for _ in $(seq 50); do [ -S "$D/munge/run/munge.socket.2" ] && break; sleep 0.1; done
fi
# The daemons must not inherit the caller's fds (a test runner's pipes would never close).
inns slurmctld -f "$CONF" </dev/null >/dev/null 2>&1 9>&-
for n in $NAMES; do inns slurmd -f "$CONF" -N "$n" </dev/null >/dev/null 2>&1 9>&-; done

end=$(( $(date +%s) + WAIT_S ))
until nodes_idle; do
  if [ "$(date +%s)" -ge "$end" ]; then
    echo "[slurm/start] nodes not idle after ${WAIT_S}s" >&2
    inns sinfo -N -l >&2 || true
    tail -n 30 "$D"/log/*.log >&2 2>/dev/null || true
    exit 1
  fi
  sleep 0.2
done
log "cluster up in $(since "$t0")s: nodes=$(echo $NAMES) cpus=$CPUS gpus=$NGPU auth=$AUTH dir=$D"
log "use: source $D/env.sh   (export SLURM_CONF=$CONF)${NETNS:+, in the network namespace: ip netns exec $NETNS …}"
