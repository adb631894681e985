/**
 * `ConnectionSlots`: the kubelet API's connection cap, shared by every listener. A connection
 * arrives unauthenticated; it becomes trusted once its TLS handshake shows a verified client
 * certificate (the apiserver's) or once a request on it was authenticated as a user (not
 * anonymous) and authorized. Trusted connections are never closed to make room. When every slot
 * is taken, a newcomer takes the slot of an unauthenticated connection: the oldest of the client
 * address that holds the most of them, so that a flood from a few addresses (a pod on the node's
 * network, from 127.0.0.2 and 127.0.0.3) closes its own sockets and not the apiserver's
 * handshake. A newcomer is refused only when every slot is trusted, or when its address already
 * holds its cap of unauthenticated connections.
 * @module
 */
import type { Socket } from "node:net";
import type { Logger } from "../../base/log.ts";

/** The address and port pairs a socket is known by (a raw socket and its TLS socket share them). */
export interface ConnectionEnds {
  remoteAddress?: string;
  remotePort?: number;
  localAddress?: string;
  localPort?: number;
}

interface Slot {
  socket: Socket;
  key: string;
  address: string;
  /** Admission order, so that the oldest of equals goes first. */
  seq: number;
  trusted: boolean;
}

/** The connections open across every listener and the caps they are held to; see the module doc. */
export class ConnectionSlots {
  readonly #slots = new Map<Socket, Slot>();
  readonly #byKey = new Map<string, Slot>();
  /** Unauthenticated connections by client address, oldest first. */
  readonly #untrusted = new Map<string, Set<Slot>>();
  #seq = 0;

  constructor(readonly max: number, readonly maxPerAddress: number) {}

  /** Connections open now. */
  get size(): number {
    return this.#slots.size;
  }

  /**
   * Admits `socket` from `address`, closing an unauthenticated connection if every slot is
   * taken; or says which cap refuses it and admits nothing.
   */
  admit(socket: Socket, address: string): "total" | "address" | undefined {
    if ((this.#untrusted.get(address)?.size ?? 0) >= this.maxPerAddress) return "address";
    if (this.#slots.size >= this.max) {
      const victim = this.#evictable();
      if (!victim) return "total";
      this.release(victim.socket);
      victim.socket.destroy();
    }
    const slot = { socket, key: connectionKey(socket), address, seq: this.#seq++, trusted: false };
    this.#slots.set(socket, slot);
    this.#byKey.set(slot.key, slot);
    const fromAddress = this.#untrusted.get(address) ?? new Set();
    this.#untrusted.set(address, fromAddress.add(slot));
    return undefined;
  }

  /** Marks the connection `socket` (raw or TLS) belongs to as authenticated: never evicted. */
  trust(socket: ConnectionEnds): void {
    const slot = this.#byKey.get(connectionKey(socket));
    if (!slot || slot.trusted) return;
    slot.trusted = true;
    this.#forget(slot);
  }

  /** Counts an admitted connection out (again is a no-op). */
  release(socket: Socket): void {
    const slot = this.#slots.get(socket);
    if (!slot) return;
    this.#slots.delete(socket);
    if (this.#byKey.get(slot.key) === slot) this.#byKey.delete(slot.key);
    this.#forget(slot);
  }

  #forget(slot: Slot): void {
    const fromAddress = this.#untrusted.get(slot.address);
    if (!fromAddress?.delete(slot) || fromAddress.size > 0) return;
    this.#untrusted.delete(slot.address);
  }

  /** The oldest unauthenticated connection of the address that holds the most of them. */
  #evictable(): Slot | undefined {
    let chosen: Slot | undefined;
    let most = 0;
    for (const slots of this.#untrusted.values()) {
      const oldest = slots.values().next().value!;
      if (slots.size > most || (slots.size === most && oldest.seq < chosen!.seq)) {
        chosen = oldest;
        most = slots.size;
      }
    }
    return chosen;
  }
}

/**
 * Counts every connection a server accepts in `slots` before its TLS handshake costs anything,
 * closing it if a cap refuses it, and trusts it at once when the handshake shows a verified
 * client certificate (`verified`). A refusal is logged at debug level: a flood would otherwise
 * write a line per socket.
 */
export function capConnections(
  server: {
    on(event: "connection" | "secureConnection", listener: (socket: Socket) => void): unknown;
  },
  slots: ConnectionSlots,
  options: { log: Logger; verified(socket: Socket): boolean },
): void {
  server.on("connection", (socket: Socket) => {
    const address = unmapped(socket.remoteAddress ?? "");
    const beyond = address === "" ? "address" : slots.admit(socket, address);
    if (beyond) {
      options.log.debug("closing a connection from {address}: {cap} connections are open", {
        address,
        cap: beyond === "total"
          ? `${slots.max} authenticated`
          : `${slots.maxPerAddress} of its unauthenticated`,
      });
      socket.destroy();
      return;
    }
    socket.once("close", () => slots.release(socket));
  });
  server.on("secureConnection", (socket: Socket) => {
    if (options.verified(socket)) slots.trust(socket);
  });
}

/** `::ffff:127.1.0.2` (an IPv4 connection on a dual-stack socket) as `127.1.0.2`. */
export function unmapped(address: string): string {
  return address.startsWith("::ffff:") && address.includes(".") ? address.slice(7) : address;
}

/** Both ends of a connection: the same for a raw socket and the TLS socket over it. */
function connectionKey(socket: ConnectionEnds): string {
  const { remoteAddress, remotePort, localAddress, localPort } = socket;
  return `${unmapped(remoteAddress ?? "")}:${remotePort}>${
    unmapped(localAddress ?? "")
  }:${localPort}`;
}
