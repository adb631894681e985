/**
 * ACI as the kit's remote backend: a pod's run is one container group (its handle: the group as
 * the last GET or the create showed it), named from node, namespace and pod, so a retried create
 * cannot make a second. ACI restarts a group's containers itself by the pod's policy, so the
 * kit's RemotePods (told `backendRestarts`) only makes a group again that was deleted behind
 * vkubelet's back. This file holds only what is ACI's: tags that carry the pod's identity (so a
 * restarted vkubelet adopts its groups), a GET per group (16 at once) with ACI's container events
 * copied once each, the PUT, and the DELETE — behind the write fence where there is one.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type {
  Clock,
  Logger,
  PodEventSink,
  ProviderDeps,
  ProviderKubeClient,
  RemoteBackend,
  RemoteMakeOptions,
  RemoteProviderSetup,
  RemoteRead,
  RemoteRun,
  TerminatedReport,
} from "../../provider/mod.ts";
import { podEventSink, podKeyOf, standInPod } from "../../provider/mod.ts";
import type { AciUsage } from "./stats.ts";
import type { ContainerGroup } from "./azure.ts";
import type { NodeCapacity } from "./capacity.ts";
import type { AciConfig } from "./config.ts";
import { containerGroupFor } from "./request/container_group.ts";
import type { AciGroups } from "./client/groups.ts";
import { groupName, podOfTags } from "./names.ts";
import { identityFor } from "./request/identity.ts";
import { ReadSchedule } from "./client/read_schedule.ts";
import { endsOnDelete, runOfGroup } from "./status.ts";
import { podVolumes, registryCredentials } from "./volumes.ts";

/** What {@link AciBackend} needs. */
export interface AciBackendDeps {
  groups: Pick<AciGroups, "create" | "get" | "list" | "delete">;
  capacity: Pick<NodeCapacity, "groupLimits">;
  config: AciConfig;
  nodeName: string;
  clock: Clock;
  log: Logger;
  event: PodEventSink;
  kube?: ProviderKubeClient;
  fence?: ProviderDeps["fence"];
  kubeProxyKubeconfig?: string;
}

/** What the aci provider is made of, built in `./mod.ts`. */
export interface AciParts {
  config: AciConfig;
  groups: AciGroups;
  capacity: NodeCapacity;
  usage: AciUsage;
}

/** The kit's setup for ACI: this backend, and how the kit treats it. */
export function aciPodsSetup(
  parts: AciParts,
  deps: ProviderDeps,
  options: { kubeProxyKubeconfig?: string },
): () => RemoteProviderSetup<ContainerGroup, AciBackend> {
  const { config, groups, capacity } = parts;
  return () => ({
    backend: new AciBackend({
      ...deps,
      groups,
      capacity,
      config,
      event: podEventSink(deps, "vkubelet-aci"),
      kubeProxyKubeconfig: options.kubeProxyKubeconfig,
    }),
    alsoRun: (signal) => capacity.check(signal),
    intervalMs: config.statusInterval,
    // ACI runs no hooks; the kit runs them through ACI's exec.
    hooks: "exec",
    // ACI restarts a group's containers itself; the kit makes again only a group that is gone.
    backendRestarts: true,
    // A deletion seen before the groups are adopted would leave its group running.
    retryList: true,
    keepPodIP: true,
    // Not mirrored into --pod-log-dir unless the config asks: the kit's mirror follows each
    // container, which for ACI is a Containers_ListLogs GET per container every 2 s — 200 streams
    // make 100 reads a second, four times ARM's read limit for the whole subscription (see
    // ./client/read_budget.ts). A node of a few pods may (--pod-log-max-streams bounds it).
    ...(config.mirrorLogs ? {} : { mirrorLogs: false as const }),
  });
}

/** What the backend keeps of a pod, by uid. */
interface PodNotes {
  /** When the provider first took the pod (clock ms): a start time ACI leaves out. */
  sinceMs: number;
  /** ACI events already copied as Kubernetes events (`container/name/first/count`). */
  seenEvents: Set<string>;
  /** Adopted, events not read yet: those already there were copied before the restart. */
  adopted: boolean;
}

/** How many groups are read at once. */
const READ_CONCURRENCY = 16;

/** ACI for RemotePods; see the module doc. */
export class AciBackend implements RemoteBackend<ContainerGroup> {
  readonly #d: AciBackendDeps;
  readonly #pods = new Map<string, PodNotes>();
  readonly #schedule: ReadSchedule;

  constructor(deps: AciBackendDeps) {
    this.#d = deps;
    this.#schedule = new ReadSchedule({
      statusIntervalMs: deps.config.statusInterval,
      steadyIntervalMs: deps.config.steadyStatusInterval,
      readsPerSecond: deps.config.armReads.perSecond,
    });
  }

  /** The pod's group name. */
  groupOf(pod: Pod): string {
    const { namespace = "", name = "" } = pod.metadata ?? {};
    return groupName(this.#d.nodeName, namespace, name);
  }

  /** The groups this node made, by their tags. */
  async list(signal: AbortSignal): Promise<RemoteRun<ContainerGroup>[]> {
    const { groups, nodeName, clock } = this.#d;
    const runs: RemoteRun<ContainerGroup>[] = [];
    for (const group of await groups.list(signal)) {
      const id = podOfTags(group.tags);
      if (!id || id.node !== nodeName || !group.name) continue;
      const pod = standInPod(id, group);
      this.#pods.set(id.uid, { sinceMs: clock.now(), seenEvents: new Set(), adopted: true });
      runs.push({ ...this.#run(pod, group), restarts: id.run });
    }
    return runs;
  }

  async read(pod: Pod, signal?: AbortSignal): Promise<RemoteRun<ContainerGroup> | undefined> {
    const uid = pod.metadata?.uid ?? "";
    const group = await this.#d.groups.get(this.groupOf(pod), signal);
    if (!group) {
      this.#schedule.forget(uid);
      return undefined;
    }
    this.#schedule.saw(uid, group, this.#d.clock.now());
    this.#copyEvents(pod, group);
    return this.#run(pod, { ...group, name: group.name ?? this.groupOf(pod) });
  }

  /**
   * A GET of each pod's group that is due (`./client/read_schedule.ts`: those that can change
   * every round, steady ones less often), 16 at once, oldest read first; the others, and a group
   * that cannot be read now (a warning), are left as last read, as the kit would leave them.
   */
  async readMany(
    reads: RemoteRead<ContainerGroup>[],
    signal: AbortSignal,
  ): Promise<(RemoteRun<ContainerGroup> | undefined)[]> {
    const out: (RemoteRun<ContainerGroup> | undefined)[] = reads.map((r) => r.run);
    const uids = reads.map((r) => r.pod.metadata?.uid ?? "");
    const due = [...this.#schedule.due(uids, this.#d.clock.now())];
    const index = new Map(uids.map((uid, i) => [uid, i]));
    const order = due.map((uid) => index.get(uid)!);
    let next = 0;
    const worker = async () => {
      while (next < order.length && !signal.aborted) {
        const i = order[next++];
        const { pod, run } = reads[i];
        out[i] = await this.read(pod, signal).catch((err) => {
          this.#d.log.warning("{pod}: cannot read container group {group}: {err}", {
            pod: podKeyOf(pod),
            group: this.groupOf(pod),
            err: String(err),
          });
          return run;
        });
      }
    };
    await Promise.all(Array.from({ length: READ_CONCURRENCY }, worker));
    return out;
  }

  /**
   * PUTs the pod's group, after reading what its volumes and pull secrets name; a pod ACI
   * cannot run is refused before any read or write.
   */
  async make(
    pod: Pod,
    signal?: AbortSignal,
    options: RemoteMakeOptions = { restarts: 0 },
  ): Promise<RemoteRun<ContainerGroup>> {
    const { config, kube, fence, clock } = this.#d;
    const name = this.groupOf(pod);
    const sources = { kube, signal };
    const inputs = {
      nodeName: this.#d.nodeName,
      restarts: options.restarts,
      limits: this.#d.capacity.groupLimits(),
      // Names only, for the check before anything is read.
      volumes: (pod.spec?.volumes ?? []).map((v) => ({ name: v.name })) as Awaited<
        ReturnType<typeof podVolumes>
      >,
      credentials: [] as Awaited<ReturnType<typeof registryCredentials>>,
      kubeProxyKubeconfig: this.#d.kubeProxyKubeconfig,
    };
    containerGroupFor(pod, config, inputs); // refuses before any read or write
    inputs.volumes = await podVolumes(pod, sources);
    inputs.credentials = await registryCredentials(pod, sources);
    const { identity, notes } = await identityFor(pod, {
      allowed: config.allowedIdentities,
      kube,
      signal,
    });
    for (const note of notes) this.#d.event(pod, "Warning", "ManagedIdentityNotUsed", note);
    const body = containerGroupFor(pod, config, { ...inputs, identity });
    fence?.check(`creating container group ${name}`);
    const group = await this.#d.groups.create(name, body, signal);
    const uid = pod.metadata?.uid ?? "";
    this.#schedule.saw(uid, group, clock.now());
    if (!this.#pods.has(uid)) {
      this.#pods.set(uid, { sinceMs: clock.now(), seenEvents: new Set(), adopted: false });
    }
    if (options.restarts > 0) {
      this.#d.event(pod, "Normal", "ContainerGroupCreated", `made ${name} again`);
    }
    return this.#run(pod, { ...group, name: group.name ?? name });
  }

  /** DELETEs the pod's group and waits until ACI has; how its containers ended. */
  async remove(
    pod: Pod,
    signal?: AbortSignal,
    run?: RemoteRun<ContainerGroup>,
  ): Promise<Record<string, TerminatedReport>> {
    const name = this.groupOf(pod);
    this.#d.fence?.check(`deleting container group ${name}`);
    await this.#d.groups.delete(name, signal);
    this.#pods.delete(pod.metadata?.uid ?? "");
    this.#schedule.forget(pod.metadata?.uid ?? "");
    // Between groups (no run) the kit keeps the last group's ends.
    if (!run?.handle) return {};
    const why = `container group ${name} deleted: the pod was deleted`;
    return endsOnDelete(pod, run.handle, why, this.#d.clock.now());
  }

  /** Deletes a second group of a pod found on adoption (a name scheme changed). */
  async discard(_pod: Pod, run: RemoteRun<ContainerGroup>, signal: AbortSignal): Promise<void> {
    const name = run.handle?.name;
    if (!name) return;
    this.#d.fence?.check(`deleting container group ${name}`);
    await this.#d.groups.delete(name, signal);
  }

  /** A Warning event for a group deleted behind vkubelet's back. */
  ended(pod: Pod, _run: RemoteRun<ContainerGroup> | undefined, restart: boolean): void {
    const why = `container group ${this.groupOf(pod)} was deleted outside vkubelet`;
    const next = restart ? "; it will be made again" : "; the pod's restart policy ends the pod";
    this.#d.event(pod, "Warning", "ContainerGroupDeleted", `${why}${next}`);
  }

  /** A group as a run of `pod`. */
  #run(pod: Pod, group: ContainerGroup): RemoteRun<ContainerGroup> {
    const nowMs = this.#d.clock.now();
    const sinceMs = this.#pods.get(pod.metadata?.uid ?? "")?.sinceMs ?? nowMs;
    return runOfGroup(pod, group, { sinceMs, nowMs });
  }

  /** ACI's container events not seen yet, as Kubernetes events on the pod. */
  #copyEvents(pod: Pod, group: ContainerGroup): void {
    const uid = pod.metadata?.uid ?? "";
    let notes = this.#pods.get(uid);
    if (!notes) {
      this.#pods.set(
        uid,
        notes = { sinceMs: this.#d.clock.now(), seenEvents: new Set(), adopted: false },
      );
    }
    for (const c of [...group.containers, ...(group.initContainers ?? [])]) {
      for (const e of c.instanceView?.events ?? []) {
        const id = `${c.name}/${e.name}/${e.firstTimestamp?.toISOString()}/${e.count}`;
        if (notes.seenEvents.has(id)) continue;
        notes.seenEvents.add(id);
        if (notes.adopted) continue; // copied by the vkubelet that made the group
        const type = e.type === "Warning" ? "Warning" : "Normal";
        this.#d.event(pod, type, e.name ?? "ACIEvent", `${c.name}: ${e.message ?? ""}`);
      }
    }
    notes.adopted = false;
  }
}
