/**
 * What the agent and vkubelet say on top of the multiplexer. The agent connects to the kubelet
 * API port with `GET /tunnel`, `Connection: Upgrade`, `Upgrade: vkubelet-tunnel.v1` and its
 * credential in `Vkubelet-Tunnel-Credential`; after `101 Switching Protocols` the connection
 * is a yamux session with the agent as client. Each stream starts with one header from its
 * opener and one answer from the other end, each a 2-byte big-endian length and that much JSON:
 *
 * - agent → vkubelet `{"kind":"control"}`: vkubelet then sends newline-delimited
 *   {@link ServiceList} messages, one now and one each time the pod's Services change.
 * - agent → vkubelet `{"kind":"service","namespace","name","port"}`: a TCP connection to that
 *   Service port, dialed by vkubelet from the pod's network namespace.
 * - vkubelet → agent `{"kind":"port","port"}`: a connection that reached the pod IP on that
 *   declared containerPort; the agent dials `127.0.0.1:<port>` where the pod runs. A pod's agent
 *   refuses a header with a `host`.
 *
 * A gateway (the kubernetes provider's pods, in another cluster's pod network: one agent for
 * all the node's pods, `vkubelet agent --gateway`, with a gateway credential) says instead:
 *
 * - gateway → vkubelet `{"kind":"control"}`: vkubelet sends newline-delimited
 *   {@link GatewayListeners} messages (one now, one on each change): the gateway listens on
 *   each `gatewayPort`.
 * - gateway → vkubelet `{"kind":"service","namespace","name","port","source"}`: a connection the
 *   gateway accepted on a listener from `source` (the caller's address in its cluster, as the
 *   listener saw it); vkubelet dials the Service from the A-side network namespace of the pod
 *   at that address, if it is this node's and may see the Service.
 * - vkubelet → gateway `{"kind":"port","port","host"}`: a connection that reached a pod's IP
 *   here; the gateway dials `host:port` (the pod's address in its cluster).
 *
 * vkubelet refuses `source` from a pod's agent and a service stream without it from a gateway.
 * The answer is `{"ok":true}` or `{"error":"..."}`; after `ok` the stream carries raw bytes.
 * @module
 */

/** The route on the kubelet API port. */
export const TUNNEL_PATH = "/tunnel";
/** The `Upgrade` token. */
export const TUNNEL_UPGRADE = "vkubelet-tunnel.v1";
/** The request header with the agent's credential. */
export const CREDENTIAL_HEADER = "vkubelet-tunnel-credential";
/** Largest stream header. */
const MAX_HEADER = 4096;

/** A stream's opening header. */
export type StreamHeader =
  | { kind: "control" }
  | { kind: "service"; namespace: string; name: string; port: number; source?: string }
  | { kind: "port"; port: number; host?: string };

/** The answer to a stream header. */
export type StreamAnswer = { ok: true } | { error: string };

/** One Service port a pod may call. */
export interface ServicePort {
  port: number;
  protocol: string;
  name?: string;
}

/** A Service a pod may call, as the agent is told (no ClusterIP: vkubelet dials). */
export interface TunnelService {
  namespace: string;
  name: string;
  ports: ServicePort[];
}

/** The control stream's message. */
export interface ServiceList {
  /** The pod's namespace (short names resolve there). */
  namespace: string;
  clusterDomain: string;
  services: TunnelService[];
}

/** One port a gateway listens on, for one Service port. */
export interface GatewayListener {
  /** The gateway's own TCP port. */
  gatewayPort: number;
  namespace: string;
  name: string;
  /** The Service's port. */
  port: number;
}

/** The gateway's control stream message: every listener it should have now. */
export interface GatewayListeners {
  listeners: GatewayListener[];
}

/** Writes one length-prefixed JSON message to `writer`. */
export async function writeMessage(
  writer: WritableStreamDefaultWriter<Uint8Array>,
  value: unknown,
): Promise<void> {
  const body = new TextEncoder().encode(JSON.stringify(value));
  if (body.length > MAX_HEADER) {
    throw new RangeError(`Tunnel header of ${body.length} bytes is over ${MAX_HEADER}`);
  }
  const out = new Uint8Array(2 + body.length);
  new DataView(out.buffer).setUint16(0, body.length);
  out.set(body, 2);
  await writer.write(out);
}

/**
 * Reads one length-prefixed JSON message from the start of `readable`; returns it and a
 * readable of the bytes after it.
 */
export async function readMessage(
  readable: ReadableStream<Uint8Array>,
): Promise<{ value: unknown; rest: ReadableStream<Uint8Array> }> {
  const reader = readable.getReader();
  let buffered = new Uint8Array(0);
  const need = async (n: number) => {
    while (buffered.length < n) {
      const { value, done } = await reader.read();
      if (done) throw new Error("The tunnel stream ended before its header");
      const next = new Uint8Array(buffered.length + value.length);
      next.set(buffered);
      next.set(value, buffered.length);
      buffered = next;
    }
  };
  await need(2);
  const length = new DataView(buffered.buffer).getUint16(0);
  if (length > MAX_HEADER) {
    throw new Error(`Tunnel header of ${length} bytes is over ${MAX_HEADER}`);
  }
  await need(2 + length);
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(buffered.subarray(2, 2 + length)));
  } catch {
    throw new Error("The tunnel stream's header is not JSON");
  }
  const left = buffered.subarray(2 + length);
  const rest = new ReadableStream<Uint8Array>({
    start(controller) {
      if (left.length) controller.enqueue(left);
    },
    async pull(controller) {
      const { value, done } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  }, { highWaterMark: 0 });
  return { value, rest };
}

/** Parses a stream header; throws a sentence naming what is wrong. */
export function parseHeader(value: unknown): StreamHeader {
  const v = (value ?? {}) as Record<string, unknown>;
  const port = v.port;
  const validPort = typeof port === "number" && Number.isInteger(port) && port > 0 &&
    port < 65536;
  const address = (a: unknown) => a === undefined || (typeof a === "string" && isAddress(a));
  if (v.kind === "control") return { kind: "control" };
  if (v.kind === "port" && validPort && address(v.host)) {
    return { kind: "port", port, ...(v.host === undefined ? {} : { host: v.host as string }) };
  }
  if (
    v.kind === "service" && validPort && typeof v.namespace === "string" &&
    typeof v.name === "string" && address(v.source)
  ) {
    const source = v.source === undefined ? {} : { source: v.source as string };
    return { kind: "service", namespace: v.namespace, name: v.name, port, ...source };
  }
  throw new Error(
    "Tunnel stream header must be {kind: control}, {kind: port, port[, host]} or " +
      "{kind: service, namespace, name, port[, source]} with a port from 1 to 65535 and " +
      "host or source an IP address",
  );
}

/** An IPv4 or IPv6 address (a gateway's `host` and `source` are addresses, never names). */
export function isAddress(text: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(text) || (/^[0-9a-fA-F:.]+$/.test(text) &&
    text.includes(":") && text.length <= 45);
}

/** `source` as one form: an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) as its IPv4. */
export function normalAddress(address: string): string {
  return address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, "").toLowerCase();
}

/** Pipes each side into the other; resolves when both directions are done. */
export async function splice(
  a: { readable: ReadableStream<Uint8Array>; writable: WritableStream<Uint8Array> },
  b: { readable: ReadableStream<Uint8Array>; writable: WritableStream<Uint8Array> },
): Promise<void> {
  await Promise.allSettled([a.readable.pipeTo(b.writable), b.readable.pipeTo(a.writable)]);
}
