#!/usr/bin/env bash
# The README's two commands on a new Debian 12 machine: a clean root made with debootstrap
# (minbase, Debian's packages only) per command, a clean clone of this checkout's commit in it,
# and there, as root and timed:
#   1. bash scripts/quickstart.sh   (setup, build of the program and plugins, training, evaluation),
#      then the first minutes of the real-data command (build/bin/attnlab train experiments/multi30k.toml),
#      to see that it starts and trains;
#   2. bash scripts/test.sh         (setup, build of everything, every test), in a second fresh root.
# Uncommitted changes are not part of the check: commit first. Needs root (debootstrap, chroot,
# mount) and the Debian mirror; the shared data folder beside the repository is mounted read-only
# where the experiments and tests look for it.
#
#   sudo bash scripts/fresh-machine-check.sh [--work DIR] [--only quickstart|test]
#        [--real-data-seconds N] [--mirror URL] [--new-base] [--keep]
#
# --work DIR              where roots, logs and the summary go (default /var/tmp/attnlab-fresh-machine)
# --only NAME             run one of the two commands
# --real-data-seconds N   how long the real-data command runs before it is stopped (default 180; 0: skip)
# --new-base              make the minimal root again (otherwise one made earlier in DIR is reused:
#                         debootstrap's output, before any package of ours, is the same machine)
# --keep                  leave the roots in DIR for a look (they are removed otherwise)
# Writes DIR/summary.md (the figures below) and DIR/logs/*.log; exits non-zero when a command failed.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=/var/tmp/attnlab-fresh-machine
only=""
real_data_seconds=180
mirror=http://deb.debian.org/debian
new_base=0
keep=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --work) work=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --real-data-seconds) real_data_seconds=$2; shift 2 ;;
    --mirror) mirror=$2; shift 2 ;;
    --new-base) new_base=1; shift ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fresh-machine-check: unknown argument '$1' (--help lists them)" >&2; exit 2 ;;
  esac
done
case $only in ""|quickstart|test) ;; *) echo "fresh-machine-check: --only takes quickstart or test, not '$only'" >&2; exit 2 ;; esac
[[ $real_data_seconds =~ ^[0-9]+$ ]] || { echo "fresh-machine-check: --real-data-seconds takes a number of seconds" >&2; exit 2; }

die() { echo "fresh-machine-check: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, chroot and mount): run it with sudo"
command -v debootstrap >/dev/null || { echo "fresh-machine-check: installing debootstrap on this machine"; apt-get install -y -qq debootstrap >/dev/null; }

# The commands are the README's: the check refuses to run if the README no longer gives them.
quickstart_command="bash scripts/quickstart.sh"
test_command="bash scripts/test.sh"
real_data_command="build/bin/attnlab train experiments/multi30k.toml"
for c in "$quickstart_command" "$test_command" "$real_data_command"; do
  grep -qF "$c" "$repo/README.md" || die "README.md no longer gives '$c': update this check with it"
done

commit=$(git -C "$repo" rev-parse HEAD)
[[ -z $(git -C "$repo" status --porcelain --untracked-files=no) ]] ||
  echo "fresh-machine-check: note: uncommitted changes in $repo are not part of the check (it clones $commit)"
shared=$(cd "$repo/.." && pwd)/shared

mkdir -p "$work/logs"
summary=$work/summary.md
mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2>/dev/null || true; done
  mounted=()
}
trap cleanup EXIT

# 1. The minimal Debian 12, once, kept as a tarball in the work folder.
base_tar=$work/bookworm-minbase.tar
if [[ $new_base -eq 1 || ! -f $base_tar ]]; then
  echo "fresh-machine-check: debootstrap --variant=minbase bookworm ($mirror)"
  rm -rf "$work/base"
  start=$SECONDS
  debootstrap --variant=minbase bookworm "$work/base" "$mirror" >"$work/logs/debootstrap.log" 2>&1 ||
    die "debootstrap failed: $work/logs/debootstrap.log"
  tar -C "$work/base" -cf "$base_tar" .
  rm -rf "$work/base"
  echo "fresh-machine-check: minimal root made in $((SECONDS - start)) s"
fi

# A fresh root from the tarball, with the clone, /proc, /sys, /dev and the shared data.
make_root() {
  local root=$1
  ! grep -q " $root/" /proc/mounts || die "$root has mounts left from an earlier check: unmount them first"
  rm -rf --one-file-system "$root"
  mkdir -p "$root"
  tar -C "$root" -xf "$base_tar"
  # Package scripts do not start daemons in the root (munge, slurm): the tests start their own.
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod +x "$root/usr/sbin/policy-rc.d"
  # What an installed machine has and debootstrap leaves out: name resolution, and its own name
  # among the hosts (munged and Slurm look it up).
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  cp /etc/hosts "$root/etc/hosts"
  hostname >"$root/etc/hostname"
  mount -t proc proc "$root/proc" && mounted+=("$root/proc")
  # /sys with its cgroup mounts (slurmd needs them), as on the machine.
  mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys" && mounted+=("$root/sys")
  mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev" && mounted+=("$root/dev")
  mkdir -p "$root/root/work"
  git clone --quiet --no-hardlinks "$repo" "$root/root/work/attnlab"
  git -C "$root/root/work/attnlab" checkout --quiet "$commit"
  if [[ -d $shared ]]; then
    mkdir -p "$root/root/work/shared"
    mount --bind "$shared" "$root/root/work/shared" && mount -o remount,bind,ro "$root/root/work/shared" &&
      mounted+=("$root/root/work/shared")
  fi
}

# Runs COMMAND in ROOT's clone as a new login would, logging to LOG; sets $status and $elapsed.
run_in_root() {
  local root=$1 log=$2 command=$3 start=$SECONDS
  set +e
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash -c "cd /root/work/attnlab && $command" >"$log" 2>&1
  status=$?
  set -e
  elapsed=$((SECONDS - start))
}

finish_root() {
  local root=$1
  # Whatever a test left running in the root (a daemon) goes before the mounts do.
  local pids
  pids=$(for p in /proc/[0-9]*; do [[ $(readlink "$p/root" 2>/dev/null) == "$root" ]] && echo "${p#/proc/}"; done || true)
  [[ -z $pids ]] || kill -9 $pids 2>/dev/null || true
  cleanup
  # Never delete through a mount that is still there (the root's /dev is the machine's).
  if grep -q " $root/" /proc/mounts; then
    echo "fresh-machine-check: $root still has mounts; left in place" >&2
  elif [[ $keep -eq 0 ]]; then
    rm -rf --one-file-system "$root"
  fi
}

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
{
  echo "# Fresh Debian 12 machine: the README's commands"
  echo
  echo "Commit $commit, checked $(date -u '+%Y-%m-%d %H:%M UTC') in a clean root made by"
  echo "\`debootstrap --variant=minbase bookworm\` ($mirror), one root per command, as root;"
  echo "$(nproc) cores ($cpu), $(free -g | awk '/Mem:/ {print $2}') GiB; load average before: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  echo "| command | exit | time | what it printed |"
  echo "| --- | ---: | ---: | --- |"
} >"$summary"
failed=0

if [[ -z $only || $only == quickstart ]]; then
  root=$work/root-quickstart
  make_root "$root"
  log=$work/logs/quickstart.log
  echo "fresh-machine-check: $quickstart_command (log: $log)"
  run_in_root "$root" "$log" "$quickstart_command"
  phases=$(grep -o 'quickstart: setup .*in all' "$log" | tail -1 || true)
  bleu=$(grep -E -o 'BLEU\|[^ ]* = [0-9.]+' "$log" | tail -1 | sed 's/^.* = /test BLEU /' || true)
  echo "| \`$quickstart_command\` | $status | $elapsed s | ${phases#quickstart: }; ${bleu} |" >>"$summary"
  [[ $status -eq 0 ]] || failed=1
  if [[ $status -eq 0 && $real_data_seconds -gt 0 ]]; then
    log=$work/logs/real-data.log
    echo "fresh-machine-check: $real_data_command for $real_data_seconds s (log: $log)"
    run_in_root "$root" "$log" "timeout --signal=INT $real_data_seconds $real_data_command"
    last_step=$(grep -E -o 'step [0-9]+/[0-9]+ \| loss [0-9.]+ \| lr [^|]+\| [0-9]+ tok/s' "$log" | tail -1 | sed 's/ | /, /g' || true)
    first_step=$(grep -E -o 'step [0-9]+/[0-9]+ \| loss [0-9.]+' "$log" | head -1 | sed 's/ | /, /g' || true)
    if [[ -n $last_step ]]; then
      echo "| \`$real_data_command\` (stopped after $real_data_seconds s) | $status | $elapsed s | trains: $first_step ... $last_step |" >>"$summary"
    else
      echo "| \`$real_data_command\` (stopped after $real_data_seconds s) | $status | $elapsed s | no training step logged: see the log |" >>"$summary"
      failed=1
    fi
  fi
  finish_root "$root"
fi

if [[ -z $only || $only == test ]]; then
  root=$work/root-test
  make_root "$root"
  log=$work/logs/test.log
  echo "fresh-machine-check: $test_command (log: $log)"
  run_in_root "$root" "$log" "$test_command"
  tests=$(grep -E -o '[0-9]+% tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -1 || true)
  configure=$(grep -E -o 'attnlab: [^(]* off: .*' "$log" | sort -u | sed 's/$/;/' | tr '\n' ' ' | cut -c1-600 || true)
  echo "| \`$test_command\` | $status | $elapsed s | ${tests:-no test summary}; features off: ${configure:-none} |" >>"$summary"
  [[ $status -eq 0 ]] || failed=1
  finish_root "$root"
fi

echo >>"$summary"
echo "Logs: $work/logs/." >>"$summary"
cat "$summary"
exit $failed
