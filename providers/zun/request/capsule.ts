/**
 * A pod as a Zun capsule: `POST /v1/capsules {"template": …}` in the shape Zun 18.0.0's schema
 * takes (zun/api/controllers/v1/schemas/parameter_types.py `capsule_template`): `kind: capsule`,
 * `metadata` with the name and the labels that say whose pod it is (read back to adopt it after a
 * restart), and `spec` with the restart policy and one entry per container — image, command and
 * args (with `$(VAR)` expanded as the kubelet does), env (resolved by the core), working
 * directory, pull policy, ports, stdin/tty and `resources.requests` with cpu as a number of cores
 * and memory as an integer of MiB (the schema refuses fractions). What Zun cannot honour is
 * refused, naming the field: init containers, a security context other than Zun's defaults
 * (./security_context.ts), `hostPort`, and with `secretEnv: refuse` a Secret's value in the env.
 * @module
 */
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError, keyedPodTags, quantityToNumber } from "../../../provider/mod.ts";
import { checkPodSecurityContext, checkSecurityContext } from "../security_context.ts";

/** The labels a capsule carries for its pod. */
export const LABELS = {
  node: "vkubelet.io/node",
  namespace: "vkubelet.io/namespace",
  name: "vkubelet.io/name",
  uid: "vkubelet.io/uid",
} as const;

/** The pod's tag in a capsule's labels (no run count: Zun makes a pod's capsule once). */
export const CAPSULE_TAG = keyedPodTags(LABELS);

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

/**
 * With `secretEnv: refuse`, throws for an env var the core marked as a Secret's value
 * (`secretEnvRefs`): Zun would keep it in its database (and a command or arg could expand it).
 */
export function refuseSecretEnv(container: Container, field: string): void {
  const secret = (container.env ?? []).find((e) => e.valueFrom?.secretKeyRef);
  const ref = secret?.valueFrom?.secretKeyRef;
  if (!secret || !ref) return;
  throw new InvalidInputError(
    `${field}.env ${secret.name} comes from Secret ${ref.name} key ${ref.key}: Zun keeps a ` +
      "pod's env, command and args in its database and shows them to whoever can read the " +
      "capsule, and the provider config says secretEnv: refuse; remove the variable (Zun " +
      "cannot mount a Secret as files: a capsule takes only Cinder volumes) or set " +
      "secretEnv: env to accept that",
  );
}

/** The container's ports for Zun (TCP and UDP; SCTP left out); `hostPort` is refused. */
export function portsOf(container: Container, field: string) {
  const ports = container.ports ?? [];
  // Zun 18.0.0 takes hostPort and drops it (zun/api/controllers/v1/capsules.py `_do_post`:
  // `host_port = {}`): nothing binds a port of a host, so the pod would not get what it asks.
  const withHostPort = ports.findIndex((p) => p.hostPort);
  if (withHostPort >= 0) {
    throw new InvalidInputError(
      `${field}.ports[${withHostPort}].hostPort: Zun binds no port of its hosts for a pod (it ignores hostPort); remove hostPort and reach the pod at its IP and containerPort`,
    );
  }
  return ports.filter((p) => p.protocol !== "SCTP")
    .map((p) => ({ containerPort: p.containerPort, protocol: p.protocol ?? "TCP" }));
}

function containerOf(
  container: Container,
  field: string,
  options: TemplateOptions,
): Record<string, unknown> {
  if (!container.image) {
    throw new InvalidInputError(`container ${container.name} has no image: Zun needs one`);
  }
  if (options.secretEnv === "refuse") refuseSecretEnv(container, field);
  const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value ?? ""]));
  const requests = requestsOf(container);
  const ports = portsOf(container, field);
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
    ...(ports.length && options.exposePorts ? { ports } : {}),
    ...(container.stdin ? { stdin: true } : {}),
    ...(container.tty ? { tty: true } : {}),
  };
}

/** What {@link capsuleTemplate} needs besides the pod. */
export interface TemplateOptions {
  /** The node the pod is bound to, as a label for adoption. */
  nodeName: string;
  /**
   * Send the containers' ports: Zun then opens each to every address, 0.0.0.0/0
   * (zun/network/neutron.py `expose_ports`), which its API cannot narrow.
   */
  exposePorts: boolean;
  /** `refuse`: fail a pod whose env holds a Secret's value (default `env`: send it). */
  secretEnv?: "env" | "refuse";
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
  checkPodSecurityContext(pod.spec?.securityContext);
  const containers = (pod.spec?.containers ?? []).map((c, i) => {
    const field = `spec.containers[${i}]`;
    checkSecurityContext(pod.spec?.securityContext, c, field);
    return containerOf(c, field, options);
  });
  return {
    template: {
      kind: "capsule",
      capsuleVersion: "beta",
      metadata: {
        name: capsuleName(meta.namespace, meta.name),
        labels: CAPSULE_TAG.write({
          node: options.nodeName,
          namespace: meta.namespace,
          name: meta.name,
          uid: meta.uid,
          run: 0,
        }),
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
