#!/bin/bash
# Starts a real Zun on this machine, every listener on 127.0.0.1, state under $S/stack:
#   RabbitMQ, MariaDB, podman's Docker-compatible API (the container engine), keystone 30.0.0
#   and placement 16.0.0 (gunicorn, serve.py), a Neutron stand-in (networks and security groups,
#   fake_neutron.py), zun-api and zun-compute 18.0.0 (Zun's docker driver on podman, the
#   zun_podmannet network driver). Every database is MariaDB's, as in a production OpenStack
#   (on sqlite, writers under eventlet block each other and Zun loses capsules at a hundred).
#   Run install.sh first.
# Usage: up.sh [STATE_DIR]   (default <repo>/.cache/zun). Ports come from the environment
#   (ZUN_PORT_KEYSTONE, _PLACEMENT, _NEUTRON, _API, _AMQP, _AMQP_DIST, _EPMD, _DB) or defaults; they
#   are written to $S/stack/ports.env. The stack is fresh on every start (databases recreated).
# Users: admin/secret (project admin), demo/secret (member of project demo), region RegionOne.
set -euo pipefail
H=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$H/../../.." && pwd)
S=${1:-$ROOT/.cache/zun}
B=$S/stack
ZV=$S/venv
KV=$S/kvenv
[ -x "$ZV/bin/zun-api" ] && [ -x "$KV/bin/keystone-manage" ] ||
  { echo "zun harness: not installed in $S; run tools/harness/zun/install.sh" >&2; exit 2; }
if [ -f "$B/pids/zun-api.pid" ] && kill -0 "$(cat "$B/pids/zun-api.pid")" 2>/dev/null; then
  echo "zun harness: a stack is already running in $B; run down.sh first" >&2; exit 3
fi
P_KS=${ZUN_PORT_KEYSTONE:-35357}
P_PL=${ZUN_PORT_PLACEMENT:-38778}
P_NET=${ZUN_PORT_NEUTRON:-39696}
P_API=${ZUN_PORT_API:-39517}
P_AMQP=${ZUN_PORT_AMQP:-35672}
P_DIST=${ZUN_PORT_AMQP_DIST:-35673}
P_EPMD=${ZUN_PORT_EPMD:-34369}
P_DB=${ZUN_PORT_DB:-33306}
rm -rf "$B/ks" "$B/pl" "$B/zun" "$B/rabbit" "$B/db" "$B/logs" "$B/pids"
mkdir -p "$B"/{logs,pids,ks/fernet,ks/cred,pl,zun/state,zun/locks,rabbit,db,img}
cat > "$B/ports.env" <<E
ZUN_PORT_KEYSTONE=$P_KS
ZUN_PORT_PLACEMENT=$P_PL
ZUN_PORT_NEUTRON=$P_NET
ZUN_PORT_API=$P_API
ZUN_PORT_AMQP=$P_AMQP
ZUN_PORT_AMQP_DIST=$P_DIST
ZUN_PORT_EPMD=$P_EPMD
ZUN_PORT_DB=$P_DB
E
export CONTAINERS_CONF=$B/containers.conf
RABBIT_ENV=(RABBITMQ_NODENAME=vkzun@localhost RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
  RABBITMQ_NODE_PORT=$P_AMQP RABBITMQ_DIST_PORT=$P_DIST ERL_EPMD_ADDRESS=127.0.0.1
  ERL_EPMD_PORT=$P_EPMD RABBITMQ_MNESIA_BASE=$B/rabbit/mnesia RABBITMQ_LOG_BASE=$B/rabbit/log
  RABBITMQ_PID_FILE=$B/rabbit/pid RABBITMQ_ENABLED_PLUGINS_FILE=$B/rabbit/enabled_plugins
  RABBITMQ_CONFIG_FILE=$B/rabbit/rabbitmq HOME=$B/rabbit)
echo "${RABBIT_ENV[*]}" > "$B/rabbit.env"

start() { # start NAME COMMAND...: its own process group, pid recorded for down.sh
  local name=$1; shift
  setsid "$@" > "$B/logs/$name.out" 2>&1 < /dev/null &
  echo $! > "$B/pids/$name.pid"
}
wait_for() { # wait_for WHAT SECONDS COMMAND...
  local what=$1 limit=$2; shift 2
  for _ in $(seq 1 "$limit"); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done
  echo "zun harness: $what did not come up in ${limit}s; logs in $B/logs" >&2; exit 1
}
# A start that fails half-way stops what it started. starting.pid tells tools/harness/zun.ts
# that a stack is on its way (wait for it, do not stop it).
echo $$ > "$B/starting.pid"
trap 'rc=$?; rm -f "$B/starting.pid"; [ $rc -eq 0 ] || "$H/down.sh" "$S" >/dev/null 2>&1' EXIT

# --- RabbitMQ: its own node name, ports and files, loopback only ----------------------------
echo "[]." > "$B/rabbit/enabled_plugins"
echo "loopback_users.guest = true" > "$B/rabbit/rabbitmq.conf"
# Not /usr/sbin/rabbitmq-server: that wrapper switches to the rabbitmq user (and its HOME).
start rabbitmq env "${RABBIT_ENV[@]}" /usr/lib/rabbitmq/bin/rabbitmq-server

# --- MariaDB: its own data directory, socket and port, no option files read --------------
DB_SOCK=$B/db/mysqld.sock
mariadb-install-db --no-defaults --user=root --datadir="$B/db/data" --skip-test-db \
  --auth-root-authentication-method=socket > "$B/logs/mariadb-install.out" 2>&1
start mariadb mariadbd --no-defaults --user=root --datadir="$B/db/data" --socket="$DB_SOCK" \
  --pid-file="$B/db/mariadbd.pid" --port="$P_DB" --bind-address=127.0.0.1 --skip-name-resolve \
  --log-error="$B/logs/mariadb.log" --max-connections=1000
wait_for mariadb 60 mariadb --no-defaults --socket="$DB_SOCK" -uroot -e 'SELECT 1'
mariadb --no-defaults --socket="$DB_SOCK" -uroot <<'SQL'
CREATE DATABASE keystone; CREATE DATABASE placement; CREATE DATABASE zun;
CREATE USER 'openstack'@'127.0.0.1' IDENTIFIED BY 'secret';
GRANT ALL ON keystone.* TO 'openstack'@'127.0.0.1';
GRANT ALL ON placement.* TO 'openstack'@'127.0.0.1';
GRANT ALL ON zun.* TO 'openstack'@'127.0.0.1';
SQL
DB=mysql+pymysql://openstack:secret@127.0.0.1:$P_DB

# --- podman's Docker API. This machine lacks CAP_SYS_RESOURCE and has hybrid cgroups: lower
# ulimits, runc and cgroupfs. -------------------------------------------------------------
cat > "$CONTAINERS_CONF" <<'C'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
C
start podman podman system service --time=0 "unix://$B/podman.sock"
# Addresses from 198.19.88.0/24 (benchmark range), never a private range.
podman network exists zunnet || podman network create --subnet 198.19.88.0/24 zunnet >/dev/null
# Images from Debian's busybox: no registry is reachable. pause is the capsule's sandbox.
if ! podman image exists localhost/busybox:latest || ! podman image exists localhost/kubernetes/pause:latest; then
  root=$B/img/rootfs; rm -rf "$root"; mkdir -p "$root"/{bin,etc,tmp,proc,sys,dev,root}
  cp /bin/busybox "$root/bin/busybox"
  for a in $("$root/bin/busybox" --list); do [ "$a" = busybox ] || ln -sf busybox "$root/bin/$a"; done
  echo "root:x:0:0:root:/root:/bin/sh" > "$root/etc/passwd"
  echo "root:x:0:" > "$root/etc/group"
  tar -C "$root" -cf "$B/img/busybox.tar" .
  podman import --change 'CMD ["/bin/sh"]' "$B/img/busybox.tar" localhost/busybox:latest >/dev/null
  podman import --change 'CMD ["/bin/sleep","infinity"]' "$B/img/busybox.tar" \
    localhost/kubernetes/pause:latest >/dev/null
fi

# --- keystone -----------------------------------------------------------------------------
KS=http://127.0.0.1:$P_KS/v3
cat > "$B/ks/keystone.conf" <<C
[DEFAULT]
log_file = $B/logs/keystone.log
[database]
connection = $DB/keystone
[fernet_tokens]
key_repository = $B/ks/fernet
[credential]
key_repository = $B/ks/cred
C
KM=("$KV/bin/keystone-manage" --config-file "$B/ks/keystone.conf")
"${KM[@]}" db_sync
"${KM[@]}" fernet_setup --keystone-user root --keystone-group root
"${KM[@]}" credential_setup --keystone-user root --keystone-group root
"${KM[@]}" bootstrap --bootstrap-password secret --bootstrap-region-id RegionOne \
  --bootstrap-admin-url "$KS/" --bootstrap-internal-url "$KS/" --bootstrap-public-url "$KS/"
OS_KEYSTONE_CONFIG_FILES=$B/ks/keystone.conf start keystone \
  "$KV/bin/python" "$H/serve.py" keystone.wsgi.api:application "$P_KS"
wait_for keystone 90 curl -sf -m 3 "$KS"
"$KV/bin/python" "$H/ks_setup.py" "$KS" "container=http://127.0.0.1:$P_API/v1" \
  "placement=http://127.0.0.1:$P_PL" "network=http://127.0.0.1:$P_NET"

AUTH="www_authenticate_uri = $KS
auth_url = $KS
auth_type = password
project_domain_name = Default
user_domain_name = Default
project_name = service
password = secret"

# --- placement ----------------------------------------------------------------------------
cat > "$B/pl/placement.conf" <<C
[DEFAULT]
log_file = $B/logs/placement.log
[placement_database]
connection = $DB/placement
[api]
auth_strategy = keystone
[keystone_authtoken]
$AUTH
username = placement
C
# the schema once, before the workers start (sync_on_startup in each worker races)
"$KV/bin/placement-manage" --config-file "$B/pl/placement.conf" db sync \
  > "$B/logs/placement-db.out" 2>&1
OS_PLACEMENT_CONFIG_DIR=$B/pl start placement \
  "$KV/bin/python" "$H/serve.py" placement.wsgi.api:application "$P_PL"

# --- the Neutron stand-in: networks, and security groups for capsules with ports ----------
start neutron "$ZV/bin/python" "$H/fake_neutron.py" "$P_NET" "$KS"

# --- zun ----------------------------------------------------------------------------------
cp "$H/api-paste.ini" "$B/zun/api-paste.ini"
cat > "$B/zun/zun.conf" <<C
[DEFAULT]
debug = False
log_file = $B/logs/zun.log
transport_url = rabbit://guest:guest@127.0.0.1:$P_AMQP/
state_path = $B/zun/state
# must be the container engine's own name (docker info: Name), or zun-compute reports no node
host = $(hostname)
my_ip = 127.0.0.1
container_driver = docker
capsule_driver = docker
image_driver_list = docker
default_image_driver = docker
sandbox_image = localhost/kubernetes/pause:latest
sandbox_image_pull_policy = never
[compute]
# placement claims a whole VCPU for each capsule (0.1 cpu rounds up, zun/scheduler/utils.py):
# 2 cores x 16 (the default ratio) hold 32 capsules; the bench runs 100
cpu_allocation_ratio = 128
[api]
host_ip = 127.0.0.1
port = $P_API
workers = 1
api_paste_config = $B/zun/api-paste.ini
[database]
connection = $DB/zun
[keystone_authtoken]
$AUTH
username = zun
auth_version = v3
[keystone_auth]
$AUTH
username = zun
auth_version = v3
[oslo_concurrency]
lock_path = $B/zun/locks
[docker]
api_url = unix://$B/podman.sock
[network]
driver = podman
[placement_client]
endpoint_type = public
[neutron_client]
endpoint_type = public
C
"$ZV/bin/zun-db-manage" --config-file "$B/zun/zun.conf" upgrade > "$B/logs/zun-db-manage.out" 2>&1
wait_for placement 90 curl -sf -m 3 "http://127.0.0.1:$P_PL/"
wait_for rabbitmq 120 bash -c "echo > /dev/tcp/127.0.0.1/$P_AMQP"
start zun-api "$ZV/bin/zun-api" --config-file "$B/zun/zun.conf"
start zun-compute "$ZV/bin/zun-compute" --config-file "$B/zun/zun.conf"
wait_for zun-api 120 curl -sf -m 3 "http://127.0.0.1:$P_API/v1"
# The scheduler places nothing until zun-compute's resource provider is in placement.
wait_for "zun-compute's resource provider" 180 "$ZV/bin/python" "$H/ks_setup.py" "$KS" --check-placement \
  "http://127.0.0.1:$P_PL"
echo "zun harness: up in $B (zun-api http://127.0.0.1:$P_API, keystone $KS)"
