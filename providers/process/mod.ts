/**
 * The process provider (`--provider process`): runs each container of a pod as a local
 * process, for hosts without a container runtime (edge boxes, HPC login nodes, CI runners,
 * laptops). Images are not pulled: a container runs its `command` + `args`, or the command the
 * config maps its image to. With the config's `network` section each pod gets its own network
 * namespace and IP by CNI, and the kubelet's resolv.conf and hosts (./network/pod_network.ts);
 * without it pods share the host's network (pod IP = node IP unless configured). Each container runs in its own view (a private mount namespace, root and
 * util-linux `unshare`) with its own PID namespace, volumes at their `mountPath`; where the host
 * cannot make one, pods are refused unless the config turns isolation off (`mountNamespace:
 * off`; volumes then come through `VKUBELET_VOLUME_<NAME>` variables). Logs, exec (with TTY),
 * attach (stdout/stderr, and stdin for `stdin: true`; not to `tty: true` containers), port-forward,
 * probes, hooks, restarts with back-off, stats from /proc or cgroups (v2 or v1), and re-adoption of
 * running processes after a vkubelet restart. Config: `./config.ts`.
 *
 * Host tools used (found once on a fixed trusted PATH and run with vkubelet's own environment,
 * ./host/host_tools.ts): `sh`, `cat`, `env`, `sleep`, `mv`, `mkfifo`, `readlink`, `unshare`,
 * `mount`, `mkdir`, `ln`, `chroot`, `nsenter`, `setpriv`, `script` and `stty` (coreutils and
 * util-linux). What isolation pods get, and what they do not: ./README.md.
 * @module
 */
import { InvalidInputError, type ProviderDeps } from "../../provider/mod.ts";
import { probeCgroups } from "./host/cgroups.ts";
import { parseProcessConfig, type ProcessConfig } from "./config.ts";
import { chooseStateDir, defaultStateDirs } from "./state/state_dir.ts";
import { kubeVolumeSource } from "./volumes/kube_source.ts";
import { probeMountNamespace } from "./launch/mount_ns.ts";
import { missingTools, requiredTools } from "./host/host_tools.ts";
import { hostUser } from "./launch/identity.ts";
import { closeInheritedOnExec } from "./launch/inherited_fds.ts";
import { ProcessProvider, type ProcessProviderOptions } from "./provider.ts";
import { loadNetworkConfig } from "./network/cni.ts";
import { PodNetworks } from "./network/pod_network.ts";

export { parseProcessConfig, type ProcessConfig } from "./config.ts";
export { ProcessProvider, type ProcessProviderOptions } from "./provider.ts";
export type { VolumeSource } from "./volumes/volumes.ts";

/** Builds the provider: validates the config, probes the host, re-adopts recorded pods. */
export async function createProvider(
  config: unknown,
  deps: ProviderDeps,
  overrides: Partial<ProcessProviderOptions> = {},
): Promise<ProcessProvider> {
  // Before any container starts: inherited fds must not reach them (./launch/inherited_fds.ts).
  const fds = closeInheritedOnExec();
  if (fds.warning) deps.log.warn("{warning}", { warning: fds.warning });
  const parsed = parseProcessConfig(config);
  if (!parsed.ok) {
    throw new InvalidInputError(`invalid process provider config: ${parsed.errors.join("; ")}`);
  }
  const stateDir = parsed.config.stateDir ??
    await chooseStateDir(defaultStateDirs(Deno.env.toObject())).catch((err) => {
      throw new InvalidInputError(err.message, { cause: err });
    });
  await Deno.mkdir(`${stateDir}/pods`, { recursive: true, mode: 0o700 });
  // The view's set-up walks compare the kernel's paths with these (launch/safe_walk.ts): a
  // stateDir reached through a symlink (/var/lib/vkubelet linked to another disk) would have
  // every pod refused, so it is used by its real path.
  const cfg = { ...parsed.config, stateDir: await Deno.realPath(stateDir) };
  // Only vkubelet may list or enter the pods' directories (their Secrets, tokens and logs): a
  // container outside a mount namespace is kept out by this mode and its non-root runAsUser.
  await Deno.chmod(`${cfg.stateDir}/pods`, 0o700);
  if (parsed.config.stateDir === undefined) deps.log.info("pods are kept in {stateDir}", cfg);
  const mountNamespace = overrides.mountNamespace ??
    (cfg.mountNamespace === "off"
      ? { ok: false, reason: "mountNamespace is off" }
      : await probeMountNamespace());
  if (!mountNamespace.ok && cfg.mountNamespace === "required") {
    throw new InvalidInputError(
      `mountNamespace is "required" but this host cannot give containers one: ${mountNamespace.reason}; run vkubelet as root with util-linux installed, or set mountNamespace: auto`,
    );
  }
  const missing = missingTools(
    requiredTools({ root: hostUser().uid === 0, view: mountNamespace.ok }),
  );
  if (missing.length) throw new InvalidInputError(missing.join("; "));
  const cgroups = overrides.cgroups ??
    (cfg.cgroups === "off"
      ? { ok: false as const, reason: "cgroups is off" }
      : await probeCgroups(cfg.cgroupRoot));
  if (!cgroups.ok && cfg.cgroups === "required") {
    throw new InvalidInputError(`cgroups is "required" but: ${cgroups.reason}`);
  }
  const volumeSource = overrides.volumeSource ??
    (deps.kube ? kubeVolumeSource(deps.kube) : undefined);
  if (cfg.mountNamespace === "off") {
    deps.log.warn(
      "ISOLATION IS OFF (mountNamespace: off): containers run without their own view or PID namespace; every pod can read other pods' environment through /proc, and any file its user may read, vkubelet's included; run only trusted pods here",
    );
  } else if (!mountNamespace.ok) {
    // Fail closed: a pod without its view would see every other pod (./README.md).
    deps.log.error(
      "every pod will be refused: containers cannot get their own view on this host: {reason}; fix that, or set mountNamespace: off to run pods without isolation",
      mountNamespace,
    );
  }
  if (!cgroups.ok) deps.log.info("resource limits are not enforced: {reason}", cgroups);
  const network = overrides.network ?? await podNetworks(cfg, deps, mountNamespace.ok);
  const provider = new ProcessProvider(cfg, deps, {
    mountNamespace,
    cgroups,
    volumeSource,
    network,
  });
  await provider.restore();
  return provider;
}

/**
 * The pods' networks from the config's `network` section: its CNI configuration, or none (pods
 * share the host's network, said once here). A CNI configuration needs root and the containers'
 * own views, as the namespaces are entered before them.
 */
async function podNetworks(
  cfg: ProcessConfig,
  deps: ProviderDeps,
  viewOk: boolean,
): Promise<PodNetworks | undefined> {
  if (!cfg.network) {
    deps.log.info(
      "pods share the host's network: the provider config has no network section (see providers/process/README.md)",
    );
    return undefined;
  }
  const list = await loadNetworkConfig(cfg.network.cniConfDir);
  if (!list) {
    deps.log.info(
      "pods share the host's network: no CNI network configuration (.conflist, .conf or .json) in {dir}",
      { dir: cfg.network.cniConfDir },
    );
    return undefined;
  }
  if (!viewOk || hostUser().uid !== 0) {
    throw new InvalidInputError(
      `the CNI network configuration ${list.file} needs vkubelet to run as root with containers in their own views (mountNamespace: auto); run it as root, or remove the provider's network section`,
    );
  }
  const missing = missingTools(["socat", "umount", "unshare", "mount", "nsenter"]);
  if (missing.length) throw new InvalidInputError(missing.join("; "));
  deps.log.info("pods get their own network from CNI network {name} ({file})", {
    name: list.name,
    file: list.file,
  });
  return new PodNetworks(cfg.network, list, {
    stateDir: cfg.stateDir,
    log: deps.log,
    nodeIPs: () => [cfg.podIP ?? deps.internalIp],
  });
}
