/**
 * Reaching a path as root without following a link the pod made, in the view's set-up script
 * (./mount_ns.ts): the pod controls the content of its volumes, and a mount point or subPath
 * inside one could otherwise be a symlink to any file of the host (a bind over it, or the empty
 * file made for a mount point, would then land there). `vk_walk BASE REST CREATE MODE` opens
 * BASE (a directory vkubelet made or resolved), then each component of REST through the
 * directory it holds open (`/proc/self/fd/7/<name>`), and checks after each step that what fd 7
 * holds is exactly BASE/... (the kernel's path of the open file): a symlink, or a component
 * swapped since the caller resolved the path, is refused. Missing components are created in
 * the directory held open: directories, the last one a file with CREATE=file (noclobber, which
 * never follows a link), nothing with CREATE=none; new directories get MODE if given. fd 7 is
 * left on BASE/REST, for `mount --no-canonicalize ... /proc/self/fd/7` (the kubelet binds
 * `/proc/<pid>/fd/<fd>` the same way: kubernetes/kubernetes
 * pkg/volume/util/subpath/subpath_linux.go `doBindSubPath`).
 * @module
 */

/** The shell functions; they expect `set -e` and leave fd 7 open. */
export const WALK_FUNCTIONS: readonly string[] = [
  `vk_refuse() { echo "vkubelet: $1 is not where it was resolved (a symlink in its way?): refused" >&2; exit 1; }`,
  `vk_walk() {`,
  `  exec 7<"$1"`,
  `  [ "$(readlink /proc/self/fd/7)" = "$1" ] || vk_refuse "$1"`,
  `  vk_here=$1; set -f; IFS=/`,
  `  for vk_part in $2; do`,
  `    vk_here="$vk_here/$vk_part"; vk_at="/proc/self/fd/7/$vk_part"; vk_new=`,
  `    if ! [ -e "$vk_at" ] && ! [ -L "$vk_at" ] && [ "$3" != none ]; then`,
  `      if [ "$3" = file ] && [ "$vk_here" = "$1/$2" ]; then (set -C; : > "$vk_at") 2>/dev/null || true`,
  `      else mkdir "$vk_at" 2>/dev/null || true; fi`,
  `      vk_new=1`,
  `    fi`,
  `    [ -d "$vk_at" ] || [ -f "$vk_at" ] || vk_refuse "$vk_here"`,
  `    exec 7<"$vk_at"`,
  `    [ "$(readlink /proc/self/fd/7)" = "$vk_here" ] || vk_refuse "$vk_here"`,
  `    if [ -n "$vk_new" ] && [ -n "$4" ]; then chmod "$4" /proc/self/fd/7; fi`,
  `  done`,
  `  unset IFS; set +f`,
  `}`,
];
