/**
 * A pod as one ACI container group (`ContainerGroup` of api-version 2023-05-01): its containers
 * and init containers (image, command and args, env with Secret-sourced values as `secureValue`,
 * ports, resources in ACI's units, volume mounts), restart policy, registry credentials from
 * imagePullSecrets, volumes, probes (`./probes.ts`), network and DNS (`./network.ts`), SKU,
 * priority and diagnostics (`./group_options.ts`), the tags naming node, namespace, pod and UID,
 * and each container's security context (`./security_context.ts`).
 * What ACI cannot run or enforce is refused with the field named.
 * @module
 */
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError, isSidecar } from "../../../provider/mod.ts";
import type { AciConfig } from "../config.ts";
import { groupTags } from "../names.ts";
import { type GroupLimits, podResources } from "../sizing.ts";
import type { AciVolume } from "../volumes.ts";
import { aciSecurityContext } from "../security_context.ts";
import {
  type AciExtension,
  dnsConfigFor,
  extensionsFor,
  ipAddressFor,
  subnetIdsFor,
} from "../network.ts";
import { probesFor } from "../probes.ts";
import { groupOptionsFor } from "../group_options.ts";
import type { GroupIdentity } from "./identity.ts";

/** ACI's `EnvironmentVariable`. */
interface AciEnv {
  name: string;
  value?: string;
  secureValue?: string;
}

/** What the group needs besides the pod and config. */
export interface GroupInputs {
  nodeName: string;
  /** Restarts before this group (the `vkubelet-restarts` tag). */
  restarts: number;
  limits: GroupLimits;
  volumes: AciVolume[];
  credentials: { server: string; username: string; password: string }[];
  /** The kube-proxy extension's kubeconfig (`kubeProxy.kubeconfig`, read at start). */
  kubeProxyKubeconfig?: string;
  /** The pod's managed identity (`./request/identity.ts`), if its ServiceAccount names one. */
  identity?: GroupIdentity;
}

/**
 * ACI has one `command` that replaces the image's entrypoint: Kubernetes' command and args
 * joined. Args alone would lose the entrypoint they are meant for, so they are refused.
 */
function command(c: Container, where: string): string[] | undefined {
  if (!c.command?.length && c.args?.length) {
    throw new InvalidInputError(
      `${where}.args: ACI cannot keep the image's entrypoint when only args are given; set ${where}.command as well (the entrypoint and its args)`,
    );
  }
  return c.command?.length ? [...c.command, ...(c.args ?? [])] : undefined;
}

function env(c: Container): AciEnv[] {
  return (c.env ?? []).map((e) =>
    e.valueFrom?.secretKeyRef
      ? { name: e.name, secureValue: e.value ?? "" }
      : { name: e.name, value: e.value ?? "" }
  );
}

function mounts(c: Container, where: string, volumes: AciVolume[]) {
  return (c.volumeMounts ?? []).map((m, i) => {
    if (m.subPath || m.subPathExpr) {
      throw new InvalidInputError(
        `${where}.volumeMounts[${i}].subPath: ACI mounts whole volumes only; mount ${m.name} without subPath`,
      );
    }
    if (!volumes.some((v) => v.name === m.name)) {
      throw new InvalidInputError(`${where}.volumeMounts[${i}]: no volume named ${m.name}`);
    }
    return { name: m.name, mountPath: m.mountPath, readOnly: m.readOnly ?? false };
  });
}

function ports(c: Container, where: string) {
  return (c.ports ?? []).map((p, i) => {
    if (p.protocol && p.protocol !== "TCP" && p.protocol !== "UDP") {
      throw new InvalidInputError(
        `${where}.ports[${i}].protocol: ACI offers TCP and UDP only, not ${p.protocol}`,
      );
    }
    return { port: p.containerPort, protocol: p.protocol ?? "TCP" };
  });
}

function securityOf(pod: Pod, c: Container, where: string) {
  const securityContext = aciSecurityContext(pod.spec?.securityContext, c, where);
  return securityContext ? { securityContext } : {};
}

/** The container group for `pod`; throws {@link InvalidInputError} for what ACI cannot run. */
export function containerGroupFor(pod: Pod, config: AciConfig, inputs: GroupInputs) {
  const spec = pod.spec ?? { containers: [] };
  const { namespace = "default", name = "", uid = "" } = pod.metadata ?? {};
  (spec.initContainers ?? []).forEach((c, i) => {
    if (isSidecar(c)) {
      throw new InvalidInputError(
        `spec.initContainers[${i}].restartPolicy: ACI has no sidecar containers; make ${c.name} a regular container`,
      );
    }
  });
  const resources = podResources(pod, inputs.limits, config.location);
  const containers = spec.containers.map((c, i) => {
    const where = `spec.containers[${i}]`;
    return {
      name: c.name,
      image: c.image ?? "",
      command: command(c, where),
      ports: ports(c, where),
      environmentVariables: env(c),
      resources: resources[i],
      volumeMounts: mounts(c, where, inputs.volumes),
      ...probesFor(c, where),
      ...securityOf(pod, c, where),
    };
  });
  const initContainers = (spec.initContainers ?? []).map((c, i) => {
    const where = `spec.initContainers[${i}]`;
    return {
      name: c.name,
      image: c.image ?? "",
      command: command(c, where),
      environmentVariables: env(c),
      volumeMounts: mounts(c, where, inputs.volumes),
      ...securityOf(pod, c, where),
    };
  });
  const exposed = containers.flatMap((c) => c.ports);
  const subnetIds = subnetIdsFor(pod, config);
  const vnet = subnetIds.length > 0;
  const ipAddress = ipAddressFor(pod, exposed, vnet);
  const dns = dnsConfigFor(pod, config, vnet);
  const extensions: AciExtension[] = extensionsFor(config, inputs.kubeProxyKubeconfig);
  return {
    location: config.location,
    ...(inputs.identity ? { identity: inputs.identity } : {}),
    tags: groupTags({ namespace, name, uid }, inputs.nodeName, inputs.restarts, config.tags),
    containers,
    ...(initContainers.length ? { initContainers } : {}),
    restartPolicy: spec.restartPolicy ?? "Always",
    osType: config.osType,
    ...(ipAddress ? { ipAddress } : {}),
    ...(vnet ? { subnetIds: subnetIds.map((id) => ({ id })) } : {}),
    ...(dns ? { dnsConfig: dns } : {}),
    ...(extensions.length ? { extensions } : {}),
    ...groupOptionsFor(pod, config),
    ...(inputs.volumes.length ? { volumes: inputs.volumes } : {}),
    ...(inputs.credentials.length ? { imageRegistryCredentials: inputs.credentials } : {}),
  };
}
