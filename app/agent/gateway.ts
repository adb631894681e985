/**
 * `vkubelet agent --gateway`: the listeners a node's gateway keeps in its cluster, one TCP port
 * per Service port vkubelet lists on the control stream ({@link GatewayListeners}), added and
 * closed as the list changes. Each accepted connection is handed on with the caller's address as
 * the listener saw it: vkubelet dials the Service as the pod at that address.
 * @module
 */
import type { GatewayListener, GatewayListeners } from "../../core/tunnel/protocol.ts";

/** Called for each connection a gateway listener accepts; `source` is the caller's address. */
export type GatewayDialer = (listener: GatewayListener, source: string, conn: Deno.Conn) => void;

interface Bound {
  listener: GatewayListener;
  socket: Deno.TcpListener;
}

/** Keeps one listener per gateway port, as the lists vkubelet sends say. */
export class GatewayPorts {
  readonly #bound = new Map<number, Bound>();

  constructor(
    private readonly options: {
      dial: GatewayDialer;
      /** The address listened on; default `0.0.0.0` (every address of the gateway's pod). */
      hostname?: string;
      log: (message: string) => void;
    },
  ) {}

  /** The gateway ports listened on now. */
  ports(): number[] {
    return [...this.#bound.keys()];
  }

  /** Applies a list: new ports listened on, gone ones closed, changed ones' Service updated. */
  update(list: GatewayListeners): void {
    const wanted = new Map((list.listeners ?? []).map((l) => [l.gatewayPort, l]));
    for (const [port, bound] of this.#bound) {
      if (wanted.has(port)) continue;
      bound.socket.close();
      this.#bound.delete(port);
    }
    for (const [port, listener] of wanted) {
      const bound = this.#bound.get(port);
      if (bound) {
        bound.listener = listener;
        continue;
      }
      try {
        const socket = Deno.listen({ hostname: this.options.hostname ?? "0.0.0.0", port });
        const entry = { listener, socket };
        this.#bound.set(port, entry);
        void this.#serve(entry);
      } catch (err) {
        this.options.log(
          `cannot listen on gateway port ${port} for Service ${listener.namespace}/` +
            `${listener.name}: ${err}`,
        );
      }
    }
  }

  /** Closes every listener. */
  close(): void {
    for (const bound of this.#bound.values()) bound.socket.close();
    this.#bound.clear();
  }

  async #serve(bound: Bound) {
    try {
      for await (const conn of bound.socket) {
        const source = (conn.remoteAddr as Deno.NetAddr).hostname;
        this.options.dial(bound.listener, source, conn);
      }
    } catch {
      // closed
    }
  }
}
