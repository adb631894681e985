/**
 * Pod → CreateContainerGroup request: containers and init containers (image, command/args, env,
 * ports, working dir, probes, the security context (`./security_context.ts`), per-container CPU
 * and memory), the group
 * size from `./sizing.ts`, restart policy, DNS config, host aliases, grace period, deadline, the
 * volumes from `./volumes.ts`, registry credentials from imagePullSecrets, and the identity tags.
 * What ECI cannot do is refused with {@link InvalidInputError} naming the pod's field.
 * @module
 */
import type { Container, EnvVar, Pod, Probe } from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError, isSidecar } from "../../../provider/mod.ts";
import type { CreateRequest } from "../client/api.ts";
import type { EciConfig } from "../config.ts";
import { clientToken, groupName, podTags } from "./names.ts";
import { eciSecurityFields } from "./security_context.ts";
import { containerSize, groupSize } from "./sizing.ts";
import type { ResolvedVolume } from "./volumes.ts";
import { annotationParams, gpuCount } from "./annotations.ts";
import { dnsFor } from "./dns.ts";

/** A registry login from an imagePullSecret. */
export interface RegistryCredential {
  server: string;
  userName: string;
  password: string;
}

/** What the request needs besides the pod. */
export interface GroupInputs {
  config: EciConfig;
  nodeName: string;
  /** How many restarts came before this group (0 for the pod's first). */
  restarts: number;
  volumes: ResolvedVolume[];
  credentials: RegistryCredential[];
}

/** The create request and notes for events (the size rounded up). */
export interface GroupPlan {
  request: NonNullable<CreateRequest>;
  notes: string[];
}

/** Refuses what ECI cannot run, before anything is read or written. */
export function checkPod(pod: Pod): void {
  const spec = pod.spec ?? { containers: [] };
  if (spec.hostNetwork) refuse("spec.hostNetwork", "an ECI group has its own network namespace");
  if (spec.hostPID) refuse("spec.hostPID", "an ECI group runs on no shared host");
  if (spec.hostIPC) refuse("spec.hostIPC", "an ECI group runs on no shared host");
  if (!spec.containers?.length) refuse("spec.containers", "at least one container is needed");
  (spec.initContainers ?? []).forEach((c, i) => {
    if (isSidecar(c)) {
      refuse(
        `spec.initContainers[${i}].restartPolicy`,
        "sidecar init containers are not supported by ECI",
      );
    }
  });
  groupSize(pod);
}

/** The CreateContainerGroup request for the pod; see the module doc. */
export function groupRequestFor(pod: Pod, inputs: GroupInputs): GroupPlan {
  checkPod(pod);
  const { namespace = "", name = "", uid = "" } = pod.metadata ?? {};
  const spec = pod.spec!;
  const size = groupSize(pod);
  const volumeNames = new Set(inputs.volumes.map((v) => v.name));
  const chosen = annotationParams(pod);
  // An instance type decides the group's size itself; a "2-4Gi" specification replaces ours.
  const sized = chosen.instanceType
    ? {}
    : { cpu: chosen.cpu ?? size.cpu, memory: chosen.memory ?? size.memory };
  if (
    chosen.cpu !== undefined &&
    (chosen.cpu < size.wanted.cpu || chosen.memory! < size.wanted.memory)
  ) {
    refuse(
      "metadata.annotations[k8s.aliyun.com/eci-use-specs]",
      `${chosen.cpu}-${chosen.memory}Gi is smaller than the ${round(size.wanted.cpu)} vCPU and ${
        round(size.wanted.memory)
      } GiB the pod's containers ask for`,
    );
  }
  const notes = size.rounded && sized.cpu === size.cpu && sized.memory === size.memory
    ? [
      `the pod asks for ${round(size.wanted.cpu)} vCPU and ${
        round(size.wanted.memory)
      } GiB; its ECI group has ${size.cpu} vCPU and ${size.memory} GiB`,
    ]
    : [];
  const request: NonNullable<CreateRequest> = {
    ...chosen,
    ...sized,
    containerGroupName: groupName(namespace, name, uid),
    clientToken: clientToken(uid, inputs.restarts),
    restartPolicy: spec.restartPolicy ?? "Always",
    container: spec.containers.map((c, i) =>
      containerOf(pod, c, `spec.containers[${i}]`, volumeNames, true) as never
    ),
    initContainer: (spec.initContainers ?? []).map((c, i) =>
      containerOf(pod, c, `spec.initContainers[${i}]`, volumeNames, false) as never
    ),
    volume: inputs.volumes.map(volumeOf) as never[],
    imageRegistryCredential: inputs.credentials as never[],
    tag: podTags(
      { namespace, name, uid },
      inputs.nodeName,
      inputs.restarts,
      inputs.config.tags,
    ) as never[],
    terminationGracePeriodSeconds: spec.terminationGracePeriodSeconds ?? 30,
    activeDeadlineSeconds: spec.activeDeadlineSeconds,
    hostName: spec.hostname ?? name.slice(0, 63),
    ...dnsFor(pod, inputs.config),
    hostAliase: spec.hostAliases?.map((h) => ({ ip: h.ip, hostname: h.hostnames })) as never[],
  };
  return { request, notes };
}

function containerOf(
  pod: Pod,
  c: Container,
  field: string,
  volumes: Set<string>,
  regular: boolean,
) {
  const size = containerSize(c, field);
  if (c.volumeDevices?.length) refuse(`${field}.volumeDevices`, "block devices are not supported");
  const security = eciSecurityFields(pod.spec?.securityContext, c, field, regular);
  const out: Record<string, unknown> = {
    name: c.name,
    image: c.image,
    imagePullPolicy: c.imagePullPolicy,
    command: c.command,
    arg: c.args,
    workingDir: c.workingDir,
    environmentVar: (c.env ?? []).map((e, j) => envOf(e, `${field}.env[${j}]`)),
    port: (c.ports ?? []).map((p) => ({ port: p.containerPort, protocol: p.protocol ?? "TCP" })),
    volumeMount: (c.volumeMounts ?? []).map((m, j) => {
      if (!volumes.has(m.name)) {
        refuse(`${field}.volumeMounts[${j}].name`, `no volume ${m.name} in spec.volumes`);
      }
      if (m.subPathExpr) refuse(`${field}.volumeMounts[${j}].subPathExpr`, "not supported");
      return {
        name: m.name,
        mountPath: m.mountPath,
        readOnly: m.readOnly,
        subPath: m.subPath || undefined,
      };
    }),
    cpu: size.cpu || undefined,
    memory: size.memory || undefined,
    gpu: gpuCount(pod, c, field),
    terminationMessagePath: c.terminationMessagePath,
    terminationMessagePolicy: c.terminationMessagePolicy,
    ...security,
  };
  if (regular) {
    Object.assign(out, {
      stdin: c.stdin,
      stdinOnce: c.stdinOnce,
      tty: c.tty,
      livenessProbe: probeOf(c.livenessProbe, `${field}.livenessProbe`),
      readinessProbe: probeOf(c.readinessProbe, `${field}.readinessProbe`),
    });
    if (c.startupProbe) refuse(`${field}.startupProbe`, "ECI has no startup probes");
  }
  return out;
}

function envOf(e: EnvVar, field: string) {
  if (e.value !== undefined || !e.valueFrom) return { key: e.name, value: e.value ?? "" };
  // Only fields ECI itself knows once the group runs stay references (the core resolved the rest).
  const path = e.valueFrom.fieldRef?.fieldPath;
  if (path === "status.podIP") return { key: e.name, fieldRef: { fieldPath: path } };
  // A Secret-sourced value that the core marked still carries its value.
  if ((e as { value?: string }).value !== undefined) return { key: e.name, value: e.value };
  return refuse(`${field}.valueFrom`, "this reference cannot be resolved on ECI");
}

function probeOf(p: Probe | undefined, field: string) {
  if (!p) return undefined;
  if (p.grpc) refuse(`${field}.grpc`, "ECI has no gRPC probes");
  const port = (v: number | string | undefined, f: string) => {
    if (typeof v === "string") refuse(`${field}.${f}.port`, "use the port number, not its name");
    return v as number | undefined;
  };
  return {
    exec: p.exec ? { command: p.exec.command } : undefined,
    httpGet: p.httpGet
      ? { path: p.httpGet.path, port: port(p.httpGet.port, "httpGet"), scheme: p.httpGet.scheme }
      : undefined,
    tcpSocket: p.tcpSocket ? { port: port(p.tcpSocket.port, "tcpSocket") } : undefined,
    initialDelaySeconds: p.initialDelaySeconds,
    periodSeconds: p.periodSeconds,
    successThreshold: p.successThreshold,
    failureThreshold: p.failureThreshold,
    timeoutSeconds: p.timeoutSeconds,
  };
}

function volumeOf(v: ResolvedVolume) {
  if ("emptyDir" in v) {
    return { name: v.name, type: "EmptyDirVolume", emptyDirVolume: v.emptyDir };
  }
  if ("nfs" in v) return { name: v.name, type: "NFSVolume", NFSVolume: v.nfs };
  if ("disk" in v) return { name: v.name, type: "DiskVolume", diskVolume: v.disk };
  return {
    name: v.name,
    type: "ConfigFileVolume",
    configFileVolume: {
      defaultMode: v.defaultMode,
      configFileToPath: v.files.map((f) => ({ path: f.path, content: f.content, mode: f.mode })),
    },
  };
}

function refuse(field: string, why: string): never {
  throw new InvalidInputError(`${field}: ${why}; the eci provider cannot run this pod`);
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}
