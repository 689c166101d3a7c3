#!/usr/bin/env bash
# A Slurm cluster of N nodes on this one machine (default 2), for running `--cluster slurm` across
# nodes for real: each node a network and UTS namespace with its own hostname (node1, node2, ...)
# and address on a bridge this script creates (tfsb0, 10.77.0.0/24; nothing routed off the machine),
# pinned to its own cores (CPU affinity of its slurmd, which every job step inherits), with one
# `slurmd -N nodeK` inside it; slurmctld and munged run on the machine itself, on the bridge.
#
# Usage (root; Debian's slurm-wlm and munge, installed with apt-get where missing):
#   sudo tools/slurm-nodes.sh                    up: 2 nodes, links unshaped
#   sudo tools/slurm-nodes.sh --nodes 2 --link-gbps 1 [--latency-ms 0.5]
#                                                up, or reshape a running cluster's links
#   sudo tools/slurm-nodes.sh --link-gbps none   remove the shaping
#   sudo tools/slurm-nodes.sh --status           nodes, cores, links (no change)
#   sudo tools/slurm-nodes.sh --down             remove every namespace, link, daemon and hosts
#                                                entry this script added (the packages stay)
#
# Each node's link is shaped in both directions with htb (the bridge-side end of its veth for
# traffic into the node, the node-side end for traffic out); --latency-ms adds netem where the
# kernel has it, and otherwise says so and leaves latency alone. The link setting is written to
# /run/tfsb-nodes/link, which `python -m harness run --cluster slurm` records beside the link it
# measures itself.
set -euo pipefail

BRIDGE=tfsb0
NET=10.77.0
CTL_ADDR=$NET.1
STATE=/run/tfsb-nodes
CONF_DIR=/etc/slurm
CONF=$CONF_DIR/slurm.conf
PARTITION=nodes
HOSTS_TAG="# tfsb-nodes"
TIMEOUT_S=${SLURM_UP_TIMEOUT_S:-90}
HERE=$(cd "$(dirname "$0")" && pwd)

say() { printf 'slurm-nodes: %s\n' "$*"; }
die() { say "error: $*" >&2; exit 1; }

NODES=2
LINK=""
LATENCY=""
ACTION=up
while [ $# -gt 0 ]; do
    case "$1" in
        --nodes) NODES=${2:?--nodes needs a count}; shift 2 ;;
        --link-gbps) LINK=${2:?--link-gbps needs a bandwidth in Gbit/s or none}; shift 2 ;;
        --latency-ms) LATENCY=${2:?--latency-ms needs milliseconds}; shift 2 ;;
        --down) ACTION=down; shift ;;
        --status) ACTION=status; shift ;;
        -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument '$1'; expected --nodes N, --link-gbps G|none, --latency-ms MS, --status, --down" ;;
    esac
done
CPUS=$(nproc)
case "$NODES" in ''|*[!0-9]*) die "--nodes is '$NODES'; expected an integer 2..$CPUS" ;; esac
[ "$NODES" -ge 2 ] && [ "$NODES" -le "$CPUS" ] \
    || die "--nodes is $NODES; expected 2..$CPUS (each node gets cores of its own: this machine has $CPUS)"
if [ -n "$LINK" ] && [ "$LINK" != none ]; then
    awk -v g="$LINK" 'BEGIN { exit !(g ~ /^[0-9]+(\.[0-9]+)?$/ && g > 0 && g <= 400) }' \
        || die "--link-gbps is '$LINK'; expected a bandwidth in Gbit/s in (0, 400], or none"
fi
if [ -n "$LATENCY" ]; then
    awk -v l="$LATENCY" 'BEGIN { exit !(l ~ /^[0-9]+(\.[0-9]+)?$/ && l <= 1000) }' \
        || die "--latency-ms is '$LATENCY'; expected milliseconds in [0, 1000]"
fi
[ "$(id -u)" -eq 0 ] || die "run as root (namespaces, a bridge, /etc/slurm, daemons)"

node_names() { seq -f 'node%g' 1 "$NODES"; }
node_addr() { echo "$NET.$((10 + ${1#node}))"; }
pid_of() { [ -s "$STATE/$1.pid" ] && kill -0 "$(cat "$STATE/$1.pid")" 2>/dev/null && cat "$STATE/$1.pid"; }
known_nodes() { ls /run/netns 2>/dev/null | grep -E '^node[0-9]+$' || true; }

# --- down ------------------------------------------------------------------------------------------
down() {
    if [ -s /run/slurm/slurmctld.pid ] && grep -q "^# Written by tools/slurm-nodes.sh" "$CONF" 2>/dev/null; then
        scontrol shutdown 2>/dev/null || true
    fi
    for n in $(known_nodes); do
        pid=$(pid_of "$n" || true)
        [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
        # every process still inside the node's network namespace (job steps, TensorFlow servers)
        for p in $(ip netns pids "$n" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
        ip netns del "$n" 2>/dev/null || true
        ip link del "v$n" 2>/dev/null || true
        say "removed $n (its namespace, link and processes)"
    done
    for f in "$STATE"/slurmctld.pid /run/slurm/slurmctld.pid; do
        [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
    done
    ip link del "$BRIDGE" 2>/dev/null && say "removed bridge $BRIDGE" || true
    if grep -q "$HOSTS_TAG" /etc/hosts; then
        sed -i "/$HOSTS_TAG\$/d" /etc/hosts
        say "removed the nodes' /etc/hosts entries"
    fi
    if grep -q "^# Written by tools/slurm-nodes.sh" "$CONF" 2>/dev/null; then
        if [ -f "$CONF.before-nodes" ]; then
            mv "$CONF.before-nodes" "$CONF"
            say "restored $CONF as it was before"
        else
            rm -f "$CONF"
            say "removed $CONF (there was none before)"
        fi
    fi
    rm -rf "$STATE"
    say "down: nothing of the cluster is left (munged, a system daemon, keeps running)"
}

# --- links -----------------------------------------------------------------------------------------
has_qdisc() { modprobe -q "sch_$1" 2>/dev/null; tc qdisc add dev lo root handle 9: "$1" 2>/dev/null && tc qdisc del dev lo root 2>/dev/null; }

shape() {  # shape NODE: both ends of its veth per $LINK / $LATENCY
    local n=$1 dev side run
    for side in host node; do
        if [ $side = host ]; then run=(); dev="v$n"; else run=(ip netns exec "$n"); dev=eth0; fi
        "${run[@]}" tc qdisc del dev "$dev" root 2>/dev/null || true
        [ "$LINK" = none ] && [ -z "$LATENCY" ] && continue
        local rate=${LINK:-none}
        if [ "$rate" != none ]; then
            "${run[@]}" tc qdisc add dev "$dev" root handle 1: htb default 10
            "${run[@]}" tc class add dev "$dev" parent 1: classid 1:10 htb rate "${rate}gbit" ceil "${rate}gbit" \
                quantum 60000 burst "$(awk -v g="$rate" 'BEGIN { b = g * 1e9 / 8 / 1000; print (b < 15000 ? 15000 : int(b)) }')"
            if [ -n "$LATENCY" ] && [ "$NETEM" = yes ]; then
                "${run[@]}" tc qdisc add dev "$dev" parent 1:10 handle 10: netem delay "$(awk -v l="$LATENCY" 'BEGIN{print l/2}')ms"
            fi
        elif [ -n "$LATENCY" ] && [ "$NETEM" = yes ]; then
            "${run[@]}" tc qdisc add dev "$dev" root handle 1: netem delay "$(awk -v l="$LATENCY" 'BEGIN{print l/2}')ms"
        fi
    done
}

shape_all() {
    NETEM=no
    if [ -n "$LATENCY" ]; then
        if has_qdisc netem; then NETEM=yes; else
            say "this kernel has no netem qdisc: latency cannot be added here (--latency-ms $LATENCY ignored); bandwidth only"
        fi
    fi
    if [ "${LINK:-none}" != none ]; then has_qdisc htb || die "this kernel has no htb qdisc: links cannot be shaped"; fi
    for n in $(node_names); do shape "$n"; done
    local words="unshaped"
    if [ "${LINK:-none}" != none ]; then words="htb ${LINK} Gbit/s each way per node"; fi
    if [ -n "$LATENCY" ] && [ "$NETEM" = yes ]; then words="$words, netem ${LATENCY} ms round trip"; fi
    echo "$words" >"$STATE/link"
    say "links: $words"
}

status() {
    [ -d "$STATE" ] || { say "no cluster (run: sudo tools/slurm-nodes.sh)"; return 1; }
    for n in $(known_nodes); do
        pid=$(pid_of "$n" || true)
        say "$n $(node_addr "$n"): slurmd ${pid:+pid $pid, }cores $(cat "$STATE/$n.cores" 2>/dev/null)${pid:+ (affinity $(taskset -cp "$pid" | sed 's/.*: //'))}"
    done
    say "link: $(cat "$STATE/link" 2>/dev/null || echo unknown)"
    sinfo -N -o '%N %t %c' 2>/dev/null || true
}

start_slurmd() {  # start_slurmd NODE: its slurmd inside its namespaces, pinned to its cores
    local n=$1
    install -d -m 0755 "/var/spool/slurmd/$n"
    # nsenter --net (not `ip netns exec`, which remounts /sys and hides the cgroup mount slurmd needs);
    # unshare --uts gives the node its own hostname; taskset pins it (and every step) to its cores.
    nsenter --net="/run/netns/$n" unshare --uts -- taskset -c "$(cat "$STATE/$n.cores")" \
        sh -c "hostname $n; exec /usr/sbin/slurmd -D -N $n" >>"/var/log/slurm/slurmd-$n.out" 2>&1 &
    echo $! >"$STATE/$n.pid"
}

wait_idle() {  # until every node is idle (a node that was down is resumed)
    local idle=0
    say "waiting up to ${TIMEOUT_S} s for $NODES idle nodes"
    for _ in $(seq $((TIMEOUT_S * 2))); do
        idle=$(sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2=="idle"' | wc -l)
        [ "$idle" -ge "$NODES" ] && break
        for n in $(sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 ~ /^(down|drain)/ {print $1}'); do
            scontrol update NodeName="$n" State=RESUME 2>/dev/null || true
        done
        sleep 0.5
    done
    [ "$idle" -ge "$NODES" ] || die "only $idle of $NODES nodes idle after ${TIMEOUT_S} s; see /var/log/slurm/"
    status
}

case $ACTION in
    down) down; exit 0 ;;
    status) status; exit $? ;;
esac

# --- up --------------------------------------------------------------------------------------------
if [ -d "$STATE" ] && [ "$(cat "$STATE/nodes" 2>/dev/null)" = "$NODES" ] && [ -e /run/netns/node1 ]; then
    say "cluster of $NODES nodes already up"
    for n in $(node_names); do
        [ -n "$(pid_of "$n" || true)" ] && continue
        say "$n: its slurmd is not running: starting it again"
        for p in $(ip netns pids "$n" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
        start_slurmd "$n"
    done
    if [ -n "$LINK$LATENCY" ]; then shape_all; fi
    wait_idle
    exit 0
fi
[ -d "$STATE" ] && { say "a cluster of another shape is up: taking it down first"; down; }
# shellcheck source=tools/slurm-common.sh
. "$HERE/slurm-common.sh"
install_packages
start_munge
mkdir -p "$STATE"
echo "$NODES" >"$STATE/nodes"

ip link add "$BRIDGE" type bridge
ip addr add "$CTL_ADDR/24" dev "$BRIDGE"
ip link set "$BRIDGE" up
sysctl -qw net.ipv4.conf."$BRIDGE".forwarding=0 || true
say "bridge $BRIDGE $CTL_ADDR/24 (not routed: forwarding off on it)"
cp /etc/hosts "$STATE/hosts.before"
for n in $(node_names); do
    k=${n#node}
    ip netns add "$n"
    ip link add "v$n" type veth peer name eth0 netns "$n"
    ip link set "v$n" master "$BRIDGE" up
    ip netns exec "$n" ip addr add "$(node_addr "$n")/24" dev eth0
    ip netns exec "$n" ip link set eth0 up
    ip netns exec "$n" ip link set lo up
    echo "$(node_addr "$n") $n $HOSTS_TAG" >>/etc/hosts
    # cores: node k gets the k-th equal share of this machine's CPUs
    first=$(( (k - 1) * CPUS / NODES )); last=$(( k * CPUS / NODES - 1 ))
    echo "$first-$last" >"$STATE/$n.cores"
done
CTL_NAME=$(hostname -s)

install -d -o slurm -g slurm -m 0755 /var/spool/slurmctld /var/log/slurm
install -d -m 0755 /run/slurm
[ -f "$CONF" ] && ! grep -q "^# Written by tools/slurm-nodes.sh" "$CONF" && cp "$CONF" "$CONF.before-nodes"
per_node=$(( CPUS / NODES ))
{
    echo "# Written by tools/slurm-nodes.sh: $NODES nodes as namespaces on bridge $BRIDGE."
    slurm_conf_common "tfsb-nodes"
    echo "SlurmctldHost=$CTL_NAME($CTL_ADDR)"
    echo "SlurmdSpoolDir=/var/spool/slurmd/%n"
    echo "SlurmdPidFile=/run/slurm/slurmd-%n.pid"
    echo "SlurmdLogFile=/var/log/slurm/slurmd-%n.log"
    echo "SlurmdTimeout=30"
    for n in $(node_names); do
        echo "NodeName=$n NodeAddr=$(node_addr "$n") CPUs=$per_node State=UNKNOWN"
    done
    echo "PartitionName=$PARTITION Nodes=node[1-$NODES] Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4"
} >"$CONF"
say "wrote $CONF ($NODES nodes of $per_node CPUs, partition $PARTITION)"

[ -s /run/slurm/slurmctld.pid ] && kill -0 "$(cat /run/slurm/slurmctld.pid)" 2>/dev/null \
    && { scontrol shutdown 2>/dev/null || true; sleep 1; }
/usr/sbin/slurmctld -i
cp /run/slurm/slurmctld.pid "$STATE/slurmctld.pid" 2>/dev/null || true
for n in $(node_names); do start_slurmd "$n"; done
LINK=${LINK:-none}
shape_all
wait_idle
say "ready: srun -N$NODES -n$NODES hostname; take it down with: sudo tools/slurm-nodes.sh --down"
