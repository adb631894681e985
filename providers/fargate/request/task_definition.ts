/**
 * A pod as an ECS task definition for Fargate (awsvpc networking, the awslogs log driver), or an
 * {@link InvalidInputError} naming the first field Fargate cannot honour. What is mapped:
 * init containers (in order, each to success before the app containers: `./init_containers.ts`),
 * the CPU architecture (`./placement.ts`), image, command (ECS `entryPoint`) and args (ECS
 * `command`), env (already resolved by the
 * core), ports, working dir, the pod's and the container's security context
 * (`./security_context.ts`), tty/stdin, an exec liveness probe as the ECS health check, emptyDir
 * as task volumes, ConfigMap, Secret, downwardAPI and projected volumes as files a set-up
 * container writes from the pod's secret (`./files.ts`), the grace period as `stopTimeout`, the task size from `./sizing.ts`. What is
 * only noted (returned in `notes`, recorded as events): rounding, clamping, probes ECS cannot
 * run, and the service-account token volume, which is not mounted.
 * @module
 */
import type {
  ContainerDefinition,
  HealthCheck,
  KeyValuePair,
  RegisterTaskDefinitionCommandInput,
  Secret as EcsSecret,
  Volume,
} from "@aws-sdk/client-ecs";
import type { Container, Pod, PodSecurityContext, Probe } from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError } from "../../../provider/mod.ts";
import type { FargateConfig } from "../config.ts";
import { familyName, LOG_STREAM_PREFIX, podTags } from "../names.ts";
import { secretKey } from "../client/pod_secrets.ts";
import { containerSecurity } from "../security_context.ts";
import {
  checkFileVolumes,
  filesContainer,
  isFileVolume,
  isTokenVolume,
  type VolumeFile,
} from "./files.ts";
import { checkInitContainers, orderContainers } from "./init_containers.ts";
import { runtimePlatformOf } from "./placement.ts";
import { containerSize, taskSize } from "./sizing.ts";

/** A registered-to-be task definition and what the user should hear about it. */
export interface TaskDefinitionPlan {
  input: RegisterTaskDefinitionCommandInput;
  /** Things that run differently than the pod says; each becomes a Normal event. */
  notes: string[];
}

/** Fargate's ceiling for `stopTimeout`, in seconds. */
const MAX_STOP_TIMEOUT = 120;

function refuse(field: string, why: string): never {
  throw new InvalidInputError(`${field}: ${why}; Fargate cannot run this pod as written`);
}

/** What the provider found out about a pod before translating it. */
export interface TaskDefinitionOptions {
  /** The pod's task role (`./task_role.ts`); the config's `taskRoleArn` when not given. */
  taskRoleArn?: string;
  /**
   * The ARN of the pod's Secrets Manager secret (`../client/pod_secrets.ts`): env vars the core marked
   * as Secret-sourced become ECS `secrets` read from it, not plain `environment`.
   */
  secretArn?: string;
  /**
   * The files of the pod's ConfigMap, Secret, downwardAPI and projected volumes (`./files.ts`),
   * in the pod's secret: a set-up container writes them before the others start.
   */
  files?: VolumeFile[];
}

/** Translates `pod` for `nodeName`; throws {@link InvalidInputError} for what Fargate lacks. */
export function taskDefinitionFor(
  pod: Pod,
  config: FargateConfig,
  nodeName: string,
  options: TaskDefinitionOptions = { taskRoleArn: config.taskRoleArn },
): TaskDefinitionPlan {
  const { namespace = "", name = "", uid = "" } = pod.metadata ?? {};
  const spec = pod.spec ?? { containers: [] };
  const notes: string[] = [];
  if (spec.hostNetwork) refuse("spec.hostNetwork", "tasks always get their own network interface");
  if (spec.hostPID) refuse("spec.hostPID", "there is no host to share");
  if (spec.hostIPC) refuse("spec.hostIPC", "there is no host to share");
  checkInitContainers(pod);
  if (spec.ephemeralContainers?.length) {
    refuse("spec.ephemeralContainers", "ephemeral containers need exec, which is not supported");
  }
  const { volumes, skipped, readOnly } = taskVolumes(pod);
  if (skipped.length) {
    notes.push(`the service-account token volume ${skipped.join(", ")} is not mounted on Fargate`);
  }
  const size = taskSize(pod);
  if (size.rounded) {
    notes.push(
      `task size rounded up to a Fargate size: ${
        size.cpu / 1024
      } vCPU and ${size.memory} MiB (the pod asks for ${
        size.wanted.cpu / 1024
      } vCPU and ${size.wanted.memory} MiB)`,
    );
  }
  let stopTimeout = spec.terminationGracePeriodSeconds ?? 30;
  if (stopTimeout > MAX_STOP_TIMEOUT) {
    notes.push(`terminationGracePeriodSeconds ${stopTimeout} is cut to Fargate's 120 s`);
    stopTimeout = MAX_STOP_TIMEOUT;
  }
  const context: ContainerContext = {
    config,
    secretArn: options.secretArn,
    podSecurity: spec.securityContext,
    size,
    skipped,
    readOnly,
    stopTimeout,
    notes,
  };
  const setup = options.files && options.secretArn
    ? [filesContainer(pod, options.files, {
      secretArn: options.secretArn,
      image: config.filesImage,
      memory: size.memory,
    })]
    : [];
  const containerDefinitions = orderContainers(
    setup,
    (spec.initContainers ?? []).map((c, i) =>
      containerDefinition(c, `spec.initContainers[${i}]`, context)
    ),
    spec.containers.map((c, i) => containerDefinition(c, `spec.containers[${i}]`, context)),
  );
  const platform = runtimePlatformOf(pod, config);
  return {
    input: {
      family: familyName(namespace, name),
      requiresCompatibilities: ["FARGATE"],
      networkMode: "awsvpc",
      cpu: String(size.cpu),
      memory: String(size.memory),
      executionRoleArn: config.executionRoleArn,
      taskRoleArn: options.taskRoleArn,
      containerDefinitions,
      volumes,
      runtimePlatform: platform,
      tags: podTags({ namespace, name, uid }, nodeName, config.tags),
    },
    notes,
  };
}

/**
 * emptyDir and file volumes become task volumes; the automatic token volume is skipped; others
 * are refused, naming the volume.
 */
function taskVolumes(pod: Pod): { volumes: Volume[]; skipped: string[]; readOnly: string[] } {
  const volumes: Volume[] = [];
  const skipped: string[] = [];
  (pod.spec?.volumes ?? []).forEach((v, i) => {
    const field = `spec.volumes[${i}]`;
    if (v.emptyDir) {
      if (v.emptyDir.medium === "Memory") {
        refuse(`${field}.emptyDir.medium`, "Fargate has no tmpfs task volumes");
      }
      volumes.push({ name: v.name });
    } else if (isTokenVolume(v)) {
      skipped.push(v.name);
    } else if (isFileVolume(v)) {
      // A bind volume the set-up container writes the files into (`./files.ts`).
      volumes.push({ name: v.name });
    } else {
      const kind = Object.keys(v).find((k) => k !== "name") ?? "source";
      refuse(
        `${field}.${kind}`,
        `volume ${v.name}: ${kind} volumes are not supported (emptyDir, configMap, secret, downwardAPI and projected are)`,
      );
    }
  });
  checkFileVolumes(pod);
  const readOnly = (pod.spec?.volumes ?? []).filter(isFileVolume).map((v) => v.name);
  return { volumes, skipped, readOnly };
}

interface ContainerContext {
  config: FargateConfig;
  secretArn: string | undefined;
  podSecurity: PodSecurityContext | undefined;
  size: { memory: number };
  skipped: string[];
  /** Volumes mounted read-only whatever the mount says (files, as the kubelet mounts them). */
  readOnly: string[];
  stopTimeout: number;
  notes: string[];
}

function containerDefinition(
  c: Container,
  field: string,
  ctx: ContainerContext,
): ContainerDefinition {
  const security = containerSecurity(ctx.podSecurity, c, field);
  if (c.image === undefined) refuse(`${field}.image`, "an image is required");
  const own = containerSize(c, field);
  const { environment, secrets } = containerEnv(c, field, ctx.secretArn);
  const portMappings = (c.ports ?? []).map((p, j) => {
    if (p.protocol === "SCTP") refuse(`${field}.ports[${j}].protocol`, "SCTP is not supported");
    if (p.hostPort && p.hostPort !== p.containerPort) {
      refuse(`${field}.ports[${j}].hostPort`, "awsvpc tasks need hostPort equal to containerPort");
    }
    return {
      containerPort: p.containerPort,
      protocol: p.protocol === "UDP" ? "udp" as const : "tcp" as const,
      name: p.name,
    };
  });
  const mountPoints = (c.volumeMounts ?? []).flatMap((m, j) => {
    if (ctx.skipped.includes(m.name)) return [];
    if (m.subPath || m.subPathExpr) refuse(`${field}.volumeMounts[${j}].subPath`, "not supported");
    return [{
      sourceVolume: m.name,
      containerPath: m.mountPath,
      readOnly: ctx.readOnly.includes(m.name) || (m.readOnly ?? false),
    }];
  });
  if (c.readinessProbe || c.startupProbe || (c.livenessProbe && !c.livenessProbe.exec)) {
    ctx.notes.push(
      `container ${c.name}: only an exec livenessProbe runs (as the ECS health check); its other probes do not`,
    );
  }
  if (c.lifecycle) ctx.notes.push(`container ${c.name}: lifecycle hooks do not run on Fargate`);
  return {
    name: c.name,
    image: c.image,
    essential: true,
    entryPoint: c.command,
    command: c.args,
    workingDirectory: c.workingDir,
    environment,
    secrets: secrets.length ? secrets : undefined,
    portMappings,
    mountPoints,
    cpu: own.cpu || undefined,
    // Every container carries a hard limit: its own, or the task's.
    memory: own.memory || ctx.size.memory,
    ...security,
    interactive: c.stdin,
    pseudoTerminal: c.tty,
    stopTimeout: ctx.stopTimeout,
    healthCheck: healthCheck(c.livenessProbe),
    logConfiguration: {
      logDriver: "awslogs",
      options: {
        "awslogs-group": ctx.config.logGroup,
        "awslogs-region": ctx.config.region,
        "awslogs-stream-prefix": LOG_STREAM_PREFIX,
      },
    },
  };
}

/** Plain env, and the Secret-sourced vars as ECS `secrets` when the pod has a secret. */
function containerEnv(c: Container, field: string, secretArn: string | undefined) {
  const environment: KeyValuePair[] = [];
  const secrets: EcsSecret[] = [];
  (c.env ?? []).forEach((e, j) => {
    if (e.value === undefined && e.valueFrom) {
      refuse(`${field}.env[${j}].valueFrom`, "was not resolved before reaching the provider");
    }
    if (secretArn && e.valueFrom?.secretKeyRef) {
      // ECS's form for one key of a JSON secret: arn:json-key:version-stage:version-id.
      secrets.push({ name: e.name, valueFrom: `${secretArn}:${secretKey(c.name, e.name)}::` });
    } else {
      environment.push({ name: e.name, value: e.value ?? "" });
    }
  });
  return { environment, secrets };
}

const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, v));

/** An exec probe as an ECS health check, its timings clamped to what ECS allows. */
function healthCheck(probe: Probe | undefined): HealthCheck | undefined {
  if (!probe?.exec?.command?.length) return undefined;
  return {
    command: ["CMD", ...probe.exec.command],
    interval: clamp(probe.periodSeconds ?? 10, 5, 300),
    timeout: clamp(probe.timeoutSeconds ?? 1, 2, 60),
    retries: clamp(probe.failureThreshold ?? 3, 1, 10),
    startPeriod: clamp(probe.initialDelaySeconds ?? 0, 0, 300),
  };
}
