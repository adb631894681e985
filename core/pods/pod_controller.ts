/**
 * The pod controller: watches the pods bound to this node (`spec.nodeName=<node>`), makes the
 * provider run them, and writes their status back. Two keyed queues (spec towards the provider,
 * status towards the API) with bounded workers and backoff; a periodic resync so that no missed
 * event leaves a pod Pending or Terminating; restart reconciliation that deletes provider pods the
 * API no longer has only once the informer has synced, so a slow start never deletes healthy
 * pods (elotl/kip#107). One record per pod (`pod_state.ts`), forgotten in one place.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { Clock } from "../../base/clock.ts";
import type { Logger } from "../../base/log.ts";
import { SharedParts } from "../../k8s/watch/intern.ts";
import { isTerminalPhase, isTransient, podKeyOf, type Provider } from "../../provider/mod.ts";
import type { InformerLike, PodControllerApi } from "./api.ts";
import type { ConfigSources } from "./config_sources.ts";
import { PodCaches } from "./pod_caches.ts";
import type { EnvSources, PodAddresses, ResourceList } from "./env.ts";
import { withEphemeralWaiting } from "./ephemeral.ts";
import { EventRecorder } from "./events.ts";
import type { DaemonSetPodPolicy, PodContext } from "./pod_context.ts";
import { PodStates } from "./pod_state.ts";
import { canonicalEqual } from "./pod_status.ts";
import { removePodObject, sameSpec, syncPod } from "./pod_sync.ts";
import { pollLoop, resyncLoop, sweepOrphans } from "./resync.ts";
import { syncStatus } from "./status_sync.ts";
import { WorkQueue } from "./work_queue.ts";
import { type ProviderReachability, unreachable } from "./outage.ts";
import type { QueueMetrics } from "../standard_metrics.ts";
import type { Tracer } from "../tracing.ts";
import { tracedSync, traceEvent } from "./pod_traces.ts";

/** Events wait while at least this many pods wait in the sync and status queues (`holdWhile`). */
const EVENT_HOLD_BACKLOG = 10;

/** What {@link PodController} needs. Defaults are for `main.ts`/`app/run/` to override. */
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
   * client's QPS); default 64, so that status writes keep pace with an apiserver that creates
   * hundreds of pods a second instead of falling behind until the creates stop (with 32, each
   * write taking ~130 ms under that load, a new pod's status waited 0.3–0.6 s in the queue at
   * 1,000 pods: bench/reports/why.md, fourth round).
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
  /** The node's recorder, shared with its provider; default: one writing through `api.events`. */
  recorder?: EventRecorder;
  /** For the recorder: see `EventRecorderOptions.onUnsent`. */
  onUnsentEvents?: (count: number) => void;
  /**
   * Caches someone else runs (a `--leader-elect` standby's): the controller starts from them,
   * synced, with no watch of its own. Default: it builds its own and runs them in `run`.
   */
  caches?: PodCaches;
  /** ConfigMap/Secret watches shared by the nodes of one process (see `PodCachesDeps`). */
  configSources?: ConfigSources;
  /** The `workqueue_*` hooks of the queue named `name`; default none. */
  queueMetrics?: (name: string) => QueueMetrics;
  /** Told, once per pod, the seconds from first seeing it to writing it Running. */
  onPodStarted?: (seconds: number) => void;
  /** Spans for each pod's work (`pod_traces.ts`); default none (tracing off). */
  tracer?: Tracer;
  /**
   * Whether the provider reaches its backend (the node side's health monitor): while it does not,
   * statuses are kept and marked and nothing is recreated or swept (`outage.ts`). Default always.
   */
  reachability?: ProviderReachability;
}

/** Runs this node's pods in the provider; see the module doc. */
export class PodController {
  /** Resolves once the pod and service caches have synced and restart reconciliation ran. */
  readonly ready: Promise<void>;
  #ctx: PodContext;
  #deps: PodControllerDeps;
  #caches: PodCaches;
  /** The caches are ours to run (none were injected). */
  #ownsCaches: boolean;
  #resolveReady!: () => void;
  #rejectReady!: (reason: unknown) => void;

  constructor(deps: PodControllerDeps) {
    this.#deps = deps;
    this.ready = new Promise((resolve, reject) => {
      this.#resolveReady = resolve;
      this.#rejectReady = reject;
    });
    this.ready.catch(() => {});
    this.#ownsCaches = !deps.caches;
    // Caches of its own track only what the controller runs (pod_sync.ts), as before.
    this.#caches = deps.caches ?? new PodCaches({
      ...deps,
      trackConfigSources: false,
      configSources: deps.configSources,
    });
    this.#ctx = this.#buildContext(this.#caches.pods);
  }

  /** This node's pods as the API has them (the informer's cache); empty until synced. */
  pods(): Pod[] {
    return this.#ctx.pods.store.list();
  }

  /**
   * What the controller holds beyond the pods it runs: per-pod records, keys waiting on a retry
   * timer, and pods the event recorder keeps state for. All drop to 0 once every pod it saw is
   * gone; for tests and metrics.
   */
  get held(): { records: number; timers: number; events: number } {
    const { states, syncQueue, statusQueue, recorder } = this.#ctx;
    return {
      records: states.size,
      timers: syncQueue.delayedLength + statusQueue.delayedLength,
      events: recorder.trackedPods,
    };
  }

  /** Keys waiting in the sync and status queues; for metrics and tests. */
  get queueLengths(): { sync: number; status: number } {
    return { sync: this.#ctx.syncQueue.length, status: this.#ctx.statusQueue.length };
  }

  /** Runs until `signal` aborts, then waits for work in progress to finish. */
  async run(signal: AbortSignal): Promise<void> {
    const ctx = this.#ctx;
    const caches = this.#caches;
    const startedAt = this.#deps.clock.now();
    // Unsubscribed when this run ends (a term that ended leaves no callback in the provider);
    // `live` also covers a provider built against the older contract, which returned nothing.
    let live = true;
    const unsubscribe: (() => void)[] = [];
    const off = ctx.provider.notifyPods?.((pod) => live && this.#onProviderStatus(pod));
    if (typeof off === "function") unsubscribe.push(off);
    const offReachability = ctx.reachability?.onChange((h) => live && this.#onReachability(h));
    if (offReachability) unsubscribe.push(offReachability);
    // Our own caches tell us about every pod as they list it; shared ones are told below.
    if (this.#ownsCaches) unsubscribe.push(...this.#subscribe());
    const informers = this.#ownsCaches ? caches.run(signal) : undefined;
    const tasks: Promise<void>[] = [];
    const aborted = new Promise<void>((r) =>
      signal.addEventListener("abort", () => r(), { once: true })
    );
    const synced = caches.synced.then(() => true, () => false);
    if (await Promise.race([synced, aborted.then(() => false)]) && !signal.aborted) {
      if (!this.#ownsCaches) {
        // Synced already: the cached pods are this controller's first adds (no relist).
        unsubscribe.push(...this.#subscribe());
        for (const pod of ctx.pods.store.list()) this.#onAdd(pod);
      }
      // Started in an outage: what the provider lists now proves nothing; the resync sweeps later.
      if (!unreachable(ctx)) await sweepOrphans(ctx, signal);
      this.#resolveReady();
      const count = ctx.pods.store.list().length;
      ctx.log.info("pod controller ready: {count} pods bound to this node", { count });
      tasks.push(ctx.syncQueue.run(signal), ctx.statusQueue.run(signal));
      // How long a start (or a restart) took to hand every listed pod to the provider: the
      // figure an operator restarting a node with many pods wants (bench/ reads it too).
      ctx.syncQueue.drained().then(() => {
        if (signal.aborted) return;
        ctx.log.info(
          "start-up synced: {count} pods listed at start handled in {seconds} s, {retrying} to retry",
          {
            count,
            seconds: Number(((this.#deps.clock.now() - startedAt) / 1000).toFixed(2)),
            retrying: ctx.syncQueue.delayedLength,
          },
        );
      });
      tasks.push(resyncLoop(ctx, this.#deps.resyncPeriodMs ?? 60_000, signal));
      if (!ctx.provider.notifyPods) {
        tasks.push(pollLoop(ctx, this.#deps.statusPollIntervalMs ?? 5_000, signal));
      }
    } else {
      this.#rejectReady(signal.reason ?? new Error("pod informer stopped before it synced"));
    }
    await Promise.all(tasks);
    live = false;
    for (const off of unsubscribe) off();
    if (informers) await this.#awaitInformers(informers);
    await this.#flushEvents();
  }

  /** Handlers on the pod cache and the ConfigMap/Secret watches; returns their removers. */
  #subscribe(): (() => void)[] {
    const { pods, syncQueue } = this.#ctx;
    return [
      pods.on("add", (pod) => this.#onAdd(pod)),
      pods.on("update", (pod, old) => this.#onUpdate(pod, old)),
      pods.on("delete", (pod) => {
        traceEvent(this.#ctx, podKeyOf(pod), "delete", pod);
        syncQueue.add(podKeyOf(pod));
      }),
      this.#caches.onConfigChange((keys) => keys.forEach((k) => syncQueue.add(k))),
    ];
  }

  /**
   * The provider lost or regained its backend: every pod's status is written again, marked (or
   * unmarked), and on recovery asked of the provider afresh.
   */
  #onReachability(health: { healthy: boolean }): void {
    const ctx = this.#ctx;
    ctx.log.info(
      health.healthy
        ? "the provider reaches its backend again: refreshing every pod's status"
        : "the provider cannot reach its backend: pods keep their last status, marked",
    );
    for (const pod of ctx.pods.store.list()) {
      const key = podKeyOf(pod);
      const state = ctx.states.get(key);
      if (state && health.healthy) state.pollDue = true;
      ctx.statusQueue.add(key);
    }
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

  /** The given recorder (shared with the provider) or one of its own, holding for `ctx`. */
  #recorder(ctx: () => PodContext): EventRecorder {
    const d = this.#deps;
    const attached = {
      // Status first: events wait while a backlog of pods (ten or more) wait for their sync
      // or their status write; a single pod's events are not held back.
      holdWhile: () => ctx().syncQueue.length + ctx().statusQueue.length >= EVENT_HOLD_BACKLOG,
      ...(d.onUnsentEvents ? { onUnsent: d.onUnsentEvents } : {}),
    };
    if (d.recorder) {
      d.recorder.attach(attached);
      return d.recorder;
    }
    return new EventRecorder({
      api: d.api.events,
      clock: d.clock,
      log: d.log,
      nodeName: d.nodeName,
      ...attached,
    });
  }

  #buildContext(pods: InformerLike<Pod>): PodContext {
    const d = this.#deps;
    const workers = d.workers ?? 10;
    const retryAfter = (err: unknown) => isTransient(err) ? err.retryAfterMs ?? 0 : 0;
    const ctx: PodContext = {
      tracer: d.tracer,
      onPodStarted: d.onPodStarted,
      reachability: d.reachability,
      api: d.api,
      provider: d.provider,
      clock: d.clock,
      log: d.log,
      pods,
      recorder: this.#recorder(() => ctx),
      configSources: this.#caches.configSources,
      envSources: this.#envSources(() => ctx.configSources),
      resolvedParts: new SharedParts(),
      daemonSetPods: d.daemonSetPods ?? "skip",
      nodeIps: d.nodeIps ?? (() => []),
      states: new PodStates({
        // A forgotten pod holds no watch of its ConfigMaps and Secrets, and no retry timer.
        onForget: (key) => {
          ctx.configSources.untrack(key);
          ctx.syncQueue.drop(key);
          ctx.statusQueue.drop(key);
        },
      }),
      syncQueue: new WorkQueue({
        clock: d.clock,
        log: d.log,
        workers,
        retryAfter,
        // The names of virtual-kubelet's queues (node/podcontroller.go), for its dashboards.
        metrics: d.queueMetrics?.("syncPodsFromKubernetes"),
        process: async (key, signal) => {
          const started = d.clock.now();
          const took = () => (d.clock.now() - started) / 1000;
          try {
            // The result may ask the queue to come back later (a grace period running out).
            const result = await tracedSync(ctx, key, () => syncPod(ctx, key, signal));
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
        workers: d.statusWorkers ?? 64,
        metrics: d.queueMetrics?.("syncPodStatusFromProvider"),
        process: (key, signal) => this.#statusWork(key, signal),
      }),
      addresses: (key, pod) => this.#addresses(key, pod),
      removeObject: (pod) => {
        // Once per uid: every later sync of the deleting pod (its final status seen by the
        // informer, a provider report, a resync) would otherwise send a DELETE that gets 404.
        const deletion = ctx.states.get(podKeyOf(pod))?.deletion;
        if (!deletion || deletion.uid !== pod.metadata?.uid || deletion.removal) return;
        deletion.removal = pod;
        ctx.statusQueue.add(podKeyOf(pod));
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
    const state = ctx.states.get(key);
    const deletion = state?.deletion;
    if (!deletion?.removal || deletion.removed) {
      const poll = state?.pollDue ?? false;
      if (state) state.pollDue = false;
      return await syncStatus(ctx, key, signal, poll);
    }
    await syncStatus(ctx, key, signal, false).catch((err) => {
      ctx.log.debug("final status of {pod} not written: {err}", { pod: key, err: String(err) });
    });
    await removePodObject(ctx, deletion.removal, signal);
    deletion.removed = true;
  }

  #envSources(sources: () => ConfigSources): EnvSources {
    return {
      configMap: (ns, name, o) => sources().configMap(ns, name, o),
      secret: (ns, name, o) => sources().secret(ns, name, o),
      services: (ns) =>
        this.#caches.services.store.list().filter((s) =>
          s.metadata?.namespace === ns || s.metadata?.namespace === "default"
        ),
      allocatable: this.#deps.allocatable ?? (() => ({})),
    };
  }

  #addresses(key: string, pod: Pod): PodAddresses {
    const reported = this.#ctx.states.get(key)?.providerStatus;
    const status = reported && reported.uid === pod.metadata?.uid ? reported.status : pod.status;
    const hostIps = ips(status?.hostIPs, status?.hostIP);
    const nodeIps = hostIps.length ? hostIps : this.#ctx.nodeIps();
    const podIps = ips(status?.podIPs, status?.podIP);
    return { podIps: podIps.length || !pod.spec?.hostNetwork ? podIps : nodeIps, hostIps: nodeIps };
  }

  #onAdd(pod: Pod): void {
    const key = podKeyOf(pod);
    const state = this.#ctx.states.ensure(key);
    state.lastKnown = pod;
    state.firstSeen ??= this.#deps.clock.now();
    traceEvent(this.#ctx, key, "add", pod);
    this.#ctx.syncQueue.add(key);
    this.#ctx.statusQueue.add(key);
  }

  #onUpdate(pod: Pod, old: Pod): void {
    const key = podKeyOf(pod);
    const state = this.#ctx.states.get(key);
    // The newest copy, so the old one can be collected (one copy per pod, not two).
    if (state) state.lastKnown = pod;
    const deletionChanged = pod.metadata?.deletionTimestamp !== old.metadata?.deletionTimestamp;
    if (
      deletionChanged || !sameSpec(pod, old) ||
      isTerminalPhase(pod.status?.phase) !== isTerminalPhase(old.status?.phase)
    ) {
      traceEvent(this.#ctx, key, "update", pod);
      this.#ctx.syncQueue.add(key);
    } else if (state && state.syncedVersion === old.metadata?.resourceVersion) {
      // Nothing the provider runs changed (a status write, say): still in step.
      state.syncedVersion = pod.metadata?.resourceVersion ?? "";
    }
    // Ours or another writer's: the status worker writes again only if it differs from ours
    // (our own write it recognises by its resourceVersion, without comparing).
    if (pod.status !== old.status) this.#ctx.statusQueue.add(key);
  }

  #onProviderStatus(reported: Pod): void {
    const key = podKeyOf(reported);
    const ctx = this.#ctx;
    const state = ctx.states.get(key);
    // A pod the controller does not hold (gone and forgotten, or not listed yet): nothing to
    // write, and the status sync of a pod it lists later asks the provider first.
    if (!state) return;
    const previous = state.providerStatus;
    const next = withEphemeralWaiting(state, {
      uid: reported.metadata?.uid ?? "",
      status: reported.status ?? {},
    });
    state.providerStatus = next;
    ctx.statusQueue.add(key);
    const pod = ctx.pods.store.getByKey(key);
    if (!pod) return;
    if (pod.metadata?.deletionTimestamp) ctx.syncQueue.add(key);
    const ipsChanged = !canonicalEqual(
      ips(previous?.status.podIPs, previous?.status.podIP),
      ips(next.status.podIPs, next.status.podIP),
    );
    // Env was resolved before the provider assigned the IPs: resolve again and update.
    if (ipsChanged && usesIps(pod)) {
      ctx.syncQueue.add(key);
    }
  }
}

const IP_FIELDS = new Set(["status.podIP", "status.podIPs", "status.hostIP", "status.hostIPs"]);

/** True when an env var of any container takes an IP from the downward API. */
function usesIps(pod: Pod): boolean {
  const spec = pod.spec;
  for (const list of [spec?.initContainers, spec?.containers, spec?.ephemeralContainers]) {
    for (const container of list ?? []) {
      for (const env of container.env ?? []) {
        const path = env.valueFrom?.fieldRef?.fieldPath;
        if (path !== undefined && IP_FIELDS.has(path)) return true;
      }
    }
  }
  return false;
}

function ips(list: { ip?: string }[] | undefined, single: string | undefined): string[] {
  const fromList = (list ?? []).map((p) => p.ip ?? "").filter((ip) => ip !== "");
  return fromList.length ? fromList : single ? [single] : [];
}
