/**
 * Where an object of A lives in B, by the config's `namespaces`:
 * - `one` (default): everything in the configured namespace, named `<namespace-in-A>.<name>`;
 * - `same`: in B's namespace of the same name as A's, under its own name, so that names a pod
 *   uses (its Services, `<svc>.<ns>`) mean the same in B. Such a namespace is created on demand
 *   (marked with the virtual node's label) and deleted when no pod runs in it any more, unless
 *   it existed before.
 * @module
 */
import type { Namespace, Pod } from "kubernetes-types/core/v1.d.ts";
import { isAlreadyExists, isConflict, isKubeNotFound, type KubeClient } from "../../k8s/mod.ts";
import type { CallOptions } from "../../provider/mod.ts";
import type { KubernetesConfig } from "./config.ts";
import { downstreamName, markLabels, MARKS } from "./names.ts";

/** Maps objects of A to B's namespaces and names; creates and removes `same` namespaces. */
export class Placement {
  readonly #config: Pick<Partial<KubernetesConfig>, "namespace" | "namespaces">;
  readonly #nodeName: string;
  /** Namespaces known to exist in B: one create per namespace, not one per pod. */
  readonly #ensured = new Set<string>();

  constructor(
    config: Pick<Partial<KubernetesConfig>, "namespace" | "namespaces">,
    nodeName: string,
  ) {
    this.#config = config;
    this.#nodeName = nodeName;
  }

  /** True when A's namespaces are kept in B. */
  get same(): boolean {
    return this.#config.namespaces === "same";
  }

  /** B's namespace for objects of A's namespace `namespace`. */
  namespaceOf(namespace: string): string {
    return this.same ? namespace : this.#config.namespace!;
  }

  /** B's name for the object `namespace/name` of A. */
  nameOf(namespace: string, name: string): string {
    return this.same ? name : downstreamName(namespace, name);
  }

  /** The namespace to watch this node's pods in: the configured one, or every namespace. */
  get watched(): string | undefined {
    return this.same ? undefined : this.#config.namespace;
  }

  /** `same`: makes sure B has the namespace for A's `namespace` (marked as ours if created). */
  async ensure(b: KubeClient, namespace: string, options: CallOptions): Promise<void> {
    if (!this.same || this.#ensured.has(namespace)) return;
    const object: Namespace = {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: {
        name: namespace,
        labels: { [MARKS.node]: markLabels(this.#nodeName, "")[MARKS.node] },
      },
    };
    try {
      await b.namespaces.create(object, { signal: options.signal });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
    this.#ensured.add(namespace);
  }

  /** Forgets that `namespace` exists (B answered that it does not): the next pod creates it. */
  forget(namespace: string): void {
    this.#ensured.delete(namespace);
  }

  /**
   * `same`: deletes B's namespace `namespace` if this node created it and no pod of B that is
   * not finished runs there any more (`podsOfB`: every such pod B has, of any owner).
   */
  async removeIfUnused(
    b: KubeClient,
    namespace: string,
    podsOfB: Iterable<Pod>,
    options: CallOptions,
  ): Promise<void> {
    if (!this.same) return;
    for (const pod of podsOfB) if (pod.metadata?.namespace === namespace) return;
    let current: Namespace;
    try {
      current = await b.namespaces.get(namespace, { signal: options.signal });
    } catch (err) {
      if (isKubeNotFound(err)) return;
      throw err;
    }
    this.#ensured.delete(namespace);
    const ours = markLabels(this.#nodeName, "")[MARKS.node];
    if (current.metadata?.labels?.[MARKS.node] !== ours || current.metadata?.deletionTimestamp) {
      return;
    }
    await b.namespaces.delete(namespace, {
      preconditions: {
        uid: current.metadata?.uid,
        resourceVersion: current.metadata?.resourceVersion,
      },
      signal: options.signal,
    }).catch((err) => {
      if (!isKubeNotFound(err) && !isConflict(err)) throw err;
    });
  }
}
