/**
 * The pod controller: watches the pods bound to this node (`spec.nodeName=<node>`), makes the
 * provider run them, and writes their status back. Two keyed queues (spec towards the provider,
 * status towards the API) with bounded workers and backoff; a periodic resync so that no missed
 * event leaves a pod Pending or Terminating; restart reconciliation that deletes provider pods the
 * API no longer has only once the informer has synced, so a slow start never deletes healthy
 * pods (elotl/kip#107).
 * @module
 */
import type { Pod, Service } from "kubernetes-types/core/v1.d.ts";
import { type Clock, jitter } from "../../base/clock.ts";
import type { Logger } from "../../base/log.ts";
import { isNotFound, isTransient, type Provider } from "../../provider/mod.ts";
import { type InformerLike, type PodControllerApi, podKey } from "./api.ts";
import { ConfigSources } from "./config_sources.ts";
import type { EnvSources, PodAddresses, ResourceList } from "./env.ts";
import { withEphemeralContainers } from "./ephemeral.ts";
import { EventRecorder } from "./events.ts";
import type { DaemonSetPodPolicy, PodContext, UidStatus } from "./pod_context.ts";
import { canonicalJson, isTerminal } from "./pod_status.ts";
import { removePodObject, sameSpec, syncPod } from "./pod_sync.ts";
import { syncStatus } from "./status_sync.ts";
import { WorkQueue } from "./work_queue.ts";

/** Events wait while at least this many pods wait in the sync and status queues (`holdWhile`). */
const EVENT_HOLD_BACKLOG = 10;

/** What {@link PodController} needs. Defaults are for `main.ts`/`app/run.ts` to override. */
export interface PodControllerDeps {
  api: PodControllerApi;
  provider: Provider;
  clock: Clock;
  log: Logger;
  nodeName: string;
  /** Workers of the sync queue, which calls the provider (`--pod-sync-workers`); default 10. */
  workers?: number;
  /**
   * Workers of the status queue, which only writes pod status to the API (bounded by the
   * client's QPS); default 32, so that status writes keep pace with an apiserver that creates
   * hundreds of pods a second instead of falling behind until the creates stop.
   */
  statusWorkers?: number;
  /** Told how long each sync with the provider took and whether it worked; for metrics. */
  onSync?: (seconds: number, ok: boolean) => void;
  /** Every pod is synced again this often (`--full-resync-period`); default 60 s. */
  resyncPeriodMs?: number;
  /** How often statuses are polled from a provider without `notifyPods`; default 5 s. */
  statusPollIntervalMs?: number;
  /** The node's IPs (status.hostIP(s) and the downward API); default none. */
  nodeIps?: () => string[];
  /** The node's allocatable, the downward API's default for unset limits; default none. */
  allocatable?: () => ResourceList;
  /** Pods of DaemonSets: `skip` (default) never hands them to the provider; `run` does. */
  daemonSetPods?: DaemonSetPodPolicy;
  /** Defaults to a recorder writing through `api.events`. */
  recorder?: EventRecorder;
}

/** Runs this node's pods in the provider; see the module doc. */
export class PodController {
  /** Resolves once the pod and service caches have synced and restart reconciliation ran. */
  readonly ready: Promise<void>;
  #ctx: PodContext;
  #deps: PodControllerDeps;
  #services: InformerLike<Service>;
  #pollDue = new Set<string>();
  #resolveReady!: () => void;
  #rejectReady!: (reason: unknown) => void;

  constructor(deps: PodControllerDeps) {
    this.#deps = deps;
    this.ready = new Promise((resolve, reject) => {
      this.#resolveReady = resolve;
      this.#rejectReady = reject;
    });
    this.ready.catch(() => {});
    const { api, clock, nodeName } = deps;
    const pods = api.pods.informer({
      fieldSelector: `spec.nodeName=${nodeName}`,
      clock,
      name: "pods",
    });
    this.#services = api.services.informer({ clock, name: "services" });
    this.#ctx = this.#buildContext(pods);
    pods.on("add", (pod) => this.#onAdd(pod));
    pods.on("update", (pod, old) => this.#onUpdate(pod, old));
    pods.on("delete", (pod) => this.#ctx.syncQueue.add(podKey(pod)));
  }

  /** This node's pods as the API has them (the informer's cache); empty until synced. */
  pods(): Pod[] {
    return this.#ctx.pods.store.list();
  }

  /** Keys waiting in the sync and status queues; for metrics and tests. */
  get queueLengths(): { sync: number; status: number } {
    return { sync: this.#ctx.syncQueue.length, status: this.#ctx.statusQueue.length };
  }

  /** Runs until `signal` aborts, then waits for work in progress to finish. */
  async run(signal: AbortSignal): Promise<void> {
    const ctx = this.#ctx;
    ctx.provider.notifyPods?.((pod) => this.#onProviderStatus(pod));
    const informers = Promise.all([ctx.pods.run(signal), this.#services.run(signal)]);
    const tasks = [ctx.configSources.run(signal)];
    const aborted = new Promise<void>((r) =>
      signal.addEventListener("abort", () => r(), { once: true })
    );
    const synced = Promise.all([ctx.pods.synced, this.#services.synced]).then(
      () => true,
      () => false,
    );
    if (await Promise.race([synced, aborted.then(() => false)]) && !signal.aborted) {
      await this.#sweepOrphans(signal);
      this.#resolveReady();
      ctx.log.info("pod controller ready: {count} pods bound to this node", {
        count: ctx.pods.store.list().length,
      });
      tasks.push(ctx.syncQueue.run(signal), ctx.statusQueue.run(signal), this.#resyncLoop(signal));
      if (!ctx.provider.notifyPods) tasks.push(this.#pollLoop(signal));
    } else {
      this.#rejectReady(signal.reason ?? new Error("pod informer stopped before it synced"));
    }
    await Promise.all(tasks);
    await this.#awaitInformers(informers);
    await this.#flushEvents();
  }

  /** Sends the queued events, for at most 5 s: shutdown must not wait on a long event queue. */
  async #flushEvents(): Promise<void> {
    const deadline = new AbortController();
    const stop = new AbortController();
    this.#deps.clock.sleep(5_000, stop.signal).then(() => deadline.abort(), () => {});
    await this.#ctx.recorder.flush({ signal: deadline.signal });
    stop.abort();
  }

  /** Waits for the informers to stop, but not forever: shutdown must not hang on a stuck watch. */
  async #awaitInformers(informers: Promise<unknown>): Promise<void> {
    const grace = new AbortController();
    const timedOut = this.#deps.clock.sleep(5_000, grace.signal).then(() => true, () => false);
    const stuck = await Promise.race([informers.then(() => false, () => false), timedOut]);
    grace.abort();
    if (stuck) {
      this.#deps.log.warn("the pod or service watch did not stop within 5 s of shutdown");
    }
  }

  #buildContext(pods: InformerLike<Pod>): PodContext {
    const d = this.#deps;
    const workers = d.workers ?? 10;
    const retryAfter = (err: unknown) => isTransient(err) ? err.retryAfterMs ?? 0 : 0;
    const ctx: PodContext = {
      api: d.api,
      provider: withEphemeralContainers(
        d.provider,
        (pod, event) => ctx.recorder.record(pod, event),
      ),
      clock: d.clock,
      log: d.log,
      pods,
      recorder: d.recorder ?? new EventRecorder({
        api: d.api.events,
        clock: d.clock,
        log: d.log,
        nodeName: d.nodeName,
        // Status first: events wait while a backlog of pods (ten or more) wait for their sync
        // or their status write; a single pod's events are not held back.
        holdWhile: () => ctx.syncQueue.length + ctx.statusQueue.length >= EVENT_HOLD_BACKLOG,
      }),
      configSources: new ConfigSources({
        api: d.api,
        clock: d.clock,
        log: d.log,
        onChange: (keys) => keys.forEach((k) => ctx.syncQueue.add(k)),
      }),
      envSources: this.#envSources(() => ctx.configSources),
      daemonSetPods: d.daemonSetPods ?? "skip",
      nodeIps: d.nodeIps ?? (() => []),
      lastKnown: new Map(),
      providerStatus: new Map(),
      localStatus: new Map(),
      statusWritten: new Map(),
      statusInFlight: new Map(),
      syncedVersion: new Map(),
      deleting: new Map(),
      syncQueue: new WorkQueue({
        clock: d.clock,
        log: d.log,
        workers,
        retryAfter,
        process: async (key, signal) => {
          const started = d.clock.now();
          const took = () => (d.clock.now() - started) / 1000;
          try {
            // The result may ask the queue to come back later (a grace period running out).
            const result = await syncPod(ctx, key, signal);
            d.onSync?.(took(), true);
            return result;
          } catch (err) {
            d.onSync?.(took(), false);
            throw err;
          }
        },
      }),
      statusQueue: new WorkQueue({
        clock: d.clock,
        log: d.log,
        workers: d.statusWorkers ?? 32,
        process: (key, signal) => this.#statusWork(key, signal),
      }),
      addresses: (key, pod) => this.#addresses(key, pod),
      setLocalStatus: (pod, status) => {
        ctx.localStatus.set(podKey(pod), { uid: pod.metadata?.uid ?? "", status });
        ctx.statusQueue.add(podKey(pod));
      },
      removals: new Map(),
      removeObject: (pod) => {
        ctx.removals.set(podKey(pod), pod);
        ctx.statusQueue.add(podKey(pod));
      },
    };
    return ctx;
  }

  /**
   * One key of the status queue: its status, and for a deleting pod whose containers stopped,
   * the final status (best effort) and then the object's removal. Removal runs here rather than
   * in the sync queue so that 10,000 deletions get the status queue's workers, not the
   * provider's.
   */
  async #statusWork(key: string, signal: AbortSignal): Promise<void> {
    const ctx = this.#ctx;
    const removal = ctx.removals.get(key);
    if (!removal) return await syncStatus(ctx, key, signal, this.#pollDue.delete(key));
    await syncStatus(ctx, key, signal, false).catch((err) => {
      ctx.log.debug("final status of {pod} not written: {err}", { pod: key, err: String(err) });
    });
    await removePodObject(ctx, removal, signal);
    if (ctx.removals.get(key) === removal) ctx.removals.delete(key);
  }

  #envSources(sources: () => ConfigSources): EnvSources {
    return {
      configMap: (ns, name, o) => sources().configMap(ns, name, o),
      secret: (ns, name, o) => sources().secret(ns, name, o),
      services: (ns) =>
        this.#services.store.list().filter((s) =>
          s.metadata?.namespace === ns || s.metadata?.namespace === "default"
        ),
      allocatable: this.#deps.allocatable ?? (() => ({})),
    };
  }

  #addresses(key: string, pod: Pod): PodAddresses {
    const reported = this.#ctx.providerStatus.get(key);
    const status = reported && reported.uid === pod.metadata?.uid ? reported.status : pod.status;
    const hostIps = ips(status?.hostIPs, status?.hostIP);
    const nodeIps = hostIps.length ? hostIps : this.#ctx.nodeIps();
    const podIps = ips(status?.podIPs, status?.podIP);
    return { podIps: podIps.length || !pod.spec?.hostNetwork ? podIps : nodeIps, hostIps: nodeIps };
  }

  #onAdd(pod: Pod): void {
    const key = podKey(pod);
    this.#ctx.lastKnown.set(key, pod);
    this.#ctx.syncQueue.add(key);
    this.#ctx.statusQueue.add(key);
  }

  #onUpdate(pod: Pod, old: Pod): void {
    const key = podKey(pod);
    // The newest copy, so the old one can be collected (one copy per pod, not two).
    if (this.#ctx.lastKnown.has(key)) this.#ctx.lastKnown.set(key, pod);
    const deletionChanged = pod.metadata?.deletionTimestamp !== old.metadata?.deletionTimestamp;
    if (deletionChanged || !sameSpec(pod, old) || isTerminal(pod) !== isTerminal(old)) {
      this.#ctx.syncQueue.add(key);
    } else if (this.#ctx.syncedVersion.get(key) === old.metadata?.resourceVersion) {
      // Nothing the provider runs changed (a status write, say): still in step.
      this.#ctx.syncedVersion.set(key, pod.metadata?.resourceVersion ?? "");
    }
    // Ours or another writer's: the status worker writes again only if it differs from ours
    // (our own write it recognises by its resourceVersion, without comparing).
    if (pod.status !== old.status) this.#ctx.statusQueue.add(key);
  }

  #onProviderStatus(reported: Pod): void {
    const key = podKey(reported);
    const ctx = this.#ctx;
    const previous = ctx.providerStatus.get(key);
    const next: UidStatus = { uid: reported.metadata?.uid ?? "", status: reported.status ?? {} };
    ctx.providerStatus.set(key, next);
    ctx.statusQueue.add(key);
    const pod = ctx.pods.store.getByKey(key);
    if (!pod) return;
    if (pod.metadata?.deletionTimestamp) ctx.syncQueue.add(key);
    const ipsChanged = canonicalJson(ips(previous?.status.podIPs, previous?.status.podIP)) !==
      canonicalJson(ips(next.status.podIPs, next.status.podIP));
    // Env was resolved before the provider assigned the IPs: resolve again and update.
    if (ipsChanged && /"status\.(pod|host)IPs?"/.test(JSON.stringify(pod.spec))) {
      ctx.syncQueue.add(key);
    }
  }

  /** The provider's pods, or undefined (logged) when it cannot list them. */
  async #providerPods(signal: AbortSignal): Promise<Pod[] | undefined> {
    try {
      return await this.#ctx.provider.listPods({ signal });
    } catch (err) {
      this.#ctx.log.warn(
        "could not list the provider's pods; orphans stay until the next resync: {err}",
        { err: String(err) },
      );
      return undefined;
    }
  }

  /** Deletes provider pods of this node whose API object is gone (or is another uid). */
  async #sweepOrphans(signal: AbortSignal, running?: Pod[]): Promise<void> {
    const ctx = this.#ctx;
    running ??= await this.#providerPods(signal);
    for (const pod of running ?? []) {
      const current = ctx.pods.store.getByKey(podKey(pod));
      if (current && current.metadata?.uid === pod.metadata?.uid) continue;
      ctx.log.info("deleting {pod} from the provider: the API no longer has it", {
        pod: podKey(pod),
      });
      await ctx.provider.deletePod(pod, { signal }).catch((err) => {
        if (!isNotFound(err)) {
          ctx.log.warn("could not delete orphan {pod}: {err}", {
            pod: podKey(pod),
            err: String(err),
          });
        }
      });
    }
  }

  async #resyncLoop(signal: AbortSignal): Promise<void> {
    const ctx = this.#ctx;
    const period = this.#deps.resyncPeriodMs ?? 60_000;
    while (!signal.aborted) {
      if (!await ctx.clock.sleep(jitter(period, 0.1), signal).then(() => true, () => false)) return;
      const running = await this.#providerPods(signal);
      const runningUids = new Map(running?.map((p) => [podKey(p), p.metadata?.uid]));
      for (const pod of ctx.pods.store.list()) {
        const key = podKey(pod);
        // Unchanged since the provider last ran it, and the provider still has it: nothing to
        // do (this is what keeps a resync of 10,000 pods cheap). Anything else is synced.
        const unchanged = running !== undefined && !pod.metadata?.deletionTimestamp &&
          ctx.syncedVersion.get(key) === pod.metadata?.resourceVersion &&
          runningUids.get(key) === pod.metadata?.uid;
        if (!unchanged) ctx.syncQueue.add(key);
        ctx.statusQueue.add(key);
      }
      // Deletes the informer may have missed while vkubelet was busy or disconnected.
      for (const key of ctx.lastKnown.keys()) {
        if (!ctx.pods.store.getByKey(key)) ctx.syncQueue.add(key);
      }
      await this.#sweepOrphans(signal, running);
    }
  }

  async #pollLoop(signal: AbortSignal): Promise<void> {
    const ctx = this.#ctx;
    const interval = this.#deps.statusPollIntervalMs ?? 5_000;
    while (!signal.aborted) {
      if (!await ctx.clock.sleep(interval, signal).then(() => true, () => false)) return;
      for (const pod of ctx.pods.store.list()) {
        if (isTerminal(pod) && !pod.metadata?.deletionTimestamp) continue;
        this.#pollDue.add(podKey(pod));
        ctx.statusQueue.add(podKey(pod));
      }
    }
  }
}

function ips(list: { ip?: string }[] | undefined, single: string | undefined): string[] {
  const fromList = (list ?? []).map((p) => p.ip ?? "").filter((ip) => ip !== "");
  return fromList.length ? fromList : single ? [single] : [];
}
