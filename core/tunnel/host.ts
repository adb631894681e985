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
 *
 * Pods in another cluster's pod network (the kubernetes provider's) are attached through the
 * node's {@link TunnelHost.gateway gateway} instead (./gateway.ts): the same namespace, IP and
 * listeners, no credential of their own; their connections go over the gateway's session to the
 * address the provider {@link TunnelGateway.setRemoteAddress set} for them (refused while there
 * is none or the gateway is not connected), and the gateway's calls from that address are dialed
 * from their namespace as their own agent's would be.
 * @module
 */
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { Logger } from "../../base/log.ts";
import { duplexFromNodeSocket } from "../../spdy/node_socket_duplex.ts";
import { AttachmentStore, type SavedAttachment, type SavedNetwork } from "./attachments.ts";
import { TunnelCredentials } from "./credentials.ts";
import { GatewayLink } from "./gateway.ts";
import {
  CREDENTIAL_HEADER,
  type GatewayListener,
  normalAddress,
  parseHeader,
  readMessage,
  splice,
  type StreamAnswer,
  type StreamHeader,
  TUNNEL_UPGRADE,
  writeMessage,
} from "./protocol.ts";
import { MuxSession, type MuxStream } from "./session.ts";
import { serviceList, type ServiceSource, serviceTarget } from "./visibility.ts";

export type { SavedAttachment, SavedNetwork } from "./attachments.ts";
export type { ClusterService, ServiceSource } from "./visibility.ts";

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

/** The pod's IPs on this node. */
export interface PodIPs {
  podIP: string;
  podIPs: string[];
}

/** A node's gateway as {@link TunnelHost.gateway} gives it (`PodNetworkGateway` less the program). */
export interface TunnelGateway {
  /** Arguments after the vkubelet program: `agent --gateway --server=… --ca-base64=…`. */
  agentArgs: string[];
  /** Give it as `VKUBELET_AGENT_CREDENTIAL`, never on a command line. */
  agentCredential: string;
  attach(pod: Pod): Promise<PodIPs>;
  reattach(pod: Pod): Promise<PodIPs | undefined>;
  detach(pod: Pod): Promise<void>;
  adopted(pods: Pod[]): Promise<void>;
  setRemoteAddress(pod: Pod, address: string | undefined): void;
  setServices(services: GatewayListener[]): void;
}

interface AttachedPod {
  pod: Pod;
  key: string;
  /** Attached through the gateway. */
  gateway: boolean;
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
  /** Gateway pods' addresses where they run, by uid. */
  readonly #remoteAddresses = new Map<string, string>();
  readonly #gateway: GatewayLink;
  readonly #store: AttachmentStore;
  readonly #unsubscribe: () => void;

  constructor(deps: TunnelHostDeps) {
    this.#deps = deps;
    this.#credentials = deps.credentials ?? new TunnelCredentials();
    this.#store = new AttachmentStore(deps.stateDir);
    this.#unsubscribe = deps.services.subscribe(() => this.#pushServices());
    this.#gateway = new GatewayLink({
      log: deps.log,
      stateDir: deps.stateDir,
      podAt: (source) => this.#gatewayPodAt(source)?.key,
      dialService: (key, service) => {
        const entry = [...this.#pods.values()].find((e) => e.gateway && e.key === key);
        if (!entry) throw new Error(`Pod ${key} is not attached`);
        const target = serviceTarget(this.#deps.services, entry.pod, service);
        return this.#deps.network.dial(entry.netns, target, service.port);
      },
    });
  }

  /** Gives `pod` an IP on this node and the listeners on its ports; see the module doc. */
  async attach(pod: Pod): Promise<TunnelAttachment> {
    const entry = await this.#attachNetwork(pod, false);
    const uid = pod.metadata?.uid ?? "";
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
   * The node's gateway (see the module doc and ./gateway.ts): its credential (`credential` when
   * it is still accepted, else a new one, the old revoked) and the operations on its pods.
   */
  async gateway(options: { credential?: string } = {}): Promise<TunnelGateway> {
    const agentCredential = await this.#gateway.credential(options.credential);
    return {
      agentArgs: [
        "agent",
        "--gateway",
        `--server=${this.#deps.serverUrl}`,
        `--ca-base64=${btoa(this.#deps.serverCaPem)}`,
      ],
      agentCredential,
      attach: async (pod) => {
        const uid = pod.metadata?.uid ?? "";
        const address = this.#remoteAddresses.get(uid);
        const entry = await this.#attachNetwork(pod, true);
        if (address) this.#remoteAddresses.set(uid, address);
        try {
          await this.#save(entry);
        } catch (err) {
          await this.detach(pod);
          throw err;
        }
        return { podIP: entry.ips[0], podIPs: entry.ips };
      },
      reattach: async (pod) => {
        const entry = await this.#reattachNetwork(pod, true);
        return entry && { podIP: entry.ips[0], podIPs: entry.ips };
      },
      detach: (pod) => this.detach(pod),
      adopted: (pods) => this.#adopted(pods, true),
      setRemoteAddress: (pod, address) => this.#setRemoteAddress(pod, address),
      setServices: (services) => this.#gateway.setServices(services),
    };
  }

  /** Forgets the gateway's credentials and ends its session (its pods stay attached). */
  revokeGateway(): Promise<void> {
    return this.#gateway.revoke();
  }

  /** A namespace, IPs and listeners for `pod` (an earlier attachment replaced). */
  async #attachNetwork(pod: Pod, gateway: boolean): Promise<AttachedPod> {
    const uid = pod.metadata?.uid;
    if (!uid) throw new TypeError("Pod has no metadata.uid: attach pods read from the cluster");
    await this.detach(pod);
    const { ips, netns } = await this.#deps.network.setUp(pod);
    const ports = declaredTcpPorts(pod);
    const entry: AttachedPod = { pod, key: podKey(pod), gateway, netns, ips, ports, listeners: [] };
    this.#pods.set(uid, entry);
    try {
      await this.#listen(entry);
    } catch (err) {
      await this.detach(pod);
      throw err;
    }
    return entry;
  }

  async #listen(entry: AttachedPod): Promise<void> {
    for (const port of entry.ports) {
      entry.listeners.push(
        await this.#deps.network.listen(
          entry.netns,
          port,
          (conn) => this.#inbound(entry, port, conn),
        ),
      );
    }
  }

  #setRemoteAddress(pod: Pod, address: string | undefined): void {
    const uid = pod.metadata?.uid ?? "";
    if (address !== undefined && pod.spec?.hostNetwork) {
      // Its address there is its node's, which other callers share: it names no one pod.
      this.#deps.log.warning("pod {pod} is on the host network there: its address is not kept", {
        pod: podKey(pod),
      });
      address = undefined;
    }
    if (address === undefined) {
      this.#remoteAddresses.delete(uid);
      return;
    }
    const normal = normalAddress(address);
    // Two live pods never share an address there: an earlier holder is gone (B reused it).
    for (const [other, held] of this.#remoteAddresses) {
      if (held === normal && other !== uid) this.#remoteAddresses.delete(other);
    }
    this.#remoteAddresses.set(uid, normal);
  }

  /** The gateway pod at `source` (its address where it runs), if it is attached. */
  #gatewayPodAt(source: string): AttachedPod | undefined {
    for (const [uid, address] of this.#remoteAddresses) {
      const entry = this.#pods.get(uid);
      if (address === source && entry?.gateway) return entry;
    }
    return undefined;
  }

  /**
   * After a restart: the pod attached by an earlier process (kept in `stateDir`) attached again
   * with the same IP and namespace, its listeners made anew, and its agents' credentials
   * accepted; a new credential (also accepted) is issued for the pod's next runs. Undefined
   * when nothing is kept for the pod (it was never attached, or there is no `stateDir`).
   */
  async reattach(pod: Pod): Promise<TunnelAttachment | undefined> {
    const entry = await this.#reattachNetwork(pod, false);
    if (!entry) return undefined;
    const uid = pod.metadata?.uid ?? "";
    try {
      const issued = await this.#credentials.issue(uid, true);
      await this.#save(entry);
      return this.#attachment(entry, issued);
    } catch (err) {
      await this.#release(uid);
      throw err;
    }
  }

  /**
   * The pod's kept attachment taken over (see {@link reattach}), or undefined; one kept the other
   * way (through the gateway or not) is torn down and forgotten, for the pod to be attached anew.
   */
  async #reattachNetwork(pod: Pod, gateway: boolean): Promise<AttachedPod | undefined> {
    const uid = pod.metadata?.uid;
    if (!uid) throw new TypeError("Pod has no metadata.uid: reattach pods read from the cluster");
    const saved = await this.#store.load(uid);
    if (!saved) return undefined;
    const known = this.#pods.get(uid);
    if (known && known.gateway === gateway) return known;
    if (known || (saved.gateway === true) !== gateway) {
      await this.#forget(uid, saved);
      return undefined;
    }
    await this.#deps.network.restore?.(pod, saved);
    const entry: AttachedPod = {
      pod,
      key: podKey(pod),
      gateway,
      netns: saved.netns,
      ips: saved.ips,
      ports: Array.isArray(saved.ports) ? saved.ports : declaredTcpPorts(pod),
      listeners: [],
    };
    this.#pods.set(uid, entry);
    if (!gateway) this.#credentials.restore(uid, ...saved.credentialHashes);
    try {
      await this.#listen(entry);
      if (gateway) await this.#save(entry);
    } catch (err) {
      await this.#release(uid);
      throw err;
    }
    this.#deps.log.info("pod {pod} reattached at {ip}", { pod: entry.key, ip: saved.ips[0] });
    return entry;
  }

  /**
   * Once the pods on this node are known after a start (a successful list, each adopted one
   * {@link reattach reattached}): every attachment kept in `stateDir` whose pod is not among
   * `pods` is detached (its pod went away while vkubelet was not running) and its state
   * removed. Never call it after a failed list: every kept pod would look gone.
   */
  adopted(pods: Pod[]): Promise<void> {
    return this.#adopted(pods, false);
  }

  /** {@link adopted} for the pods attached with an agent each, or through the gateway. */
  async #adopted(pods: Pod[], gateway: boolean): Promise<void> {
    const keep = new Set(pods.map((p) => p.metadata?.uid));
    for (const uid of await this.#store.uids()) {
      if (keep.has(uid) || this.#pods.has(uid)) continue;
      const saved = await this.#store.load(uid).catch(() => undefined);
      if (saved && (saved.gateway === true) !== gateway) continue;
      this.#deps.log.info("detaching pod {pod}: it went away while vkubelet was not running", {
        pod: saved ? `${saved.namespace}/${saved.name}` : uid,
      });
      await this.#forget(uid, saved);
    }
  }

  /** Revokes, tears down what `saved` says and removes the kept attachment of pod `uid`. */
  async #forget(uid: string, saved: SavedAttachment | undefined): Promise<void> {
    const pod: Pod = { metadata: { uid, namespace: saved?.namespace, name: saved?.name } };
    this.#credentials.revoke(uid);
    this.#remoteAddresses.delete(uid);
    const known = this.#pods.get(uid);
    if (known) {
      await this.detach(known.pod);
      return;
    }
    try {
      if (saved) await this.#deps.network.tearDown(pod, saved);
    } catch (err) {
      this.#deps.log.warning("cannot tear down the network of gone pod {uid}: {err}", {
        uid,
        err,
      });
    }
    await this.#store.remove(uid);
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

  /** Keeps `entry` in `stateDir`. */
  async #save(entry: AttachedPod): Promise<void> {
    const uid = entry.pod.metadata?.uid ?? "";
    await this.#store.save({
      version: 1,
      uid,
      namespace: entry.pod.metadata?.namespace ?? "default",
      name: entry.pod.metadata?.name ?? "",
      ips: entry.ips,
      netns: entry.netns,
      ports: entry.ports,
      credentialHashes: entry.gateway ? [] : this.#credentials.hashes(uid),
      ...(entry.gateway ? { gateway: true as const } : {}),
    });
  }

  /** Revokes the pod's credential, ends its tunnel and listeners, and tears its network down. */
  async detach(pod: Pod): Promise<void> {
    const uid = pod.metadata?.uid ?? "";
    this.#credentials.revoke(uid);
    this.#remoteAddresses.delete(uid);
    await this.#store.remove(uid);
    const entry = this.#pods.get(uid);
    if (!entry) return;
    this.#pods.delete(uid);
    entry.session?.close();
    await Promise.allSettled(entry.listeners.map((l) => l.close()));
    await this.#deps.network.tearDown(entry.pod);
  }

  /**
   * A failed reattach undone here (its listeners closed, its credentials refused) with its
   * namespace and kept state left: the failure may pass, and a reattach is tried again.
   */
  async #release(uid: string): Promise<void> {
    const entry = this.#pods.get(uid);
    this.#pods.delete(uid);
    this.#credentials.revoke(uid);
    entry?.session?.close();
    await Promise.allSettled(entry?.listeners.map((l) => l.close()) ?? []);
  }

  /** Ends every tunnel and listener (pods' networks stay, for a restart to adopt). */
  async close(): Promise<void> {
    this.#unsubscribe();
    this.#gateway.close();
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
    if (GatewayLink.owns(given)) return this.#acceptGateway(given, upgrade);
    const checked = await this.#credentials.verify(given);
    const found = "uid" in checked ? this.#pods.get(checked.uid) : undefined;
    // A gateway pod has no credential of its own; were one ever kept, it opens nothing.
    const entry = found?.gateway ? undefined : found;
    if (!entry) {
      const why = "refused" in checked ? checked.refused : "the pod is not attached";
      this.#deps.log.info("tunnel refused: {reason}", { reason: why });
      return text(401, `Tunnel credential refused: ${why}`);
    }
    const socket = upgrade.socket as Socket;
    socket.setNoDelay?.(true); // small frames go at once (see the agent's dial)
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

  /** The gateway's `/tunnel`: its own kind of credential, its own session. */
  async #acceptGateway(
    given: string,
    upgrade: { socket: Duplex; head: Uint8Array },
  ): Promise<Response | undefined> {
    const why = await this.#gateway.refused(given);
    if (why) {
      this.#deps.log.info("gateway refused: {reason}", { reason: why });
      return text(401, `Gateway credential refused: ${why}`);
    }
    const socket = upgrade.socket as Socket;
    socket.setNoDelay?.(true); // small frames go at once (see the agent's dial)
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${TUNNEL_UPGRADE}\r\n\r\n`,
    );
    this.#gateway.connect(duplexFromNodeSocket(socket, { head: upgrade.head }));
    return undefined;
  }

  /** A connection to the pod IP: carried to the agent (or the gateway). */
  async #inbound(entry: AttachedPod, port: number, conn: TunnelConn): Promise<void> {
    if (entry.gateway) {
      const address = this.#remoteAddresses.get(entry.pod.metadata?.uid ?? "");
      if (!address) return conn.close();
      return await this.#gateway.inbound(entry.key, port, address, conn);
    }
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
      if (header.source !== undefined) {
        throw new Error("A pod's agent calls Services as its pod: only a gateway names a source");
      }
      const target = serviceTarget(this.#deps.services, entry.pod, header);
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

  async #sendServices(entry: AttachedPod): Promise<void> {
    if (!entry.control) return;
    const line = JSON.stringify(
      serviceList(this.#deps.services, entry.pod, this.#deps.clusterDomain),
    );
    if (line === entry.lastList) return;
    entry.lastList = line;
    await entry.control.write(new TextEncoder().encode(`${line}\n`)).catch(() => {});
  }

  #pushServices(): void {
    for (const entry of this.#pods.values()) if (!entry.gateway) void this.#sendServices(entry);
  }
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

function podKey(pod: Pod): string {
  return `${pod.metadata?.namespace ?? "default"}/${pod.metadata?.name ?? ""}`;
}

function text(status: number, message: string): Response {
  return new Response(`${message}\n`, {
    status,
    headers: { "content-type": "text/plain; charset=utf-8" },
  });
}
