/**
 * `gateway`: each forwarded pod's IP in A, given by the node's pod network through the gateway
 * (attached before the pod is created in B, reattached after a restart, detached when it leaves
 * B: after a restart, one that leaves before the first list is handed over is not reattached but
 * left to the gateway's `adopted`), and the pod's IP in B told to the gateway whenever B's status
 * gives, changes or loses it.
 * A's `status.podIP(s)` report the A-side IP; B's IP stays B's (the pod's own address there).
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type Logger,
  POD_NETWORK_LOST_ERRORS,
  type PodNetworkGateway,
  raceSignal,
} from "../../../provider/mod.ts";

/** A pod's IPs in A. */
export interface PodAddress {
  podIP: string;
  podIPs: string[];
}

interface Attached {
  pod: Pod;
  address: PodAddress;
  /** The address in B last told to the gateway. */
  told?: string;
}

/** What {@link PodAddresses} needs. */
export interface PodAddressesOptions {
  /** The gateway, once deployed. */
  gateway: Promise<PodNetworkGateway>;
  log: Logger;
  /** A pod (by `ns/name`) got its A-side IP: report its status again. */
  onAttached: (key: string) => void;
}

/** The forwarded pods' A-side IPs (see the module doc), by upstream `ns/name`. */
export class PodAddresses {
  readonly #o: PodAddressesOptions;
  readonly #attached = new Map<string, Attached>();
  /** The pods' IPs in B as B's status says, with the (upstream) uid of the pod, by `ns/name`. */
  readonly #remote = new Map<string, { uid?: string; address: string }>();
  /**
   * Pods (uid by `ns/name`) that left B before the first list was handed over: {@link adopt}
   * must not take their IPs back, and lets the gateway detach what it kept for them.
   */
  readonly #gone = new Map<string, string | undefined>();
  /** The first list was handed over: {@link adopt} reads {@link #gone} no more. */
  #adopted = false;
  #gateway?: PodNetworkGateway;

  constructor(options: PodAddressesOptions) {
    this.#o = options;
    void options.gateway.then((g) => this.#gateway = g, () => {});
  }

  /** The pod's IPs in A, if attached. */
  of(key: string): PodAddress | undefined {
    return this.#attached.get(key)?.address;
  }

  /**
   * An IP in A for the pod (before it is created in B): the one it has (same uid), else a new
   * one, replacing an earlier pod's of that name (detached: its address in B is not this pod's).
   */
  async attach(key: string, pod: Pod, signal?: AbortSignal): Promise<PodAddress> {
    this.#gone.delete(key);
    const held = this.#held(key, pod);
    if (held) return held;
    const gateway = await raceSignal(this.#o.gateway, signal);
    await this.#replace(key, pod, gateway);
    const address = await gateway.attach(pod);
    this.#set(key, pod, address);
    return address;
  }

  /** The pod's IP: the one it has, else the one from before a restart, else a new one. */
  async ensure(key: string, pod: Pod, signal?: AbortSignal): Promise<void> {
    this.#gone.delete(key);
    if (this.#held(key, pod)) return;
    const gateway = await raceSignal(this.#o.gateway, signal);
    await this.#replace(key, pod, gateway);
    const kept = await this.#reattach(key, pod, gateway);
    if (kept) this.#set(key, pod, kept);
    else await this.attach(key, pod, signal);
  }

  /**
   * After the first list of B's pods: takes back the IPs of `pods` (by `ns/name`) from before a
   * restart, then lets the gateway detach what it kept for pods not among them, or among them
   * but gone from B since (detached meanwhile).
   */
  async adopt(pods: Map<string, Pod>, signal?: AbortSignal): Promise<void> {
    const gateway = await raceSignal(this.#o.gateway, signal);
    for (const [key, pod] of pods) {
      if (this.#attached.has(key) || this.#isGone(key, pod)) continue;
      const kept = await this.#reattach(key, pod, gateway).catch((err) => {
        this.#o.log.warn("cannot reattach {pod} to the pod network: {err}", {
          pod: key,
          err: String(err),
        });
        return undefined;
      });
      // Gone while it was being reattached: its detach may have come first, so detach again.
      if (kept && this.#isGone(key, pod)) await gateway.detach(pod);
      else if (kept) this.#set(key, pod, kept);
    }
    await gateway.adopted(
      [...pods].filter(([key, pod]) => !this.#isGone(key, pod)).map(([, p]) => p),
    );
    this.#adopted = true;
    this.#gone.clear();
  }

  /**
   * B's status gives (or changes, or loses: undefined) the IP in B of the pod (upstream `uid`,
   * when known): told to the gateway for the attached pod of that uid only.
   */
  setRemote(key: string, address: string | undefined, uid?: string): void {
    if (address) this.#remote.set(key, { uid, address });
    else this.#forgetRemote(key, uid);
    this.#tell(key);
  }

  /**
   * The pod left B: the gateway forgets its address and gives its IP in A back. When another pod
   * (uid) of that name is attached by now, only the one that left is detached.
   */
  async detach(key: string, pod: Pod): Promise<void> {
    const uid = pod.metadata?.uid;
    const attached = this.#attached.get(key);
    this.#forgetRemote(key, uid);
    if (attached && uid && attached.pod.metadata?.uid !== uid) {
      const gateway = this.#gateway ?? await this.#o.gateway;
      await gateway.detach(pod);
      return;
    }
    this.#attached.delete(key);
    if (!attached && !this.#adopted) {
      // Not attached by this run: at most kept from before a restart, and the first list (which
      // may hold it) not handed over yet, perhaps for want of a gateway. adopt() leaves it out,
      // so the gateway's adopted() tears down what was kept; a detach now would only drop the
      // kept record (core/tunnel/host.ts), and adopt() would have reattached it.
      this.#gone.set(key, pod.metadata?.uid);
      return;
    }
    const gateway = this.#gateway ?? await this.#o.gateway;
    if (attached?.told) gateway.setRemoteAddress(attached.pod, undefined);
    await gateway.detach(attached?.pod ?? pod);
  }

  /**
   * The pod's IP from before a restart; undefined when it had none, or when it cannot be had
   * again (its namespace lost and the IP taken, its kept state unreadable: the kit's
   * `POD_NETWORK_LOST_ERRORS`), which is let go of so that the pod is attached anew with a new
   * IP (its containers run in B, unharmed). Any other failure is thrown, to be tried again.
   */
  async #reattach(key: string, pod: Pod, gateway: PodNetworkGateway) {
    try {
      return await gateway.reattach(pod);
    } catch (err) {
      if (!(err instanceof Error && POD_NETWORK_LOST_ERRORS.includes(err.name))) throw err;
      this.#o.log.warn("pod {pod} gets a new IP in A: its earlier one is lost ({err})", {
        pod: key,
        err: err.message,
      });
      await gateway.detach(pod);
      return undefined;
    }
  }

  /** An earlier pod (another uid) attached under `key` is detached, its address in B forgotten. */
  async #replace(key: string, pod: Pod, gateway: PodNetworkGateway): Promise<void> {
    const earlier = this.#attached.get(key);
    if (!earlier || earlier.pod.metadata?.uid === pod.metadata?.uid) return;
    this.#attached.delete(key);
    this.#forgetRemote(key, earlier.pod.metadata?.uid);
    if (earlier.told) gateway.setRemoteAddress(earlier.pod, undefined);
    await gateway.detach(earlier.pod);
  }

  /** B's address of the pod `uid` (of any pod of that name when undefined) is forgotten. */
  #forgetRemote(key: string, uid: string | undefined): void {
    const remote = this.#remote.get(key);
    if (!remote || (uid && remote.uid && remote.uid !== uid)) return;
    this.#remote.delete(key);
  }

  /** The pod (by uid) left B before the first list was handed over. */
  #isGone(key: string, pod: Pod): boolean {
    return this.#gone.has(key) && this.#gone.get(key) === pod.metadata?.uid;
  }

  /** The pod's address when this very pod (by uid) is attached. */
  #held(key: string, pod: Pod): PodAddress | undefined {
    const attached = this.#attached.get(key);
    return attached && attached.pod.metadata?.uid === pod.metadata?.uid
      ? attached.address
      : undefined;
  }

  #set(key: string, pod: Pod, address: PodAddress): void {
    this.#attached.set(key, { pod, address: { podIP: address.podIP, podIPs: address.podIPs } });
    this.#tell(key);
    this.#o.onAttached(key);
  }

  /** Tells the gateway the pod's address in B when it changed since it was last told. */
  #tell(key: string): void {
    const attached = this.#attached.get(key);
    const gateway = this.#gateway;
    if (!attached || !gateway) return;
    const remote = this.#remote.get(key);
    const uid = attached.pod.metadata?.uid;
    // B's status of another pod of that name (an earlier one, or a later one) is not this pod's.
    const address = remote && (remote.uid === undefined || remote.uid === uid)
      ? remote.address
      : undefined;
    if (attached.told === address) return;
    attached.told = address;
    gateway.setRemoteAddress(attached.pod, address);
  }
}
