/**
 * The read-only caches the pod controller works from — this node's pods, every Service, and the
 * ConfigMaps and Secrets the pods' env refers to — as one object that can outlive a controller.
 * A {@link PodController} builds its own when none is given; under `--leader-elect` a standby
 * runs one from start-up and hands it to each term's controller, which then starts from a synced
 * cache without a list of its own (as client-go's shared informers are handed to controllers,
 * kubernetes/client-go `tools/cache/shared_informer.go`: a handler added to a started informer
 * is told about what is cached already).
 *
 * The caches track every pod's ConfigMap and Secret references themselves (so the watches are
 * warm before a term's first sync); a controller that shares them receives the changes through
 * {@link PodCaches.onConfigChange}.
 * @module
 */
import type { Pod, Service } from "kubernetes-types/core/v1.d.ts";
import type { Clock } from "../../base/clock.ts";
import type { Logger } from "../../base/log.ts";
import { internPodParts, SharedParts } from "../../k8s/watch/intern.ts";
import { isTerminalPhase, podKeyOf } from "../../provider/mod.ts";
import type { InformerLike, PodControllerApi } from "./api.ts";
import { ConfigSources } from "./config_sources.ts";

/** What {@link PodCaches} needs. */
export interface PodCachesDeps {
  api: Pick<PodControllerApi, "pods" | "services" | "configMaps" | "secrets">;
  clock: Clock;
  log: Logger;
  nodeName: string;
  /**
   * Track each cached pod's ConfigMaps and Secrets from the pod events (a shared cache); off
   * when one controller owns the caches and tracks what it runs itself. Default true.
   */
  trackConfigSources?: boolean;
  /**
   * ConfigMap and Secret watches shared with other nodes' caches and run by their owner (the
   * node set of `--nodes`): one watch per object for the process, not one per node. These
   * caches hear only the changes that concern their own pods. Default: watches of their own.
   */
  configSources?: ConfigSources;
}

/** This node's pods, the Services, and the pods' ConfigMaps and Secrets; see the module doc. */
export class PodCaches {
  /** This node's pods (`spec.nodeName=<node>`). */
  readonly pods: InformerLike<Pod>;
  /** Every Service (for the service-link env). */
  readonly services: InformerLike<Service>;
  /** Per-name watches of the ConfigMaps and Secrets the pods refer to. */
  readonly configSources: ConfigSources;
  /** Resolves once the pod and Service caches have synced; rejects if `run` stops first. */
  readonly synced: Promise<void>;
  #listeners = new Set<(podKeys: string[]) => void>();
  #running = false;
  /** The config sources are someone else's to run. */
  #sharedSources: boolean;

  constructor(deps: PodCachesDeps) {
    const { api, clock, log, nodeName } = deps;
    // Pods of one template share their equal parts in the cache (k8s/watch/intern.ts).
    const parts = new SharedParts();
    this.pods = api.pods.informer({
      fieldSelector: `spec.nodeName=${nodeName}`,
      clock,
      name: "pods",
      intern: (pod, previous) => internPodParts(pod, parts, previous),
    });
    this.services = api.services.informer({ clock, name: "services" });
    this.#sharedSources = deps.configSources !== undefined;
    this.configSources = deps.configSources ?? new ConfigSources({
      api,
      clock,
      log,
      onChange: (keys) => this.#notify(keys),
    });
    this.synced = Promise.all([this.pods.synced, this.services.synced]).then(() => {});
    this.synced.catch(() => {}); // Rejected only when run stops first; callers may not await it.
    if (deps.trackConfigSources ?? true) {
      const track = (pod: Pod) => {
        // The controller stops using a finished pod's objects (pod_sync.ts); so do the caches.
        if (isTerminalPhase(pod.status?.phase)) this.configSources.untrack(podKeyOf(pod));
        else this.configSources.track(podKeyOf(pod), pod);
      };
      this.pods.on("add", track);
      this.pods.on("update", track);
      this.pods.on("delete", (pod) => this.configSources.untrack(podKeyOf(pod)));
    }
  }

  /** True while {@link run} runs. */
  get running(): boolean {
    return this.#running;
  }

  /** Calls `listener` with the keys of the pods whose ConfigMap or Secret changed; unsubscribes. */
  onConfigChange(listener: (podKeys: string[]) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Lists and watches until `signal` aborts; resolves once every watch has stopped. */
  async run(signal: AbortSignal): Promise<void> {
    if (this.#running) throw new TypeError("these pod caches are already running");
    this.#running = true;
    const unsubscribe = this.#sharedSources
      ? this.configSources.subscribe((keys) =>
        this.#notify(keys.filter((key) => this.pods.store.getByKey(key) !== undefined))
      )
      : undefined;
    try {
      await Promise.all([
        this.pods.run(signal),
        this.services.run(signal),
        this.#sharedSources ? undefined : this.configSources.run(signal),
      ]);
    } finally {
      unsubscribe?.();
      this.#running = false;
    }
  }

  #notify(keys: string[]): void {
    if (keys.length > 0) this.#listeners.forEach((listener) => listener(keys));
  }
}
