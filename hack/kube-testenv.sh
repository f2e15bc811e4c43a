#!/usr/bin/env bash
# Builds the real kube-apiserver (k8s.io/kubernetes v1.37.2) and etcd (go.etcd.io/etcd/server/v3
# v3.7.3) that the kube integration test runs against, from the separate module in
# hack/kube-testenv, into a cache directory outside git. Prints the directory on stdout; point the
# test at it with XDSLAB_KUBE_ASSETS=<dir>.
#
# Usage: hack/kube-testenv.sh [dir]    (default: ${XDG_CACHE_HOME:-$HOME/.cache}/xdslab/kube-testenv)
# The build is niced and uses one compile job at a time: the lab machines are shared.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/xdslab/kube-testenv}"
mkdir -p "$out"
cd "$root/hack/kube-testenv"
stamp="$(sha256sum go.mod go.sum etcd/main.go | sha256sum | cut -c1-16)"
if [[ -x "$out/kube-apiserver" && -x "$out/etcd" && "$(cat "$out/.stamp" 2>/dev/null)" == "$stamp" ]]; then
  echo "$out"
  exit 0
fi
jobs="${KUBE_TESTENV_JOBS:-1}"
start=$(date +%s)
nice -n 10 go build -p "$jobs" -trimpath -o "$out/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver >&2
nice -n 10 go build -p "$jobs" -trimpath -o "$out/etcd" ./etcd >&2
echo "$stamp" >"$out/.stamp"
echo "kube-testenv: built in $(( $(date +%s) - start ))s" >&2
echo "$out"
