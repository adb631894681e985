/**
 * What the node's pods hold in B beyond the pod itself (ConfigMap and Secret copies, token
 * renewal, Services, claims, the IP in A, `namespaces: same` namespaces): let go when a pod leaves
 * B, taken up again for a new `--leader-elect` term, and left to the leader while standing by.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { podKey } from "../../../provider/mod.ts";
import { MARKS, nodeSelector } from "../names.ts";
import type { KubernetesParts } from "../parts.ts";

/** Keeps and lets go of what pods hold in B; see the module doc. */
export class PodHoldings {
  readonly #p: KubernetesParts;

  constructor(parts: KubernetesParts) {
    this.#p = parts;
  }

  /**
   * `--leader-elect`: a new term. The core adopts pods that run in B without a createPod, so
   * their ConfigMap and Secret copies and token renewals start here (once per term).
   */
  resume(pods: readonly Pod[]): void {
    const p = this.#p;
    p.state.standingBy = false;
    p.claims?.resume();
    for (const pod of pods) {
      const { namespace, name, uid } = pod.metadata ?? {};
      if (!namespace || !name || pod.metadata?.deletionTimestamp) continue;
      const twin = p.downstreamOf(namespace, name);
      if (twin?.metadata?.labels?.[MARKS.uid] !== uid) continue; // createPod will do it.
      this.#keep(podKey(namespace, name), pod);
    }
  }

  /**
   * `--leader-elect`: the term ended. Stop mirroring ConfigMaps, Secrets and Services and
   * renewing tokens into B (the copies and token Secrets stay: the pods still use them, and the
   * new leader keeps them current), fail no unschedulable pod, and delete nothing there when a
   * pod leaves B. B's client refuses writes besides (`ProviderDeps.fence`).
   */
  standby(): void {
    const p = this.#p;
    p.state.standingBy = true;
    p.mirror.standby();
    p.services?.standby();
    p.tokens.close();
  }

  /**
   * The pod has left B: stop keeping its ConfigMaps, Secrets and token current; with
   * `namespaces: same`, remove B's namespace once nothing runs there.
   */
  release(k: string, pod: Pod): void {
    const p = this.#p;
    if (p.state.standingBy) return; // The leader removes what the pod held.
    p.mirror.untrack(k);
    const namespace = pod.metadata!.namespace!;
    p.services?.untrack(k, namespace);
    p.gateway.detach(k, pod);
    const tokenSecret = p.place.nameOf(namespace, `${pod.metadata!.name}.token`);
    const stopped = p.config.serviceAccountToken === "upstream"
      ? p.tokens.stop(pod, tokenSecret)
      : Promise.resolve();
    void stopped.then(() => this.removeNamespaceIfUnused(p.place.namespaceOf(namespace)));
  }

  /** `namespaces: same`: B's namespace goes once no pod runs and no claim copy is kept there. */
  async removeNamespaceIfUnused(where: string): Promise<void> {
    const p = this.#p;
    if (p.claims?.holds(where)) return; // the data of A's claims outlives the pods
    // Ours from our own informer (which has dropped this pod already), the rest from B's.
    const ours = nodeSelector(p.deps.nodeName).split("=")[1];
    const pods = [
      ...p.ours.store.list(),
      ...p.node.podsOfB().filter((d) => d.metadata?.labels?.[MARKS.node] !== ours),
    ];
    await p.place.removeIfUnused(p.b, where, pods, { signal: p.signal }).catch((err) => {
      p.deps.log.warn("could not remove namespace {namespace} from B: {err}", {
        namespace: where,
        err: String(err),
      });
    });
  }

  /** A pod adopted for this term: its copies, Services, IP in A and token kept current again. */
  #keep(k: string, pod: Pod): void {
    const p = this.#p;
    const { log } = p.deps;
    try {
      const t = p.translate(pod);
      void p.mirror.track(k, t.dependencies).catch(() => {});
      void p.services?.track(k, pod.metadata!.namespace!).catch(() => {});
      void p.gateway.ensure(k, pod).catch(() => {});
      if (t.tokenSecret) {
        p.tokens.start(pod, t.tokenSecret).catch((err) =>
          log.warn("could not renew the token of {pod}: {err}", { pod: k, err: String(err) })
        );
      }
    } catch (err) {
      log.warn("not keeping the copies for {pod} current: {err}", { pod: k, err: String(err) });
    }
  }
}
