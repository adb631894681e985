/**
 * ECI as the kit's remote backend: a pod's run is one ECI container group (its handle: the group
 * as DescribeContainerGroups last showed it). ECI restarts a group's containers itself by the
 * pod's policy, so the kit's RemotePods (told `backendRestarts`) only makes a group again that
 * was deleted behind vkubelet's back. This file holds only what is ECI's: tags that carry the
 * pod's identity (so a restarted vkubelet adopts its groups), DescribeContainerGroups in
 * batches with ECI's own events relayed once each, CreateContainerGroup with a `ClientToken` per
 * pod and run (so a retried create makes one group), DeleteContainerGroup, and logs.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type Clock,
  type ContainerLogOptions,
  type Logger,
  NotFoundError,
  type PodEventSink,
  podEventSink,
  podKeyOf,
  type ProviderDeps,
  type ProviderKubeClient,
  type RemoteBackend,
  type RemoteLogRuns,
  type RemoteMakeOptions,
  type RemoteProviderSetup,
  type RemoteRead,
  type RemoteRun,
  standInPod,
  type TerminatedReport,
} from "../../provider/mod.ts";
import type { ContainerGroup, EciApi } from "./client/api.ts";
import type { EciConfig } from "./config.ts";
import { checkPod, groupRequestFor } from "./request/container_group.ts";
import { readContainerLog } from "./streams/logs.ts";
import { LogBudget } from "./streams/log_budget.ts";
import { podOfTags } from "./request/names.ts";
import { registryCredentials } from "./request/pull_secrets.ts";
import { endsOnDelete, runOfGroup } from "./status.ts";
import { resolveVolumes } from "./request/volumes.ts";

/** What {@link EciBackend} needs. */
export interface EciBackendDeps {
  api: Pick<EciApi, "create" | "describe" | "listForNode" | "delete" | "events" | "log">;
  config: EciConfig;
  nodeName: string;
  /** The node's IP, for volumes that name the host. */
  hostIP: string;
  clock: Clock;
  log: Logger;
  event: PodEventSink;
  kube?: ProviderKubeClient;
  /** The provider's life: log streams end with it. */
  signal: AbortSignal;
}

/**
 * How the eci provider runs its pods on the kit: {@link EciBackend} on `api`, and the kit's
 * options for ECI.
 */
export function eciGroupsSetup(
  config: EciConfig,
  deps: ProviderDeps & { api: EciApi; signal: AbortSignal },
): RemoteProviderSetup<ContainerGroup, EciBackend> {
  const event = podEventSink(deps, "vkubelet-eci");
  return {
    backend: new EciBackend({ ...deps, config, hostIP: deps.internalIp, event }),
    intervalMs: config.statusInterval,
    // ECI runs no hooks; the kit runs them through ECI's exec.
    hooks: "exec",
    // ECI restarts a group's containers itself; the kit makes again only a group that is gone.
    backendRestarts: true,
    // A deletion seen before the groups are adopted would leave its group running.
    retryList: true,
    keepPodIP: true,
  };
}

/** What the backend keeps of a pod, by uid. */
interface PodNotes {
  /** When the provider first took the pod (clock ms): a start time ECI leaves out. */
  sinceMs: number;
  /** ECI events already told (`reason/firstTimestamp/message`). */
  seenEvents: Set<string>;
}

/** ECI for RemotePods; see the module doc. */
export class EciBackend implements RemoteBackend<ContainerGroup> {
  readonly #d: EciBackendDeps;
  readonly #pods = new Map<string, PodNotes>();

  /** The log mirror's polls under the node's budget (`./streams/log_budget.ts`). */
  readonly logBudget: LogBudget;

  constructor(deps: EciBackendDeps) {
    this.#d = deps;
    const { api, clock, log, config } = deps;
    const [requestsPerSecond, intervalMs] = [
      config.logMirrorRequestsPerSecond,
      Math.min(config.statusInterval, 2000),
    ];
    this.logBudget = new LogBudget({ api, clock, log, requestsPerSecond, intervalMs });
  }

  /** The groups tagged with this node. */
  async list(signal: AbortSignal): Promise<RemoteRun<ContainerGroup>[]> {
    const { api, nodeName, clock } = this.#d;
    const runs: RemoteRun<ContainerGroup>[] = [];
    for (const group of await api.listForNode(nodeName, signal)) {
      const id = podOfTags(group.tags);
      if (!id || id.node !== nodeName) continue;
      const pod = standInPod(id, {
        restartPolicy: group.restartPolicy,
        containers: (group.containers ?? []).map((c) => ({ name: c.name ?? "", image: c.image })),
      });
      const sinceMs = Date.parse(group.creationTime ?? "") || clock.now();
      this.#notes(pod, sinceMs);
      runs.push({ ...this.#run(pod, group), restarts: id.run, createdAtMs: sinceMs });
    }
    return runs;
  }

  /**
   * DescribeContainerGroups of every pod's group, in batches (a group ECI no longer has is
   * gone), then ECI's events of those found, each told once as an event on the pod.
   */
  async readMany(
    reads: RemoteRead<ContainerGroup>[],
    signal?: AbortSignal,
  ): Promise<(RemoteRun<ContainerGroup> | undefined)[]> {
    const ids = reads.flatMap((r) => r.run?.handle?.containerGroupId ?? []);
    const found = await this.#d.api.describe(ids, signal);
    const runs = reads.map(({ pod, run }) => {
      const group = found.get(run?.handle?.containerGroupId ?? "");
      return group && this.#run(pod, group);
    });
    await this.#relayEvents(runs.flatMap((r) => r ?? []), signal).catch((err) => {
      this.#d.log.debug("ECI events not read: {err}", { err: String(err) });
    });
    return runs;
  }

  /** CreateContainerGroup for the pod's run; a pod ECI cannot run is refused before any call. */
  async make(
    pod: Pod,
    signal?: AbortSignal,
    options: RemoteMakeOptions = { restarts: 0 },
  ): Promise<RemoteRun<ContainerGroup>> {
    checkPod(pod);
    const { kube, config, nodeName, hostIP } = this.#d;
    const volumes = await resolveVolumes(pod, { kube, hostIP, signal });
    const credentials = await registryCredentials(pod, kube, signal);
    const plan = groupRequestFor(pod, {
      config,
      nodeName,
      restarts: options.restarts,
      volumes,
      credentials,
    });
    const containerGroupId = await this.#d.api.create(plan.request, signal);
    for (const note of plan.notes) this.#d.event(pod, "Normal", "EciSized", note);
    this.#notes(pod, this.#d.clock.now());
    // The group as ECI will show it: its ID, nothing described yet.
    return this.#run(pod, { containerGroupId } as ContainerGroup);
  }

  /** DeleteContainerGroup of the pod's group; how its containers ended. */
  async remove(
    pod: Pod,
    signal?: AbortSignal,
    run?: RemoteRun<ContainerGroup>,
  ): Promise<Record<string, TerminatedReport>> {
    const group = run?.handle;
    if (group?.containerGroupId) await this.#d.api.delete(group.containerGroupId, signal);
    this.#pods.delete(pod.metadata?.uid ?? "");
    // Between groups (no run) the kit keeps the last group's ends.
    if (!group) return {};
    const why = "The ECI group was deleted: the pod was deleted";
    return endsOnDelete(pod, group, why, this.#d.clock.now());
  }

  /** Deletes a second group of a pod found on adoption. */
  async discard(_pod: Pod, run: RemoteRun<ContainerGroup>, signal: AbortSignal): Promise<void> {
    const id = run.handle?.containerGroupId;
    if (id) await this.#d.api.delete(id, signal);
  }

  /** A Warning event for a group deleted behind vkubelet's back. */
  ended(pod: Pod, run: RemoteRun<ContainerGroup> | undefined, restart: boolean): void {
    const id = run?.handle?.containerGroupId ?? "?";
    const next = restart ? "; it will be made again" : "";
    this.#d.event(
      pod,
      "Warning",
      "ContainerGroupDeleted",
      `ECI group ${id} no longer exists${next}`,
    );
  }

  /** The container's log through DescribeContainerLog, from the pod's current group. */
  logs(
    _pod: Pod,
    container: string,
    options: ContainerLogOptions,
    runs: RemoteLogRuns<ContainerGroup> = {},
  ): Promise<ReadableStream<Uint8Array>> {
    const groupId = runs.current?.handle?.containerGroupId;
    if (!groupId) {
      return Promise.reject(
        new NotFoundError(`container ${container} is waiting to start; no log yet`),
      );
    }
    const signal = AbortSignal.any([this.#d.signal, ...(options.signal ? [options.signal] : [])]);
    return readContainerLog({
      api: this.#d.api,
      groupId,
      container,
      clock: this.#d.clock,
      intervalMs: Math.min(this.#d.config.statusInterval, 2000),
    }, { ...options, signal });
  }

  /**
   * The container's log as the node's log mirror follows it: polled in turn with the node's
   * other followed containers under `logMirrorRequestsPerSecond`; without `follow`, {@link logs}.
   */
  mirrorLogs(
    pod: Pod,
    container: string,
    options: ContainerLogOptions,
    runs: RemoteLogRuns<ContainerGroup> = {},
  ): Promise<ReadableStream<Uint8Array>> {
    const groupId = runs.current?.handle?.containerGroupId;
    if (!options.follow || options.previous || !groupId) {
      return this.logs(pod, container, options, runs);
    }
    const signal = AbortSignal.any([this.#d.signal, ...(options.signal ? [options.signal] : [])]);
    return Promise.resolve(
      this.logBudget.follow(groupId, container, {
        since: options.sinceTime,
        pod: podKeyOf(pod),
        signal,
      }),
    );
  }

  /** A group as a run of `pod`. */
  #run(pod: Pod, group: ContainerGroup): RemoteRun<ContainerGroup> {
    const nowMs = this.#d.clock.now();
    const sinceMs = this.#pods.get(pod.metadata?.uid ?? "")?.sinceMs ?? nowMs;
    return runOfGroup(pod, group, { sinceMs, nowMs });
  }

  /** The pod's notes, made on first sight. */
  #notes(pod: Pod, sinceMs: number): PodNotes {
    const uid = pod.metadata?.uid ?? "";
    let notes = this.#pods.get(uid);
    if (!notes) this.#pods.set(uid, notes = { sinceMs, seenEvents: new Set() });
    return notes;
  }

  /** ECI's own events of each run's group, told once as events on the pod. */
  async #relayEvents(runs: RemoteRun<ContainerGroup>[], signal?: AbortSignal): Promise<void> {
    if (!runs.length) return;
    const events = await this.#d.api.events(runs.map((r) => r.handle!.containerGroupId!), signal);
    for (const run of runs) {
      const seen = this.#notes(run.pod, this.#d.clock.now()).seenEvents;
      for (const e of events.get(run.handle!.containerGroupId!) ?? []) {
        const key = `${e.reason}/${e.firstTimestamp}/${e.message}`;
        if (seen.has(key)) continue;
        seen.add(key);
        const type = e.type === "Warning" ? "Warning" : "Normal";
        this.#d.event(run.pod, type, e.reason || "ECIEvent", `ECI: ${e.message ?? ""}`);
      }
    }
  }
}
