#!/usr/bin/env bash
# A real istiod (pilot-discovery from istio.io/istio master, its default mesh config) reading a
# real kube-apiserver, benchmarked by `xdslab run` with the kube sink, all on loopback:
# etcd and kube-apiserver from hack/kube-testenv.sh, Istio's CRDs, istiod, then the run.
#
# Usage: hack/istio/kube-istiod.sh OUT [SCENARIO]     (from the repository root, after make build)
# Env:   ADMISSION   istiod's PILOT_MAX_REQUESTS_PER_SECOND (default: istiod's own, from its cores)
#        KUBE_ASSETS the directory hack/kube-testenv.sh prints (default: it is run)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
out="${1:?usage: hack/istio/kube-istiod.sh OUT [SCENARIO]}"
scenario="${2:-quickstart}"
[[ -x bin/xdslab ]] || { echo "kube-istiod: bin/xdslab missing: run make build first" >&2; exit 2; }
assets="${KUBE_ASSETS:-$(hack/kube-testenv.sh)}"
(cd hack/istio && go build -o ../../bin/pilot-discovery istio.io/istio/pilot/cmd/pilot-discovery)

work="$(mktemp -d)"
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
"$assets/etcd" --data-dir "$work/etcd" --listen-client-urls http://127.0.0.1:23790 --advertise-client-urls http://127.0.0.1:23790 \
  --listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 \
  --initial-cluster default=http://127.0.0.1:23800 --name default --quota-backend-bytes 1073741824 >"$work/etcd.log" 2>&1 &
pids+=($!)
openssl genrsa -out "$work/sa.key" 2048 2>/dev/null
echo 'admin-token,admin,admin,system:masters' >"$work/tokens.csv"
"$assets/kube-apiserver" --etcd-servers http://127.0.0.1:23790 --bind-address 127.0.0.1 --advertise-address 127.0.0.1 \
  --secure-port 16443 --cert-dir "$work/certs" --token-auth-file "$work/tokens.csv" --authorization-mode RBAC \
  --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$work/sa.key" \
  --service-account-signing-key-file "$work/sa.key" --service-cluster-ip-range 10.96.0.0/12 \
  --endpoint-reconciler-type none >"$work/apiserver.log" 2>&1 &
pids+=($!)
cat >"$work/admin.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: "https://127.0.0.1:16443", insecure-skip-tls-verify: true}}]
users: [{name: admin, user: {token: admin-token}}]
contexts: [{name: test, context: {cluster: test, user: admin}}]
current-context: test
KC
export KUBECONFIG="$work/admin.kubeconfig"
for _ in $(seq 1 180); do kubectl get --raw /readyz >/dev/null 2>&1 && break; sleep 1; done
kubectl get --raw /readyz >/dev/null || { echo "kube-istiod: kube-apiserver not ready; its log:" >&2; tail -20 "$work/apiserver.log" >&2; exit 1; }
kubectl apply -f "$(go list -m -f '{{.Dir}}' istio.io/api)/kubernetes/customresourcedefinitions.gen.yaml" >/dev/null
kubectl create namespace istio-system >/dev/null
env ${ADMISSION:+PILOT_MAX_REQUESTS_PER_SECOND=$ADMISSION} POD_NAMESPACE=istio-system POD_NAME=istiod-0 \
  bin/pilot-discovery discovery --kubeconfig "$work/admin.kubeconfig" --grpcAddr 127.0.0.1:15010 \
  --httpAddr 127.0.0.1:18080 --monitoringAddr 127.0.0.1:15014 --httpsAddr 127.0.0.1:15017 \
  --secureGRPCAddr 127.0.0.1:15012 >"$work/istiod.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 60); do curl -sf 127.0.0.1:18080/ready >/dev/null && break; sleep 1; done
curl -sf 127.0.0.1:18080/ready >/dev/null || { echo "kube-istiod: istiod not ready; its log:" >&2; tail -20 "$work/istiod.log" >&2; exit 1; }
echo "kube-istiod: istiod ready (admission ${ADMISSION:-the default}); running $scenario" >&2
rc=0
bin/xdslab run "$scenario" --target 127.0.0.1:15010 --sink kube --kubeconfig "$work/admin.kubeconfig" --kube-pods \
  --kube-qps 200 --kube-burst 400 --target-metrics 127.0.0.1:15014 --out "$out" || rc=$?
exit "$rc"
