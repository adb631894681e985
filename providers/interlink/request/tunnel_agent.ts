/**
 * The pod's tunnel agent through the pod spec interLink's plugin receives (issue #64 item 5),
 * when the node gives remote pods a pod IP (`RemoteMakeOptions.network`), with no change to the
 * plugin: the main container's command is wrapped in `/bin/sh -c`, which starts the agent (the
 * attachment's command; its credential in the container's env), waits up to 30 s for its first
 * Service list, replaces the Services' env vars the container has with the agent's loopback
 * addresses, runs the original command, and stops the agent when it ends. The container shares
 * the job's network (singularity's and apptainer's default), so the agent reaches the pod's
 * declared ports on 127.0.0.1; the agent's program must be reachable inside the container (a
 * shared filesystem bound there, `agentCommand` of `--remote-pod-network`). A main container
 * without a `command` (the image's entrypoint) is left as it is: the plugin alone knows the
 * entrypoint. Names by /etc/hosts are not given (the plugin decides the container's binds).
 *
 * The credential is in the container's env, never on a command line (the wrapper unsets it
 * before the original command runs). The plugin does with it what it does with any env var:
 * interLink's SLURM plugin (interlink-hq/interlink-slurm-plugin pkg/slurm/prepare.go
 * `createEnvFile`) writes it to `<DataRootFolder>/<ns>-<uid>/<container>_envfile.properties`
 * with `os.Create` (0644 under the usual umask, in a 0755 directory), logs it at debug level and
 * puts it in a trace attribute. There is no better channel without changing the plugin (a
 * Secret volume is embedded in the job script without a shared filesystem, and needs a Secret
 * the cluster has): keep `DataRootFolder` the plugin's user's alone (docs/networking.md).
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { PodNetworkAttachment } from "../../../provider/mod.ts";

const WRAPPER = [
  'T="${TMPDIR:-/tmp}/vk-tunnel-$VK_POD_UID"; mkdir -p "$T"; rm -f "$T/env"',
  '"$@" --hosts-file="$T/hosts" --env-file="$T/env" > "$T/agent.log" 2>&1 < /dev/null &',
  "a=$!",
  'for _ in $(seq 300); do [ -e "$T/env" ] && break; sleep 0.1; done',
  'if [ -s "$T/env" ]; then while IFS="=" read -r k v; do',
  '  eval "[ -z \\"\\${$k+x}\\" ] || export $k=\\"\\$v\\""',
  'done < "$T/env"; fi',
  'unset VKUBELET_AGENT_CREDENTIAL; eval "set -- $VK_COMMAND"',
  '"$@"; rc=$?; kill $a 2>/dev/null; exit $rc',
].join("\n");

/** Quotes `text` for sh. */
function q(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * `pod` with its main container (`kubectl.kubernetes.io/default-container`, else the first)
 * wrapped as the module doc says; `pod` itself unchanged without an attachment.
 */
export function withTunnelAgent(pod: Pod, network?: PodNetworkAttachment): Pod {
  const containers = pod.spec?.containers ?? [];
  const chosen = pod.metadata?.annotations?.["kubectl.kubernetes.io/default-container"];
  const main = containers.find((c) => c.name === chosen) ?? containers[0];
  if (!network || !main?.command) return pod;
  const original = [...main.command, ...(main.args ?? [])];
  const wrapped = {
    ...main,
    command: ["/bin/sh", "-c", WRAPPER, "vk-tunnel", ...network.agentCommand],
    args: [],
    env: [
      ...(main.env ?? []),
      { name: "VKUBELET_AGENT_CREDENTIAL", value: network.agentCredential },
      { name: "VK_POD_UID", value: pod.metadata?.uid ?? "" },
      { name: "VK_COMMAND", value: original.map(q).join(" ") },
    ],
  };
  return {
    ...pod,
    spec: { ...pod.spec!, containers: containers.map((c) => c === main ? wrapped : c) },
  };
}
