/**
 * The pod's tunnel agent in its job (issue #64), when the node gives remote pods a pod IP
 * (`RemoteMakeOptions.network`). The batch script starts the agent first, on the batch host,
 * for the whole job (stopped when the script exits), and waits up to 30 s for its first Service
 * list before the containers start; the agent writes `state/tunnel.hosts` (a whole /etc/hosts
 * naming the Services) and `state/tunnel.env` (their env vars with its loopback addresses) in the
 * pod's directory (`state/` is the job's to write), its log in `state/tunnel.log`. Each launcher
 * then takes the env vars the pod already has from `tunnel.env`, and an apptainer container gets
 * `tunnel.hosts` as its /etc/hosts (`APPTAINER_BIND`). A `runtime: none` container gets it the
 * same way, unprivileged, where the node allows user namespaces ({@link tunnelHostsLines}). Without
 * the files (no tunnel, or the agent never connected) nothing changes. The containers share the
 * agent's network (the host's, as apptainer's default), so the agent reaches their ports on
 * 127.0.0.1.
 *
 * The agent's credential is never in the script (slurmctld keeps a job's script, shows it to the
 * job's owner and SLURM's administrators, and accounting may store it for good: `sacct
 * --batch-script`): {@link writeAgentCredential} writes it to `agent.credential` in the pod's
 * directory before each submission, 0600 and the job's user's, as the pod's Secret volumes are
 * delivered, and the agent reads it with `--credential-file`. The file stays while the pod does
 * (a requeued job's agent reads it again; the agent itself reads it once, at start, and redials
 * with what it read); a run with a new attachment replaces it.
 * @module
 */
import type { PodNetworkAttachment } from "../../../provider/mod.ts";
import { hostUser } from "../ownership/identity.ts";
import type { Owner } from "../ownership/job_files.ts";

/** The agent's credential file, in the pod's directory. */
export const AGENT_CREDENTIAL_FILE = "agent.credential";

/** Quotes `text` for sh. */
function q(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * `script` (a batch script of ./script.ts, which sets `D`) with the agent started before the
 * first container; unchanged without an attachment.
 */
export function withTunnelAgent(script: string, network?: PodNetworkAttachment): string {
  if (!network) return script;
  const agent = [
    ...network.agentCommand,
    '--hosts-file="$D/state/tunnel.hosts"',
    '--env-file="$D/state/tunnel.env"',
    `--credential-file="$D/${AGENT_CREDENTIAL_FILE}"`,
  ];
  const lines = [
    "# The pod's tunnel agent: its IP on the cluster's network, the Services by name.",
    'rm -f "$D/state/tunnel.hosts" "$D/state/tunnel.env"',
    `${
      agent.map((a) => a.startsWith("--") && a.includes('"$D') ? a : q(a)).join(" ")
    } >> "$D/state/tunnel.log" 2>&1 < /dev/null &`,
    "VK_AGENT=$!; trap 'kill $VK_AGENT 2>/dev/null' EXIT",
    'for _ in $(seq 300); do [ -e "$D/state/tunnel.env" ] && break; sleep 0.1; done',
  ];
  const at = script.indexOf("\nsidecars=()\n");
  if (at < 0) {
    throw new TypeError("the batch script has no sidecars=() line to start the agent before");
  }
  return `${script.slice(0, at + 1)}${lines.join("\n")}\n${script.slice(at + 1)}`;
}

/**
 * Writes the agent's credential to `agent.credential` in `podDir` (./pod_dir.ts, which must
 * exist): the job's user's (`owner`), 0600, so that the job reads it and no other user of the
 * node or the shared path does. Written under a new name and renamed over the old file: the pod
 * directory is vkubelet's and 0711, so no job can have put a link there or swap the name.
 */
export async function writeAgentCredential(
  podDir: string,
  credential: string,
  owner: Owner,
): Promise<void> {
  const path = `${podDir}/${AGENT_CREDENTIAL_FILE}`;
  const temp = `${podDir}/.${AGENT_CREDENTIAL_FILE}.${crypto.randomUUID()}`;
  try {
    await Deno.writeTextFile(temp, `${credential}\n`, { mode: 0o600, createNew: true });
    await Deno.chmod(temp, 0o600);
    const me = hostUser();
    if (owner.uid !== me.uid || owner.gid !== me.gid) await Deno.chown(temp, owner.uid, owner.gid);
    await Deno.rename(temp, path);
  } catch (err) {
    await Deno.remove(temp).catch(() => {});
    throw new Error(
      `Cannot write the tunnel agent's credential to ${path}: ${(err as Error).message}; ` +
        `the pod directory must exist and be vkubelet's`,
      { cause: err },
    );
  }
}

/**
 * A launcher's lines after the pod's env: the Services' env vars the container has (and their
 * `APPTAINERENV_` twins) from the agent's addresses, and its hosts file bound for apptainer.
 */
export function tunnelEnvLines(podDir: string): string[] {
  const dir = q(`${podDir}/state`);
  return [
    `if [ -s ${dir}/tunnel.env ]; then while IFS='=' read -r k v; do`,
    `  eval "[ -z \\"\\\${$k+x}\\" ] || export $k=\\"\\$v\\"; [ -z \\"\\\${APPTAINERENV_$k+x}\\" ] || export APPTAINERENV_$k=\\"\\$v\\""`,
    `done < ${dir}/tunnel.env; fi`,
    `[ ! -s ${dir}/tunnel.hosts ] || export APPTAINER_BIND="\${APPTAINER_BIND:+$APPTAINER_BIND,}"${dir}/tunnel.hosts:/etc/hosts:ro`,
  ];
}

/**
 * A `runtime: none` launcher's lines before its exec: the agent's hosts file bound over
 * /etc/hosts in a mount namespace of the container's own, so that its processes resolve the
 * Services by name as an apptainer container does. No privilege: a user namespace mapping the
 * job's user to root allows the bind (as `unshare -rm` does), then a nested one maps it back to
 * itself (an `unshare` that has `--map-user`) before the launcher runs again inside
 * (`$0 "$@"`; the bound file is /etc/hosts then, so it runs on). `HOSTALIASES` is no way out: glibc
 * reads it only for names without a dot, and only in DNS lookups. Where the node allows no
 * unprivileged user namespace (or its unshare is older), the container runs on the node's
 * /etc/hosts and its log says once that only the Services' env vars name them.
 */
export function tunnelHostsLines(podDir: string): string[] {
  const hosts = q(`${podDir}/state/tunnel.hosts`);
  // sh -c's $0 is the hosts file, $1 and $2 the job's uid and gid, the rest the command.
  const bind = q(
    'mount --bind "$0" /etc/hosts && u=$1 g=$2 && shift 2 && ' +
      'exec unshare --map-user="$u" --map-group="$g" -- "$@"',
  );
  const inside = `unshare -rm sh -c ${bind} ${hosts} "$(id -u)" "$(id -g)"`;
  return [
    `if [ -s ${hosts} ] && [ ! ${hosts} -ef /etc/hosts ]; then`,
    `  if ${inside} true 2>/dev/null; then exec ${inside} "$0" "$@"; fi`,
    "  echo 'vkubelet: no unprivileged user namespace here (unshare -rm, --map-user):" +
    " Service names do not resolve in this container; their env vars name them' >&2",
    "fi",
  ];
}
