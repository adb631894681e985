/**
 * A capsule as Zun reports it (`GET /v1/capsules/<uuid>`, zun/api/controllers/v1/views/
 * capsules_view.py) as the kit's {@link RemoteRun}: each container's state from its Zun status,
 * the pod IP from `addresses`, and the pod's identity from the capsule's labels.
 *
 * Zun 18.0.0 never re-reads a capsule's containers after they start
 * (zun/compute/manager.py `sync_container_state` lists containers and capsules, not capsule
 * containers): a container that exits while its capsule runs is still reported Running. That
 * is all Zun exposes, so the pod says so in a condition of its own rather than pretend.
 * @module
 */
import type { Pod, PodCondition } from "kubernetes-types/core/v1.d.ts";
import {
  type ContainerReport,
  type ContainerStateReport,
  type RemoteRun,
  standInPod,
} from "../../provider/mod.ts";
import { CAPSULE_TAG, SPEC_ANNOTATION } from "./request/capsule.ts";
import { CONTAINER_LABELS, CONTAINER_TAG } from "./request/container.ts";

/** A container of a capsule, as Zun shows it. */
export interface ZunContainer {
  uuid: string;
  name: string;
  status: string;
  status_reason?: string | null;
  status_detail?: string | null;
  image?: string;
  created_at?: string | null;
  updated_at?: string | null;
}

/** A plain container, as Zun shows it (`GET /v1/containers/<uuid>`, containers_view.py). */
export interface ZunPlainContainer extends ZunContainer {
  labels?: Record<string, string> | null;
  addresses?: ZunCapsule["addresses"];
  user_id?: string | null;
}

/** A capsule, as Zun shows it (microversion ≥ 1.32). */
export interface ZunCapsule {
  uuid: string;
  user_id?: string | null;
  name: string | null;
  status: string;
  status_reason?: string | null;
  labels?: Record<string, string> | null;
  annotations?: Record<string, string> | null;
  addresses?: Record<string, { addr: string; version?: number }[]> | null;
  containers?: ZunContainer[];
  created_at?: string | null;
}

/** What the provider keeps of a run: a capsule's or a plain container's uuid. */
export interface ZunHandle {
  kind: "capsule" | "container";
  uuid: string;
  /** A plain container's run count (its label). */
  run?: number;
}

/** The condition that says what Zun cannot tell about a running capsule's containers. */
export const SYNC_CONDITION = "zun.vkubelet.io/ContainerStatusSynced";

/** Zun's times look like `2026-12-06 03:00:43.801960`, UTC without a zone. */
export function parseZunTime(text: string | null | undefined): number | undefined {
  if (!text) return undefined;
  const iso = text.includes("T") ? text : text.replace(" ", "T");
  const ms = Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(iso) ? iso : `${iso}Z`);
  return Number.isNaN(ms) ? undefined : ms;
}

/** The exit code in a docker status text (`Exited (3) 5 seconds ago`), if there is one. */
function exitCodeOf(text: string | null | undefined): number | undefined {
  const match = /Exited ?\((\d+)\)/.exec(text ?? "");
  return match ? Number(match[1]) : undefined;
}

/** A container's state from Zun's status; in a capsule (`capsule`) that failed, failed too. */
function stateOf(
  container: ZunContainer,
  nowMs: number,
  capsule?: ZunCapsule,
): ContainerStateReport {
  const startedAtMs = parseZunTime(container.created_at) ?? nowMs;
  const detail = container.status_reason || capsule?.status_reason || undefined;
  // A capsule that failed as a whole (no host, image, network) fails every container.
  const status = capsule?.status === "Error" ? "Error" : container.status;
  switch (status) {
    case "Running":
    case "Paused":
      return { running: { startedAtMs } };
    case "Stopped":
    case "Error":
    case "Dead": {
      const exitCode = exitCodeOf(container.status_detail) ?? (status === "Stopped" ? 0 : 1);
      return {
        terminated: {
          exitCode,
          ...(status === "Stopped" ? {} : { reason: "Error" }),
          ...(detail ? { message: `Zun: ${status}: ${detail}` } : {}),
          startedAtMs,
          finishedAtMs: parseZunTime(container.updated_at) ?? nowMs,
        },
      };
    }
    default: // Creating, Created, Restarting, Rebuilding, Deleting, Unknown
      return {
        waiting: {
          reason: "ContainerCreating",
          message: `Zun reports the container ${status}${detail ? `: ${detail}` : ""}`,
        },
      };
  }
}

/**
 * The pod a capsule runs, from its labels and the container names and restart policy it keeps
 * in an annotation; undefined for a capsule that is not a pod's.
 */
export function podOfCapsule(capsule: ZunCapsule): Pod | undefined {
  const tag = CAPSULE_TAG.read(capsule.labels ?? undefined);
  if (!tag) return undefined;
  let kept: { containers?: string[]; restartPolicy?: string } = {};
  try {
    kept = JSON.parse(capsule.annotations?.[SPEC_ANNOTATION] ?? "{}");
  } catch {
    // not written by this provider: no spec then
  }
  const images = (capsule.containers ?? []).map((c) => c.image ?? "");
  return standInPod(tag, {
    restartPolicy: kept.restartPolicy ?? "Always",
    containers: (kept.containers ?? []).map((name, i) => ({ name, image: images[i] })),
  });
}

/** The first IPv4 address Zun lists for the capsule or container. */
function podIPOf(object: Pick<ZunCapsule, "addresses">): string | undefined {
  for (const entries of Object.values(object.addresses ?? {})) {
    const v4 = entries.find((e) => e.version === 4 || /^\d+\.\d+\.\d+\.\d+$/.test(e.addr));
    if (v4) return v4.addr;
  }
  return undefined;
}

/**
 * The capsule as a run of `pod`'s (or of the pod in its labels). Zun names a capsule's
 * containers itself (`capsule-<name>-<random>`, zun/api/controllers/v1/capsules.py
 * `_generate_name_for_capsule_container`) and lists them in the order they were made, the
 * template's: the pod's containers are matched by position.
 */
export function runOfCapsule(
  capsule: ZunCapsule,
  nowMs: number,
  pod?: Pod,
): RemoteRun<ZunHandle> {
  const containers: Record<string, ContainerReport> = {};
  const owner = pod ?? podOfCapsule(capsule);
  const names = (owner?.spec?.containers ?? []).map((c) => c.name);
  for (const [i, c] of (capsule.containers ?? []).entries()) {
    containers[names[i] ?? c.name] = {
      state: stateOf(c, nowMs, capsule),
      ...(c.status === "Running" ? { containerID: `zun://${c.uuid}` } : {}),
    };
  }
  const running = capsule.status === "Running";
  const condition: PodCondition = {
    type: SYNC_CONDITION,
    status: running ? "False" : "True",
    reason: running ? "NotResyncedByZun" : "CapsuleNotRunning",
    message: running
      ? "Zun does not re-read a running capsule's containers: one that has exited is still reported Running until the capsule stops"
      : `capsule ${capsule.uuid} is ${capsule.status}`,
  };
  return {
    pod: owner!,
    containers,
    podIP: podIPOf(capsule),
    conditions: [condition],
    handle: { kind: "capsule", uuid: capsule.uuid },
  };
}

/** The pod a plain container runs, from its labels (../request/container.ts); or undefined. */
export function podOfContainer(container: ZunPlainContainer): Pod | undefined {
  const labels = container.labels ?? undefined;
  const tag = CONTAINER_TAG.read(labels);
  const name = labels?.[CONTAINER_LABELS.container];
  if (!tag || !name) return undefined;
  return standInPod(tag, {
    restartPolicy: labels?.[CONTAINER_LABELS.restartPolicy] ?? "Always",
    containers: [{ name, image: container.image }],
  });
}

/**
 * A plain container as a run of `pod`'s (or of the pod in its labels), with the container's
 * uuid and run count as the run's handle. zun-api reads a single container's state from the
 * engine (`GET /v1/containers/<uuid>`: `container_show`), so an exit is seen with its code
 * (`status_detail` `Exited(4) 4 seconds ago`).
 */
export function runOfContainer(
  container: ZunPlainContainer,
  nowMs: number,
  pod?: Pod,
): RemoteRun<ZunHandle> {
  const owner = pod ?? podOfContainer(container)!;
  const name = owner?.spec?.containers?.[0]?.name ?? container.name;
  const run = CONTAINER_TAG.read(container.labels ?? undefined)?.run ?? 0;
  return {
    pod: owner,
    containers: {
      [name]: {
        state: stateOf(container, nowMs),
        ...(container.status === "Running" ? { containerID: `zun://${container.uuid}` } : {}),
      },
    },
    podIP: podIPOf(container),
    handle: { kind: "container", uuid: container.uuid, run },
    restarts: run,
    createdAtMs: parseZunTime(container.created_at),
  };
}
