/**
 * Turning a container spec into a started {@link Instance}: argv, environment, working
 * directory, mounts (a private view, or `VKUBELET_VOLUME_*` variables where the host cannot
 * give one), a cgroup for its limits, FIFOs and log files. Problems the kubelet would report
 * as `CreateContainerConfigError` or `StartError` come back as such, not as exceptions.
 * @module
 */
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import { type Clock, isInvalidInput, type PodLogDir } from "../../../provider/mod.ts";
import { cgroupProcsFiles, type CgroupSupport, createCgroup } from "../host/cgroups.ts";
import { logMaxBytes, type ProcessConfig } from "../config.ts";
import {
  containerArgv,
  containerEnv,
  findExecutable,
  viewMounts,
  volumeEnv,
} from "./container_spec.ts";
import type { ExecContext } from "../streams/exec.ts";
import { entryArgv, writeEnvFile } from "./entry.ts";
import { toolPath } from "../host/host_tools.ts";
import { containerIdentity, type HostUser } from "./identity.ts";
import { Instance, type InstanceFiles } from "./instance.ts";
import { makeFifos, RUNNER_NAME } from "./launcher.ts";
import { ownDirs } from "./mount_ns.ts";
import { join } from "node:path";
import { childrenOf, readProcText } from "../host/proc.ts";
import type { PodPaths } from "../state/state.ts";
import type { PodNetworkRecord } from "../network/pod_network.ts";
import type { VolumeSet } from "../volumes/volumes.ts";

/** What starting containers needs from the provider. */
export interface StartDeps {
  clock: Clock;
  config: ProcessConfig;
  /** `ok` if containers can get their view (mount and PID namespaces) here; else why not. */
  mountNamespace: { ok: boolean; reason?: string };
  cgroups: CgroupSupport;
  stopMarker: Uint8Array;
  /** vkubelet's own uid and gid: what a container without runAsUser runs as. */
  hostUser: HostUser;
  /** The node's pod log directory (`--pod-log-dir`): every instance's output goes there too. */
  podLogs?: PodLogDir;
}

/**
 * A container's start: an instance, or the waiting/terminated reason it could not start
 * (`create-error`: the spec is valid but this runtime cannot honour it, the kubelet's
 * `CreateContainerError`).
 */
export type StartResult =
  | { kind: "started"; instance: Instance; exec: ExecContext }
  | { kind: "config-error"; message: string }
  | { kind: "create-error"; message: string }
  | { kind: "start-error"; message: string };

/** Files of instance `n` of `container` of `pod`. */
export function instanceFiles(
  paths: PodPaths,
  container: string,
  n: number,
  deps: StartDeps & { pod: Pod },
): InstanceFiles {
  const dir = paths.container(container);
  const { namespace = "", name = "", uid = "" } = deps.pod.metadata ?? {};
  const { podLogs } = deps;
  return {
    podLog: podLogs
      ? (containerId) =>
        podLogs.open({ namespace, pod: name, uid, container, restartCount: n, containerId })
      : undefined,
    exitFile: join(dir, `${n}.exit`),
    stdoutFifo: join(dir, `${n}.stdout.fifo`),
    stderrFifo: join(dir, `${n}.stderr.fifo`),
    stdinFifo: join(dir, `${n}.stdin.fifo`),
    stdinHolderFile: join(dir, `${n}.stdin.holder`),
    logPath: paths.log(container, n),
    logMaxBytes: logMaxBytes(deps.config),
    logMaxFiles: deps.config.logs.maxFiles,
    stopMarker: deps.stopMarker,
  };
}

/** What an instance's exec context is built from. */
export interface ExecSource {
  pod: Pod;
  container: Container;
  volumes: VolumeSet;
  paths: PodPaths;
  host: HostUser;
  /** The pod's own network, if it has one. */
  network?: PodNetworkRecord;
}

/**
 * Where and how the commands of instance `running` run (the container's own, exec, probes and
 * hooks); writes the instance's environment file, which its root stages hand over (./entry.ts).
 */
export function execContextOf(
  source: ExecSource,
  running: { instance: number; pid: number; namespaced: boolean },
): ExecContext {
  const { pod, container, volumes, paths, host } = source;
  const env = containerEnv(pod, container);
  if (!running.namespaced && container.volumeMounts?.length) {
    Object.assign(env, volumeEnv(container, volumes));
  }
  const envFile = join(paths.container(container.name), `${running.instance}.env`);
  writeEnvFile(envFile, env);
  const identity = containerIdentity(pod, container, host);
  const view = running.namespaced ? join(paths.ns, container.name) : undefined;
  const entry = identity.ok ? entryArgv(identity.identity, host, view) : identity;
  return {
    pid: running.pid,
    namespaced: running.namespaced,
    ...(source.network?.netns ? { netns: source.network.netns, podIp: source.network.ips[0] } : {}),
    env,
    envFile,
    // Without workingDir, the pod's scratch directory, or "/" (the kubelet's default, without
    // an image) for a user who may not enter the pod's directory.
    workingDir: container.workingDir ? [container.workingDir, ""] : [paths.work, "/"],
    // An adopted instance whose spec no longer gives an identity: its sessions are refused.
    entry: entry.ok ? entry.argv : [toolPath("sh"), "-c", 'echo "$0" >&2; exit 126', entry.message],
  };
}

/**
 * The container's identity, or why it cannot start: the kubelet's runAsNonRoot messages
 * (CreateContainerConfigError), or a setting this runtime cannot honour (CreateContainerError).
 */
function checkIdentity(
  pod: Pod,
  container: Container,
  deps: StartDeps,
  namespaced: boolean,
): { ok: true } | Exclude<StartResult, { kind: "started" }> {
  const identity = containerIdentity(pod, container, deps.hostUser, deps.config.allowedIds);
  if (!identity.ok) return { kind: "config-error", message: identity.message };
  if (container.securityContext?.readOnlyRootFilesystem) {
    return {
      kind: "create-error",
      message:
        `container ${container.name}: readOnlyRootFilesystem cannot be honoured by the process provider: its containers share the host's filesystem; remove it, or run the pod on a node with a container runtime`,
    };
  }
  if (!namespaced && identity.identity.uid !== 0 && container.volumeMounts?.length) {
    return {
      kind: "create-error",
      message:
        `container ${container.name} runs as uid ${identity.identity.uid} and cannot reach its volumes without a private mount namespace (mountNamespace is off); set mountNamespace: auto with vkubelet as root, or run the container as root`,
    };
  }
  return identity;
}

/** Starts instance `n` of `container`. */
export async function startContainer(
  pod: Pod,
  container: Container,
  n: number,
  ctx: { paths: PodPaths; volumes: VolumeSet; deps: StartDeps; network?: PodNetworkRecord },
): Promise<StartResult> {
  const { paths, volumes, deps, network } = ctx;
  let argv: string[];
  let mounts;
  try {
    argv = containerArgv(container, containerEnv(pod, container), deps.config.imageCommands);
    mounts = [...networkMounts(network), ...viewMounts(container, volumes)];
  } catch (err) {
    if (isInvalidInput(err)) return { kind: "config-error", message: err.message };
    throw err;
  }
  // Every container gets a view, volumes or not: it hides vkubelet's files and other pods',
  // and its PID namespace other pods' processes (./mount_ns.ts). Where none can be made the
  // container is refused, never run without it, unless the config turned isolation off.
  const namespaced = deps.config.mountNamespace !== "off";
  if (namespaced && !deps.mountNamespace.ok) {
    return { kind: "create-error", message: noViewMessage(container.name, deps.mountNamespace) };
  }
  const identity = checkIdentity(pod, container, deps, namespaced);
  if ("kind" in identity) return identity;
  const env = containerEnv(pod, container);
  const extraDirs: string[] = [];
  if (container.workingDir && !exists(container.workingDir)) {
    if (!namespaced) {
      return {
        kind: "config-error",
        message:
          `workingDir ${container.workingDir} does not exist on the host; create it or use a volume`,
      };
    }
    extraDirs.push(container.workingDir);
  }
  const inVolume = mounts.some((m) => argv[0].startsWith(m.target + "/"));
  if (!(namespaced && inVolume) && !findExecutable(argv[0], env.PATH ?? "")) {
    return {
      kind: "start-error",
      message: `exec: "${argv[0]}": executable file not found in $PATH`,
    };
  }
  const files = instanceFiles(paths, container.name, n, { ...deps, pod });
  await Deno.mkdir(paths.logs(container.name), { recursive: true });
  await Deno.mkdir(paths.work, { recursive: true });
  await Deno.remove(files.exitFile).catch(() => {});
  await Deno.remove(files.stdinHolderFile).catch(() => {});
  const withStdin = container.stdin === true;
  await makeFifos([files.stdoutFifo, files.stderrFifo, ...(withStdin ? [files.stdinFifo] : [])]);
  await pruneInstances(paths, container.name, n);
  if (network && !namespaced) {
    return {
      kind: "create-error",
      message:
        `container ${container.name} cannot join its pod's network namespace without its own view (mountNamespace is off); set mountNamespace: auto, or remove the provider's network section`,
    };
  }
  const source = { pod, container, volumes, paths, host: deps.hostUser, network };
  const exec = execContextOf(source, { instance: n, pid: 0, namespaced });
  let cgroup: string | undefined;
  // Every instance gets a cgroup where the host has them, limits or not: deleting the pod kills
  // whatever is in it (./reaper.ts).
  if (deps.cgroups.ok) {
    cgroup = await createCgroup(
      deps.cgroups,
      `${pod.metadata?.uid}-${container.name}-${n}`,
      container,
    );
  }
  const root = join(paths.ns, container.name);
  if (namespaced) await Deno.mkdir(root, { recursive: true });
  // Its own /tmp and /var/tmp, emptied, and the pod's /dev/shm (./mount_ns.ts).
  const own = namespaced ? await ownDirs(paths.dir, container.name) : undefined;
  const instance = Instance.start(
    {
      instance: n,
      namespaced,
      ...(withStdin ? { stdin: true } : {}),
      cgroup,
      started: false,
      ready: false,
    },
    {
      argv: [...exec.entry, ...exec.workingDir, ...argv],
      envFile: exec.envFile,
      exitFile: files.exitFile,
      stdoutFifo: files.stdoutFifo,
      stderrFifo: files.stderrFifo,
      stdin: withStdin
        ? { fifo: files.stdinFifo, holderPidFile: files.stdinHolderFile }
        : undefined,
      cgroupProcs: cgroup ? cgroupProcsFiles(cgroup) : undefined,
      netns: network?.netns,
      view: namespaced
        ? { root, mounts, extraDirs, hidden: { ...hiddenPaths(paths, deps), own } }
        : undefined,
    },
    files,
    deps.clock,
  );
  if (namespaced) await settled(instance.record.pid, instance.ended);
  return { kind: "started", instance, exec: { ...exec, pid: instance.record.pid } };
}

/**
 * The pod's resolv.conf and hosts, read-only at the host's paths (where the host's are links,
 * at what they point to, so the container reads the pod's by either name), as the runtime binds
 * the files the kubelet writes (kubernetes/kubernetes pkg/kubelet/kubelet_pods.go
 * `makeHostsMount`; containerd internal/cri/server/container_create_linux.go `containerMounts`).
 */
function networkMounts(network: PodNetworkRecord | undefined) {
  if (!network) return [];
  return [["/etc/resolv.conf", network.resolvConf], ["/etc/hosts", network.hosts]].map((
    [target, source],
  ) => ({ source, target: hostTarget(target), readOnly: true }));
}

function hostTarget(path: string): string {
  try {
    return Deno.realPathSync(path);
  } catch {
    return path;
  }
}

/** Why a container is refused where no view can be made, and the ways out. */
function noViewMessage(container: string, support: { reason?: string }): string {
  return `container ${container} cannot get its own view of the host (mount and PID namespaces) on this node: ${
    support.reason ?? "the host cannot make one"
  }. The process provider refuses to run it without one; fix the host, or set the provider's mountNamespace: off to run pods without isolation`;
}

/**
 * Waits until the namespace's PID 1 has built the view and become the runner (./launcher.ts),
 * so that exec, probes and hooks enter the finished view; or until it ended, or 10 s passed.
 */
async function settled(pid: number, ended: Promise<unknown>): Promise<void> {
  let done = false;
  ended.then(() => done = true, () => done = true);
  const deadline = Date.now() + 10_000;
  while (!done && Date.now() < deadline) {
    const [child] = childrenOf(pid);
    try {
      // sh -c SCRIPT $0 ...: the set-up's script names the runner too, so $0 it is.
      if (child && readProcText(`/proc/${child}/cmdline`).split("\0")[3] === RUNNER_NAME) return;
    } catch {
      // not there yet, or gone (then `ended` settles)
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** What the container's view hides: the state directory but for the pod's own, and the config's. */
function hiddenPaths(paths: PodPaths, deps: StartDeps) {
  return { paths: [deps.config.stateDir, ...deps.config.hiddenPaths], keep: paths.dir };
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** Keeps the logs and files of instances `n` and `n - 1` (for `--previous`); drops older. */
async function pruneInstances(paths: PodPaths, container: string, n: number): Promise<void> {
  for (const dir of [paths.logs(container), paths.container(container)]) {
    for await (const entry of Deno.readDir(dir)) {
      const match = /^(\d+)\./.exec(entry.name);
      if (match && Number(match[1]) < n - 1) {
        await Deno.remove(join(dir, entry.name)).catch(() => {});
      }
    }
  }
}
