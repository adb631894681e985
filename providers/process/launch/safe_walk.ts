/**
 * Reaching a path as root without following a link the pod made, in the view's set-up script
 * (./mount_ns.ts) and when a hostPath is created (../volumes/host_path.ts): the pod controls the
 * content of its volumes, and a mount point or subPath inside one could otherwise be a symlink
 * to any file of the host (a bind over it, or the empty file made for a mount point, would then
 * land there), a FIFO (whose opening waits for a writer for ever) or a device node (whose
 * opening may act: a watchdog starts, a terminal becomes the caller's).
 *
 * `vk_walk BASE REST CREATE MODE` changes to BASE (a directory vkubelet made or resolved), then
 * to each directory of REST in turn, relative to the one it is in, and checks after each step
 * that the kernel's path of its working directory is exactly BASE/...: a symlink, or a
 * component swapped since the caller resolved the path, is refused. `cd` opens nothing: a FIFO
 * or a device in the way only fails it. A last component that is not a directory is opened
 * read-write, in the directory held: that never waits on a FIFO and fails on a directory; while
 * it is opened, the host's `/dev` mounts are `nodev` (`VK_DEV_MOUNTS`), so that a symlink raced
 * in cannot open a device there either. What was opened must then be a regular file
 * (`[ -f /proc/self/fd/7 ]` tests the open file itself) at exactly BASE/REST. A file that cannot
 * be opened for writing (a read-only file system, a running program) is opened read-only if it is
 * a regular file: on a read-only file system nobody can swap it for a FIFO meanwhile.
 *
 * Missing components are created in the directory held (CREATE=dir: directories; CREATE=file:
 * directories and, last, an empty file made with `dd conv=excl`, which is O_EXCL and follows
 * nothing; CREATE=none: nothing); new directories get MODE if given. fd 7 is left on BASE/REST,
 * for `mount --no-canonicalize ... /proc/self/fd/7`. This is what the kubelet does with
 * `openat(O_PATH|O_NOFOLLOW)` one component at a time, then an fstat, and a bind of
 * `/proc/<pid>/fd/<fd>` (kubernetes/kubernetes pkg/volume/util/subpath/subpath_linux.go
 * `doSafeOpen`, `doBindSubPath`), with what a shell can do instead of `O_PATH`.
 *
 * What a shell cannot close: the read-only fallback opens by name (so on a writable file system,
 * a file that is a running program or immutable could be swapped for a FIFO between the check
 * and the open, and the set-up of that container then waits until it is stopped), and only the
 * `/dev` mounts are made `nodev` (a device node elsewhere on a mount that allows devices could
 * still be reached through a raced symlink).
 * @module
 */

/** The shell functions; they expect `set -e`, fd 4 on /dev/null, and leave fd 7 open. */
export const WALK_FUNCTIONS: readonly string[] = [
  `vk_refuse() { echo "vkubelet: $1 is not where it was resolved (a symlink in its way?), or not a directory or regular file: refused" >&2; exit 1; }`,
  // The host's device mounts nodev (on) or as they were (off); only inside a mount namespace.
  `vk_nodev() {`,
  `  for vk_dev in \${VK_DEV_MOUNTS:-}; do`,
  `    if [ "$1" = on ]; then mount --no-canonicalize -o remount,bind,nodev "$vk_dev"`,
  `    else mount --no-canonicalize -o remount,bind,dev "$vk_dev"; fi`,
  `  done`,
  `}`,
  // One directory step: NAME, the path it must have, CREATE, MODE.
  `vk_cd() {`,
  `  vk_new=`,
  `  if [ "$3" != none ] && ! [ -e "$1" ] && ! [ -L "$1" ]; then mkdir -- "$1" 2>&4 && vk_new=1 || true; fi`,
  `  cd -P -- "$1" 2>&4 || vk_refuse "$2"`,
  `  [ "$(readlink /proc/self/cwd)" = "$2" ] || vk_refuse "$2"`,
  `  if [ -n "$vk_new" ] && [ -n "$4" ]; then chmod "$4" .; fi`,
  `}`,
  // The last step to a file: NAME, the path it must have, CREATE; opens it on fd 7.
  `vk_file() {`,
  `  if [ "$3" = file ] && ! [ -e "$1" ] && ! [ -L "$1" ]; then dd of="$1" conv=excl count=0 status=none <. 2>&4 || true; fi`,
  `  vk_nodev on`,
  // (The braces make the redirection of stderr last for the open only, not the whole script.)
  `  if ! { command exec 7<>"$1"; } 2>&4; then`,
  `    if [ -f "$1" ] && ! [ -L "$1" ]; then { command exec 7<"$1"; } 2>&4 || { vk_nodev off; vk_refuse "$2"; }`,
  `    else vk_nodev off; vk_refuse "$2"; fi`,
  `  fi`,
  `  vk_nodev off`,
  `  [ -f /proc/self/fd/7 ] && [ "$(readlink /proc/self/fd/7)" = "$2" ] || vk_refuse "$2"`,
  `}`,
  `vk_walk() {`,
  `  cd -P -- "$1" 2>&4 || vk_refuse "$1"`,
  `  [ "$(readlink /proc/self/cwd)" = "$1" ] || vk_refuse "$1"`,
  `  vk_here=$1; vk_rest=$2; vk_held=`,
  `  while [ -n "$vk_rest" ]; do`,
  `    vk_part=\${vk_rest%%/*}`,
  `    case $vk_rest in */*) vk_rest=\${vk_rest#*/} ;; *) vk_rest= ;; esac`,
  `    [ -n "$vk_part" ] || continue`,
  `    vk_here=\${vk_here%/}/$vk_part`,
  `    if [ -n "$vk_rest" ] || [ "$3" = dir ] || { [ "$3" = none ] && [ -d "$vk_part" ] && ! [ -L "$vk_part" ]; }; then`,
  `      vk_cd "$vk_part" "$vk_here" "$3" "$4"`,
  `    else vk_file "$vk_part" "$vk_here" "$3"; vk_held=1; fi`,
  `  done`,
  // A directory: the working directory itself, which cannot be anything else.
  `  if [ -z "$vk_held" ]; then exec 7<.; fi`,
  `  cd /`,
  `}`,
];
