#!/usr/bin/env bash
# Sets up real container runtimes for the agent's tests, on a fresh Debian machine or a
# laptop: podman (daemonless, with its storage in DIR) and, unless a docker daemon already
# answers, a throw-away dockerd on a private socket in DIR.
#   scripts/containers.sh start DIR  -> prints `export` lines for the test run to eval
#   scripts/containers.sh stop DIR
# Installs podman, runc, catatonit (podman's --init), busybox-static (the tests build their
# image from it: nothing is pulled from a registry) and docker.io with apt-get when missing.
set -euo pipefail
cmd=${1:?start|stop}; dir=${2:?directory}

install() {
  local missing=()
  command -v podman >/dev/null || missing+=(podman)
  command -v runc >/dev/null || missing+=(runc)
  [ -x /usr/libexec/podman/catatonit ] || missing+=(catatonit)
  [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 || missing+=(busybox-static)
  command -v dockerd >/dev/null || missing+=(docker.io)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing ${missing[*]} with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  fi
}

# limit prints a ulimit as podman writes it (-1 for unlimited), at most $2.
limit() { local v; v=$(ulimit "$1"); [ "$v" = unlimited ] && v=$2; [ "$v" -gt "$2" ] && v=$2; echo "$v"; }

case "$cmd" in
start)
  install
  mkdir -p "$dir/podman" "$dir/docker"
  # runc, not crun: Debian 12's crun refuses hosts with a hybrid cgroup layout. The
  # ulimits are at most the ones this shell has (a container cannot be given more
  # without CAP_SYS_RESOURCE, which a CI container may lack) and podman's own
  # process limit (32768), which its runtime inherits.
  cat >"$dir/podman/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$(limit -Sn 1048576):$(limit -Hn 1048576)", "nproc=$(limit -Su 32768):$(limit -Hu 32768)"]
[engine]
runtime = "runc"
EOF
  cat >"$dir/podman/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$dir/podman/root"
runroot = "$dir/podman/run"
EOF
  echo "export CONTAINERS_CONF=$dir/podman/containers.conf CONTAINERS_STORAGE_CONF=$dir/podman/storage.conf GANTRY_REQUIRE_PODMAN=1"
  if docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
    echo "export GANTRY_REQUIRE_DOCKER=1"
    exit 0
  fi
  sock="$dir/docker/docker.sock"
  setsid dockerd --data-root "$dir/docker/root" --exec-root "$dir/docker/exec" -H "unix://$sock" \
    --pidfile "$dir/docker/pid" --iptables=false --ip6tables=false --bridge=none >"$dir/docker/log" 2>&1 </dev/null &
  for _ in $(seq 1 120); do
    if DOCKER_HOST="unix://$sock" docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
      echo "export DOCKER_HOST=unix://$sock GANTRY_REQUIRE_DOCKER=1"
      exit 0
    fi
    sleep 0.5
  done
  echo "dockerd did not start; docker tests will skip. Its log ends:" >&2
  tail -n 5 "$dir/docker/log" >&2
  ;;
stop)
  if [ -f "$dir/docker/pid" ]; then
    pid=$(cat "$dir/docker/pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  fi
  # What the runtimes left mounted under DIR, deepest first.
  awk -v d="$dir/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  rm -rf "$dir"
  ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
