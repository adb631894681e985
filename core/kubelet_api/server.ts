/**
 * `KubeletServer`: the kubelet API on one TLS port. `node:https` (Deno's `Deno.serve` cannot
 * ask for client certificates nor hand over raw sockets) with `requestCert` and
 * `rejectUnauthorized: false`, so that callers without a certificate still reach the bearer
 * token and anonymous checks; TLS 1.2 or later; ALPN offers only `http/1.1` because SPDY and
 * WebSocket upgrades need HTTP/1.1. Plain requests go to the Hono app through
 * `@hono/node-server`; `upgrade` events go through the same app (`./upgrade.ts`).
 * @module
 */
import https from "node:https";
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { getRequestListener } from "@hono/node-server";
import { createKubeletApp } from "./app.ts";
import type { CertificateSource, KeyPair } from "../../x509/certificate_source.ts";
import type { KubeletApiDeps } from "./types.ts";
import { handleUpgrade, writeResponse } from "./upgrade.ts";
import { statusResponse } from "./status.ts";
import type { KubeletEnv, PeerSocket } from "./types.ts";
import type { Hono } from "hono";
import {
  capConnections,
  type ConnectionEnds,
  ConnectionSlots,
  unmapped,
} from "./connection_slots.ts";
import { certificateUser } from "./authn.ts";

/** What {@link KubeletServer} needs: the app's deps plus where to listen and with what. */
export interface KubeletServerDeps extends Omit<KubeletApiDeps, "signal"> {
  /** Default `0.0.0.0`. */
  hostname?: string;
  /** 0 picks a free port (see {@link KubeletServer.address}). */
  port: number;
  certificates: CertificateSource;
  /** How long open connections get to finish after the signal; default 5 s. */
  shutdownGraceMs?: number;
  /**
   * Connections open at once across every listener, default {@link DEFAULT_MAX_CONNECTIONS}.
   * When all are open, one more takes the slot of an unauthenticated connection
   * (`./connection_slots.ts`), and is closed as it arrives only if every one is authenticated.
   */
  maxConnections?: number;
  /**
   * Unauthenticated connections open at once from one client address, default
   * {@link DEFAULT_MAX_CONNECTIONS_PER_ADDRESS}; one more from that address is closed as it
   * arrives, while other addresses still get theirs.
   */
  maxConnectionsPerAddress?: number;
  /** How long a connection gets to finish its TLS handshake; default 10 s. */
  handshakeTimeoutMs?: number;
}

/**
 * The default connection cap. The kubelet's Go server has none (kubernetes/kubernetes
 * pkg/kubelet/server/server.go `ListenAndServeKubeletServer`), but every goroutine there is a
 * few KiB; here an open TLS socket costs more, and idle connections by the thousand must not
 * grow the heap that renews the node's Lease. The apiserver keeps one connection per node.
 */
const DEFAULT_MAX_CONNECTIONS = 512;

/**
 * The default cap of unauthenticated connections per client address: half the global one, so
 * that one address (a pod on the node's network opening sockets and never finishing a
 * handshake) is closed as it arrives rather than closing other addresses' connections to make
 * room. The apiserver's connections for `kubectl logs`, `exec` and `port-forward` are
 * authenticated by their client certificate at the handshake and not counted here.
 */
const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 256;

/**
 * Several nodes behind one port: a listener on each node's address, and every connection served
 * by the app of the node whose address it reached. The apiserver dials
 * `https://<node address>:<port>/...` (pkg/kubelet/client `NodeConnectionInfoGetter`), so the
 * address a connection arrived at is the one thing that names the node of `/stats/summary`.
 */
export interface RoutedServerDeps extends
  Pick<
    KubeletServerDeps,
    | "auth"
    | "log"
    | "port"
    | "certificates"
    | "shutdownGraceMs"
    | "maxConnections"
    | "maxConnectionsPerAddress"
    | "handshakeTimeoutMs"
  > {
  /** The addresses to listen on (each with `port`). */
  hostnames: string[];
  /** The app deps of the node at `address`; undefined answers 404. Apps are built on first use. */
  nodeAt(address: string): Omit<KubeletApiDeps, "signal"> | undefined;
}

/** The bound address. */
export interface ServerAddress {
  hostname: string;
  port: number;
}

/** The kubelet API server; see the module doc. */
export class KubeletServer {
  readonly #deps: RoutedServerDeps;
  readonly #ready = Promise.withResolvers<void>();
  #address?: ServerAddress;

  constructor(deps: KubeletServerDeps | RoutedServerDeps) {
    this.#deps = "nodeAt" in deps
      ? deps
      : { ...deps, hostnames: [deps.hostname ?? "0.0.0.0"], nodeAt: () => deps };
    this.#ready.promise.catch(() => {});
  }

  /** Resolves once the server listens (after the first serving certificate arrived). */
  get ready(): Promise<void> {
    return this.#ready.promise;
  }

  /** Where it listens, once {@link ready}. */
  get address(): ServerAddress | undefined {
    return this.#address;
  }

  /** Serves until `signal` aborts, then closes every connection and resolves. */
  async run(signal: AbortSignal): Promise<void> {
    const shutdown = new AbortController();
    const stop = () => shutdown.abort(signal.reason);
    signal.addEventListener("abort", stop, { once: true });
    const certificates = new AbortController();
    const first = Promise.withResolvers<KeyPair>();
    const servers: https.Server[] = [];
    const source = this.#deps.certificates.run((pair) => {
      if (servers.length) servers.forEach((s) => s.setSecureContext(this.#tlsOptions(pair)));
      else first.resolve(pair);
    }, certificates.signal).then(
      () => first.reject(new Error("the certificate source ended before giving a certificate")),
      (err) => first.reject(err),
    );
    const sockets = new Set<Socket>();
    const slots = new ConnectionSlots(
      this.#deps.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
      this.#deps.maxConnectionsPerAddress ?? DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
    );
    try {
      const pair = await Promise.race([first.promise, abortion(shutdown.signal)]);
      if (!pair) return;
      const handlers = this.#handlers(shutdown.signal, slots);
      let port = this.#deps.port;
      for (const hostname of this.#deps.hostnames) {
        const server = this.#createServer(pair, handlers);
        servers.push(server);
        trackSockets(server, sockets);
        capConnections(server, slots, {
          log: this.#deps.log,
          verified: (socket) => certificateUser(socket as PeerSocket) !== undefined,
        });
        await listen(server, hostname, port);
        const bound = server.address();
        if (bound && typeof bound === "object") {
          // `--port 0`: the first listener picks the port, the others share it.
          port = bound.port;
          this.#address ??= { hostname: bound.address, port: bound.port };
        }
      }
      this.#deps.log.info("kubelet API listening on {hostname}:{port}", {
        ...this.#address,
        hostname: this.#deps.hostnames.length > 1
          ? `${this.#deps.hostnames.length} addresses`
          : this.#address?.hostname,
      });
      this.#ready.resolve();
      await abortion(shutdown.signal);
      await Promise.all(
        servers.map((s) => closeServer(s, sockets, this.#deps.shutdownGraceMs ?? 5_000)),
      );
    } catch (err) {
      await Promise.all(servers.map((s) => closeServer(s, sockets, 0)));
      this.#ready.reject(err);
      throw err;
    } finally {
      signal.removeEventListener("abort", stop);
      shutdown.abort();
      certificates.abort();
      await source;
      this.#ready.reject(new Error("the kubelet API server stopped"));
    }
  }

  #tlsOptions(pair: KeyPair): https.ServerOptions {
    const ca = this.#deps.auth.clientCaPem;
    return {
      key: pair.keyPem,
      cert: pair.certPem,
      ...(ca ? { ca } : {}),
      minVersion: "TLSv1.2",
    };
  }

  /**
   * The request and upgrade handlers, each routed to the app of the node at the address. A
   * request the app authenticates and authorizes makes its connection trusted in `slots`.
   */
  #handlers(signal: AbortSignal, slots: ConnectionSlots): Handlers {
    const apps = new Map<string, Hono<KubeletEnv>>();
    const appAt = (socket: { localAddress?: string } | undefined) => {
      const deps = this.#deps.nodeAt(unmapped(socket?.localAddress ?? ""));
      if (!deps) return undefined;
      let app = apps.get(deps.nodeName);
      if (!app) {
        const onAuthorized = (socket: PeerSocket) => slots.trust(socket as ConnectionEnds);
        apps.set(deps.nodeName, app = createKubeletApp({ ...deps, signal, onAuthorized }));
      }
      return app;
    };
    const noNode = (socket: { localAddress?: string } | undefined) =>
      statusResponse(404, `no node is served at ${socket?.localAddress ?? "this address"}`);
    return {
      request: getRequestListener((request, env) => {
        const socket = env.incoming?.socket;
        return appAt(socket)?.fetch(request, env) ?? noNode(socket);
      }),
      upgrade: (incoming, socket, head) => {
        const app = appAt(incoming.socket);
        if (app) return void handleUpgrade(app, incoming, socket, head, this.#deps.log);
        void writeResponse(socket, noNode(incoming.socket)).finally(() => socket.destroy());
      },
    };
  }

  #createServer(pair: KeyPair, handlers: Handlers): https.Server {
    const server = https.createServer({
      ...this.#tlsOptions(pair),
      // Ask for a client certificate, verify it against the CA, but let the request in
      // without one: bearer tokens and anonymous are checked in the app.
      requestCert: this.#deps.auth.clientCaPem !== undefined,
      rejectUnauthorized: false,
      ALPNProtocols: ["http/1.1"],
      // Node's default is 120 s: an idle connection would hold its slot of the cap that long.
      handshakeTimeout: this.#deps.handshakeTimeoutMs ?? 10_000,
    }, handlers.request);
    server.on("upgrade", handlers.upgrade);
    server.on("tlsClientError", (err: Error) => {
      this.#deps.log.debug("TLS handshake failed: {err}", { err });
    });
    return server;
  }
}

function listen(server: https.Server, hostname: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, hostname, () => {
      server.off("error", reject);
      resolve();
    });
  });
}

/** Every open connection, including upgraded ones, so that shutdown can end them. */
function trackSockets(server: https.Server, sockets: Set<Socket>): void {
  server.on("secureConnection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
}

interface Handlers {
  request: ReturnType<typeof getRequestListener>;
  upgrade: (incoming: IncomingMessage, socket: Duplex, head: Uint8Array) => void;
}

async function closeServer(server: https.Server, sockets: Set<Socket>, graceMs: number) {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const timer = setTimeout(() => {
    for (const socket of sockets) socket.destroy();
  }, graceMs);
  // Log streams and sessions end with the shutdown signal; whatever is still open after the
  // grace period is cut.
  await closed;
  clearTimeout(timer);
}

function abortion(signal: AbortSignal): Promise<undefined> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(undefined);
    signal.addEventListener("abort", () => resolve(undefined), { once: true });
  });
}
