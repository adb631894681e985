/**
 * The ConfigMaps and Secrets that this node's pods reference in their env and volumes (Secret,
 * ConfigMap and projected sources), and only those: one
 * informer per object (`fieldSelector=metadata.name=<name>` in the pod's namespace), as the
 * kubelet's watch-based configmap and secret managers keep them. That is what the Node
 * authorizer allows a `system:node:<name>` identity — listing every ConfigMap in the cluster is
 * forbidden to it, and virtual-kubelet's cluster-wide informers need a broad ClusterRole.
 *
 * Objects are reference-counted by pod: a watch starts when the first pod refers to an object
 * and stops when the last one lets go. A change to a watched object re-queues the pods using it.
 * @module
 */
import type { ConfigMap, Pod, Secret } from "kubernetes-types/core/v1.d.ts";
import { isKubeNotFound } from "../../k8s/errors.ts";
import type { Clock } from "../../base/clock.ts";
import type { Logger } from "../../base/log.ts";
import type { CallOptions } from "../../provider/mod.ts";
import type { InformerLike, NamedObjectsApi } from "./api.ts";

/** Options for {@link ConfigSources}. */
export interface ConfigSourcesOptions {
  api: { configMaps: NamedObjectsApi<ConfigMap>; secrets: NamedObjectsApi<Secret> };
  clock: Clock;
  log: Logger;
  /** Called with the keys of the pods that use an object that changed (see also `subscribe`). */
  onChange?: (podKeys: string[]) => void;
}

type Kind = "configMaps" | "secrets";

interface Watched {
  kind: Kind;
  namespace: string;
  name: string;
  users: Set<string>;
  informer?: InformerLike<ConfigMap | Secret>;
  synced: boolean;
  stop: AbortController;
  running?: Promise<void>;
}

/** The `kind/namespace/name` keys of the ConfigMaps and Secrets a pod's env refers to. */
export function envReferences(pod: Pod): string[] {
  const ns = pod.metadata?.namespace ?? "";
  const refs = new Set<string>();
  const spec = pod.spec;
  for (
    const c of [
      ...spec?.initContainers ?? [],
      ...spec?.containers ?? [],
      ...spec?.ephemeralContainers ?? [],
    ]
  ) {
    for (const from of c.envFrom ?? []) {
      if (from.configMapRef?.name) refs.add(`configMaps/${ns}/${from.configMapRef.name}`);
      if (from.secretRef?.name) refs.add(`secrets/${ns}/${from.secretRef.name}`);
    }
    for (const v of c.env ?? []) {
      const cm = v.valueFrom?.configMapKeyRef?.name;
      const secret = v.valueFrom?.secretKeyRef?.name;
      if (cm) refs.add(`configMaps/${ns}/${cm}`);
      if (secret) refs.add(`secrets/${ns}/${secret}`);
    }
  }
  return [...refs];
}

/** The `kind/namespace/name` keys of the ConfigMaps and Secrets a pod's volumes use. */
export function volumeReferences(pod: Pod): string[] {
  const ns = pod.metadata?.namespace ?? "";
  const refs = new Set<string>();
  for (const volume of pod.spec?.volumes ?? []) {
    if (volume.secret?.secretName) refs.add(`secrets/${ns}/${volume.secret.secretName}`);
    if (volume.configMap?.name) refs.add(`configMaps/${ns}/${volume.configMap.name}`);
    for (const source of volume.projected?.sources ?? []) {
      if (source.secret?.name) refs.add(`secrets/${ns}/${source.secret.name}`);
      if (source.configMap?.name) refs.add(`configMaps/${ns}/${source.configMap.name}`);
    }
  }
  return [...refs];
}

/** Reference-counted per-object watches; see the module doc. */
export class ConfigSources {
  #o: ConfigSourcesOptions;
  #watched = new Map<string, Watched>();
  #byPod = new Map<string, string[]>();
  #signal?: AbortSignal;
  #running = new Set<Promise<void>>();
  #reading = new Map<string, Promise<ConfigMap | Secret | undefined>>();
  #listeners = new Set<(podKeys: string[]) => void>();

  constructor(options: ConfigSourcesOptions) {
    this.#o = options;
  }

  /**
   * Calls `listener` too with the keys of the pods whose object changed; returns the
   * unsubscribe. For watches shared by several pod controllers (the nodes of one process).
   */
  subscribe(listener: (podKeys: string[]) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** `kind/namespace/name` of every object watched now. */
  get watched(): string[] {
    return [...this.#watched.keys()];
  }

  /** Sets what `podKey` refers to; starts and stops watches as counts reach and leave zero. */
  track(podKey: string, pod: Pod): void {
    const next = [...new Set([...envReferences(pod), ...volumeReferences(pod)])];
    const previous = this.#byPod.get(podKey) ?? [];
    for (const ref of next) if (!previous.includes(ref)) this.#acquire(ref, podKey);
    for (const ref of previous) if (!next.includes(ref)) this.#release(ref, podKey);
    if (next.length > 0) this.#byPod.set(podKey, next);
    else this.#byPod.delete(podKey);
  }

  /** Forgets a pod; objects no other pod uses stop being watched. */
  untrack(podKey: string): void {
    for (const ref of this.#byPod.get(podKey) ?? []) this.#release(ref, podKey);
    this.#byPod.delete(podKey);
  }

  /** The ConfigMap from the watch cache once synced, else straight from the API. */
  configMap(
    namespace: string,
    name: string,
    options: CallOptions = {},
  ): Promise<ConfigMap | undefined> {
    return this.#read("configMaps", namespace, name, options) as Promise<ConfigMap | undefined>;
  }

  /** The Secret from the watch cache once synced, else straight from the API. */
  secret(namespace: string, name: string, options: CallOptions = {}): Promise<Secret | undefined> {
    return this.#read("secrets", namespace, name, options) as Promise<Secret | undefined>;
  }

  /** Runs the watches until `signal` aborts, then waits for them to stop. */
  async run(signal: AbortSignal): Promise<void> {
    this.#signal = signal;
    for (const watched of this.#watched.values()) this.#start(watched);
    if (!signal.aborted) {
      await new Promise<void>((r) => signal.addEventListener("abort", () => r(), { once: true }));
    }
    while (this.#running.size > 0) await Promise.all(this.#running);
  }

  async #read(kind: Kind, namespace: string, name: string, options: CallOptions) {
    const watched = this.#watched.get(`${kind}/${namespace}/${name}`);
    if (watched?.synced && watched.informer) {
      return watched.informer.store.getByKey(`${namespace}/${name}`);
    }
    // Every pod's service-account volume names its namespace's kube-root-ca.crt: until the
    // watch has synced, pods syncing at the same time share one GET instead of one each.
    const key = `${kind}/${namespace}/${name}`;
    const inFlight = this.#reading.get(key);
    if (inFlight) return await inFlight;
    const reading = this.#get(kind, namespace, name, options);
    this.#reading.set(key, reading);
    try {
      return await reading;
    } finally {
      this.#reading.delete(key);
    }
  }

  async #get(kind: Kind, namespace: string, name: string, options: CallOptions) {
    try {
      return await this.#o.api[kind].get(namespace, name, options);
    } catch (err) {
      if (isKubeNotFound(err)) return undefined;
      throw err;
    }
  }

  #acquire(ref: string, podKey: string): void {
    let watched = this.#watched.get(ref);
    if (!watched) {
      const [kind, namespace, name] = ref.split("/") as [Kind, string, string];
      watched = {
        kind,
        namespace,
        name,
        users: new Set(),
        synced: false,
        stop: new AbortController(),
      };
      this.#watched.set(ref, watched);
      if (this.#signal) this.#start(watched);
    }
    watched.users.add(podKey);
  }

  #release(ref: string, podKey: string): void {
    const watched = this.#watched.get(ref);
    if (!watched) return;
    watched.users.delete(podKey);
    if (watched.users.size > 0) return;
    watched.stop.abort();
    this.#watched.delete(ref);
  }

  #start(watched: Watched): void {
    if (watched.running || !this.#signal) return;
    const { kind, namespace, name } = watched;
    const informer = this.#o.api[kind].informer({
      namespace,
      fieldSelector: `metadata.name=${name}`,
      clock: this.#o.clock,
      name: `${kind}/${namespace}/${name}`,
    }) as InformerLike<ConfigMap | Secret>;
    watched.informer = informer;
    const changed = () => {
      if (!watched.synced) return;
      this.#o.log.debug("{kind} {namespace}/{name} changed; re-syncing {count} pods", {
        kind,
        namespace,
        name,
        count: watched.users.size,
      });
      const keys = [...watched.users];
      this.#o.onChange?.(keys);
      for (const listener of this.#listeners) listener(keys);
    };
    informer.on("add", changed);
    informer.on("update", changed);
    informer.on("delete", changed);
    informer.synced.then(() => watched.synced = true, () => {});
    const signal = AbortSignal.any([this.#signal, watched.stop.signal]);
    watched.running = informer.run(signal).catch((err) => {
      this.#o.log.warn("watch of {kind} {namespace}/{name} ended: {err}", {
        kind,
        namespace,
        name,
        err: err instanceof Error ? err.message : String(err),
      });
    });
    const running = watched.running;
    this.#running.add(running);
    running.finally(() => this.#running.delete(running));
  }
}
