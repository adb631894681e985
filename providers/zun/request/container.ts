/**
 * A single-container pod as a plain Zun container: `POST /v1/containers?run=true` in the shape
 * Zun 18.0.0's schema takes (zun/api/controllers/v1/schemas/containers.py
 * `container_create_v140`). Unlike a capsule's, a plain container has logs, exec, stats and a
 * status zun-api reads live from the engine (`GET /v1/containers/<uuid>`), so a pod with one
 * container and no init containers runs as one ({@link runsAsContainer}); a pod whose
 * containers must share one network namespace stays a capsule (./capsule.ts).
 *
 * The pod's identity, run count, container name and restart policy ride in the container's
 * labels (read back on adoption). Zun's own restart policy is `no`: the provider kit restarts
 * the pod by its policy with the kubelet's back-off, as for capsules. The same refusals as a
 * capsule's apply (security context, hostPort, `secretEnv: refuse`), with the same messages.
 * `imagePullPolicy` is not sent: Zun's default policy allows it to admins only
 * (`container:create:image_pull_policy`, a 403 for the project's members).
 * @module
 */
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError, keyedPodTags } from "../../../provider/mod.ts";
import {
  expand,
  LABELS,
  portsOf,
  refuseSecretEnv,
  requestsOf,
  type TemplateOptions,
} from "./capsule.ts";
import { checkPodSecurityContext, checkSecurityContext } from "../security_context.ts";

/** The labels a plain container carries besides the pod's tag (./capsule.ts `LABELS`). */
export const CONTAINER_LABELS = {
  /** The restarts before this run, as the kit counts them. */
  run: "vkubelet.io/run",
  /** The pod's container name (Zun's name is the pod's). */
  container: "vkubelet.io/container",
  /** The pod's restart policy, for the pod an adopted container stands for. */
  restartPolicy: "vkubelet.io/restart-policy",
} as const;

/** The pod's tag in a plain container's labels, with its run count. */
export const CONTAINER_TAG = keyedPodTags({ ...LABELS, run: CONTAINER_LABELS.run });

/** A pod that runs as one plain container: exactly one container, no init containers. */
export function runsAsContainer(pod: Pod): boolean {
  return (pod.spec?.containers?.length ?? 0) === 1 && !pod.spec?.initContainers?.length;
}

/** Zun's container name for run `run` of the pod: `namespace.name.run` (Zun's pattern). */
export function containerName(namespace: string, name: string, run: number): string {
  return `${namespace}.${name}.${run}`;
}

/**
 * Kubernetes' command replaces the image's entrypoint and drops its Cmd; its args are the Cmd.
 * Zun 1.40 takes an `entrypoint` and a `command` (the Cmd), but fills an empty command from the
 * image's Cmd (zun/container/docker/driver.py `create`: `command or image_dict['Config']['Cmd']`),
 * which Kubernetes would drop: so a command without args goes with its last word as the Cmd
 * (the engine runs entrypoint then Cmd, the same argv). A one-word command without args still
 * gets the image's Cmd after it. Before 1.40 there is no entrypoint field: command and args go
 * together as the Cmd, which the image's entrypoint (if it has one) still precedes.
 */
function argvOf(c: Container, env: Record<string, string>, version: string) {
  const command = c.command?.map((s) => expand(s, env));
  const args = c.args?.map((s) => expand(s, env));
  if (Number(version.split(".")[1]) < 40) {
    return command || args ? { command: [...command ?? [], ...args ?? []] } : {};
  }
  if (!command?.length) return args ? { command: args } : {};
  if (args?.length || command.length === 1) return { entrypoint: command, command: args ?? [] };
  return { entrypoint: command.slice(0, -1), command: command.slice(-1) };
}

/** What {@link containerCreateBody} needs besides the pod. */
export interface ContainerRequestOptions extends TemplateOptions {
  /** The microversion in use (entrypoint needs 1.40). */
  version: string;
  /** The restarts before this run. */
  run: number;
}

/** The body of `POST /v1/containers?run=true` for `pod` (one container, see the module doc). */
export function containerCreateBody(
  pod: Pod,
  options: ContainerRequestOptions,
): Record<string, unknown> {
  const { namespace, name, uid } = pod.metadata ?? {};
  if (!namespace || !name || !uid) throw new TypeError("a pod needs a namespace, a name and a uid");
  if (!runsAsContainer(pod)) throw new TypeError("a plain Zun container runs one container");
  const c = pod.spec!.containers[0];
  const field = "spec.containers[0]";
  if (!c.image) throw new InvalidInputError(`container ${c.name} has no image: Zun needs one`);
  checkPodSecurityContext(pod.spec?.securityContext);
  checkSecurityContext(pod.spec?.securityContext, c, field);
  if (options.secretEnv === "refuse") refuseSecretEnv(c, field);
  const ports = portsOf(c, field);
  const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value ?? ""]));
  const { cpu, memory } = requestsOf(c);
  const restartPolicy = pod.spec?.restartPolicy ?? "Always";
  const hostname = (pod.spec?.hostname ?? name).slice(0, 63);
  return {
    name: containerName(namespace, name, options.run),
    image: c.image,
    ...argvOf(c, env, options.version),
    ...(Object.keys(env).length ? { environment: env } : {}),
    ...(c.workingDir ? { workdir: c.workingDir } : {}),
    ...(cpu !== undefined ? { cpu } : {}),
    ...(memory !== undefined ? { memory: String(memory) } : {}),
    labels: {
      ...CONTAINER_TAG.write({ node: options.nodeName, namespace, name, uid, run: options.run }),
      [CONTAINER_LABELS.container]: c.name,
      [CONTAINER_LABELS.restartPolicy]: restartPolicy,
    },
    // The kit restarts the pod (a new container, with the kubelet's back-off): Zun must not.
    restart_policy: { Name: "no" },
    ...(hostname.length >= 2 ? { hostname } : {}),
    ...(c.stdin ? { interactive: true } : {}),
    ...(c.tty ? { tty: true } : {}),
    ...(ports.length && options.exposePorts
      ? {
        exposed_ports: Object.fromEntries(
          ports.map((p) => [`${p.containerPort}/${p.protocol.toLowerCase()}`, {}]),
        ),
      }
      : {}),
  };
}
