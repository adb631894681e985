/**
 * The one loop behind all pods: first it adopts this node's container groups (found by their
 * tags, so a restarted vkubelet takes them over instead of making more), then every
 * `statusInterval` it reads every pod's group, copies ACI's new events as Kubernetes events,
 * applies the pod's restart policy to a group deleted behind vkubelet's back (made again after
 * the kubelet's back-off, or the end of the pod) and reports what changed. ACI errors here are
 * logged and retried on the next round, never turned into pod failures.
 * @module
 */
import type { Clock, Logger } from "../../provider/mod.ts";
import type { ContainerGroup } from "./azure.ts";
import {
  planRestart,
  type PodEventSink,
  podKey,
  podKeyOf,
  shouldRestartPod,
} from "../../provider/mod.ts";
import type { AciGroups } from "./groups.ts";
import { podOfTags } from "./names.ts";
import { endsOf, type PodRecord } from "./status.ts";

/** What {@link GroupSupervisor} needs. */
export interface GroupSupervisorDeps {
  groups: Pick<AciGroups, "get" | "list" | "delete">;
  /** The provider's records by `ns/name`, shared. */
  records: Map<string, PodRecord>;
  nodeName: string;
  clock: Clock;
  log: Logger;
  intervalMs: number;
  event: PodEventSink;
  /** Makes the record's group again. */
  recreate: (record: PodRecord, signal: AbortSignal) => Promise<void>;
  /** The record may have a new status. */
  changed: (record: PodRecord) => void;
}

/** How many groups are read at once. */
const READ_CONCURRENCY = 16;

/** Adopts, polls and restarts; see the module doc. */
export class GroupSupervisor {
  readonly #deps: GroupSupervisorDeps;
  #adoptedResolve!: () => void;
  /** Resolves once this node's existing groups are adopted (or vkubelet stops). */
  readonly adopted: Promise<void> = new Promise((r) => this.#adoptedResolve = r);

  constructor(deps: GroupSupervisorDeps) {
    this.#deps = deps;
  }

  /** Adopts, then polls until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const { clock, log, intervalMs } = this.#deps;
    try {
      while (!signal.aborted) {
        try {
          await this.#adopt(signal);
          break;
        } catch (err) {
          log.warning("cannot list this node's container groups yet: {err}", { err: String(err) });
          await clock.sleep(intervalMs, signal);
        }
      }
      this.#adoptedResolve();
      while (!signal.aborted) {
        await this.poll(signal).catch((err) => {
          if (!signal.aborted) log.warning("ACI status poll failed: {err}", { err: String(err) });
        });
        await clock.sleep(intervalMs, signal);
      }
    } catch {
      // Aborted while sleeping.
    } finally {
      this.#adoptedResolve();
    }
  }

  /** One round: read every group, apply restart policies, remake due groups, report. */
  async poll(signal: AbortSignal): Promise<void> {
    const { records, clock } = this.#deps;
    const watched = [...records.values()].filter((r) =>
      !r.deleting && !r.finished && r.recreateAt === undefined
    );
    let next = 0;
    const worker = async () => {
      while (next < watched.length && !signal.aborted) {
        const record = watched[next++];
        await this.#read(record, signal).catch((err) => {
          this.#deps.log.warning("{pod}: cannot read container group {group}: {err}", {
            pod: podKeyOf(record.pod),
            group: record.groupName,
            err: String(err),
          });
        });
      }
    };
    await Promise.all(Array.from({ length: READ_CONCURRENCY }, worker));
    for (const record of records.values()) {
      if (record.deleting || record.finished || record.recreateAt === undefined) continue;
      if (record.recreateAt > clock.now()) {
        this.#deps.changed(record);
        continue;
      }
      try {
        await this.#deps.recreate(record, signal);
      } catch (err) {
        record.recreateAt = clock.now() + this.#deps.intervalMs;
        this.#deps.log.warning("{pod}: cannot make container group {group} again yet: {err}", {
          pod: podKeyOf(record.pod),
          group: record.groupName,
          err: String(err),
        });
      }
    }
  }

  async #read(record: PodRecord, signal: AbortSignal): Promise<void> {
    const group = await this.#deps.groups.get(record.groupName, signal);
    if (record.deleting || record.finished) return;
    if (!group) {
      this.#gone(record);
    } else {
      record.group = group;
      this.#copyEvents(record, group);
    }
    this.#deps.changed(record);
  }

  /** The group was deleted behind vkubelet's back: the pod's restart policy decides. */
  #gone(record: PodRecord): void {
    const now = this.#deps.clock.now();
    const why = `container group ${record.groupName} was deleted outside vkubelet`;
    const ends = endsOf(record, why, now);
    const restart = shouldRestartPod(record.pod, [...ends.values()].map((e) => e.exitCode));
    this.#deps.event(
      record.pod,
      "Warning",
      "ContainerGroupDeleted",
      `${why}${restart ? "; it will be made again" : "; the pod's restart policy ends the pod"}`,
    );
    if (!restart) {
      record.finished = ends;
      return;
    }
    const views = record.group?.containers.map((c) => c.instanceView?.restartCount ?? 0) ?? [0];
    record.restartOffset += Math.max(0, ...views) + 1;
    record.lastTerminated = ends;
    record.group = undefined;
    ({ atMs: record.recreateAt, entry: record.backoff } = planRestart(record.backoff, now));
  }

  /** ACI's container events not seen yet, as Kubernetes events on the pod. */
  #copyEvents(record: PodRecord, group: ContainerGroup): void {
    for (const c of [...group.containers, ...(group.initContainers ?? [])]) {
      for (const e of c.instanceView?.events ?? []) {
        const id = `${c.name}/${e.name}/${e.firstTimestamp?.toISOString()}/${e.count}`;
        if (record.seenEvents.has(id)) continue;
        record.seenEvents.add(id);
        if (record.adopted) continue; // copied by the vkubelet that made the group
        const type = e.type === "Warning" ? "Warning" : "Normal";
        this.#deps.event(record.pod, type, e.name ?? "ACIEvent", `${c.name}: ${e.message ?? ""}`);
      }
    }
    record.adopted = false;
  }

  /** Takes over the groups this node made, by their tags. */
  async #adopt(signal: AbortSignal): Promise<void> {
    const { groups, records, nodeName } = this.#deps;
    for (const group of await groups.list(signal)) {
      const id = podOfTags(group.tags);
      if (!id || id.node !== nodeName || !group.name) continue;
      const k = podKey(id.namespace, id.name);
      const existing = records.get(k);
      if (existing && existing.groupName !== group.name) {
        // Two groups for one pod (a name scheme changed): keep one.
        await groups.delete(group.name, signal);
        continue;
      }
      records.set(k, {
        // A stand-in until the core hands the pod over (createPod): containers from the group.
        pod: {
          metadata: { namespace: id.namespace, name: id.name, uid: id.uid },
          spec: {
            restartPolicy: group.restartPolicy as "Always" | "OnFailure" | "Never" | undefined,
            containers: group.containers.map((c) => ({ name: c.name, image: c.image })),
            initContainers: group.initContainers?.map((c) => ({ name: c.name, image: c.image })),
          },
        },
        groupName: group.name,
        group,
        restartOffset: id.restarts,
        lastTerminated: new Map(),
        deleting: false,
        startTimeMs: this.#deps.clock.now(),
        seenEvents: new Set(),
        adopted: true,
      });
      this.#deps.log.info("{pod}: adopted container group {group}", { pod: k, group: group.name });
    }
  }
}
