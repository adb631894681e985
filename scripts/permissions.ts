/**
 * The one list of Deno permissions vkubelet runs with: the compiled binary (`deno task
 * compile`), `deno task start` (checked against this list by tests/ship/permissions_test.ts),
 * the end-to-end tests (tools/cluster/vkubelet.ts) and the bundle test.
 *
 * Why each one, and why it is as wide as it is:
 * - `--allow-net`: the API server can be anywhere, the kubelet API listens on any address the
 *   config names, and the process provider dials pods' ports (port-forward, HTTP/TCP probes).
 * - `--allow-read`: the kubeconfig, certificates, config files and the provider module are
 *   wherever the user puts them; the process provider reads `/proc` and cgroup files for stats.
 * - `--allow-write`: unscoped, though only the process provider writes from vkubelet's own code
 *   (its `stateDir`, default `/var/lib/vkubelet/process` or the user's state directory; its cgroup tree under
 *   `/sys/fs/cgroup`; a probe directory in the temp dir; hostPath volumes it is told to
 *   create). It writes ConfigMap, Secret and projected volumes the way the kubelet's AtomicWriter
 *   does, swapping a `..data` symlink, and `Deno.symlink` refuses path-scoped write grants (a
 *   link's target is only resolved when it is followed). tests/ship/bundle_test.ts fails with a
 *   scoped grant. Confine writes outside Deno instead: the systemd unit's `ProtectSystem=strict`
 *   with `ReadWritePaths`, the container image's read-only root file system.
 * - `--allow-env`: every option can come from the environment (`Deno.env.toObject()`).
 * - `--allow-run`: the process provider runs containers' commands, `mkfifo`, `unshare`, `stty`;
 *   the slurm provider SLURM's commands (`sbatch`, `squeue`, `scancel`, `sinfo`, `srun`, `setpriv`);
 *   kubeconfig exec plugins run their command. The programs are the pods' own, so it cannot be
 *   scoped by name.
 * - `--allow-sys=networkInterfaces,osRelease,hostname`: without `--node-ip`, the node's
 *   InternalIP is the first non-loopback IPv4 address of the host's network interfaces; the Azure
 *   SDK (aci provider) names the kernel release in its user agent, and without the grant its
 *   pipeline throws outside any request; Alibaba's SDK (eci provider) mixes the host name into its
 *   request nonces and throws as it loads without it. Nothing else asks for system information
 *   (checked with `DENO_AUDIT_PERMISSIONS` over the bundle test). Granting these is cheaper than
 *   replacing `node:os` functions for the whole process.
 * - `--allow-ffi` for glibc's shared object, at the paths where distributions put it on x86_64
 *   and aarch64: main.ts calls its `malloc_trim` every 10 s so that the native memory freed
 *   after a burst goes back to the system (one node's steady RSS at 10,000 pods 150 against
 *   189 MiB, bench/reports/why.md, twelfth round). It opens only the one the process has loaded (as its
 *   `/proc/<pid>/maps` shows). The grant is scoped to the library, not to the function: with it,
 *   code in this process can call any libc function (`system`, `dlopen` of any library), so it
 *   is close to `--allow-all` for vkubelet. `--native-heap-trim=false` turns the trim off, and
 *   then vkubelet runs without `--allow-ffi` (given to `deno run`); without the grant it runs as
 *   before and says so at start.
 *
 * - `--unstable-net` (not a permission; the one runtime flag): `Deno.listenDatagram` with unix
 *   datagram sockets, to send systemd's `READY=1` (app/sd_notify.ts, `Type=notify`).
 * - `--v8-flags=--heap-growing-percent=50` (not a permission): V8 lets the heap grow to 1.5 times
 *   what the last full collection kept before it collects again, instead of up to 4 times by its
 *   own heuristics. 1,000 nodes with 10,000 pods hold about 130 MiB after a full collection, and
 *   V8's default let their heap pages reach 600 MiB (RSS 709 MiB, peak 824, against 433 and 439
 *   with the setting, for the same CPU in the steady window). It costs one node with 10,000 pods
 *   21 MiB of steady RSS (202 against 181) and 12 % more CPU when they are all deleted, and saves
 *   it 22 MiB of peak (bench/reports/why.md, "Eighth round").
 *
 * Not granted: FFI to any other library, and imports from hosts other than Deno's default list;
 * `--provider` refuses `http(s):` URLs for that reason (app/config/schema.ts), with the advice to
 * download the module and name its path, so the code vkubelet runs is on disk and the same under
 * `deno task start` and in the binary. `deno task start` also sets `VKUBELET_CALLER_DIR` from `$INIT_CWD`: deno
 * task runs in the repository, and main.ts changes back to where the command was typed.
 * @module
 */
import { glibcPaths } from "../base/native_heap.ts";

/**
 * The `deno run` / `deno compile` permission flags, exactly, the one runtime flag and V8's
 * heap setting.
 */
export const VKUBELET_PERMISSIONS: readonly string[] = [
  "--allow-net",
  "--allow-read",
  "--allow-write",
  "--allow-env",
  "--allow-run",
  "--allow-sys=networkInterfaces,osRelease,hostname",
  `--allow-ffi=${[...new Set([...glibcPaths("x86_64"), ...glibcPaths("aarch64")])].join(",")}`,
  "--unstable-net",
  "--v8-flags=--heap-growing-percent=50",
];

/** Targets `deno task compile` builds by default (Deno's `--target` names). */
export const COMPILE_TARGETS: readonly string[] = [
  "x86_64-unknown-linux-gnu",
  "aarch64-unknown-linux-gnu",
  "x86_64-apple-darwin",
  "aarch64-apple-darwin",
];
