/**
 * What a container's spec means for a process: its argv (`command` + `args`, or the config's
 * command for its image, with the kubelet's `$(VAR)` expansion: kubernetes/kubernetes
 * third_party/forked/golang/expansion), its environment, its working directory and its volume
 * mounts as host paths.
 * @module
 */
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError } from "../../../provider/mod.ts";
import { checkRelativePath } from "../volumes/atomic_writer.ts";
import type { ViewMount } from "./mount_ns.ts";
import { resolveSubPath } from "./sub_path.ts";
import type { VolumeSet } from "../volumes/volumes.ts";

const DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** Every container of the pod: init containers first, ephemeral containers (kubectl debug) last. */
export function allContainers(pod: Pod): Container[] {
  return [
    ...(pod.spec?.initContainers ?? []),
    ...(pod.spec?.containers ?? []),
    // An EphemeralContainer has a Container's fields (and no ports, probes or resources).
    ...(pod.spec?.ephemeralContainers ?? []) as Container[],
  ];
}

/** The command configured for an image: exact reference, then without tag or digest. */
export function imageCommand(
  image: string | undefined,
  imageCommands: Record<string, string[]>,
): string[] | undefined {
  if (!image) return undefined;
  if (imageCommands[image]) return imageCommands[image];
  const bare = image.replace(/@.*$/, "").replace(/:[^:/]+$/, "");
  return imageCommands[bare];
}

/** `$(NAME)` expanded from `env`; `$$` escapes; unknown names stay as written. */
export function expand(text: string, env: Record<string, string>): string {
  return text.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (match, name) => {
    if (match === "$$") return "$";
    return Object.hasOwn(env, name) ? env[name] : match;
  });
}

/** The fieldRefs the core leaves to this provider: the pod IP is known once the pod is created. */
export const POD_IP_FIELD_PATHS = ["status.podIP", "status.podIPs"] as const;

/**
 * The container's environment: its resolved `env` over kubelet-like defaults. The core leaves
 * `status.podIP(s)` fieldRefs (and `$(NAME)` of them) to the provider; they take the pod IP
 * recorded in `pod.status`, as pkg/kubelet/kubelet_pods.go `podFieldSelectorRuntimeValue` does.
 */
export function containerEnv(pod: Pod, container: Container): Record<string, string> {
  const env: Record<string, string> = {
    PATH: DEFAULT_PATH,
    HOSTNAME: pod.spec?.hostname ?? pod.metadata?.name ?? "",
    HOME: "/root",
  };
  const podIps = pod.status?.podIPs?.map((p) => p.ip) ??
    (pod.status?.podIP ? [pod.status.podIP] : []);
  const deferred: Record<string, string> = {};
  for (const variable of container.env ?? []) {
    const path = variable.valueFrom?.fieldRef?.fieldPath;
    if (variable.value === undefined && (path === "status.podIP" || path === "status.podIPs")) {
      env[variable.name] = deferred[variable.name] = path === "status.podIP"
        ? podIps[0] ?? ""
        : podIps.join(",");
      continue;
    }
    // The core has resolved every other valueFrom; anything left unresolved is dropped.
    if (variable.value === undefined) continue;
    delete deferred[variable.name];
    env[variable.name] = variable.value.replace(
      /\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g,
      (match, name) => Object.hasOwn(deferred, name) ? deferred[name] : match,
    );
  }
  if (container.tty && !env.TERM) env.TERM = "xterm";
  return env;
}

/** The argv to run, or an {@link InvalidInputError} saying how to give one. */
export function containerArgv(
  container: Container,
  env: Record<string, string>,
  imageCommands: Record<string, string[]>,
): string[] {
  const base = container.command?.length
    ? container.command
    : imageCommand(container.image, imageCommands);
  if (!base) {
    throw new InvalidInputError(
      `container ${container.name} has no command and image ${
        container.image ?? "(none)"
      } has no command in the provider config: the process provider cannot pull images; set command in the pod spec, or map the image under imageCommands`,
    );
  }
  return [...base, ...(container.args ?? [])].map((part) => expand(part, env));
}

/**
 * The container's volume mounts as binds from host paths, a subPath resolved inside its volume
 * (./sub_path.ts); every problem is permanent.
 */
export function viewMounts(container: Container, volumes: VolumeSet): ViewMount[] {
  return (container.volumeMounts ?? []).map((mount): ViewMount => {
    if (!mount.mountPath.startsWith("/")) {
      throw new InvalidInputError(
        `container ${container.name}: mountPath ${mount.mountPath} must be absolute`,
      );
    }
    const readOnly = !!mount.readOnly || volumes.isReadOnly(mount.name);
    const source = volumes.hostPathOf(mount.name);
    if (!mount.subPath) return { source, target: mount.mountPath, readOnly };
    const problem = checkRelativePath(mount.subPath);
    if (problem) throw new InvalidInputError(`container ${container.name}: subPath ${problem}`);
    const resolved = resolveSubPath(source, mount.subPath);
    if (!resolved.ok) {
      // The kubelet's message (pkg/kubelet/kubelet_pods.go makeMounts), with the reason.
      throw new InvalidInputError(
        `failed to prepare subPath for volumeMount ${JSON.stringify(mount.name)} of container ${
          JSON.stringify(container.name)
        }: ${resolved.reason}`,
      );
    }
    const { volume, path } = resolved.subPath;
    return {
      source: path ? `${volume}/${path}` : volume,
      target: mount.mountPath,
      readOnly,
      subPath: resolved.subPath,
    };
  });
}

/** `VKUBELET_VOLUME_<NAME>` variables pointing at volume directories (no mount namespace). */
export function volumeEnv(container: Container, volumes: VolumeSet): Record<string, string> {
  const env: Record<string, string> = {};
  for (const mount of container.volumeMounts ?? []) {
    const key = `VKUBELET_VOLUME_${mount.name.toUpperCase().replace(/[^A-Z0-9]/g, "_")}`;
    const source = volumes.hostPathOf(mount.name);
    env[key] = mount.subPath ? `${source}/${mount.subPath}` : source;
  }
  return env;
}

/** Finds an executable on `PATH` the way execvp would; a path with `/` is taken as is. */
export function findExecutable(name: string, path: string): string | undefined {
  const candidates = name.includes("/") ? [name] : path.split(":").map((dir) => `${dir}/${name}`);
  for (const candidate of candidates) {
    try {
      const info = Deno.statSync(candidate);
      if (info.isFile && ((info.mode ?? 0o111) & 0o111) !== 0) return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}
