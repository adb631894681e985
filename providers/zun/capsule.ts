/**
 * A pod as a Zun capsule: `POST /v1/capsules {"template": …}` in the shape Zun 18.0.0's schema
 * takes (zun/api/controllers/v1/schemas/parameter_types.py `capsule_template`): `kind: capsule`,
 * `metadata` with the name and the labels that say whose pod it is (read back to adopt it after a
 * restart), and `spec` with the restart policy and one entry per container — image, command and
 * args (with `$(VAR)` expanded as the kubelet does), env (resolved by the core), working
 * directory, pull policy, ports, stdin/tty and `resources.requests` with cpu as a number of cores
 * and memory as an integer of MiB (the schema refuses fractions).
 * @module
 */
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError, quantityToNumber } from "../../provider/mod.ts";

/** The labels a capsule carries for its pod. */
export const LABELS = {
  node: "vkubelet.io/node",
  namespace: "vkubelet.io/namespace",
  name: "vkubelet.io/name",
  uid: "vkubelet.io/uid",
} as const;

/**
 * The annotation that keeps the pod's container names and restart policy on its capsule (Zun
 * names a capsule's containers itself), for a restarted vkubelet that adopts the capsule.
 */
export const SPEC_ANNOTATION = "vkubelet.io/pod-spec";

/** Zun 18.0.0's limits by default (zun/conf/container_driver.py): below them it answers 400. */
export const ZUN_MINIMUM = { cpu: 0.1, memoryMiB: 4 } as const;

/** The capsule's name: `namespace.pod` (a namespace has no dot, so it splits one way). */
export function capsuleName(namespace: string, name: string): string {
  return `${namespace}.${name}`;
}

/** `$(VAR)` in command and args from the container's env; `$$` is a literal `$` (kubelet's
 * third_party/forked/golang/expansion). */
export function expand(text: string, env: Record<string, string>): string {
  return text.replace(
    /\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g,
    (match, name) => match === "$$" ? "$" : env[name] ?? match,
  );
}

function resourceOf(container: Container, resource: "cpu" | "memory"): number | undefined {
  const quantity = container.resources?.limits?.[resource] ??
    container.resources?.requests?.[resource];
  return quantity === undefined ? undefined : quantityToNumber(String(quantity));
}

/** cpu (cores, a number) and memory (MiB, an integer) for Zun, at least Zun's minimum. */
export function requestsOf(container: Container): { cpu?: number; memory?: number } {
  const cpu = resourceOf(container, "cpu");
  const memory = resourceOf(container, "memory");
  return {
    ...(cpu !== undefined && cpu > 0
      ? { cpu: Math.max(ZUN_MINIMUM.cpu, Math.ceil(cpu * 1000) / 1000) }
      : {}),
    ...(memory !== undefined && memory > 0
      ? { memory: Math.max(ZUN_MINIMUM.memoryMiB, Math.ceil(memory / (1024 * 1024))) }
      : {}),
  };
}

const PULL_POLICY: Record<string, string> = {
  Always: "Always",
  IfNotPresent: "IfNotPresent",
  Never: "Never",
};

function containerOf(container: Container): Record<string, unknown> {
  if (!container.image) {
    throw new InvalidInputError(`container ${container.name} has no image: Zun needs one`);
  }
  const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value ?? ""]));
  const requests = requestsOf(container);
  const ports = (container.ports ?? []).filter((p) => p.protocol !== "SCTP").map((p) => ({
    containerPort: p.containerPort,
    protocol: p.protocol ?? "TCP",
    ...(p.hostPort ? { hostPort: p.hostPort } : {}),
  }));
  return {
    // No name: Zun replaces it with one of its own (see ./status.ts).
    image: container.image,
    ...(container.command ? { command: container.command.map((c) => expand(c, env)) } : {}),
    ...(container.args ? { args: container.args.map((a) => expand(a, env)) } : {}),
    ...(Object.keys(env).length ? { env } : {}),
    ...(container.workingDir ? { workDir: container.workingDir } : {}),
    ...(container.imagePullPolicy && PULL_POLICY[container.imagePullPolicy]
      ? { imagePullPolicy: PULL_POLICY[container.imagePullPolicy] }
      : {}),
    ...(Object.keys(requests).length ? { resources: { requests } } : {}),
    ...(ports.length ? { ports } : {}),
    ...(container.stdin ? { stdin: true } : {}),
    ...(container.tty ? { tty: true } : {}),
  };
}

/** What {@link capsuleTemplate} needs besides the pod. */
export interface TemplateOptions {
  /** The node the pod is bound to, as a label for adoption. */
  nodeName: string;
  /** Send the containers' ports (Zun then opens them through Neutron security groups). */
  exposePorts: boolean;
}

/** The body of `POST /v1/capsules` for `pod`. */
export function capsuleCreateBody(pod: Pod, options: TemplateOptions): { template: unknown } {
  const meta = pod.metadata ?? {};
  if (!meta.namespace || !meta.name || !meta.uid) {
    throw new TypeError("a pod needs a namespace, a name and a uid");
  }
  if (pod.spec?.initContainers?.length) {
    // Zun 18.0.0 has init containers in its model, but its capsule schema takes none.
    throw new InvalidInputError(
      "the zun provider cannot run init containers: Zun's capsule template (18.0.0) has no initContainers field",
    );
  }
  const containers = (pod.spec?.containers ?? []).map((c) => {
    const body = containerOf(c);
    if (!options.exposePorts) delete body.ports;
    return body;
  });
  return {
    template: {
      kind: "capsule",
      capsuleVersion: "beta",
      metadata: {
        name: capsuleName(meta.namespace, meta.name),
        labels: {
          [LABELS.node]: options.nodeName,
          [LABELS.namespace]: meta.namespace,
          [LABELS.name]: meta.name,
          [LABELS.uid]: meta.uid,
        },
        annotations: {
          [SPEC_ANNOTATION]: JSON.stringify({
            containers: (pod.spec?.containers ?? []).map((c) => c.name),
            restartPolicy: pod.spec?.restartPolicy ?? "Always",
          }),
        },
      },
      spec: { restartPolicy: pod.spec?.restartPolicy ?? "Always", containers },
    },
  };
}
