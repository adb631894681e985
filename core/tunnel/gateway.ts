/**
 * A node's gateway: one agent (`vkubelet agent --gateway`) in another cluster's pod network
 * carries the streams of all the node's pods that run there (the kubernetes provider's). Its
 * credential (`vkg1.gateway.<secret>`, one per node, kept as a SHA-256 in `stateDir`'s
 * `_gateway.json` beside the pods' attachments) opens a gateway session only, never a pod's
 * tunnel; a pod's credential never opens this one.
 *
 * On the session vkubelet opens `{kind: port, port, host}` for each connection to such a pod's
 * IP here (the gateway dials the pod where it runs), and tells the gateway on its control stream
 * which ports to listen on ({@link GatewayLink.setServices}). The gateway opens
 * `{kind: service, namespace, name, port, source}` for each connection a listener accepted; the
 * {@link GatewayLinkDeps.dialService host} dials it from the A-side network namespace of the pod
 * whose address is `source`, when that Service port is one the gateway serves and the pod may
 * see it. A gateway can therefore reach only Services listed to it, on behalf of pods at
 * addresses the provider set, each as that pod's namespace allows; it cannot name a pod of its
 * own choosing other than by the caller's address, nor open the pods' tunnels.
 * @module
 */
import { join } from "node:path";
import type { Logger } from "../../base/log.ts";
import type { ByteDuplex } from "../../spdy/byte_duplex.ts";
import { writeAtomically } from "../../x509/mod.ts";
import { GATEWAY_PREFIX, TunnelCredentials } from "./credentials.ts";
import {
  type GatewayListener,
  type GatewayListeners,
  normalAddress,
  parseHeader,
  readMessage,
  splice,
  type StreamAnswer,
  type StreamHeader,
  writeMessage,
} from "./protocol.ts";
import { MuxSession, type MuxStream } from "./session.ts";

/** The file of `stateDir` the gateway's credential hashes are kept in (not a pod uid's name). */
export const GATEWAY_STATE_FILE = "_gateway.json";
/** The credential's id part (`vkg1.gateway.<secret>`). */
const GATEWAY_ID = "gateway";

/** A relayed connection (as {@link TunnelHost}'s). */
export interface GatewayConn {
  readable: ReadableStream<Uint8Array>;
  writable: WritableStream<Uint8Array>;
  close(): void;
}

/** What a {@link GatewayLink} needs from the host. */
export interface GatewayLinkDeps {
  log: Logger;
  stateDir?: string;
  /** `pod ns/name` of the gateway pod whose address there is `source`, if any. */
  podAt(source: string): string | undefined;
  /** Dials the Service from that pod's namespace; throws why when the pod may not. */
  dialService(
    pod: string,
    service: { namespace: string; name: string; port: number },
  ): GatewayConn;
}

interface SavedGateway {
  version: 1;
  credentialHashes: string[];
}

/** The gateway's credential and session; see the module doc. */
export class GatewayLink {
  readonly #deps: GatewayLinkDeps;
  readonly #credentials = new TunnelCredentials(GATEWAY_PREFIX);
  #loaded?: Promise<void>;
  #issuing: Promise<unknown> = Promise.resolve();
  /**
   * Each connected gateway with its control stream and the list it was sent last: when a gateway
   * is replaced by a new pod whose session opens before the old one's ends (a `Recreate`
   * Deployment does not prevent that: the old pod's node may be cut off from its cluster), both
   * are served (the newest gets the inbound connections) instead of each redial closing the
   * other's session.
   */
  readonly #sessions = new Map<
    MuxSession,
    { control?: WritableStreamDefaultWriter<Uint8Array>; lastList?: string }
  >();
  #listeners: GatewayListener[] = [];

  constructor(deps: GatewayLinkDeps) {
    this.#deps = deps;
  }

  /** Whether `credential` is of a gateway's kind (else it is checked as a pod's). */
  static owns(credential: string): boolean {
    return credential.startsWith(`${GATEWAY_PREFIX}.`);
  }

  /**
   * `given` when it is still accepted, else a new credential (kept in `stateDir`; the earlier
   * ones revoked and their session ended).
   */
  credential(given?: string): Promise<string> {
    // One at a time: two callers without a credential get the second one issued, never a
    // credential that the other call's issue has just revoked.
    const next = this.#issuing.then(async () => {
      await this.#load();
      if (given && "uid" in await this.#credentials.verify(given)) return given;
      const { credential } = await this.#credentials.issue(GATEWAY_ID);
      this.close();
      await this.#save();
      return credential;
    });
    this.#issuing = next.catch(() => "");
    return next;
  }

  /** Forgets every gateway credential (and its kept hashes) and ends the session. */
  async revoke(): Promise<void> {
    await this.#load();
    this.#credentials.revoke(GATEWAY_ID);
    this.close();
    const dir = this.#deps.stateDir;
    if (dir) await Deno.remove(join(dir, GATEWAY_STATE_FILE)).catch(() => {});
  }

  /** Undefined when `credential` opens the gateway session, else why not. */
  async refused(credential: string): Promise<string | undefined> {
    await this.#load();
    const checked = await this.#credentials.verify(credential);
    return "refused" in checked ? checked.refused : undefined;
  }

  /** Runs a gateway's session over `transport` (an upgraded connection), beside any others. */
  connect(transport: ByteDuplex): void {
    const session: MuxSession = new MuxSession(transport, {
      client: false,
      onStream: (stream) => void this.#outbound(session, stream),
    });
    this.#sessions.set(session, {});
    this.#deps.log.info("gateway connected ({count} connected)", { count: this.#sessions.size });
    void session.closed.then((err) => {
      this.#sessions.delete(session);
      this.#deps.log.info("gateway closed{why}", { why: err ? `: ${err.message}` : "" });
    });
  }

  /**
   * The Service ports the gateway listens for (see `PodNetworkGateway.setServices`); a
   * {@link GatewayListeners} message goes to the gateway when the list changed.
   */
  setServices(listeners: GatewayListener[]): void {
    const seen = new Set<number>();
    for (const l of listeners) {
      const ok = (p: unknown) => typeof p === "number" && Number.isInteger(p) && p < 65536;
      if (!ok(l.gatewayPort) || l.gatewayPort < 1024 || !ok(l.port) || l.port < 1) {
        throw new RangeError(
          `Gateway listener for Service ${l.namespace}/${l.name}: gatewayPort must be from ` +
            `1024 to 65535 and port from 1 to 65535 (got ${l.gatewayPort}, ${l.port})`,
        );
      }
      if (seen.has(l.gatewayPort)) {
        throw new RangeError(`Gateway port ${l.gatewayPort} is given to two Service ports`);
      }
      seen.add(l.gatewayPort);
    }
    this.#listeners = listeners.map(({ gatewayPort, namespace, name, port }) => ({
      gatewayPort,
      namespace,
      name,
      port,
    }));
    void this.#sendListeners();
  }

  /** A connection to a gateway pod's IP here: dialed at `host:port` by the gateway. */
  async inbound(pod: string, port: number, host: string, conn: GatewayConn): Promise<void> {
    const session = [...this.#sessions.keys()].at(-1);
    if (!session) return conn.close();
    let stream: MuxStream | undefined;
    try {
      stream = session.open();
      const writer = stream.writable.getWriter();
      await writeMessage(writer, { kind: "port", port, host } satisfies StreamHeader);
      writer.releaseLock();
      const { value, rest } = await readMessage(stream.readable);
      const answer = value as StreamAnswer;
      if (!("ok" in answer)) throw new Error(answer.error);
      await splice(conn, { readable: rest, writable: stream.writable });
    } catch (err) {
      this.#deps.log.debug("connection to pod {pod} port {port} by the gateway failed: {err}", {
        pod,
        port,
        err,
      });
      stream?.reset();
    } finally {
      conn.close();
    }
  }

  /** Ends the sessions (the credential stays). */
  close(): void {
    for (const session of this.#sessions.keys()) session.close();
    this.#sessions.clear();
  }

  /** A stream the gateway opened: its control stream, or a pod's Service connection. */
  async #outbound(session: MuxSession, stream: MuxStream): Promise<void> {
    const writer = stream.writable.getWriter();
    try {
      const { value, rest } = await readMessage(stream.readable);
      const header = parseHeader(value);
      if (header.kind === "control") {
        await writeMessage(writer, { ok: true } satisfies StreamAnswer);
        const state = this.#sessions.get(session);
        if (!state) throw new Error("The gateway's session has ended");
        state.control = writer;
        await this.#sendListeners();
        return void rest.pipeTo(new WritableStream()).catch(() => {});
      }
      if (header.kind !== "service" || header.source === undefined) {
        throw new Error("A gateway opens control streams and service streams with a source only");
      }
      const { namespace, name, port } = header;
      if (
        !this.#listeners.some((l) =>
          l.namespace === namespace && l.name === name && l.port === port
        )
      ) {
        throw new Error(`Service ${namespace}/${name} port ${port} is not one the gateway serves`);
      }
      const pod = this.#deps.podAt(normalAddress(header.source));
      if (!pod) throw new Error(`No pod of this node is at ${header.source}`);
      const conn = this.#deps.dialService(pod, { namespace, name, port });
      await writeMessage(writer, { ok: true } satisfies StreamAnswer);
      writer.releaseLock();
      await splice(conn, { readable: rest, writable: stream.writable });
      conn.close();
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.#deps.log.info("gateway stream refused: {reason}", { reason: message });
      await writeMessage(writer, { error: message } satisfies StreamAnswer).catch(() => {});
      await writer.close().catch(() => {});
    }
  }

  async #sendListeners(): Promise<void> {
    const line = JSON.stringify({ listeners: this.#listeners } satisfies GatewayListeners);
    await Promise.all([...this.#sessions.values()].map(async (state) => {
      if (!state.control || line === state.lastList) return;
      state.lastList = line;
      await state.control.write(new TextEncoder().encode(`${line}\n`)).catch(() => {});
    }));
  }

  /** Restores the kept hashes once (a restarted vkubelet accepts the gateway it had). */
  #load(): Promise<void> {
    this.#loaded ??= (async () => {
      const dir = this.#deps.stateDir;
      if (!dir) return;
      const path = join(dir, GATEWAY_STATE_FILE);
      let text: string;
      try {
        text = await Deno.readTextFile(path);
      } catch (err) {
        if (err instanceof Deno.errors.NotFound) return;
        throw err;
      }
      const saved = JSON.parse(text) as SavedGateway;
      if (saved?.version !== 1 || !Array.isArray(saved.credentialHashes)) {
        throw new Error(
          `${path} is not a gateway credential vkubelet keeps (version 1, credentialHashes); ` +
            `remove it: the gateway is then given a new credential`,
        );
      }
      this.#credentials.restore(GATEWAY_ID, ...saved.credentialHashes);
    })();
    // A file that could not be read is read again next time (once fixed or removed).
    this.#loaded.catch(() => this.#loaded = undefined);
    return this.#loaded;
  }

  async #save(): Promise<void> {
    const dir = this.#deps.stateDir;
    if (!dir) return;
    const saved: SavedGateway = {
      version: 1,
      credentialHashes: this.#credentials.hashes(GATEWAY_ID),
    };
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    await writeAtomically(join(dir, GATEWAY_STATE_FILE), `${JSON.stringify(saved)}\n`);
  }
}
