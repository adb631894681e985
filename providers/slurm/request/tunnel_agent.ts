/**
 * The pod's tunnel agent in its job (issue #64), when the node gives remote pods a pod IP
 * (`RemoteMakeOptions.network`). The batch script starts the agent first, on the batch host,
 * for the whole job (stopped when the script exits), and waits up to 30 s for its first Service
 * list before the containers start; the agent writes `state/tunnel.hosts` (a whole /etc/hosts
 * naming the Services) and `state/tunnel.env` (their env vars with its loopback addresses) in the
 * pod's directory (`state/` is the job's to write), its log in `state/tunnel.log`. Each launcher
 * then takes the env vars the pod already has from `tunnel.env`, and an apptainer container gets
 * `tunnel.hosts` as its /etc/hosts (`APPTAINER_BIND`). Without the
 * files (no tunnel, or the agent never connected) nothing changes. The containers share the
 * agent's network (the host's, as apptainer's default), so the agent reaches their ports on
 * 127.0.0.1.
 * @module
 */
import type { PodNetworkAttachment } from "../../../provider/mod.ts";

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
  ];
  const lines = [
    "# The pod's tunnel agent: its IP on the cluster's network, the Services by name.",
    'rm -f "$D/state/tunnel.hosts" "$D/state/tunnel.env"',
    `VKUBELET_AGENT_CREDENTIAL=${q(network.agentCredential)} ${
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
