# A real one-node Slurm cluster for the Slurm test scripts, sourced after scratch.sh: munged,
# slurmctld and slurmd on localhost, their configuration, state and logs in $work/cluster, stopped
# (and the scratch folder removed) when the script exits. One partition, debug, that shares each
# CPU among up to 4 jobs (OverSubscribe), so that an array's 1-CPU tasks run several at once.
# Sets SLURM_CONF and $cluster; defines wait_for SECONDS DESCRIPTION COMMAND... (the squeue and
# slurmctld's last lines when it times out) and queue_empty.
for tool in munged slurmctld slurmd sbatch squeue scancel; do
  command -v $tool >/dev/null || { echo "$tool not installed (Debian: slurm-wlm munge)"; exit 1; }
done

cluster=$work/cluster
mkdir -p "$cluster"/{munge,state,spool,log}
chmod 700 "$cluster/munge"
head -c 1024 /dev/urandom >"$cluster/munge/munge.key"
chmod 400 "$cluster/munge/munge.key"
stop_daemons() {  # stop_daemons PIDFILE...: SIGTERM, then SIGKILL after 2 s (a slurmd that cannot
  local pids=() pid          # reach its controller does not end on SIGTERM)
  for pidfile in "$@"; do [ -s "$pidfile" ] && pids+=("$(cat "$pidfile")"); done
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for _ in $(seq 20); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || return 0
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
}
stop_cluster() {
  stop_daemons "$cluster"/slurmd.pid "$cluster"/slurmctld.pid "$cluster"/munge/munged.pid
  rm -rf "$work"
}
trap stop_cluster EXIT
munged --force --socket="$cluster/munge/socket" --key-file="$cluster/munge/munge.key" \
  --pid-file="$cluster/munge/munged.pid" --seed-file="$cluster/munge/seed" --log-file="$cluster/log/munged.log"
node=$(hostname -s)
user=$(id -un)
export SLURM_CONF=$cluster/slurm.conf
# start_cluster: slurmctld and slurmd on a random pair of ports, until the node is idle (0), or 1
# when a daemon could not bind its port (taken by another program, or by another test's cluster):
# both daemons fork before they bind, so a taken port shows only in their logs, and a controller
# that never listens would leave sinfo retrying for minutes.
start_cluster() {
  port=$((20000 + RANDOM % 20000))
  : >"$cluster/log/slurmctld.log"
  : >"$cluster/log/slurmd.log"
  cat >"$SLURM_CONF" <<CONF
ClusterName=attnlabtest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$cluster/munge/socket
CredType=cred/munge
SlurmUser=$user
SlurmdUser=$user
StateSaveLocation=$cluster/state
SlurmdSpoolDir=$cluster/spool
SlurmctldPidFile=$cluster/slurmctld.pid
SlurmdPidFile=$cluster/slurmd.pid
SlurmctldLogFile=$cluster/log/slurmctld.log
SlurmdLogFile=$cluster/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
KillWait=10
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
  # A daemon that cannot start says why in its log (slurmd needs cgroups mounted at /sys/fs/cgroup).
  slurmctld -f "$SLURM_CONF" || { echo "slurmctld did not start:"; tail -5 "$cluster/log/slurmctld.log"; exit 1; }
  slurmd -f "$SLURM_CONF" || { echo "slurmd did not start:"; tail -5 "$cluster/log/slurmd.log"; exit 1; }
  for _ in $(seq 100); do
    timeout 5 sinfo --noheader -o %T 2>/dev/null | grep -qx idle && return 0
    grep -qs "Address already in use" "$cluster/log/slurmctld.log" "$cluster/log/slurmd.log" && return 1
    sleep 0.2
  done
  echo "the node did not come up"
  tail "$cluster"/log/*.log
  exit 1
}
for attempt in 1 2 3 4 5; do
  start_cluster && break
  echo "port $port or $((port + 1)) is taken; trying another pair"
  stop_daemons "$cluster"/slurmd.pid "$cluster"/slurmctld.pid
  [ "$attempt" -lt 5 ] || { echo "no free pair of ports in 5 tries"; exit 1; }
done
echo "one-node Slurm cluster up: $(sinfo --version)"

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
  local limit=$1 what=$2
  shift 2
  for _ in $(seq $((limit * 10))); do "$@" && return 0; sleep 0.1; done
  echo "timed out after ${limit}s waiting for $what"
  squeue
  tail -n 5 "$cluster"/log/slurmctld.log
  exit 1
}
queue_empty() { [ -z "$(squeue --noheader)" ]; }
