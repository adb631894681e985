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
import type { CertificateSource, KeyPair } from "./certificates.ts";
import type { KubeletApiDeps } from "./types.ts";
import { handleUpgrade } from "./upgrade.ts";

/** What {@link KubeletServer} needs: the app's deps plus where to listen and with what. */
export interface KubeletServerDeps extends Omit<KubeletApiDeps, "signal"> {
  /** Default `0.0.0.0`. */
  hostname?: string;
  /** 0 picks a free port (see {@link KubeletServer.address}). */
  port: number;
  certificates: CertificateSource;
  /** How long open connections get to finish after the signal; default 5 s. */
  shutdownGraceMs?: number;
}

/** The bound address. */
export interface ServerAddress {
  hostname: string;
  port: number;
}

/** The kubelet API server; see the module doc. */
export class KubeletServer {
  readonly #deps: KubeletServerDeps;
  readonly #ready = Promise.withResolvers<void>();
  #address?: ServerAddress;

  constructor(deps: KubeletServerDeps) {
    this.#deps = deps;
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
    let server: https.Server | undefined;
    const source = this.#deps.certificates.run((pair) => {
      if (server) server.setSecureContext(this.#tlsOptions(pair));
      else first.resolve(pair);
    }, certificates.signal).then(
      () => first.reject(new Error("the certificate source ended before giving a certificate")),
      (err) => first.reject(err),
    );
    try {
      const pair = await Promise.race([first.promise, abortion(shutdown.signal)]);
      if (!pair) return;
      server = this.#createServer(pair, shutdown.signal);
      const sockets = trackSockets(server);
      await listen(server, this.#deps.hostname ?? "0.0.0.0", this.#deps.port);
      const bound = server.address();
      if (bound && typeof bound === "object") {
        this.#address = { hostname: bound.address, port: bound.port };
      }
      this.#deps.log.info("kubelet API listening on {hostname}:{port}", { ...this.#address });
      this.#ready.resolve();
      await abortion(shutdown.signal);
      await closeServer(server, sockets, this.#deps.shutdownGraceMs ?? 5_000);
    } catch (err) {
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

  #createServer(pair: KeyPair, signal: AbortSignal): https.Server {
    const app = createKubeletApp({ ...this.#deps, signal });
    const server = https.createServer({
      ...this.#tlsOptions(pair),
      // Ask for a client certificate, verify it against the CA, but let the request in
      // without one: bearer tokens and anonymous are checked in the app.
      requestCert: this.#deps.auth.clientCaPem !== undefined,
      rejectUnauthorized: false,
      ALPNProtocols: ["http/1.1"],
    }, getRequestListener(app.fetch));
    server.on("upgrade", (incoming: IncomingMessage, socket: Duplex, head: Uint8Array) => {
      void handleUpgrade(app, incoming, socket, head, this.#deps.log);
    });
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
function trackSockets(server: https.Server): Set<Socket> {
  const sockets = new Set<Socket>();
  server.on("secureConnection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  return sockets;
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
