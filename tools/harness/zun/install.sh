#!/bin/bash
# Installs what the Zun test stack needs, pinned and idempotent:
#   - Debian 12 packages: RabbitMQ, MariaDB (every service's database, as in a production
#     OpenStack), podman (with runc, conmon, the CNI plugins), busybox-static
#     (the images are built from it: no registry is reachable) and pciutils (zun-compute's PCI
#     tracker runs lspci and reports no compute node without it);
#   - two Python venvs from PyPI, every package pinned (requirements-*.txt beside this file):
#     zun 18.0.0 with the OpenStack clients, and keystone 30.0.0 with placement 16.0.0;
#   - the zun_podmannet network driver (beside this file) into the zun venv, on every run.
# Usage: install.sh [STATE_DIR]   (default: <repo>/.cache/zun). Needs root for apt.
# A venv is rebuilt only when its requirements file changed (a stamp holds the file's hash).
set -euo pipefail
H=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$H/../../.." && pwd)
S=${1:-$ROOT/.cache/zun}
PY=${ZUN_PYTHON:-/usr/bin/python3}
mkdir -p "$S"

APT_PACKAGES=(
  "rabbitmq-server=3.10.8-1.1+deb12u1"
  "mariadb-server=1:10.11.19-0+deb12u1"
  "podman=4.3.1+ds1-8+deb12u1+b3"
  "runc=1.1.5+ds1-1+deb12u1"
  "conmon=2.1.6+ds1-1"
  "catatonit=0.1.7-1+b2"
  "containernetworking-plugins=1.1.1+ds1-3+b5"
  "busybox-static=1:1.35.0-4+deb12u1+b1"
  "pciutils=1:3.9.0-4"
  "python3-venv"
)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  name=${p%%=*}
  have=$(dpkg-query -W -f '${Status} ${Version}' "$name" 2>/dev/null || true)
  if [ "$name" = "$p" ]; then want="install ok installed "; else want="install ok installed ${p#*=}"; fi
  case "$have" in "$want"*) ;; *) missing+=("$p") ;; esac
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "zun harness: apt-get install ${missing[*]}"
  apt-get update -qq
  # RabbitMQ's and MariaDB's postinst would start their services: the harness starts its own,
  # on loopback
  DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get install -y -qq --no-install-recommends "${missing[@]}"
  # stop a rabbitmq the package may have started anyway (the harness runs its own node)
  command -v rabbitmqctl >/dev/null && rabbitmqctl -q shutdown >/dev/null 2>&1 || true
  command -v mariadb-admin >/dev/null && mariadb-admin shutdown >/dev/null 2>&1 || true
fi

venv() { # venv DIR REQUIREMENTS [EXTRA...]
  local dir=$1 req=$2; shift 2
  local stamp; stamp=$(cat "$req" "$@" 2>/dev/null | sha256sum | cut -c1-16)
  if [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$stamp" ]; then return 0; fi
  echo "zun harness: building $dir from $(basename "$req")"
  rm -rf "$dir"
  "$PY" -m venv "$dir"
  # the files are complete `pip freeze` lists: no resolving, exactly these versions
  "$dir/bin/pip" install -q --disable-pip-version-check --no-deps -r "$req"
  echo "$stamp" > "$dir/.stamp.pending"
}
# The network driver is one module and one entry point: written in place, nothing to build.
plugin() {
  local site; site=$("$S/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  cp "$H/zun_podmannet.py" "$site/zun_podmannet.py"
  mkdir -p "$site/zun_podmannet-0.1.0.dist-info"
  printf 'Metadata-Version: 2.1\nName: zun-podmannet\nVersion: 0.1.0\n' \
    > "$site/zun_podmannet-0.1.0.dist-info/METADATA"
  printf '[zun.network.driver]\npodman = zun_podmannet:PodmanNetwork\n' \
    > "$site/zun_podmannet-0.1.0.dist-info/entry_points.txt"
}
venv "$S/venv" "$H/requirements-zun.txt"
[ -f "$S/venv/.stamp.pending" ] && mv "$S/venv/.stamp.pending" "$S/venv/.stamp"
plugin
venv "$S/kvenv" "$H/requirements-keystone.txt"
[ -f "$S/kvenv/.stamp.pending" ] && mv "$S/kvenv/.stamp.pending" "$S/kvenv/.stamp"
"$S/venv/bin/python" -c "import zun, zun_podmannet" >/dev/null
"$S/kvenv/bin/python" -c "import keystone, placement" >/dev/null
echo "zun harness: installed in $S"
