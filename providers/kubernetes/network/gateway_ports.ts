/**
 * The gateway's own TCP ports for reflected Service ports: from {@link FIRST_GATEWAY_PORT} up,
 * one per Service port (by its name, which Kubernetes requires once a Service has two ports), kept
 * while the Service has that port, and rebuilt after a restart from the EndpointSlices in B, so
 * that B's Services keep pointing at ports the new gateway listens on.
 * @module
 */
import type { ServicePort } from "kubernetes-types/core/v1.d.ts";

/** The lowest gateway port (above the ports a pod usually declares itself). */
export const FIRST_GATEWAY_PORT = 20000;
const LAST_PORT = 65535;

/** A Service port's key among its Service's ports: its name ("" for a Service's only port). */
export function portKey(port: Pick<ServicePort, "name">): string {
  return port.name ?? "";
}

/** Gateway ports by Service (`namespace/name`) and port key. */
export class GatewayPorts {
  readonly #byService = new Map<string, Map<string, number>>();
  readonly #used = new Set<number>();
  #next = FIRST_GATEWAY_PORT;

  /** Takes back ports found in B for the Service (ignored when out of range or taken). */
  restore(namespace: string, name: string, ports: Iterable<readonly [string, number]>): void {
    const held = this.#held(namespace, name);
    for (const [key, port] of ports) {
      if (port < FIRST_GATEWAY_PORT || port > LAST_PORT || this.#used.has(port)) continue;
      if (held.has(key)) continue;
      held.set(key, port);
      this.#used.add(port);
    }
  }

  /**
   * The Service's gateway ports for exactly `keys`: kept ones stay, new ones get a free port,
   * ports of keys it no longer has are freed. Throws a RangeError when none is free.
   */
  assign(namespace: string, name: string, keys: string[]): Map<string, number> {
    const held = this.#held(namespace, name);
    for (const [key, port] of held) {
      if (keys.includes(key)) continue;
      held.delete(key);
      this.#used.delete(port);
    }
    for (const key of keys) if (!held.has(key)) held.set(key, this.#take());
    return new Map(held);
  }

  /** The Service's gateway ports now. */
  of(namespace: string, name: string): Map<string, number> {
    return new Map(this.#byService.get(`${namespace}/${name}`) ?? []);
  }

  /** Frees every port of the Service. */
  release(namespace: string, name: string): void {
    const held = this.#byService.get(`${namespace}/${name}`);
    for (const port of held?.values() ?? []) this.#used.delete(port);
    this.#byService.delete(`${namespace}/${name}`);
  }

  #held(namespace: string, name: string): Map<string, number> {
    const k = `${namespace}/${name}`;
    let held = this.#byService.get(k);
    if (!held) this.#byService.set(k, held = new Map());
    return held;
  }

  #take(): number {
    const span = LAST_PORT - FIRST_GATEWAY_PORT + 1;
    for (let i = 0; i < span; i++) {
      const port = this.#next;
      this.#next = port === LAST_PORT ? FIRST_GATEWAY_PORT : port + 1;
      if (!this.#used.has(port)) {
        this.#used.add(port);
        return port;
      }
    }
    throw new RangeError("no free gateway port: more than 45536 Service ports reflected");
  }
}
