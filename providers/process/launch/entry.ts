/**
 * The hand-over from vkubelet's root helpers to a container's command (its main process, exec
 * sessions, probes and hooks alike). Until the privileges are dropped, only host programs run,
 * by absolute path and with vkubelet's fixed environment (../host/host_tools.ts); the container's
 * environment travels in a root-only file that the root stage opens on fd 9, and the shell that
 * runs as the container's user reads it from there, changes to the working directory and execs
 * the command, which is then looked up on the pod's own PATH, as in a container.
 *
 * With a private view (./mount_ns.ts), a non-root container enters it through coreutils
 * `chroot --userspec --groups` from the host, which changes root, groups and user in one
 * process and runs nothing inside the view as root: the pod controls what its volumes put at
 * any path of the view (`/usr/bin` too). The bounding set and no_new_privs are set before, by
 * the host's `setpriv`; the bounding set keeps SETUID, SETGID and SYS_CHROOT, which `chroot`
 * needs (they give a non-root process nothing, and with `allowPrivilegeEscalation: false`
 * nothing can raise them). A container that runs as uid 0 is root on the host in any case: it
 * enters the view as root and `setpriv` there sets its exact capabilities.
 * @module
 */
import { type HostUser, type ProcessIdentity, setprivArgv } from "./identity.ts";
import { toolPath } from "../host/host_tools.ts";
import { shellQuote } from "./mount_ns.ts";

/** The fd on which the root stage hands the container's environment file over. */
export const ENV_FD = 9;

/**
 * Runs as the container's user: `cd` to `$1` (or to `$2` if that is not empty and `$1` cannot be
 * entered), load the environment from fd 9, exec the rest. The file is read with the shell's
 * own \`read\` (the user may not open it again by path).
 */
const ENTRY = `cd "$1" 2>/dev/null || cd "\${2:-$1}" || exit 128
shift 2
_vk_env=
while IFS= read -r _vk_line <&${ENV_FD} || [ -n "$_vk_line" ]; do _vk_env="$_vk_env$_vk_line
"; done
if [ -z "$_vk_env" ]; then echo "vkubelet: cannot read the container's environment" >&2; exit 126; fi
exec ${ENV_FD}<&-
eval "$_vk_env"
exec "$@"`;

/**
 * Closes the fds above stderr that sh can name (3 to 9; 9 is then the environment's): descriptors
 * vkubelet inherited must not reach the container, and the higher ones are made close-on-exec
 * at start-up (./inherited_fds.ts). Each root stage does it first.
 */
export const CLOSE_INHERITED = "exec 3<&- 4<&- 5<&- 6<&- 7<&- 8<&- 9<&-";

/**
 * Closes inherited fds, opens the environment file `$1` on fd 9, then execs the rest (the root
 * stage of exec sessions, probes and hooks; the container's runner does the same itself).
 */
export const OPEN_ENV = `${CLOSE_INHERITED}
exec ${ENV_FD}<"$1" || exit 126
shift
exec "$@"`;

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The environment file: `export` lines with single-quoted values; names the shell cannot
 * export (Kubernetes allows `my.var` or `-x`) go to coreutils `env` in front of the command.
 */
export function envFileText(env: Record<string, string>): string {
  const lines = ["unset _vk_env _vk_line OLDPWD"];
  const others: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (IDENTIFIER.test(name)) lines.push(`export ${name}=${shellQuote(value)}`);
    else others.push(shellQuote(`${name}=${value}`));
  }
  if (others.length) lines.push(`set -- ${toolPath("env")} -- ${others.join(" ")} "$@"`);
  return lines.join("\n") + "\n";
}

/** Writes the container's environment file, readable by root only. */
export function writeEnvFile(path: string, env: Record<string, string>): void {
  const tmp = `${path}.tmp`;
  Deno.writeTextFileSync(tmp, envFileText(env), { mode: 0o600 });
  Deno.chmodSync(tmp, 0o600);
  Deno.renameSync(tmp, path);
}

/**
 * The argv prefix that takes a root stage holding the environment on fd 9 to the container's
 * command: drop to `identity`, enter the view at `viewRoot` (if any), load the environment.
 * The working directory, the fallback directory ("" for none), then the command follow it.
 */
export function entryArgv(
  identity: ProcessIdentity,
  host: HostUser,
  viewRoot?: string,
): { ok: true; argv: string[] } | { ok: false; message: string } {
  const shell = ["/bin/sh", "-c", ENTRY, "vkubelet-entry"];
  const prefix = setprivArgv(identity, host);
  if (!prefix.ok || !viewRoot || host.uid !== 0) {
    return prefix.ok
      ? { ok: true, argv: [...prefix.argv, toolPath("sh"), ...shell.slice(1)] }
      : prefix;
  }
  if (identity.uid === 0) {
    return { ok: true, argv: [toolPath("chroot"), viewRoot, ...prefix.argv, ...shell] };
  }
  const limits: string[] = [];
  if (identity.capabilities !== "all") {
    const keep = new Set([...identity.capabilities, "SETUID", "SETGID", "SYS_CHROOT"]);
    const set = ["-all", ...[...keep].map((name) => `+${name.toLowerCase()}`)].join(",");
    limits.push(`--bounding-set=${set}`, "--inh-caps=-all");
  }
  if (identity.noNewPrivs) limits.push("--nnp");
  const groups = identity.groups.length ? identity.groups : [identity.gid];
  return {
    ok: true,
    argv: [
      ...(limits.length ? [toolPath("setpriv"), ...limits, "--"] : []),
      toolPath("chroot"),
      // "+": numeric, never looked up (a lookup would read the view's passwd files as root).
      `--userspec=+${identity.uid}:+${identity.gid}`,
      `--groups=${groups.map((g) => `+${g}`).join(",")}`,
      viewRoot,
      ...shell,
    ],
  };
}
