/**
 * Copies the ConfigMaps and Secrets that forwarded pods mount into cluster B and keeps them in
 * step. Each object is watched in A by name (`metadata.name=<name>` in the pod's namespace), the
 * only way a node identity may read it — the Node authorizer allows exactly the objects its
 * pods refer to (as `core/pods/config_sources.ts` does for env). Copies are reference-counted by
 * pod: the first pod that needs an object starts its watch and copy, the last one to let go
 * stops the watch and deletes the copy. Env references need nothing here: the core resolved them.
 * @module
 */
import type { ConfigMap, Secret } from "kubernetes-types/core/v1.d.ts";
import { isAlreadyExists, isConflict, isKubeNotFound, type KubeClient } from "../../../k8s/mod.ts";
import type { Logger, ProviderKubeClient } from "../../../provider/mod.ts";
import { markLabels, MARKS } from "../names.ts";
import type { Placement } from "../placement.ts";
import type { Dependency } from "../translate/translate.ts";

/** What {@link DependencyMirror} needs. */
export interface DependencyMirrorOptions {
  upstream: Pick<ProviderKubeClient, "configMaps" | "secrets">;
  downstream: Pick<KubeClient, "configMaps" | "secrets">;
  /** Where copies go in B. */
  placement: Placement;
  nodeName: string;
  log: Logger;
  signal: AbortSignal;
}

interface Mirrored {
  dep: Dependency;
  users: Set<string>;
  stop: AbortController;
  /** Held here: a signal from AbortSignal.any must stay referenced while the watch uses it. */
  signal: AbortSignal;
  synced: Promise<void>;
  running: Promise<void>;
  /** Serialises writes to B for this object. */
  writes: Promise<void>;
}

type Object = ConfigMap | Secret;

/** Reference-counted copies of A's ConfigMaps and Secrets in B; see the module doc. */
export class DependencyMirror {
  #o: DependencyMirrorOptions;
  #mirrored = new Map<string, Mirrored>();
  #byPod = new Map<string, string[]>();
  /** Watches stopped by {@link standby}, awaited by {@link close}. */
  #stopping = new Set<Promise<void>>();

  constructor(options: DependencyMirrorOptions) {
    this.#o = options;
  }

  /** `kind/namespace/name` of every object mirrored now. */
  get mirrored(): string[] {
    return [...this.#mirrored.keys()];
  }

  /**
   * Sets what `podKey` needs; starts and stops mirrors as counts reach and leave zero, and
   * resolves once every needed object has been copied (or found missing in A) at least once.
   */
  async track(podKey: string, deps: Dependency[], options: { signal?: AbortSignal } = {}) {
    const next = deps.map(depKey);
    const previous = this.#byPod.get(podKey) ?? [];
    for (const [i, key] of next.entries()) {
      if (!previous.includes(key)) this.#acquire(key, deps[i], podKey);
    }
    for (const key of previous) if (!next.includes(key)) this.#release(key, podKey);
    if (next.length > 0) this.#byPod.set(podKey, next);
    else this.#byPod.delete(podKey);
    const waits = next.map((key) => this.#mirrored.get(key)!.synced);
    const aborted = new Promise<never>((_, reject) => {
      options.signal?.addEventListener("abort", () => reject(options.signal!.reason), {
        once: true,
      });
    });
    await Promise.race([Promise.all(waits), aborted]);
  }

  /** Forgets a pod; objects no other pod needs stop being mirrored and their copies go. */
  untrack(podKey: string): void {
    for (const key of this.#byPod.get(podKey) ?? []) this.#release(key, podKey);
    this.#byPod.delete(podKey);
  }

  /**
   * Stops every watch and forgets every pod, leaving the copies in B to the pods that use them
   * (`--leader-elect`: this replica stopped leading; the new leader keeps them in step).
   */
  standby(): void {
    for (const m of this.#mirrored.values()) {
      m.stop.abort();
      const running = m.running.catch(() => {});
      this.#stopping.add(running);
      running.finally(() => this.#stopping.delete(running));
    }
    this.#mirrored.clear();
    this.#byPod.clear();
  }

  /** Waits for every watch to stop (after the provider's signal aborted). */
  async close(): Promise<void> {
    for (const m of this.#mirrored.values()) m.stop.abort();
    await Promise.all([...this.#mirrored.values()].map((m) => m.running));
    await Promise.all(this.#stopping);
  }

  #acquire(key: string, dep: Dependency, podKey: string): void {
    const existing = this.#mirrored.get(key);
    if (existing) {
      existing.users.add(podKey);
      return;
    }
    const stop = new AbortController();
    const signal = AbortSignal.any([stop.signal, this.#o.signal]);
    const api = this.#o.upstream[dep.kind];
    const informer = api.informer({
      namespace: dep.namespace,
      fieldSelector: `metadata.name=${dep.name}`,
      name: `${dep.kind}/${dep.namespace}/${dep.name}`,
    });
    const mirrored: Mirrored = {
      dep,
      users: new Set([podKey]),
      stop,
      signal,
      synced: Promise.resolve(),
      running: Promise.resolve(),
      writes: Promise.resolve(),
    };
    const write = (what: () => Promise<void>) => {
      mirrored.writes = mirrored.writes.then(what).catch((err) => {
        if (signal.aborted) return;
        this.#o.log.warn("could not mirror {object} to the downstream cluster: {err}", {
          object: key,
          err: String(err),
        });
      });
      return mirrored.writes;
    };
    informer.on("add", (o: Object) => void write(() => this.#copy(dep, o, signal)));
    informer.on("update", (o: Object) => void write(() => this.#copy(dep, o, signal)));
    informer.on("delete", () => void write(() => this.#remove(dep, signal)));
    mirrored.running = (informer.run as (s: AbortSignal) => Promise<void>)(signal);
    // Synced: listed in A, and the first copy (if the object exists) written to B.
    mirrored.synced = informer.synced.then(() => mirrored.writes).catch(() => {});
    this.#mirrored.set(key, mirrored);
  }

  #release(key: string, podKey: string): void {
    const mirrored = this.#mirrored.get(key);
    if (!mirrored) return;
    mirrored.users.delete(podKey);
    if (mirrored.users.size > 0) return;
    this.#mirrored.delete(key);
    mirrored.stop.abort();
    mirrored.writes = mirrored.writes.then(() => this.#remove(mirrored.dep, this.#o.signal))
      .catch((err) => {
        this.#o.log.warn("could not delete the copy of {object}: {err}", {
          object: key,
          err: String(err),
        });
      });
  }

  async #copy(dep: Dependency, source: Object, signal: AbortSignal): Promise<void> {
    const copy = this.#copyOf(dep, source);
    const api = this.#o.downstream[dep.kind] as unknown as KindApi;
    await upsert(api, this.#o.placement.namespaceOf(dep.namespace), copy, signal);
  }

  async #remove(dep: Dependency, signal: AbortSignal): Promise<void> {
    const api = this.#o.downstream[dep.kind];
    try {
      const { placement } = this.#o;
      await api.delete(
        placement.namespaceOf(dep.namespace),
        placement.nameOf(dep.namespace, dep.name),
        { signal },
      );
    } catch (err) {
      if (!isKubeNotFound(err)) throw err;
    }
  }

  #copyOf(dep: Dependency, source: Object): Object {
    const metadata = {
      name: this.#o.placement.nameOf(dep.namespace, dep.name),
      namespace: this.#o.placement.namespaceOf(dep.namespace),
      labels: { ...markLabels(this.#o.nodeName, dep.namespace), [MARKS.role]: "dependency" },
      annotations: { [MARKS.name]: dep.name },
    };
    if (dep.kind === "secrets") {
      const s = source as Secret;
      return { apiVersion: "v1", kind: "Secret", metadata, type: s.type, data: s.data };
    }
    const c = source as ConfigMap;
    return {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata,
      data: c.data,
      binaryData: c.binaryData,
    };
  }
}

/** The few calls {@link upsert} makes. */
export interface KindApi {
  create(ns: string, object: Object, o?: { signal?: AbortSignal }): Promise<Object>;
  update(object: Object, o?: { signal?: AbortSignal }): Promise<Object>;
}

/** Replaces `object` in B (unconditionally), creating it when absent. */
export async function upsert(
  api: KindApi,
  namespace: string,
  object: Object,
  signal: AbortSignal,
): Promise<void> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await api.update(object, { signal });
      return;
    } catch (err) {
      if (!isKubeNotFound(err)) throw err;
    }
    try {
      await api.create(namespace, object, { signal });
      return;
    } catch (err) {
      if (!isConflict(err) && !isAlreadyExists(err)) {
        throw err;
      }
    }
  }
}

function depKey(dep: Dependency): string {
  return `${dep.kind}/${dep.namespace}/${dep.name}`;
}
