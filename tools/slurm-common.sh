# Shared by tools/slurm-localhost.sh and tools/slurm-nodes.sh (sourced, not run): Debian's packages,
# munge, and the slurm.conf lines both clusters share. Each function says what it did.

install_packages() {  # munge and slurm-wlm, with apt-get where missing
    local missing=() pkg
    for pkg in munge slurm-wlm; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        say "installing ${missing[*]} (apt-get)"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        say "munge and slurm-wlm already installed ($(dpkg-query -W -f='${Version}' slurm-wlm))"
    fi
}

start_munge() {  # a munge key, and munged running as the munge user
    local key=/etc/munge/munge.key
    if [ -s "$key" ]; then
        say "munge key $key present"
    else
        say "creating munge key $key"
        install -d -o munge -g munge -m 0700 /etc/munge
        if command -v mungekey >/dev/null; then
            mungekey --create --keyfile="$key" --force
        else
            dd if=/dev/urandom bs=1 count=1024 of="$key" status=none
        fi
    fi
    chown munge:munge "$key" && chmod 0400 "$key"
    install -d -o munge -g munge -m 0755 /run/munge
    install -d -o munge -g munge -m 0700 /var/log/munge /var/lib/munge
    if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
        say "munged already running"
    else
        say "starting munged as user munge"
        runuser -u munge -- /usr/sbin/munged
        for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.2; done
        munge -n | unmunge >/dev/null || die "munged does not answer (see /var/log/munge/munged.log)"
    fi
}

slurm_conf_common() {  # slurm_conf_common CLUSTER_NAME: the lines every cluster here shares
    cat <<CONF
ClusterName=$1
SlurmUser=slurm
SlurmdUser=root
AuthType=auth/munge
CryptoType=crypto/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
StateSaveLocation=/var/spool/slurmctld
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmctldPort=6817
SlurmdPort=6818
CONF
}
