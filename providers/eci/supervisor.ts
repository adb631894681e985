/**
 * The one loop behind all pods: first it adopts this node's groups (found by tag, so a restarted
 * vkubelet takes them over instead of making more), then every `statusInterval` it describes
 * every pod's group in batches, relays new ECI events, and applies the pod's restart policy to a
 * group that is gone (deleted behind vkubelet's back): made again after the kubelet's back-off,
 * or the pod ends. API errors here are logged and retried on the next round, never pod failures.
 * @module
 */
import type { Clock, Logger } from "../../provider/mod.ts";
import type { EciApi } from "./api.ts";
import { planRestart, type PodEventSink, podKey, shouldRestartPod } from "../../provider/mod.ts";
import { podOfTags } from "./names.ts";
import { containerNames, endsNow, type PodRecord } from "./status.ts";

/** What {@link GroupSupervisor} needs. */
export interface GroupSupervisorDeps {
  api: Pick<EciApi, "describe" | "listForNode" | "delete" | "events">;
  /** The provider's records by `ns/name`, shared. */
  records: Map<string, PodRecord>;
  nodeName: string;
  clock: Clock;
  log: Logger;
  intervalMs: number;
  event: PodEventSink;
  /** Makes the record's group again (a new generation). */
  recreate: (record: PodRecord, signal: AbortSignal) => Promise<void>;
  /** The record may have a new status. */
  changed: (record: PodRecord) => void;
}

/** Adopts, polls and re-creates; see the module doc. */
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
          log.warning("cannot list this node's ECI groups yet: {err}", { err: String(err) });
          await clock.sleep(intervalMs, signal);
        }
      }
      this.#adoptedResolve();
      while (!signal.aborted) {
        await clock.sleep(intervalMs, signal);
        await this.poll(signal).catch((err) => {
          if (!signal.aborted) log.warning("ECI status poll failed: {err}", { err: String(err) });
        });
      }
    } catch {
      // Aborted while sleeping.
    } finally {
      this.#adoptedResolve();
    }
  }

  /** One round: describe, relay events, handle vanished groups, re-create due ones, report. */
  async poll(signal: AbortSignal): Promise<void> {
    const { api, records, clock } = this.#deps;
    const watched = [...records.values()].filter((r) => r.groupId && !r.deleting);
    const ids = watched.map((r) => r.groupId!);
    const found = await api.describe(ids, signal);
    for (const record of watched) {
      if (record.deleting || !record.groupId) continue;
      const group = found.get(record.groupId);
      if (group) record.group = group;
      else this.#vanished(record);
      this.#deps.changed(record);
    }
    await this.#relayEvents(watched.filter((r) => r.groupId), signal).catch((err) => {
      this.#deps.log.debug("ECI events not read: {err}", { err: String(err) });
    });
    for (const record of records.values()) {
      if (record.deleting || record.groupId || record.finished) continue;
      if (record.recreateAt === undefined || record.recreateAt > clock.now()) continue;
      try {
        await this.#deps.recreate(record, signal);
      } catch (err) {
        record.recreateAt = clock.now() + this.#deps.intervalMs;
        this.#deps.log.warning("{pod}: cannot make the ECI group again yet: {err}", {
          pod: podKey(record.pod.metadata?.namespace, record.pod.metadata?.name),
          err: String(err),
        });
      }
      this.#deps.changed(record);
    }
  }

  /** The group is gone though the pod was not deleted: restart policy decides. */
  #vanished(record: PodRecord): void {
    const now = this.#deps.clock.now();
    const ends = endsNow(
      record,
      `the ECI group ${record.groupId} was deleted outside vkubelet`,
      now,
    );
    const restart = shouldRestartPod(record.pod, [...ends.values()].map((e) => e.exitCode));
    this.#deps.event(
      record.pod,
      "Warning",
      "ContainerGroupDeleted",
      `ECI group ${record.groupId} no longer exists${restart ? "; it will be made again" : ""}`,
    );
    if (!restart) {
      record.finished = ends;
      return;
    }
    for (const name of containerNames(record)) {
      const c = record.group?.containers?.find((x) => x.name === name);
      const before = record.restartsBefore.get(name) ?? 0;
      record.restartsBefore.set(name, before + (c?.restartCount ?? 0) + 1);
    }
    record.lastTerminated = ends;
    record.groupId = undefined;
    record.group = undefined;
    record.generation++;
    ({ atMs: record.recreateAt, entry: record.backoff } = planRestart(record.backoff, now));
  }

  /** ECI's own events of each group, told once as events on the pod. */
  async #relayEvents(records: PodRecord[], signal: AbortSignal): Promise<void> {
    if (!records.length) return;
    const events = await this.#deps.api.events(records.map((r) => r.groupId!), signal);
    for (const record of records) {
      for (const e of events.get(record.groupId!) ?? []) {
        const key = `${e.reason}/${e.firstTimestamp}/${e.message}`;
        if (record.seenEvents.has(key)) continue;
        record.seenEvents.add(key);
        const type = e.type === "Warning" ? "Warning" : "Normal";
        this.#deps.event(record.pod, type, e.reason || "ECIEvent", `ECI: ${e.message ?? ""}`);
      }
    }
  }

  /** Takes over the groups tagged with this node. */
  async #adopt(signal: AbortSignal): Promise<void> {
    const { api, records, nodeName, clock } = this.#deps;
    for (const group of await api.listForNode(nodeName, signal)) {
      const id = podOfTags(group.tags);
      if (!id || id.node !== nodeName) continue;
      const k = podKey(id.namespace, id.name);
      const existing = records.get(k);
      if (existing && existing.generation >= id.generation) {
        // Two groups for one pod: keep the one made last, delete the other.
        await api.delete(group.containerGroupId!, signal);
        continue;
      }
      if (existing?.groupId) await api.delete(existing.groupId, signal);
      records.set(k, {
        // A stand-in until the core hands the pod over (createPod): its containers from the group.
        pod: {
          metadata: { namespace: id.namespace, name: id.name, uid: id.uid },
          spec: {
            restartPolicy: group.restartPolicy as "Always" | "OnFailure" | "Never" | undefined,
            containers: (group.containers ?? []).map((c) => ({
              name: c.name ?? "",
              image: c.image,
            })),
          },
        },
        groupId: group.containerGroupId,
        group,
        generation: id.generation,
        restartsBefore: new Map(),
        lastTerminated: new Map(),
        deleting: false,
        startTimeMs: Date.parse(group.creationTime ?? "") || clock.now(),
        seenEvents: new Set(),
      });
      this.#deps.log.info("{pod}: adopted ECI group {group}", {
        pod: k,
        group: group.containerGroupId,
      });
    }
  }
}
