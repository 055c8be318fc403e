#!/usr/bin/env bash
# The whole test suite, on a fresh Debian machine or a laptop: vet, format, then
# `go test -race` against SQLite and a throw-away PostgreSQL that this script installs
# (when missing), starts on a free loopback port, and stops afterwards; Slurm tests run on
# two single-host Slurms started the same way (scripts/slurm.sh); browser tests
# run in headless Chromium, installed with apt-get when missing; the agent's container
# runtimes run real containers in podman and a throw-away docker daemon (scripts/containers.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

tmp=$(mktemp -d /tmp/gantry-test.XXXXXX)
vet=
cleanup() {
  [ -n "$vet" ] && kill "$vet" 2>/dev/null
  scripts/pg.sh stop "$tmp/pg" || true
  scripts/slurm.sh stop "$tmp/slurm" || true; scripts/slurm.sh stop "$tmp/slurm2" || true
  scripts/containers.sh stop "$tmp/containers" || true; rm -rf "$tmp"
}
trap cleanup EXIT

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' | grep -v '_templ.go$') 2>&1 || true)
if [ -n "$unformatted" ]; then echo "not gofmt-ed:"; echo "$unformatted"; exit 1; fi

# vet compiles every package, which on a fresh machine takes minutes: it runs beside the
# installs and starts below, which mostly wait on the network and the disk, and with
# -race, so that go test reuses what it compiled (cold, here: 253 s of go test's
# compiling alone, 133 s after vet).
go vet -race ./... >"$tmp/vet.log" 2>&1 &
vet=$!

echo "== PostgreSQL"
GANTRY_TEST_POSTGRES_URL=$(scripts/pg.sh start "$tmp/pg")
export GANTRY_TEST_POSTGRES_URL GANTRY_REQUIRE_POSTGRES=1
echo "throw-away server at ${GANTRY_TEST_POSTGRES_URL%%\?*}"

echo "== Slurm"
# Two clusters: a test holds a whole one (slurmtest.Conf), and the real-Slurm tests,
# mostly waiting on Slurm's clocks, would otherwise be the longest path of the run.
slurm1=$(scripts/slurm.sh start "$tmp/slurm")
slurm2=$(scripts/slurm.sh start "$tmp/slurm2")
GANTRY_TEST_SLURM_CONF=$slurm1:$slurm2
export GANTRY_TEST_SLURM_CONF GANTRY_REQUIRE_SLURM=1
echo "throw-away Slurms with $GANTRY_TEST_SLURM_CONF"

echo "== Chromium"
if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null && [ -z "${GANTRY_CHROMIUM:-}" ]; then
  echo "Chromium is missing: installing it with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq chromium fonts-dejavu-core >/dev/null
fi
export GANTRY_REQUIRE_BROWSER=1

echo "== Containers"
# Assigned first, so that a failed setup stops the run (set -e) instead of skipping tests.
runtimes=$(scripts/containers.sh start "$tmp/containers")
eval "$runtimes"
echo "podman${GANTRY_REQUIRE_DOCKER:+ and docker} run the agent's container tests"

echo "== go vet"
if ! wait "$vet"; then vet=; cat "$tmp/vet.log"; echo "go vet failed"; exit 1; fi
vet=; cat "$tmp/vet.log"

echo "== go test -race"
# go test runs the packages in the order given, -p at a time. Most of the test binaries'
# time is waiting (on Slurm's clocks, jobs' processes, the browser, timers): the longest
# start first, four at a time, so that the waiting ones run beside the busy ones.
first=$(printf "$(go list -m)/%s\n" services/dispatch web cmd/gantry services/slurm services/pools services/store services/agent)
pkgs=$(echo "$first"; go list ./... | grep -vxF "$first")
go test -race -count=1 -p 4 -timeout 25m $pkgs "$@"
