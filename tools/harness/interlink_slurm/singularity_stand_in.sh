#!/bin/sh
# A stand-in for `singularity exec|run [options] IMAGE [command...]` as the interLink SLURM plugin's
# job script calls it (no image can be pulled here): the image is dropped and the command runs on
# the host, in a mount namespace of its own where each `--bind SRC:DST` onto an existing directory
# is mounted (so a postStart hook and its container share the `hook-tmp` bound as /tmp, as they do
# in singularity), with the variables of `--env-file` exported. Needs root (unshare -m).
set -eu
if [ "${VK_STAND_IN_NS:-}" != 1 ]; then
  VK_STAND_IN_NS=1 exec unshare -m --propagation private -- "$0" "$@"
fi
unset VK_STAND_IN_NS
case "${1:-}" in exec | run) shift ;; *) echo "singularity stand-in: only exec and run" >&2; exit 255 ;; esac
binds=
while [ $# -gt 0 ]; do
  case "$1" in
    --bind | -B) binds="$binds $(printf '%s' "$2" | tr ',' ' ')"; shift 2 ;;
    --env-file) set -a; . "$2"; set +a; shift 2 ;;
    --env | --home | --pwd | -W | --workdir | --overlay | -o | --mount | --security) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "singularity stand-in: no image" >&2; exit 255; }
shift # the image
[ $# -gt 0 ] || { echo "singularity stand-in: run of an image's own entrypoint is not supported" >&2; exit 255; }
# A bind onto /tmp last: mounted earlier it would hide the sources under /tmp (the job's files).
bind() {
  src=${1%%:*}; rest=${1#*:}; dst=${rest%%:*}
  if [ -d "$src" ] && [ -d "$dst" ]; then mount --bind "$src" "$dst"; fi
}
for spec in $binds; do case "$spec" in *:/tmp | *:/tmp:*) ;; *) bind "$spec" ;; esac; done
for spec in $binds; do case "$spec" in *:/tmp | *:/tmp:*) bind "$spec" ;; esac; done
exec "$@"
