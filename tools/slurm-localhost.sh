#!/usr/bin/env bash
# A one-node Slurm on this machine, for trying `--cluster slurm` (and its slow test) for real.
#
# Installs Debian's slurm-wlm and munge with apt-get where missing, writes a munge key and
# /etc/slurm/slurm.conf (this host as controller and only node, CPUs = nproc, proctrack/linuxproc,
# task/none, select/cons_tres, one partition with OverSubscribe=FORCE:4), starts munged (as the
# munge user), slurmctld and slurmd, and waits until `sinfo` shows the node idle. Needs root.
#
# Idempotent: what is already installed, configured or running is left as it is and said so; a
# slurm.conf that differs from the one this script would write is replaced (the old one kept as
# slurm.conf.bak) and the Slurm daemons are restarted (`scontrol shutdown`, then started again).
#
# Usage: sudo tools/slurm-localhost.sh          (SLURM_UP_TIMEOUT_S: seconds to wait, default 60)
set -euo pipefail

CONF_DIR=/etc/slurm
CONF=$CONF_DIR/slurm.conf
PARTITION=debug
TIMEOUT_S=${SLURM_UP_TIMEOUT_S:-60}
HOST=$(hostname -s)
CPUS=$(nproc)

say() { printf 'slurm-localhost: %s\n' "$*"; }
die() { say "error: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root (apt-get, /etc/slurm, daemons)"

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tools/slurm-common.sh
. "$HERE/slurm-common.sh"
install_packages
start_munge

# --- slurm.conf -------------------------------------------------------------------------------
install -d -o slurm -g slurm -m 0755 /var/spool/slurmctld /var/log/slurm
install -d -m 0755 /var/spool/slurmd /run/slurm
chown slurm:slurm /var/log/slurm
new=$(mktemp)
trap 'rm -f "$new"' EXIT
cat >"$new" <<EOF
# Written by tools/slurm-localhost.sh: one node, this host, for trying --cluster slurm.
$(slurm_conf_common localhost)
SlurmctldHost=$HOST
SlurmdSpoolDir=/var/spool/slurmd
SlurmdPidFile=/run/slurm/slurmd.pid
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=$HOST CPUs=$CPUS State=UNKNOWN
PartitionName=$PARTITION Nodes=$HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
changed=0
install -d -m 0755 "$CONF_DIR"
if [ -f "$CONF" ] && cmp -s "$new" "$CONF"; then
    say "$CONF up to date (SlurmctldHost=$HOST, CPUs=$CPUS)"
else
    [ -f "$CONF" ] && cp "$CONF" "$CONF.bak" && say "kept the previous $CONF as $CONF.bak"
    install -m 0644 "$new" "$CONF"
    changed=1
    say "wrote $CONF (SlurmctldHost=$HOST, NodeName=$HOST CPUs=$CPUS, partition $PARTITION)"
fi

# --- daemons ----------------------------------------------------------------------------------
alive() {  # alive PIDFILE: the daemon whose pid the file holds is running
    [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}
if [ "$changed" -eq 1 ] && alive /run/slurm/slurmctld.pid; then
    say "configuration changed: stopping the running Slurm daemons (scontrol shutdown)"
    scontrol shutdown || true
    for _ in $(seq 50); do
        alive /run/slurm/slurmctld.pid || alive /run/slurm/slurmd.pid || break
        sleep 0.2
    done
fi
if alive /run/slurm/slurmctld.pid; then
    say "slurmctld already running (pid $(cat /run/slurm/slurmctld.pid))"
else
    say "starting slurmctld"
    /usr/sbin/slurmctld
fi
if alive /run/slurm/slurmd.pid; then
    say "slurmd already running (pid $(cat /run/slurm/slurmd.pid))"
else
    say "starting slurmd"
    /usr/sbin/slurmd
fi

# --- wait for the node ------------------------------------------------------------------------
say "waiting up to ${TIMEOUT_S} s for node $HOST to be idle"
state=""
for _ in $(seq $((TIMEOUT_S * 2))); do
    state=$(sinfo -h -n "$HOST" -o %t 2>/dev/null | head -1 || true)
    case "$state" in
        idle|mix|alloc) break ;;
        down*|drain*|drng*) scontrol update NodeName="$HOST" State=RESUME 2>/dev/null || true ;;
    esac
    sleep 0.5
done
case "$state" in
    idle|mix|alloc) ;;
    *) die "node $HOST is '${state:-not listed}' after ${TIMEOUT_S} s; see /var/log/slurm/slurmctld.log and slurmd.log" ;;
esac
say "node $HOST is $state:"
sinfo
say "ready: e.g. srun -n2 hostname; srun -n3 -O ... (OverSubscribe=FORCE:4, $CPUS CPUs)"
