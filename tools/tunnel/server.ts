/**
 * A kubelet API server with a {@link TunnelHost} on 127.0.0.1 and a self-signed serving
 * certificate, for the tunnel's tests and bench; and a {@link TunnelNetwork} on loopback that
 * stands in for the CNI path where no network namespace is wanted (the pod "IP" is
 * `127.0.0.2`, each declared containerPort listened on there; Services dialed directly), or
 * with {@link loopbackPodsNetwork} an IP per pod, whose dials leave from that IP.
 * @module
 */
import { createConnection } from "node:net";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { duplexFromNodeSocket } from "../../spdy/node_socket_duplex.ts";
import { halfClosing } from "../../base/half_close.ts";
import { realClock } from "../../base/clock.ts";
import { alwaysAllow, KubeletServer } from "../../core/kubelet_api/mod.ts";
import {
  type ClusterService,
  type ServiceSource,
  type TunnelConn,
  TunnelHost,
  type TunnelNetwork,
} from "../../core/tunnel/host.ts";
import { selfSignedCertificate } from "../../x509/mod.ts";
import { RemotePodTunnel } from "../../app/run/tunnel.ts";
import { freePort } from "../../app/run/parts.ts";
import { bareProvider, log } from "../harness/kubelet_api_fakes.ts";

/** A mutable Service list. */
export class ListedServices implements ServiceSource {
  #services: ClusterService[] = [];
  readonly #listeners = new Set<() => void>();

  set(services: ClusterService[]): void {
    this.#services = services;
    for (const l of this.#listeners) l();
  }

  list(namespace: string): ClusterService[] {
    return this.#services.filter((s) => s.namespace === namespace);
  }

  subscribe(changed: () => void): () => void {
    this.#listeners.add(changed);
    return () => this.#listeners.delete(changed);
  }
}

/** Pod "IP" 127.0.0.2 on the host's loopback; see the module doc. */
export function loopbackNetwork(podIP = "127.0.0.2"): TunnelNetwork & { dials: string[] } {
  const dials: string[] = [];
  return {
    dials,
    setUp: () => Promise.resolve({ ips: [podIP], netns: "loopback" }),
    tearDown: () => Promise.resolve(),
    dial(_netns, host, port) {
      dials.push(`${host}:${port}`);
      const conn = Deno.connect({ hostname: host, port });
      const readable = new ReadableStream<Uint8Array>({
        async start(c) {
          try {
            for await (const chunk of (await conn).readable) c.enqueue(chunk);
            c.close();
          } catch (err) {
            c.error(err);
          }
        },
      });
      const writable = new WritableStream<Uint8Array>({
        async write(chunk) {
          const w = (await conn).writable.getWriter();
          await w.write(chunk);
          w.releaseLock();
        },
        async close() {
          await (await conn).closeWrite().catch(() => {});
        },
      });
      return { readable, writable, close: () => void conn.then((c) => c.close()).catch(() => {}) };
    },
    listen: (_netns, port, onConnection) => loopbackListen(podIP, port, onConnection),
  };
}

/**
 * Pod IPs `127.0.<subnet>.<n>` on loopback, a new one per setUp (the netns names the IP): each
 * declared port is listened on at the pod's IP, and each dial leaves from it, so that a server
 * sees the pod's IP as the source, as from a pod's network namespace. Records the dials.
 */
export function loopbackPodsNetwork(subnet: number): TunnelNetwork & { dials: string[] } {
  let next = 10;
  const dials: string[] = [];
  return {
    dials,
    setUp() {
      const ip = `127.0.${subnet}.${next++}`;
      return Promise.resolve({ ips: [ip], netns: ip });
    },
    tearDown: () => Promise.resolve(),
    restore: () => Promise.resolve(),
    dial(netns, host, port) {
      dials.push(`${netns}>${host}:${port}`);
      return dialFrom(netns, host, port);
    },
    listen: (netns, port, onConnection) => loopbackListen(netns, port, onConnection),
  };
}

/** A TCP connection to `host:port` from the local address `from`. */
export function dialFrom(from: string, host: string, port: number): TunnelConn {
  const socket = createConnection({ host, port, localAddress: from });
  const duplex = duplexFromNodeSocket(socket);
  return {
    readable: duplex.readable,
    writable: new WritableStream<Uint8Array>({
      write: (chunk) => duplex.write(chunk),
      close: () => void socket.end(),
    }),
    close: () => void socket.destroy(),
  };
}

function loopbackListen(
  hostname: string,
  port: number,
  onConnection: (conn: TunnelConn) => void,
): Promise<{ close(): Promise<void> }> {
  const listener = Deno.listen({ hostname, port });
  void (async () => {
    try {
      for await (const conn of listener) {
        onConnection({
          ...halfClosing(conn),
          close: () => {
            try {
              conn.close();
            } catch {
              // closed
            }
          },
        });
      }
    } catch {
      // closed
    }
  })();
  return Promise.resolve({ close: () => Promise.resolve(listener.close()) });
}

/** A started server; dispose stops it. */
export interface TunnelServer extends AsyncDisposable {
  host: TunnelHost;
  url: string;
  caPem: string;
}

/** Starts the kubelet API on 127.0.0.1 (a free port) with a tunnel host. */
export async function startTunnelServer(
  network: TunnelNetwork,
  services: ServiceSource,
  options: { stateDir?: string } = {},
): Promise<TunnelServer> {
  const stop = new AbortController();
  const cert = Promise.withResolvers<string>();
  const source = selfSignedCertificate({
    nodeName: "tunnel-node",
    dnsNames: ["localhost"],
    ipAddresses: ["127.0.0.1"],
    clock: realClock,
    log,
  });
  const certificates = {
    run: (onPair: (p: { certPem: string; keyPem: string }) => void, signal: AbortSignal) =>
      source.run((pair) => {
        cert.resolve(pair.certPem);
        onPair(pair);
      }, signal),
  };
  // The host needs the server's URL and certificate, the server needs the host: a late binding.
  const late: { host?: TunnelHost } = {};
  const tunnel = { accept: (u: Parameters<TunnelHost["accept"]>[0]) => late.host!.accept(u) };
  const server = new KubeletServer({
    provider: bareProvider(),
    nodeName: "tunnel-node",
    podCache: () => [],
    log,
    clock: realClock,
    auth: { accessReviewer: alwaysAllow },
    hostname: "127.0.0.1",
    port: 0,
    certificates,
    shutdownGraceMs: 0,
    tunnel,
  });
  const running = server.run(stop.signal);
  await Promise.race([server.ready, running]);
  const url = `https://127.0.0.1:${server.address!.port}`;
  const caPem = await cert.promise;
  const host = new TunnelHost({
    network,
    services,
    log,
    serverUrl: url,
    serverCaPem: caPem,
    stateDir: options.stateDir,
  });
  late.host = host;
  return {
    host,
    url,
    caPem,
    async [Symbol.asyncDispose]() {
      await host.close();
      stop.abort();
      await running;
    },
  };
}

/** A pod with `ports` declared, in `namespace`. */
export function remotePod(name: string, namespace: string, ports: number[]): Pod {
  return {
    metadata: { name, namespace, uid: `uid-${name}` },
    spec: {
      containers: [{ name: "main", image: "x", ports: ports.map((p) => ({ containerPort: p })) }],
    },
  };
}

/** A started node tunnel (start-up's {@link RemotePodTunnel}); dispose stops it. */
export interface TunnelNode extends AsyncDisposable {
  tunnel: RemotePodTunnel;
  url: string;
}

/**
 * The kubelet API on 127.0.0.1 with a node's {@link RemotePodTunnel} as start-up wires it: its
 * self-signed certificate tapped for the agents to pin, `/tunnel` served.
 */
export async function startTunnelNode(
  network: TunnelNetwork,
  services: ServiceSource,
  agentProgram: string[],
): Promise<TunnelNode> {
  const stop = new AbortController();
  const port = freePort("127.0.0.1");
  const url = `https://127.0.0.1:${port}`;
  const tunnel = new RemotePodTunnel({ network, services, log, serverUrl: url, agentProgram });
  const certificates = tunnel.tap(selfSignedCertificate({
    nodeName: "tunnel-node",
    dnsNames: ["localhost"],
    ipAddresses: ["127.0.0.1"],
    clock: realClock,
    log,
  }));
  const server = new KubeletServer({
    provider: bareProvider(),
    nodeName: "tunnel-node",
    podCache: () => [],
    log,
    clock: realClock,
    auth: { accessReviewer: alwaysAllow },
    hostname: "127.0.0.1",
    port,
    certificates,
    shutdownGraceMs: 0,
    tunnel,
  });
  const running = server.run(stop.signal);
  await Promise.race([server.ready, running]);
  return {
    tunnel,
    url,
    async [Symbol.asyncDispose]() {
      await tunnel.close();
      stop.abort();
      await running;
    },
  };
}

/**
 * A TCP server on `hostname` that answers each connection with `<greeting> <caller's address>`
 * and closes: it shows where a connection came from. Dispose stops it.
 */
export function sourceEcho(hostname: string, greeting: string) {
  const listener = Deno.listen({ hostname, port: 0 });
  const served = (async () => {
    for await (const conn of listener) {
      const from = (conn.remoteAddr as Deno.NetAddr).hostname;
      void conn.write(new TextEncoder().encode(`${greeting} ${from}`))
        .catch(() => {}).finally(() => conn.close());
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    async [Symbol.asyncDispose]() {
      listener.close();
      await served;
    },
  };
}

/**
 * A TCP server on `hostname` that reads each request until the caller half-closes, then answers
 * `<greeting> <bytes read> from <caller's address>` and closes. Dispose stops it.
 */
export function untilEofEcho(hostname: string, greeting: string) {
  const listener = Deno.listen({ hostname, port: 0 });
  const served = (async () => {
    for await (const conn of listener) {
      void (async () => {
        const from = (conn.remoteAddr as Deno.NetAddr).hostname;
        let total = 0;
        const buffer = new Uint8Array(4096);
        for (let n = await conn.read(buffer); n !== null; n = await conn.read(buffer)) total += n;
        await conn.write(new TextEncoder().encode(`${greeting} ${total} from ${from}`));
      })().catch(() => {}).finally(() => conn.close());
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    async [Symbol.asyncDispose]() {
      listener.close();
      await served;
    },
  };
}

/**
 * Connects to `host:port` (from the local address `from` when given), sends `send` if given and
 * half-closes, and reads until the other end closes: the text it sent. Rejects when the connection is refused or reset before any byte.
 */
export async function readAll(
  host: string,
  port: number,
  from?: string,
  send?: string,
): Promise<string> {
  const conn = from ? dialFrom(from, host, port) : await (async () => {
    const c = await Deno.connect({ hostname: host, port });
    return { ...halfClosing(c), close: () => c.close() };
  })();
  if (send) {
    // Sent whole, then half-closed, as an HTTP/1.0 client may: a relay that waits for both
    // directions' EOF (the netns dial's socat) then ends.
    const writer = conn.writable.getWriter();
    await writer.write(new TextEncoder().encode(send));
    await writer.close();
  }
  const chunks: string[] = [];
  const decoder = new TextDecoder();
  try {
    for await (const chunk of conn.readable) chunks.push(decoder.decode(chunk, { stream: true }));
  } finally {
    try {
      conn.close();
    } catch {
      // closed
    }
  }
  const text = chunks.join("");
  if (!text) throw new Error(`${host}:${port} closed the connection with nothing sent`);
  return text;
}
