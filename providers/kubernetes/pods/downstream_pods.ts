/**
 * The pod lifecycle in B: each pod of A created, updated and deleted as one pod of B, and B's
 * pods of this node read back (in A's form, through the status relay). A pod B cannot schedule
 * is failed upstream and removed from B.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { isAlreadyExists, isConflict, isKubeNotFound } from "../../../k8s/mod.ts";
import {
  type CallOptions,
  InvalidInputError,
  podKey,
  raceSignal,
  TransientError,
} from "../../../provider/mod.ts";
import { recordShaping } from "../cci/cci_namespace.ts";
import { downstreamError } from "../errors.ts";
import { MARKS, upstreamOf } from "../names.ts";
import type { KubernetesParts } from "../parts.ts";
import { withMutableFields } from "../_private.ts";

type Translation = ReturnType<KubernetesParts["translate"]>;

/** Creates, updates, deletes and lists the node's pods in B; see the module doc. */
export class DownstreamPods {
  readonly #p: KubernetesParts;

  constructor(parts: KubernetesParts) {
    this.#p = parts;
  }

  /** Creates the pod in B, after what it needs there (namespace, copies, its IP in A). */
  async create(pod: Pod, options: CallOptions): Promise<void> {
    const p = this.#p;
    const k = podKey(pod.metadata?.namespace, pod.metadata?.name);
    const translation = p.translate(pod);
    // Admission, as a kubelet's (pkg/kubelet/lifecycle/predicate.go): one node of B must fit.
    const fit = await p.node.fit(translation.pod, options);
    if (!fit.ok) throw new InvalidInputError(`Pod was rejected: ${fit.message}`);
    await p.cci?.check(options);
    p.relay.remember(k, pod);
    p.relay.setDeleting(k, false);
    await this.#prepare(k, pod, translation, options);
    const target = p.services ? p.translate(pod).pod : translation.pod;
    // Its IP in A first: the gateway must know the pod before B reports it running.
    await p.gateway.attach(k, pod, options.signal);
    if (await this.#createInB(k, pod, target, translation, options)) return;
    await this.#replaceOlder(k, pod, target, options);
  }

  /**
   * Changes what a running pod may change. After a restart the core reaches the pods already in
   * B through here, not create: the per-name watches and the token renewal start again (issue 24).
   */
  async update(pod: Pod, options: CallOptions): Promise<void> {
    const p = this.#p;
    const k = podKey(pod.metadata?.namespace, pod.metadata?.name);
    const translation = p.translate(pod);
    p.relay.remember(k, pod);
    await p.mirror.track(k, translation.dependencies, options);
    await p.services?.track(k, pod.metadata!.namespace!, options.signal);
    p.gateway.sweep(pod.metadata!.namespace!);
    await p.gateway.ensure(k, pod, options.signal);
    if (translation.tokenSecret && !p.tokens.renews(k)) {
      await p.tokens.start(pod, translation.tokenSecret, options).catch((err) => {
        throw downstreamError("writing the service-account token Secret", err);
      });
    }
    await this.#applyMutable(k, translation.pod, options);
  }

  /** Deletes the pod's twin in B (this very pod's, by upstream uid) with the pod's grace. */
  async delete(pod: Pod, options: CallOptions): Promise<void> {
    const p = this.#p;
    // The downstream pods first: a deletion seen before the cache synced must still find its pod.
    await raceSignal(p.ours.synced, options.signal);
    const { namespace, name, uid } = pod.metadata ?? {};
    const k = podKey(namespace, name);
    p.relay.setDeleting(k, true);
    const downstream = p.downstreamOf(namespace!, name!);
    if (!downstream || (uid && downstream.metadata?.labels?.[MARKS.uid] !== uid)) {
      p.relay.finish(k, pod, undefined);
      return;
    }
    try {
      await p.b.pods.delete(downstream.metadata!.namespace!, downstream.metadata!.name!, {
        gracePeriodSeconds: pod.metadata?.deletionGracePeriodSeconds ?? 0,
        preconditions: { uid: downstream.metadata?.uid },
        signal: options.signal,
      });
    } catch (err) {
      if (isKubeNotFound(err) || isConflict(err)) {
        p.relay.finish(k, pod, downstream);
        return;
      }
      throw downstreamError(`deleting pod ${k}`, err);
    }
  }

  /** The upstream pod `namespace/name` as B runs it, if B has it. */
  get(namespace: string, name: string): Pod | undefined {
    const downstream = this.#p.downstreamOf(namespace, name);
    return downstream ? this.#p.relay.toUpstream(downstream) : undefined;
  }

  /** This node's pods in B, in A's form; the first list is handed to the gateway. */
  async list(options: CallOptions): Promise<Pod[]> {
    const p = this.#p;
    await raceSignal(p.ours.synced, options.signal);
    const pods = p.ours.store.list().flatMap((d) => {
      const up = p.relay.toUpstream(d);
      return up ? [up] : [];
    });
    p.gateway.adoptOnce(pods);
    return pods;
  }

  /** B cannot schedule the pod: fail it upstream (A's controllers replace it), remove it in B. */
  failUnschedulable(downstream: Pod, message: string): void {
    const p = this.#p;
    const up = upstreamOf(downstream.metadata);
    if (!up) return;
    p.deps.log.warn("failing {pod}: {message}", { pod: podKey(up.namespace, up.name), message });
    p.relay.fail(podKey(up.namespace, up.name), downstream, "DownstreamUnschedulable", message);
    p.b.pods.delete(downstream.metadata!.namespace!, downstream.metadata!.name!, {
      gracePeriodSeconds: 0,
      preconditions: { uid: downstream.metadata?.uid },
      signal: p.signal,
    }).catch((err) => {
      if (isKubeNotFound(err) || isConflict(err)) return;
      p.deps.log.warn("could not remove unschedulable pod {pod} from B: {err}", {
        pod: downstream.metadata?.name,
        err: String(err),
      });
    });
  }

  /** What the pod needs in B before it starts there: namespace, copies, token, claims, Services. */
  async #prepare(k: string, pod: Pod, t: Translation, options: CallOptions): Promise<void> {
    const p = this.#p;
    const where = t.pod.metadata!.namespace!;
    await p.place.ensure(p.b, where, options).catch((err) => {
      throw downstreamError(`creating namespace ${where}`, err);
    });
    await p.mirror.track(k, t.dependencies, options);
    if (t.tokenSecret) {
      await p.tokens.start(pod, t.tokenSecret, options).catch((err) => {
        throw downstreamError("writing the service-account token Secret", err);
      });
    }
    await p.claims?.ensure(pod, t.claims, options);
    // Copied before the pod starts: B's kubelet sets service links from what exists then.
    await p.services?.track(k, pod.metadata!.namespace!, options.signal);
    p.gateway.sweep(pod.metadata!.namespace!);
  }

  /** Creates `target` in B; false when B already has a pod of that name. */
  async #createInB(
    k: string,
    pod: Pod,
    target: Pod,
    translation: Translation,
    options: CallOptions,
  ): Promise<boolean> {
    const { b, place, deps } = this.#p;
    const where = target.metadata!.namespace!;
    try {
      await b.pods.create(where, target, { signal: options.signal });
      await recordShaping(deps.kube, pod, translation.shaped ?? [], {
        nodeName: deps.nodeName,
        nowMs: deps.clock.now(),
        signal: options.signal,
      });
      return true;
    } catch (err) {
      if (isKubeNotFound(err)) place.forget(where); // the namespace went away
      if (!isAlreadyExists(err)) throw downstreamError(`creating pod ${k}`, err);
      return false;
    }
  }

  /** Already in B: ours from an earlier try (done), or an older pod of the same name (removed). */
  async #replaceOlder(k: string, pod: Pod, target: Pod, options: CallOptions): Promise<void> {
    const { b } = this.#p;
    const { namespace: where, name } = target.metadata as { namespace: string; name: string };
    const existing = await b.pods.get(where, name, { signal: options.signal }).catch((err) => {
      throw downstreamError(`reading pod ${k}`, err);
    });
    if (existing.metadata?.labels?.[MARKS.uid] === pod.metadata?.uid) return;
    await b.pods.delete(where, name, {
      gracePeriodSeconds: 0,
      preconditions: { uid: existing.metadata?.uid },
      signal: options.signal,
    }).catch(() => {});
    throw new TransientError(
      `an older downstream pod of ${k} (upstream uid ${
        existing.metadata?.labels?.[MARKS.uid]
      }) is being removed first`,
      { retryAfterMs: 1000 },
    );
  }

  /** Writes the fields of `wanted` a running pod may change, when they differ (conflicts retried). */
  async #applyMutable(k: string, wanted: Pod, options: CallOptions): Promise<void> {
    const { b, ours } = this.#p;
    const { name, namespace: where } = wanted.metadata as { name: string; namespace: string };
    for (let attempt = 0; attempt < 3; attempt++) {
      const current = ours.store.get(where, name) ??
        await b.pods.get(where, name, options).catch((err) => {
          throw downstreamError(`reading pod ${k}`, err);
        });
      const next = withMutableFields(current, wanted);
      if (JSON.stringify(next) === JSON.stringify(current)) return;
      try {
        await b.pods.update(next, { signal: options.signal });
        return;
      } catch (err) {
        if (!isConflict(err)) throw downstreamError(`updating pod ${k}`, err);
        const fresh = await b.pods.get(where, name, options);
        if (fresh.metadata?.resourceVersion === current.metadata?.resourceVersion) throw err;
      }
    }
  }
}
