#!/usr/bin/env bash
# Tries vkubelet against a cluster you already have, from a checkout of this repository.
#
#   KUBECONFIG=~/.kube/config scripts/try_on_cluster.sh up     # join, approve, run a pod
#   KUBECONFIG=~/.kube/config scripts/try_on_cluster.sh down   # remove everything 'up' made
#
# KUBECONFIG must be a cluster admin's, once: 'up' hands it to vkubelet as its bootstrap
# credential, vkubelet files a CSR for the node's own client certificate (signer
# kubernetes.io/kube-apiserver-client-kubelet, user system:node:$NODE, group system:nodes), the
# controller manager's approver approves it because an admin may create node client CSRs, and
# from then on vkubelet runs as that node identity only: the Node authorizer and NodeRestriction
# limit it to its own Node, Lease and pods (and the Secrets and ConfigMaps they use). The admin
# credential is not used again while the certificate in $DIR is valid.
#
# kubectl logs, exec and port-forward reach the kubelet API on $NODE_IP:$PORT, so the API server
# must be able to connect there, and vkubelet must serve a certificate the API server can check:
# vkubelet files a kubelet-serving CSR, which no controller approves (the kubelet's rule); 'up'
# approves it, as the person trying this would with 'kubectl certificate approve', once it has
# checked that the CSR asks for exactly this node's names: DNS:$NODE and the node's IP (NODE_IP,
# or the InternalIP vkubelet reported), no other. A certificate for other names would let its
# holder pose as those hosts to anyone trusting the cluster CA.
#
# 'up' refuses a NODE that already exists: with the admin credential vkubelet would obtain that
# node's identity and take over its Node object, Lease and pods (and 'down' would delete it).
#
# Settings (environment): NODE (vk-try), PROVIDER (mock; 'process' runs containers as local
# processes and needs root), NODE_IP (this host's first non-loopback address), PORT (10250),
# DIR (.vk-try: the certificates, the log and the pid), DENO (deno), KUBECTL (kubectl).
set -euo pipefail

NODE=${NODE:-vk-try}
PROVIDER=${PROVIDER:-mock}
NODE_IP=${NODE_IP:-}
PORT=${PORT:-10250}
DIR=${DIR:-.vk-try}
DENO=${DENO:-deno}
KUBECTL=${KUBECTL:-kubectl}
POD=${NODE}-hello
ROOT=$(cd "$(dirname "$0")/.." && pwd)

say() { printf '%s\n' "$*"; }
die() { say "error: $*" >&2; exit 1; }
kc() { "$KUBECTL" "$@"; }

# Waits up to $1 seconds for the command after it to succeed.
wait_for() {
  local seconds=$1
  shift
  for _ in $(seq "$seconds"); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 1
  done
  return 1
}

serving_csrs() {
  kc get csr -o jsonpath='{range .items[*]}{.metadata.name} {.spec.signerName} {.spec.username} {.status.conditions[0].type}{"\n"}{end}' |
    awk -v user="system:node:$NODE" '$2 == "kubernetes.io/kubelet-serving" && $3 == user { print $1, $4 }'
}

pending_serving_csr() {
  serving_csrs | awk 'NF == 1 { print $1; exit }' | grep .
}

# The names a CSR asks for, one per line as openssl prints them (DNS:x, IP Address:y), sorted.
csr_names() {
  kc get csr "$1" -o jsonpath='{.spec.request}' | base64 -d |
    openssl req -noout -text |
    awk '/X509v3 Subject Alternative Name/ { getline; print }' |
    tr ',' '\n' | sed 's/^ *//; s/ *$//; /^$/d' | sort
}

# The node's IP as the serving certificate must name it: NODE_IP, or what vkubelet reported.
node_ip() {
  if [ -n "$NODE_IP" ]; then
    say "$NODE_IP"
    return
  fi
  kc get node "$NODE" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}' | grep .
}

# Approves the serving CSR $1 only if its names are exactly DNS:$NODE and IP Address:<node IP>.
approve_serving_csr() {
  local csr=$1 ip want got
  ip=$(wait_for 120 node_ip && node_ip) ||
    die "node $NODE reported no InternalIP within 120 s; set NODE_IP, or see $DIR/vkubelet.log"
  want=$(printf 'DNS:%s\nIP Address:%s\n' "$NODE" "$ip" | sort)
  got=$(csr_names "$csr") || die "cannot decode CSR $csr (needs base64 and openssl)"
  if [ "$got" != "$want" ]; then
    die "CSR $csr from system:node:$NODE asks for [$(printf '%s' "$got" | tr '\n' ' ')], not exactly [$(printf '%s' "$want" | tr '\n' ' ')]: not approving it; inspect it (kubectl get csr $csr -o yaml), then deny it (kubectl certificate deny $csr) and run '$0 down'"
  fi
  kc certificate approve "$csr"
}

up() {
  [ -n "${KUBECONFIG:-}" ] || die "set KUBECONFIG to a cluster admin's kubeconfig"
  kc version >/dev/null || die "kubectl cannot reach the cluster of $KUBECONFIG"
  if [ -f "$DIR/pid" ] && kill -0 "$(cat "$DIR/pid")" 2>/dev/null; then
    die "vkubelet is already running for $NODE (pid $(cat "$DIR/pid")); run '$0 down' first"
  fi
  if kc get node "$NODE" -o name >/dev/null 2>&1; then
    die "node $NODE already exists in this cluster: with the admin credential vkubelet would take over its identity, Lease and pods; choose another name (NODE=...), or, if an earlier '$0 up' made it, run '$0 down' first"
  fi
  mkdir -p "$DIR" && chmod 700 "$DIR"
  local args=(--provider="$PROVIDER" --nodename="$NODE" --port="$PORT"
    --bootstrap-kubeconfig="$KUBECONFIG" --cert-dir="$(cd "$DIR" && pwd)")
  [ -n "$NODE_IP" ] && args+=(--node-ip="$NODE_IP")
  say "1. starting vkubelet as node $NODE (log: $DIR/vkubelet.log)"
  (cd "$ROOT" && exec "$DENO" task start "${args[@]}") >"$DIR/vkubelet.log" 2>&1 &
  echo $! >"$DIR/pid"

  say "2. approving its kubelet-serving certificate request (once its names are checked)"
  local csr
  csr=$(wait_for 120 pending_serving_csr && pending_serving_csr) ||
    die "no kubelet-serving CSR from system:node:$NODE within 120 s; see $DIR/vkubelet.log"
  approve_serving_csr "$csr"

  say "3. waiting for the node to be Ready"
  kc wait --for=condition=Ready "node/$NODE" --timeout=120s ||
    die "node $NODE is not Ready; see $DIR/vkubelet.log"

  say "4. running pod $POD on it"
  kc run "$POD" --image=busybox --restart=Never \
    --overrides="{\"spec\":{\"nodeName\":\"$NODE\",\"tolerations\":[{\"key\":\"virtual-kubelet.io/provider\",\"operator\":\"Exists\"}]}}" \
    -- sh -c 'echo hello from vkubelet; sleep 3600'
  kc wait --for=condition=Ready "pod/$POD" --timeout=120s
  say "5. kubectl logs and exec through the kubelet API"
  kc logs "$POD" --tail=5
  kc exec "$POD" -- echo "exec works on $NODE"
  say "done: try 'kubectl get node $NODE', 'kubectl logs -f $POD'; '$0 down' removes it all"
}

down() {
  if [ -f "$DIR/pid" ]; then
    local pid
    pid=$(cat "$DIR/pid")
    # deno task runs vkubelet as a child: stop the whole group the task started.
    pkill -TERM -P "$pid" 2>/dev/null || true
    kill -TERM "$pid" 2>/dev/null || true
    wait_for 20 sh -c "! kill -0 $pid 2>/dev/null" || kill -KILL "$pid" 2>/dev/null || true
    say "stopped vkubelet (pid $pid)"
  fi
  kc delete pod "$POD" --ignore-not-found --grace-period=0 --force 2>/dev/null || true
  # Only a node vkubelet registered (its label type=virtual-kubelet): never a real one by mistake.
  if [ "$(kc get node "$NODE" -o jsonpath='{.metadata.labels.type}' 2>/dev/null)" = virtual-kubelet ]; then
    kc delete node "$NODE" --ignore-not-found
  elif kc get node "$NODE" -o name >/dev/null 2>&1; then
    say "left node $NODE alone: it is not labelled type=virtual-kubelet, so vkubelet did not make it"
  fi
  local csr
  for csr in $(kc get csr -o jsonpath='{range .items[*]}{.metadata.name} {.spec.username}{"\n"}{end}' |
    awk -v user="system:node:$NODE" -v prefix="csr-$NODE-" \
      '$2 == user || index($1, prefix) == 1 { print $1 }'); do
    kc delete csr "$csr"
  done
  rm -rf "$DIR"
  say "removed node $NODE, its pod, its certificate requests and $DIR"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) die "usage: KUBECONFIG=<admin kubeconfig> $0 up|down" ;;
esac
