/**
 * `gateway`: the kubernetes provider's side of {@link GatewayNetwork}, what the pod lifecycle and
 * B's informer tell it: a pod attached before B has it, its IP in B as B's status says, the first
 * list of B's pods handed over once (reattached after a restart, the rest let go), a pod detached
 * when it leaves B, stale reflections swept. Without `gateway` every call does nothing.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { type Logger, podKey } from "../../../provider/mod.ts";
import { upstreamOf } from "../names.ts";
import type { GatewayNetwork } from "./gateway_network.ts";

/** What {@link GatewayLink} needs. */
export interface GatewayLinkDeps {
  /** Present with `gateway` (and the node's pod network). */
  network?: GatewayNetwork;
  log: Logger;
  /** The provider's own: background work stops with it. */
  signal: AbortSignal;
}

/** The pods' events, told to the gateway; see the module doc. */
export class GatewayLink {
  readonly #deps: GatewayLinkDeps;
  /** The first list's pods were handed to the gateway (reattached, the rest let go). */
  #adopted = false;

  constructor(deps: GatewayLinkDeps) {
    this.#deps = deps;
  }

  /** The pods' IPs in A by upstream `ns/name`, for A's status; undefined without `gateway`. */
  get podAddress(): ((key: string) => { podIP: string; podIPs: string[] } | undefined) | undefined {
    const network = this.#deps.network;
    return network ? (k) => network.addresses.of(k) : undefined;
  }

  /**
   * The pod's IP in A before it is created in B: the gateway must know it before B runs it. A
   * `hostNetwork` pod gets none: it has its node's address in B, which names no one pod, and no
   * network namespace in A; A's status reports B's address for it.
   */
  async attach(k: string, pod: Pod, signal?: AbortSignal): Promise<void> {
    if (pod.spec?.hostNetwork) return;
    await this.#deps.network?.addresses.attach(k, pod, signal);
  }

  /** The pod's IP in A (kept, from before a restart, or new), for a pod B already has. */
  async ensure(k: string, pod: Pod, signal?: AbortSignal): Promise<void> {
    if (pod.spec?.hostNetwork) return;
    await this.#deps.network?.addresses.ensure(k, pod, signal);
  }

  /**
   * B's pod was added or changed: its IP in B as B's status says, told to the gateway; none once
   * it is being deleted or has ended (Succeeded, Failed, evicted): B frees an ended pod's IP
   * while its status still shows it, and another pod there may get it.
   */
  onDownstream(downstream: Pod): void {
    const network = this.#deps.network;
    if (!network) return;
    const up = upstreamOf(downstream.metadata);
    if (!up) return;
    const phase = downstream.status?.phase;
    const running = !downstream.metadata?.deletionTimestamp && phase !== "Succeeded" &&
      phase !== "Failed";
    network.addresses.setRemote(
      podKey(up.namespace, up.name),
      running ? downstream.status?.podIP || undefined : undefined,
      up.uid,
    );
  }

  /** The first list of B's pods (upstream form): handed to the gateway once, in the background. */
  adoptOnce(pods: readonly Pod[]): void {
    const { network, signal, log } = this.#deps;
    if (!network || this.#adopted) return;
    // In the background: the gateway may still be on its way into B.
    this.#adopted = true;
    // No hostNetwork pod is attached (see attach): what an earlier run kept for one is let go.
    const byKey = new Map(
      pods.filter((p) => !p.spec?.hostNetwork).map((p) => [
        podKey(p.metadata?.namespace, p.metadata?.name),
        p,
      ]),
    );
    network.addresses.adopt(byKey, signal).catch((err) => {
      this.#adopted = false;
      if (signal.aborted) return;
      log.warn("could not hand B's pods to the gateway: {err}", { err: String(err) });
    });
  }

  /** The pod has left B: its IP in A is given back. */
  detach(k: string, pod: Pod): void {
    this.#deps.network?.addresses.detach(k, pod).catch((err) => {
      this.#deps.log.warn("could not detach {pod} from the pod network: {err}", {
        pod: k,
        err: String(err),
      });
    });
  }

  /** Services reflected by an earlier run that A no longer has go from B's `namespace`. */
  sweep(namespace: string): void {
    this.#deps.network?.reflection.sweep(namespace, this.#deps.signal).catch((err) => {
      this.#deps.log.warn("could not remove stale reflected Services of {namespace}: {err}", {
        namespace,
        err: String(err),
      });
    });
  }
}
