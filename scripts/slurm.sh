#!/usr/bin/env bash
# Starts or stops a throw-away single-host Slurm for the tests, everything under DIR:
#   scripts/slurm.sh start DIR   -> prints the path of slurm.conf (export it as SLURM_CONF)
#   scripts/slurm.sh stop DIR
# munged, MariaDB, slurmdbd, slurmctld and slurmd run on free loopback ports as root.
# slurmdbd (on MariaDB) is there because both things the tests prove need it: QOS, the
# unit of preempt/qos, live only in the accounting database, and sacct reads only from it.
# The one node "node1" declares 4 GPUs by count (2 a100, 2 l4) backed by /dev/null, 8 CPUs
# and 8 GiB whatever the host has (config_overrides). QOS test < research < production
# mirror Gantry's priority classes; a preempted job gets its --signal at once
# (preempt_send_user_signal) and is requeued after a 5 s grace time. Installs slurm-wlm,
# slurmdbd, munge and mariadb-server with apt-get when missing. Daemons write their pid to
# DIR/run/NAME.pid (tests stop and restart slurmctld through it) and their log to DIR/log.
set -euo pipefail
cmd=${1:?start|stop}; dir=${2:?directory}

install() {
  if ! command -v slurmctld >/dev/null || ! command -v slurmdbd >/dev/null \
    || ! command -v munged >/dev/null || ! command -v mariadbd >/dev/null; then
    echo "Slurm is missing: installing slurm-wlm, slurmdbd, munge, mariadb-server with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends slurm-wlm slurmdbd munge mariadb-server >&2
  fi
}

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# waitfor SECONDS WHAT COMMAND...: polls COMMAND until it succeeds; on timeout prints the
# logs and stops what was started.
waitfor() {
  local secs=$1 what=$2 out=""; shift 2
  local deadline=$((SECONDS + secs))
  while [ $SECONDS -lt $deadline ]; do
    out=$(timeout 5 "$@" 2>&1) && return 0
    sleep 0.2
  done
  echo "$what did not come up in $secs s: $out; logs:" >&2
  tail -n 30 "$dir"/log/*.log >&2 || true
  stop_all
  exit 1
}

# stop_pids FILE...: TERM to every daemon at once, then KILL to those alive after 5 s.
stop_pids() {
  local f pids=() p
  for f in "$@"; do
    [ -f "$f" ] && p=$(cat "$f" 2>/dev/null) && [ -n "$p" ] && kill "$p" 2>/dev/null && pids+=("$p")
  done
  for _ in $(seq 50); do
    local alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && return 0
    sleep 0.1
  done
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
}

# strays prints the pids of this instance's job processes and slurmstepds, which outlive slurmd.
strays() {
  local f p
  for f in $(grep -lzxF "SLURM_CONF=$dir/slurm.conf" /proc/[0-9]*/environ 2>/dev/null); do
    p=${f#/proc/}; p=${p%/environ}
    if grep -qz '^SLURM_JOB_ID=' "$f" 2>/dev/null || [ "$(cat "/proc/$p/comm" 2>/dev/null)" = slurmstepd ]; then
      echo "$p"
    fi
  done
}

stop_all() {
  local ids
  if [ -f "$dir/slurm.conf" ] && [ -f "$dir/run/slurmctld.pid" ]; then
    ids=$(SLURM_CONF=$dir/slurm.conf timeout 5 squeue -h -o %A 2>/dev/null || true)
    if [ -n "$ids" ]; then SLURM_CONF=$dir/slurm.conf timeout 10 scancel $ids 2>/dev/null || true; sleep 1; fi
  fi
  stop_pids "$dir"/run/{slurmd,slurmctld,slurmdbd,mariadb,munged}.pid
  for p in $(strays); do kill -9 "$p" 2>/dev/null || true; done
}

case "$cmd" in
start)
  install
  mkdir -p "$dir"/{log,run,munge,db,spool/ctld,spool/d,dev}
  dir=$(cd "$dir" && pwd)
  ctld_port=$(freeport); d_port=$(freeport); dbd_port=$(freeport); db_port=$(freeport)

  # munge: a fresh key and a private socket, so parallel test runs never share one.
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge/munge.key"
  munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.sock" \
    --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed"
  waitfor 5 munged test -S "$dir/munge/munge.sock"

  # MariaDB for slurmdbd: loopback only, no grant checks, no durability. Its system tables
  # (slurmdbd needs stored procedures) are bootstrapped once into a cached template.
  cache=${GANTRY_SLURM_CACHE:-/var/tmp/gantry-slurm}
  template=$cache/mariadb-$(mariadbd --version | awk '{print $3}')
  if [ ! -d "$template" ]; then
    mkdir -p "$cache"
    t=$(mktemp -d "$cache/boot.XXXXXX")
    mariadb-install-db --no-defaults --datadir="$t/db" --user=root --skip-test-db \
      --auth-root-authentication-method=normal >"$dir/log/mariadb-install.log" 2>&1 \
      || { cat "$dir/log/mariadb-install.log" >&2; stop_all; exit 1; }
    mv -T "$t/db" "$template" 2>/dev/null || true # a parallel start may have won
    rm -rf "$t"
  fi
  rmdir "$dir/db"
  cp -a "$template" "$dir/db"
  mariadbd --no-defaults --datadir="$dir/db" --user=root --bind-address=127.0.0.1 --port="$db_port" \
    --socket="$dir/run/mysql.sock" --pid-file="$dir/run/mariadb.pid" --log-error="$dir/log/mariadb.log" \
    --skip-grant-tables --skip-log-bin --innodb-flush-log-at-trx-commit=0 --innodb-doublewrite=0 \
    --innodb-buffer-pool-size=64M --innodb-lock-wait-timeout=900 </dev/null >/dev/null 2>&1 &
  waitfor 20 MariaDB mariadb-admin --no-defaults --socket="$dir/run/mysql.sock" ping

  # cred_expire also delays a requeued job's restart: 10 s instead of 120 s.
  auth="AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.sock,cred_expire=10"
  export SLURM_CONF=$dir/slurm.conf
  cat >"$dir/slurmdbd.conf" <<EOF
$auth
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$dbd_port
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$db_port
StorageUser=root
StorageLoc=slurm_acct_db
PidFile=$dir/run/slurmdbd.pid
LogFile=$dir/log/slurmdbd.log
EOF
  chmod 600 "$dir/slurmdbd.conf"

  # Slurm wants character devices behind GRES files; /dev/null is one.
  for i in 0 1 2 3; do ln -sf /dev/null "$dir/dev/nvidia$i"; done
  cat >"$dir/gres.conf" <<EOF
AutoDetect=off
NodeName=node1 Name=gpu Type=a100 File=$dir/dev/nvidia[0-1]
NodeName=node1 Name=gpu Type=l4 File=$dir/dev/nvidia[2-3]
EOF

  cat >"$dir/slurm.conf" <<EOF
ClusterName=gantry
MailProg=/bin/true
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
$auth
StateSaveLocation=$dir/spool/ctld
SlurmdSpoolDir=$dir/spool/d
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
SlurmctldParameters=preempt_send_user_signal
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
PriorityType=priority/multifactor
PriorityWeightQOS=10000
PreemptType=preempt/qos
PreemptMode=REQUEUE
JobRequeue=1
EnforcePartLimits=ALL
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$dbd_port
AccountingStoragePass=$dir/munge/munge.sock
AccountingStorageEnforce=associations,limits,qos
AccountingStorageTRES=gres/gpu,gres/gpu:a100,gres/gpu:l4
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=5
JobCompType=jobcomp/none
MinJobAge=60
KillWait=5
MessageTimeout=5
SlurmctldTimeout=10
SlurmdTimeout=30
InactiveLimit=0
Waittime=0
NodeName=node1 NodeAddr=127.0.0.1 NodeHostname=$(hostname -s) CPUs=8 RealMemory=8192 Gres=gpu:a100:2,gpu:l4:2 State=UNKNOWN
PartitionName=gpu Nodes=node1 Default=YES MaxTime=INFINITE State=UP
PartitionName=debug Nodes=node1 MaxTime=60 State=UP
EOF

  slurmdbd # finds slurmdbd.conf next to $SLURM_CONF
  waitfor 30 slurmdbd sacctmgr -n list cluster
  # The cluster, QOS mirroring Gantry's priority classes, and root allowed to use them.
  sacctmgr -i add cluster gantry >/dev/null
  sacctmgr -i add qos test Priority=10 GraceTime=5 PreemptMode=requeue >/dev/null
  sacctmgr -i add qos research Priority=100 Preempt=test PreemptMode=requeue GraceTime=5 >/dev/null
  sacctmgr -i add qos production Priority=1000 Preempt=test,research PreemptMode=requeue >/dev/null
  sacctmgr -i add account gantry Description=gantry Organization=gantry >/dev/null
  sacctmgr -i add user root Account=gantry DefaultAccount=gantry \
    QOS=normal,test,research,production DefaultQOS=normal >/dev/null

  slurmctld -f "$dir/slurm.conf"
  waitfor 20 slurmctld scontrol ping
  slurmd -f "$dir/slurm.conf" -N node1
  waitfor 20 "node1 idle" sh -c "sinfo -h -n node1 -o %t | grep -qx idle"
  echo "$dir/slurm.conf"
  ;;
stop)
  [ -d "$dir" ] || exit 0
  dir=$(cd "$dir" && pwd)
  stop_all
  rm -rf "$dir"
  ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
