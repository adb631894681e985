/**
 * `syncServices` (with `namespaces: same`): the Services of each A namespace that has forwarded
 * pods are copied to B's namespace of the same name, so that a pod in B finds them as it would in
 * A: `<svc>` and `<svc>.<ns>` in B's DNS where B runs one, and the `<SVC>_SERVICE_HOST/PORT`
 * variables B's kubelet sets (pkg/kubelet/envvars) from B's copies instead of A's ClusterIPs,
 * which B cannot route. A copy keeps the name, ports and selector (B's endpoint controllers then
 * list B's pods, which carry A's labels); B gives it its own ClusterIP (or none, for headless);
 * NodePort and LoadBalancer become ClusterIP. Routing between the clusters stays external (a flat
 * network, or a mesh such as Cilium ClusterMesh).
 * @module
 */
import type { Service, ServiceSpec } from "kubernetes-types/core/v1.d.ts";
import { isKubeNotFound, type KubeClient } from "../../../k8s/mod.ts";
import type { Logger, ProviderInformer, ProviderObjectApi } from "../../../provider/mod.ts";
import { markLabels, MARKS } from "../names.ts";

/** What {@link ServiceMirror} needs. */
export interface ServiceMirrorOptions {
  upstream: ProviderObjectApi<Service>;
  downstream: Pick<KubeClient, "services">;
  nodeName: string;
  log: Logger;
  signal: AbortSignal;
  /**
   * What B gets for each Service of A; default a copy with the selector (`syncServices`). The
   * gateway's reflection (../network/service_reflection.ts) writes its own objects instead.
   */
  writer?: ServiceWriter;
}

/** Writes A's Service `source` into B's `namespace`, and removes it (by name) from there. */
export interface ServiceWriter {
  write(namespace: string, source: Service, signal: AbortSignal): Promise<void>;
  remove(namespace: string, name: string, signal: AbortSignal): Promise<void>;
}

interface Watched {
  informer: ProviderInformer<Service>;
  names: Set<string>;
  pods: Set<string>;
  stop: AbortController;
  running: Promise<void>;
  synced: Promise<void>;
  writes: Promise<void>;
}

/** Services of A's namespaces with forwarded pods, copied to B while a pod needs them. */
export class ServiceMirror {
  readonly #o: ServiceMirrorOptions;
  readonly #writer: ServiceWriter;
  readonly #byNamespace = new Map<string, Watched>();
  /** Watches stopped by {@link standby}, awaited by {@link close}. */
  readonly #stopped: Promise<void>[] = [];

  constructor(options: ServiceMirrorOptions) {
    this.#o = options;
    this.#writer = options.writer ?? {
      write: (namespace, source, signal) => this.#copy(namespace, source, signal),
      remove: (namespace, name, signal) => this.#remove(namespace, name, signal),
    };
  }

  /** The namespaces whose Services are kept in B now. */
  namespaces(): string[] {
    return [...this.#byNamespace.keys()];
  }

  /** Starts copying `namespace`'s Services for the pod `podKey`; resolves once copied. */
  async track(podKey: string, namespace: string, signal?: AbortSignal): Promise<void> {
    let watched = this.#byNamespace.get(namespace);
    if (!watched) watched = this.#start(namespace);
    watched.pods.add(podKey);
    const aborted = new Promise<never>((_, reject) => {
      signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
    });
    await Promise.race([watched.synced, aborted]);
  }

  /** The names of `namespace`'s Services in A, as copied. */
  names(namespace: string): string[] {
    return [...this.#byNamespace.get(namespace)?.names ?? []];
  }

  /** The pod is gone; the last pod of a namespace stops its copies (and deletes them). */
  untrack(podKey: string, namespace: string): void {
    const watched = this.#byNamespace.get(namespace);
    if (!watched?.pods.delete(podKey) || watched.pods.size > 0) return;
    this.#byNamespace.delete(namespace);
    watched.stop.abort();
    for (const name of watched.names) {
      watched.writes = watched.writes.then(() =>
        this.#writer.remove(namespace, name, this.#o.signal)
      ).catch((err) => {
        this.#o.log.warn("could not remove Service {namespace}/{name} from B: {err}", {
          namespace,
          name,
          err: String(err),
        });
      });
    }
  }

  /**
   * `--leader-elect`: the term ended. Stops every namespace's watch and copies nothing more,
   * deleting nothing (the pods in B still use the copies; the next leader keeps them current,
   * and `track` starts them again when this replica leads).
   */
  standby(): void {
    for (const w of this.#byNamespace.values()) {
      w.stop.abort();
      this.#stopped.push(w.running);
    }
    this.#byNamespace.clear();
  }

  /** Waits for the watches to stop (after the provider's signal aborted). */
  async close(): Promise<void> {
    for (const w of this.#byNamespace.values()) w.stop.abort();
    await Promise.all([...this.#byNamespace.values()].map((w) => w.running).concat(this.#stopped));
  }

  #start(namespace: string): Watched {
    const stop = new AbortController();
    const signal = AbortSignal.any([stop.signal, this.#o.signal]);
    const informer = this.#o.upstream.informer({ namespace, name: `services/${namespace}` });
    const watched: Watched = {
      informer,
      names: new Set(),
      pods: new Set(),
      stop,
      running: Promise.resolve(),
      synced: Promise.resolve(),
      writes: Promise.resolve(),
    };
    const write = (what: () => Promise<void>) => {
      watched.writes = watched.writes.then(what).catch((err) => {
        if (signal.aborted) return;
        this.#o.log.warn("could not copy a Service of {namespace} to B: {err}", {
          namespace,
          err: String(err),
        });
      });
    };
    const copy = (s: Service) => {
      watched.names.add(s.metadata!.name!);
      write(() => this.#writer.write(namespace, s, signal));
    };
    informer.on("add", copy);
    informer.on("update", copy);
    informer.on("delete", (s: Service) => {
      watched.names.delete(s.metadata!.name!);
      write(() => this.#writer.remove(namespace, s.metadata!.name!, signal));
    });
    watched.running = informer.run(signal);
    watched.synced = informer.synced.then(() => watched.writes);
    this.#byNamespace.set(namespace, watched);
    return watched;
  }

  async #copy(namespace: string, source: Service, signal: AbortSignal): Promise<void> {
    const copy = serviceCopy(source, this.#o.nodeName);
    const api = this.#o.downstream.services;
    try {
      // A merge patch keeps the ClusterIP B gave the copy.
      await api.patch(namespace, copy.metadata!.name!, { type: "merge", body: copy, signal });
    } catch (err) {
      if (!isKubeNotFound(err)) throw err;
      await api.create(namespace, copy, { signal });
    }
  }

  async #remove(namespace: string, name: string, signal: AbortSignal): Promise<void> {
    const api = this.#o.downstream.services;
    const current = await api.get(namespace, name, { signal }).catch(() => undefined);
    if (current?.metadata?.labels?.[MARKS.role] !== "service") return; // not ours
    await api.delete(namespace, name, { signal, preconditions: { uid: current.metadata?.uid } })
      .catch((err) => {
        if (!isKubeNotFound(err)) throw err;
      });
  }
}

/** The copy of A's Service `source` for B (see the module doc). */
export function serviceCopy(source: Service, nodeName: string): Service {
  const spec = source.spec ?? {};
  const namespace = source.metadata?.namespace ?? "";
  const copied: ServiceSpec = spec.type === "ExternalName"
    ? { type: "ExternalName", externalName: spec.externalName, ports: spec.ports }
    : {
      type: "ClusterIP",
      selector: spec.selector,
      ports: spec.ports?.map(({ nodePort: _, ...port }) => port),
      sessionAffinity: spec.sessionAffinity,
      publishNotReadyAddresses: spec.publishNotReadyAddresses,
      ...(spec.clusterIP === "None" ? { clusterIP: "None" } : {}),
    };
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: source.metadata?.name,
      namespace,
      labels: {
        ...source.metadata?.labels,
        ...markLabels(nodeName, namespace),
        [MARKS.role]: "service",
      },
      annotations: { [MARKS.name]: source.metadata?.name ?? "" },
    },
    spec: copied,
  };
}

/**
 * The service-link variables the core set from A's Services `names` (pkg/kubelet/envvars
 * `FromServices`): B's kubelet sets them again from B's copies.
 */
export function isServiceLinkOf(names: string[]): (variable: string) => boolean {
  const prefixes = names.map((n) => n.toUpperCase().replaceAll("-", "_"));
  const pattern = new RegExp(
    `^(${
      prefixes.join("|")
    })_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_\\d+_(TCP|UDP|SCTP)(_PROTO|_PORT|_ADDR)?)?)$`,
  );
  return (variable) => prefixes.length > 0 && pattern.test(variable);
}
