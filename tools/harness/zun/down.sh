#!/bin/bash
# Stops what up.sh started in STATE_DIR (default <repo>/.cache/zun): Zun's containers first
# (a capsule deleted while it was being made, or one whose image failed, can leave its podman
# containers behind), then every service by its recorded process group (MariaDB after the
# services that use it), then RabbitMQ's node.
H=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$H/../../.." && pwd)
S=${1:-$ROOT/.cache/zun}
B=$S/stack
export CONTAINERS_CONF=$B/containers.conf
for _ in 1 2; do
  for c in $(podman ps -a --format '{{.Names}}' 2>/dev/null | grep '^zun-'); do
    podman rm -f -t 0 "$c" >/dev/null 2>&1 || true
  done
done
for name in zun-compute zun-api neutron placement keystone mariadb podman; do
  f=$B/pids/$name.pid
  [ -f "$f" ] || continue
  pg=$(cat "$f")
  kill -- "-$pg" 2>/dev/null || true
  # MariaDB flushes and closes its files on SIGTERM: wait, so a following up.sh starts clean
  if [ "$name" = mariadb ]; then
    for _ in $(seq 1 60); do kill -0 -- "-$pg" 2>/dev/null || break; sleep 0.5; done
  fi
  rm -f "$f"
done
# rabbitmq-server's wrapper does not pass SIGTERM on to the Erlang node: ask the node to stop.
if [ -f "$B/rabbit.env" ]; then
  # shellcheck disable=SC2046
  env $(cat "$B/rabbit.env") /usr/lib/rabbitmq/bin/rabbitmqctl -q shutdown >/dev/null 2>&1 || true
  f=$B/pids/rabbitmq.pid
  [ -f "$f" ] && { kill -- "-$(cat "$f")" 2>/dev/null || true; rm -f "$f"; }
  # the node's own epmd, on its own port
  # shellcheck disable=SC2046
  env $(cat "$B/rabbit.env") epmd -kill >/dev/null 2>&1 || true
fi
echo "zun harness: down ($B)"
