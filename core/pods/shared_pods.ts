/**
 * One pod watch for many nodes: a single informer over every scheduled pod
 * (`fieldSelector=spec.nodeName!=`), split client-side into one view per node that looks to that
 * node's pod controller like its own `spec.nodeName=<node>` informer. The services informer is
 * shared the same way. The field selectors of pods take `=` and `!=` with one value each, never
 * a set (k8s.io/apimachinery pkg/fields/selector.go), so "my 1,000 nodes" cannot be one server-side
 * filter: the choice is one watch per node or one watch of all scheduled pods. One watch wins
 * (docs/multinode.md has the figures): the apiserver keeps one watcher and one list instead of
 * N, and a pod of a node that is not ours is cached as a stub of a few fields only.
 * @module
 */
import { podKeyOf } from "../../provider/mod.ts";
import type { Pod, Service } from "kubernetes-types/core/v1.d.ts";
import type { Clock } from "../../base/clock.ts";
import type { Informer } from "../../k8s/watch/informer.ts";
import { dropManagedFields } from "../../k8s/watch/informer.ts";
import { internPodParts, SharedParts } from "../../k8s/watch/intern.ts";
import type { KubeClient } from "../../k8s/mod.ts";
import type { InformerLike } from "./api.ts";

type Handler = (pod: Pod, old: Pod) => void;

/** One node's pods: a store and handlers fed by the shared informer. */
class NodePodView implements InformerLike<Pod> {
  readonly synced: Promise<void>;
  readonly pods = new Map<string, Pod>();
  readonly store = {
    list: (): Pod[] => [...this.pods.values()],
    getByKey: (key: string): Pod | undefined => this.pods.get(key),
  };
  readonly handlers = {
    add: new Set<Handler>(),
    update: new Set<Handler>(),
    delete: new Set<Handler>(),
  };

  constructor(synced: Promise<void>, readonly expect: (pod: Pod) => void) {
    this.synced = synced;
  }

  on(event: "add" | "delete", handler: (object: Pod) => void): () => void;
  on(event: "update", handler: (object: Pod, old: Pod) => void): () => void;
  on(event: "add" | "update" | "delete", handler: Handler): () => void {
    this.handlers[event].add(handler);
    return () => this.handlers[event].delete(handler);
  }

  /** The shared informer runs in {@link SharedPodInformer.run}; a view only waits. */
  run(signal: AbortSignal): Promise<void> {
    return abortion(signal);
  }

  emit(event: "add" | "update" | "delete", pod: Pod, old?: Pod): void {
    if (event === "delete") this.pods.delete(podKeyOf(pod));
    else this.pods.set(podKeyOf(pod), pod);
    for (const handler of this.handlers[event]) handler(pod, old ?? pod);
  }
}

/** What {@link SharedPodInformer} needs. */
export interface SharedPodInformerDeps {
  kube: Pick<KubeClient, "pods" | "services">;
  clock: Clock;
}

/** The shared pod and service informers, and a view per node; see the module doc. */
export class SharedPodInformer {
  readonly #views = new Map<string, NodePodView>();
  readonly #pods: Informer<Pod>;
  readonly #services: Informer<Service>;

  constructor(deps: SharedPodInformerDeps) {
    // The nodes' pods of one template share their equal parts (k8s/watch/intern.ts).
    const parts = new SharedParts();
    this.#pods = deps.kube.pods.informer({
      fieldSelector: "spec.nodeName!=",
      clock: deps.clock,
      name: "pods of all nodes",
      transform: (pod) =>
        this.#views.has(pod.spec?.nodeName ?? "") ? dropManagedFields(pod) : stub(pod),
      intern: (pod, previous) =>
        this.#views.has(nodeOf(pod)) ? internPodParts(pod, parts, previous) : pod,
    });
    this.#services = deps.kube.services.informer({ clock: deps.clock, name: "services" });
    this.#pods.on("add", (pod) => this.#views.get(nodeOf(pod))?.emit("add", pod));
    this.#pods.on("update", (pod, old) => this.#views.get(nodeOf(pod))?.emit("update", pod, old));
    this.#pods.on("delete", (pod) => this.#views.get(nodeOf(pod))?.emit("delete", pod));
  }

  /**
   * The pods of `nodeName`, as an informer for its pod controller. Views are made before
   * {@link run}: a node added later would miss the pods listed before it.
   */
  view(nodeName: string): InformerLike<Pod> {
    let view = this.#views.get(nodeName);
    if (!view) {
      this.#views.set(
        nodeName,
        view = new NodePodView(this.#pods.synced, (pod) => this.#pods.expect(pod)),
      );
    }
    return view;
  }

  /** Stops handing `nodeName`'s pods to its view (the node was removed). */
  forget(nodeName: string): void {
    this.#views.delete(nodeName);
  }

  /** The services informer, for every node's pod controller (it only reads the store). */
  services(): InformerLike<Service> {
    const services = this.#services;
    return {
      synced: services.synced,
      store: services.store,
      on: services.on.bind(services) as InformerLike<Service>["on"],
      run: abortion,
    };
  }

  /** Runs both informers until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    await Promise.all([this.#pods.run(signal), this.#services.run(signal)]);
  }
}

function nodeOf(pod: Pod): string {
  return pod.spec?.nodeName ?? "";
}

/** What is kept of another node's pod: enough to key it and to tell its node. */
function stub(pod: Pod): Pod {
  const { name, namespace, uid, resourceVersion } = pod.metadata ?? {};
  return {
    metadata: { name, namespace, uid, resourceVersion },
    spec: { nodeName: nodeOf(pod), containers: [] },
  };
}

function abortion(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
  });
}
