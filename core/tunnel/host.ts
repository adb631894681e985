/**
 * vkubelet's side of the tunnel for pods that run elsewhere. {@link TunnelHost.attach} gives a
 * remote pod a network namespace and IP on this node (the same CNI path as process pods,
 * through {@link TunnelNetwork}), listens inside that namespace on the pod's declared TCP
 * containerPorts, and issues the credential its agent dials in with. Each connection to the pod
 * IP becomes a stream to the agent; each stream the agent opens for a Service is dialed from the
 * pod's namespace, so Services, NetworkPolicies and logs see the pod IP as the source. A pod
 * reaches only its own namespace's Services and `default/kubernetes`, as its env vars would
 * name them.
 *
 * With `stateDir`, each attachment is kept there (`<uid>.json`, 0600, written whole: the pod's
 * IPs and namespace, its declared ports and its credentials' SHA-256, never a credential), so
 * that a restarted vkubelet {@link TunnelHost.reattach reattaches} the pods it adopts with the
 * same IP and accepts their agents' credentials, and {@link TunnelHost.adopted detaches} those
 * whose pods are gone.
 * @module
 */
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { join } from "node:path";
import type { Logger } from "../../base/log.ts";
import { writeAtomically } from "../../x509/mod.ts";
import { duplexFromNodeSocket } from "../../spdy/node_socket_duplex.ts";
import { TunnelCredentials } from "./credentials.ts";
import {
  CREDENTIAL_HEADER,
  parseHeader,
  readMessage,
  type ServiceList,
  splice,
  type StreamAnswer,
  type StreamHeader,
  TUNNEL_UPGRADE,
  type TunnelService,
  writeMessage,
} from "./protocol.ts";
import { MuxSession, type MuxStream } from "./session.ts";

/** A byte connection (a relayed socket). */
export interface TunnelConn {
  readable: ReadableStream<Uint8Array>;
  writable: WritableStream<Uint8Array>;
  close(): void;
}

/** The pod-network operations the host needs (providers/process/network implements them). */
export interface TunnelNetwork {
  /** A namespace and IPs for the pod (CNI ADD). */
  setUp(pod: Pod): Promise<{ ips: string[]; netns: string }>;
  /**
   * Undoes {@link setUp} (CNI DEL, the namespace removed); `saved` is what an earlier process's
   * setUp gave, for a pod this one never set up.
   */
  tearDown(pod: Pod, saved?: SavedNetwork): Promise<void>;
  /**
   * After a restart: takes over the namespace an earlier process's setUp gave (bound again and
   * CNI CHECK where it can). Absent: nothing to take over (a network with no such state).
   */
  restore?(pod: Pod, saved: SavedNetwork): Promise<void>;
  /** A TCP connection to `host:port` opened inside `netns`. */
  dial(netns: string, host: string, port: number): TunnelConn;
  /** Accepts TCP connections to `port` inside `netns` until the returned close. */
  listen(
    netns: string,
    port: number,
    onConnection: (conn: TunnelConn) => void,
  ): Promise<{ close(): Promise<void> }>;
}

/** What {@link TunnelNetwork.setUp} gave a pod. */
export interface SavedNetwork {
  ips: string[];
  netns: string;
}

/** One attachment as kept in `stateDir` (`<uid>.json`). */
export interface SavedAttachment extends SavedNetwork {
  version: 1;
  uid: string;
  namespace: string;
  name: string;
  /** The TCP ports listened on. */
  ports: number[];
  /** SHA-256 (hex) of each credential the pod's agents may hold; never a credential. */
  credentialHashes: string[];
}

/** A Service as vkubelet knows it. */
export interface ClusterService extends TunnelService {
  clusterIP: string;
}

/** The cluster's Services (an informer in vkubelet, a list in tests). */
export interface ServiceSource {
  list(namespace: string): ClusterService[];
  /** Calls `changed` after any Service changes; returns the unsubscribe. */
  subscribe(changed: () => void): () => void;
}

/** What {@link TunnelHost} needs. */
export interface TunnelHostDeps {
  network: TunnelNetwork;
  services: ServiceSource;
  log: Logger;
  /** The URL agents dial (`https://<node address>:10250`). */
  serverUrl: string;
  /** The CA (or self-signed certificate) agents pin for `serverUrl`. */
  serverCaPem: string;
  clusterDomain?: string;
  credentials?: TunnelCredentials;
  /**
   * Where attachments are kept across restarts (one directory per node; made 0700). Without
   * it a restart loses them: adopted pods are not reattached.
   */
  stateDir?: string;
}

/** What a remote provider gets for a pod: what to report and how to start its agent. */
export interface TunnelAttachment {
  podIP: string;
  podIPs: string[];
  /** The agent's credential: give it as `VKUBELET_AGENT_CREDENTIAL`, never on a command line. */
  agentCredential: string;
  /** Arguments after the vkubelet program: `agent --server=… --ca-base64=…`. */
  agentArgs: string[];
  /** SHA-256 of the credential, to keep in the pod's state and restore after a restart. */
  credentialHash: string;
}

interface AttachedPod {
  pod: Pod;
  key: string;
  netns: string;
  ips: string[];
  /** The TCP ports listened on. */
  ports: number[];
  listeners: { close(): Promise<void> }[];
  session?: MuxSession;
  control?: WritableStreamDefaultWriter<Uint8Array>;
  lastList?: string;
}

/** The host side of remote pods' tunnels; see the module doc. */
export class TunnelHost {
  readonly #deps: TunnelHostDeps;
  readonly #credentials: TunnelCredentials;
  readonly #pods = new Map<string, AttachedPod>();
  readonly #unsubscribe: () => void;

  constructor(deps: TunnelHostDeps) {
    this.#deps = deps;
    this.#credentials = deps.credentials ?? new TunnelCredentials();
    this.#unsubscribe = deps.services.subscribe(() => this.#pushServices());
  }

  /** Gives `pod` an IP on this node and the listeners on its ports; see the module doc. */
  async attach(pod: Pod): Promise<TunnelAttachment> {
    const uid = pod.metadata?.uid;
    if (!uid) throw new TypeError("Pod has no metadata.uid: attach pods read from the cluster");
    await this.detach(pod);
    const { ips, netns } = await this.#deps.network.setUp(pod);
    const ports = declaredTcpPorts(pod);
    const entry: AttachedPod = { pod, key: podKey(pod), netns, ips, ports, listeners: [] };
    this.#pods.set(uid, entry);
    try {
      for (const port of ports) {
        entry.listeners.push(
          await this.#deps.network.listen(netns, port, (conn) => this.#inbound(entry, port, conn)),
        );
      }
    } catch (err) {
      await this.detach(pod);
      throw err;
    }
    const issued = await this.#credentials.issue(uid);
    try {
      await this.#save(entry);
    } catch (err) {
      await this.detach(pod);
      throw err;
    }
    return this.#attachment(entry, issued);
  }

  /**
   * After a restart: the pod attached by an earlier process (kept in `stateDir`) attached again
   * with the same IP and namespace, its listeners made anew, and its agents' credentials
   * accepted; a new credential (also accepted) is issued for the pod's next runs. Undefined
   * when nothing is kept for the pod (it was never attached, or there is no `stateDir`).
   */
  async reattach(pod: Pod): Promise<TunnelAttachment | undefined> {
    const uid = pod.metadata?.uid;
    if (!uid) throw new TypeError("Pod has no metadata.uid: reattach pods read from the cluster");
    const saved = await this.#load(uid);
    if (!saved) return undefined;
    const known = this.#pods.get(uid);
    if (known) {
      return this.#attachment(known, await this.#credentials.issue(uid, true));
    }
    await this.#deps.network.restore?.(pod, saved);
    const ports = Array.isArray(saved.ports) ? saved.ports : declaredTcpPorts(pod);
    const entry: AttachedPod = {
      pod,
      key: podKey(pod),
      netns: saved.netns,
      ips: saved.ips,
      ports,
      listeners: [],
    };
    this.#pods.set(uid, entry);
    this.#credentials.restore(uid, ...saved.credentialHashes);
    try {
      for (const port of ports) {
        entry.listeners.push(
          await this.#deps.network.listen(
            saved.netns,
            port,
            (conn) => this.#inbound(entry, port, conn),
          ),
        );
      }
      const issued = await this.#credentials.issue(uid, true);
      await this.#save(entry);
      this.#deps.log.info("pod {pod} reattached at {ip}", { pod: entry.key, ip: saved.ips[0] });
      return this.#attachment(entry, issued);
    } catch (err) {
      await this.detach(pod);
      throw err;
    }
  }

  /**
   * Once the pods on this node are known after a start (a successful list, each adopted one
   * {@link reattach reattached}): every attachment kept in `stateDir` whose pod is not among
   * `pods` is detached (its pod went away while vkubelet was not running) and its state
   * removed. Never call it after a failed list: every kept pod would look gone.
   */
  async adopted(pods: Pod[]): Promise<void> {
    const dir = this.#deps.stateDir;
    if (!dir) return;
    const keep = new Set(pods.map((p) => p.metadata?.uid));
    for (const uid of await savedUids(dir)) {
      if (keep.has(uid) || this.#pods.has(uid)) continue;
      const saved = await this.#load(uid).catch(() => undefined);
      const pod: Pod = {
        metadata: { uid, namespace: saved?.namespace, name: saved?.name },
      };
      this.#deps.log.info("detaching pod {pod}: it went away while vkubelet was not running", {
        pod: saved ? `${saved.namespace}/${saved.name}` : uid,
      });
      this.#credentials.revoke(uid);
      try {
        if (saved) await this.#deps.network.tearDown(pod, saved);
      } catch (err) {
        this.#deps.log.warning("cannot tear down the network of gone pod {uid}: {err}", {
          uid,
          err,
        });
      }
      await Deno.remove(join(dir, `${uid}.json`)).catch(() => {});
    }
  }

  #attachment(
    entry: AttachedPod,
    { credential, hash }: { credential: string; hash: string },
  ): TunnelAttachment {
    const uid = entry.pod.metadata?.uid ?? "";
    const ca = btoa(this.#deps.serverCaPem);
    return {
      podIP: entry.ips[0],
      podIPs: entry.ips,
      agentCredential: credential,
      agentArgs: [
        "agent",
        `--server=${this.#deps.serverUrl}`,
        `--ca-base64=${ca}`,
        `--loopback-prefix=${loopbackPrefix(uid)}`,
      ],
      credentialHash: hash,
    };
  }

  /** Keeps `entry` in `stateDir` (0600, replaced whole). */
  async #save(entry: AttachedPod): Promise<void> {
    const dir = this.#deps.stateDir;
    if (!dir) return;
    const uid = entry.pod.metadata?.uid ?? "";
    const saved: SavedAttachment = {
      version: 1,
      uid,
      namespace: entry.pod.metadata?.namespace ?? "default",
      name: entry.pod.metadata?.name ?? "",
      ips: entry.ips,
      netns: entry.netns,
      ports: entry.ports,
      credentialHashes: this.#credentials.hashes(uid),
    };
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    await writeAtomically(join(dir, `${uid}.json`), `${JSON.stringify(saved)}\n`);
  }

  /** The kept attachment of pod `uid`, if any; a file that is not one is an error. */
  async #load(uid: string): Promise<SavedAttachment | undefined> {
    const dir = this.#deps.stateDir;
    if (!dir || !isUid(uid)) return undefined;
    const path = join(dir, `${uid}.json`);
    let text: string;
    try {
      text = await Deno.readTextFile(path);
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return undefined;
      throw err;
    }
    const saved = JSON.parse(text) as SavedAttachment;
    if (
      saved?.version !== 1 || saved.uid !== uid || !Array.isArray(saved.ips) ||
      !saved.ips.length || typeof saved.netns !== "string" ||
      !Array.isArray(saved.credentialHashes)
    ) {
      throw new Error(
        `${path} is not a tunnel attachment vkubelet keeps (version 1, uid, ips, netns, ` +
          `credentialHashes); remove it and delete the pod to attach it anew`,
      );
    }
    return saved;
  }

  /** Revokes the pod's credential, ends its tunnel and listeners, and tears its network down. */
  async detach(pod: Pod): Promise<void> {
    const uid = pod.metadata?.uid ?? "";
    this.#credentials.revoke(uid);
    const dir = this.#deps.stateDir;
    if (dir && isUid(uid)) await Deno.remove(join(dir, `${uid}.json`)).catch(() => {});
    const entry = this.#pods.get(uid);
    if (!entry) return;
    this.#pods.delete(uid);
    entry.session?.close();
    await Promise.allSettled(entry.listeners.map((l) => l.close()));
    await this.#deps.network.tearDown(entry.pod);
  }

  /** Ends every tunnel and listener (pods' networks stay, for a restart to adopt). */
  async close(): Promise<void> {
    this.#unsubscribe();
    for (const entry of this.#pods.values()) {
      entry.session?.close();
      await Promise.allSettled(entry.listeners.map((l) => l.close()));
    }
    this.#pods.clear();
  }

  /** The kubelet API's `/tunnel` upgrade: checks the credential, then runs the session. */
  async accept(
    upgrade: { request: Request; socket: Duplex; head: Uint8Array },
  ): Promise<Response | undefined> {
    const headers = upgrade.request.headers;
    if ((headers.get("upgrade") ?? "").toLowerCase() !== TUNNEL_UPGRADE) {
      return text(400, `The tunnel needs "Upgrade: ${TUNNEL_UPGRADE}"`);
    }
    const given = headers.get(CREDENTIAL_HEADER);
    if (!given) return text(401, `The tunnel needs the agent's credential in ${CREDENTIAL_HEADER}`);
    const checked = await this.#credentials.verify(given);
    const entry = "uid" in checked ? this.#pods.get(checked.uid) : undefined;
    if (!entry) {
      const why = "refused" in checked ? checked.refused : "the pod is not attached";
      this.#deps.log.info("tunnel refused: {reason}", { reason: why });
      return text(401, `Tunnel credential refused: ${why}`);
    }
    const socket = upgrade.socket as Socket;
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${TUNNEL_UPGRADE}\r\n\r\n`,
    );
    entry.session?.close();
    const session = new MuxSession(duplexFromNodeSocket(socket, { head: upgrade.head }), {
      client: false,
      onStream: (stream) => void this.#outbound(entry, stream),
    });
    entry.session = session;
    entry.control = undefined;
    entry.lastList = undefined;
    this.#deps.log.info("tunnel of pod {pod} connected", { pod: entry.key });
    void session.closed.then((err) => {
      if (entry.session === session) entry.session = undefined;
      this.#deps.log.info("tunnel of pod {pod} closed{why}", {
        pod: entry.key,
        why: err ? `: ${err.message}` : "",
      });
    });
    return undefined;
  }

  /** A connection to the pod IP: carried to the agent. */
  async #inbound(entry: AttachedPod, port: number, conn: TunnelConn): Promise<void> {
    const session = entry.session;
    if (!session) return conn.close();
    let stream: MuxStream | undefined;
    try {
      stream = session.open();
      const writer = stream.writable.getWriter();
      await writeMessage(writer, { kind: "port", port } satisfies StreamHeader);
      writer.releaseLock();
      const { value, rest } = await readMessage(stream.readable);
      const answer = value as StreamAnswer;
      if (!("ok" in answer)) throw new Error(answer.error);
      await splice(conn, { readable: rest, writable: stream.writable });
    } catch (err) {
      this.#deps.log.debug("connection to pod {pod} port {port} failed: {err}", {
        pod: entry.key,
        port,
        err,
      });
      stream?.reset();
    } finally {
      conn.close();
    }
  }

  /** A stream the agent opened: the control stream, or a Service connection. */
  async #outbound(entry: AttachedPod, stream: MuxStream): Promise<void> {
    const writer = stream.writable.getWriter();
    try {
      const { value, rest } = await readMessage(stream.readable);
      const header = parseHeader(value);
      if (header.kind === "control") {
        await writeMessage(writer, { ok: true } satisfies StreamAnswer);
        entry.control = writer;
        await this.#sendServices(entry);
        return void rest.pipeTo(new WritableStream()).catch(() => {});
      }
      if (header.kind !== "service") {
        throw new Error("An agent opens control and service streams only");
      }
      const target = this.#serviceTarget(entry, header);
      const conn = this.#deps.network.dial(entry.netns, target, header.port);
      await writeMessage(writer, { ok: true } satisfies StreamAnswer);
      writer.releaseLock();
      await splice(conn, { readable: rest, writable: stream.writable });
      conn.close();
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.#deps.log.info("tunnel stream of pod {pod} refused: {reason}", {
        pod: entry.key,
        reason: message,
      });
      await writeMessage(writer, { error: message } satisfies StreamAnswer).catch(() => {});
      await writer.close().catch(() => {});
    }
  }

  /** The ClusterIP of the Service the header names, if the pod may call it. */
  #serviceTarget(entry: AttachedPod, header: { namespace: string; name: string; port: number }) {
    const own = entry.pod.metadata?.namespace ?? "default";
    if (!visible(own, header.namespace, header.name)) {
      throw new Error(
        `Pod ${entry.key} may not reach Service ${header.namespace}/${header.name}: a pod reaches ` +
          `the Services of its namespace (${own}) and default/kubernetes`,
      );
    }
    const service = this.#deps.services.list(header.namespace)
      .find((s) => s.name === header.name);
    if (!service) throw new Error(`Service ${header.namespace}/${header.name} does not exist`);
    if (!service.ports.some((p) => p.port === header.port && p.protocol === "TCP")) {
      throw new Error(
        `Service ${header.namespace}/${header.name} has no TCP port ${header.port}`,
      );
    }
    return service.clusterIP;
  }

  /** What pod `entry` may see: its namespace's Services and `default/kubernetes`. */
  #serviceList(entry: AttachedPod): ServiceList {
    const namespace = entry.pod.metadata?.namespace ?? "default";
    const strip = ({ namespace, name, ports }: ClusterService): TunnelService => ({
      namespace,
      name,
      ports: ports.filter((p) => p.protocol === "TCP"),
    });
    const own = this.#deps.services.list(namespace).map(strip);
    const api = namespace === "default" ? [] : this.#deps.services.list("default")
      .filter((s) => s.name === "kubernetes").map(strip);
    return {
      namespace,
      clusterDomain: this.#deps.clusterDomain ?? "cluster.local",
      services: [...own, ...api],
    };
  }

  async #sendServices(entry: AttachedPod): Promise<void> {
    if (!entry.control) return;
    const line = JSON.stringify(this.#serviceList(entry));
    if (line === entry.lastList) return;
    entry.lastList = line;
    await entry.control.write(new TextEncoder().encode(`${line}\n`)).catch(() => {});
  }

  #pushServices(): void {
    for (const entry of this.#pods.values()) void this.#sendServices(entry);
  }
}

function visible(own: string, namespace: string, name: string): boolean {
  return namespace === own || (namespace === "default" && name === "kubernetes");
}

/**
 * The first octets of the pod's Service addresses, `127.<64–253>`, from its uid: agents of pods
 * that share a host's loopback (two jobs on one compute node) seldom pick the same addresses.
 */
export function loopbackPrefix(uid: string): string {
  let h = 2166136261;
  for (const c of new TextEncoder().encode(uid)) h = Math.imul(h ^ c, 16777619) >>> 0;
  return `127.${64 + (h % 190)}`;
}

/** The pod's declared TCP containerPorts, once each. */
export function declaredTcpPorts(pod: Pod): number[] {
  const ports = new Set<number>();
  for (const c of pod.spec?.containers ?? []) {
    for (const p of c.ports ?? []) if ((p.protocol ?? "TCP") === "TCP") ports.add(p.containerPort);
  }
  return [...ports];
}

/** A uid that names a file of `stateDir` and nothing else. */
function isUid(uid: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9_-]*$/.test(uid);
}

/** The uids of the attachments kept in `dir`. */
async function savedUids(dir: string): Promise<string[]> {
  const uids: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) {
      const uid = e.isFile && e.name.endsWith(".json") ? e.name.slice(0, -5) : "";
      if (isUid(uid)) uids.push(uid);
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return uids;
}

function podKey(pod: Pod): string {
  return `${pod.metadata?.namespace ?? "default"}/${pod.metadata?.name ?? ""}`;
}

function text(status: number, message: string): Response {
  return new Response(`${message}\n`, {
    status,
    headers: { "content-type": "text/plain; charset=utf-8" },
  });
}
