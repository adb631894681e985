/**
 * The agent's view of the cluster's Services: a loopback address per Service (127.77.x.y,
 * kept while the Service exists, so names stay put), a listener there on each of its TCP
 * ports, and an `/etc/hosts` fragment naming them as the cluster DNS would (`name`,
 * `name.ns`, `name.ns.svc`, `name.ns.svc.<domain>`; the short name only in the pod's own
 * namespace). Each connection becomes a tunnel stream that vkubelet dials from the pod's IP.
 *
 * The hosts file is a whole `/etc/hosts` (the kubelet's localhost lines first), written in place
 * rather than renamed, so that a container it is bound into (`--bind hosts:/etc/hosts`) sees each
 * change. The env file gives the Services' env vars that carry an address
 * (`{SVC}_SERVICE_HOST`, `{SVC}_PORT`, `{SVC}_PORT_<port>_TCP`, `…_TCP_ADDR`, named as the
 * kubelet names them: kubernetes/kubernetes pkg/kubelet/envvars/envvars.go `FromServices`) with
 * the loopback addresses, one `NAME=value` a line, for the pod's own namespace and `kubernetes`.
 *
 * An unprivileged agent cannot listen on ports below 1024: such a Service port is served on
 * port + 10000 (80 on 10080), which its env vars then name (`{SVC}_SERVICE_PORT`, `{SVC}_PORT`,
 * `…_TCP_PORT`); its name in the hosts file reaches it only on that port.
 * @module
 */
import type { ServiceList, TunnelService } from "../../core/tunnel/protocol.ts";

/** Called for each connection to a Service's loopback address. */
export type ServiceDialer = (service: TunnelService, port: number, conn: Deno.Conn) => void;

interface Bound {
  address: string;
  ports: Map<number, Deno.TcpListener>;
}

/** Keeps listeners and the hosts file in step with the Service lists vkubelet sends. */
export class ServiceListeners {
  readonly #bound = new Map<string, Bound>();
  readonly #used = new Set<number>();
  #last?: ServiceList;

  constructor(
    private readonly options: {
      dial: ServiceDialer;
      /** Where the hosts file goes; none writes nothing. */
      hostsFile?: string;
      /** Where the Services' env vars go; none writes nothing. */
      envFile?: string;
      /** The first two octets of the loopback addresses; default `127.77`. */
      prefix?: string;
      log: (message: string) => void;
    },
  ) {}

  /** Names and addresses now, as the hosts file says them. */
  entries(): { address: string; names: string[] }[] {
    const list = this.#last;
    if (!list) return [];
    return list.services.flatMap((s) => {
      const bound = this.#bound.get(key(s));
      return bound ? [{ address: bound.address, names: names(s, list) }] : [];
    });
  }

  /** Applies a new list: new Services bound, gone ones closed, ports added and removed. */
  async update(list: ServiceList): Promise<void> {
    this.#last = list;
    const wanted = new Map(list.services.map((s) => [key(s), s]));
    for (const [k, bound] of this.#bound) {
      if (wanted.has(k)) continue;
      for (const l of bound.ports.values()) l.close();
      this.#used.delete(index(bound.address));
      this.#bound.delete(k);
    }
    for (const [k, service] of wanted) {
      let bound = this.#bound.get(k);
      if (!bound) this.#bound.set(k, bound = { address: this.#allocate(), ports: new Map() });
      const ports = new Set(service.ports.map((p) => p.port));
      for (const [port, l] of bound.ports) {
        if (!ports.has(port)) {
          l.close();
          bound.ports.delete(port);
        }
      }
      for (const port of ports) {
        if (bound.ports.has(port)) continue;
        try {
          const listener = listenAt(bound.address, port);
          bound.ports.set(port, listener);
          void this.#serve(listener, service, port);
        } catch (err) {
          this.options.log(`cannot listen for Service ${k} on ${bound.address}:${port}: ${err}`);
        }
      }
    }
    if (this.options.hostsFile) await this.#writeHosts(this.options.hostsFile);
    if (this.options.envFile) await Deno.writeTextFile(this.options.envFile, this.#envLines());
  }

  /** Closes every listener. */
  close(): void {
    for (const bound of this.#bound.values()) for (const l of bound.ports.values()) l.close();
    this.#bound.clear();
  }

  async #serve(listener: Deno.TcpListener, service: TunnelService, port: number) {
    try {
      for await (const conn of listener) this.options.dial(service, port, conn);
    } catch {
      // closed
    }
  }

  #allocate(): string {
    let i = 1;
    while (this.#used.has(i) || i % 256 === 0 || i % 256 === 255) i++;
    this.#used.add(i);
    return `${this.options.prefix ?? "127.77"}.${i >> 8}.${i & 255}`;
  }

  async #writeHosts(path: string): Promise<void> {
    const lines = [...HOSTS_HEADER];
    for (const { address, names } of this.entries()) lines.push(`${address}\t${names.join(" ")}`);
    await Deno.writeTextFile(path, `${lines.join("\n")}\n`);
  }

  /** The Services' address-carrying env vars, as the kubelet names them; see the module doc. */
  #envLines(): string {
    const list = this.#last;
    if (!list) return "";
    const lines: string[] = [];
    for (const s of list.services) {
      const own = s.namespace === list.namespace;
      if (!own && !(s.namespace === "default" && s.name === "kubernetes")) continue;
      const address = this.#bound.get(key(s))?.address;
      const tcp = s.ports.filter((p) => p.protocol === "TCP");
      if (!address || !tcp.length) continue;
      const prefix = s.name.toUpperCase().replaceAll("-", "_");
      const at = (port: number) => this.#bound.get(key(s))?.ports.get(port)?.addr.port ?? port;
      const first = tcp[0].port;
      lines.push(
        `${prefix}_SERVICE_HOST=${address}`,
        `${prefix}_PORT=tcp://${address}:${at(first)}`,
      );
      if (at(first) !== first) lines.push(`${prefix}_SERVICE_PORT=${at(first)}`);
      for (const { port, name } of tcp) {
        lines.push(`${prefix}_PORT_${port}_TCP=tcp://${address}:${at(port)}`);
        lines.push(`${prefix}_PORT_${port}_TCP_ADDR=${address}`);
        if (at(port) === port) continue;
        lines.push(`${prefix}_PORT_${port}_TCP_PORT=${at(port)}`);
        const named = name?.toUpperCase().replaceAll("-", "_");
        if (named) lines.push(`${prefix}_SERVICE_PORT_${named}=${at(port)}`);
      }
    }
    return lines.filter((l) => /^[A-Z_][A-Z0-9_]*=/.test(l)).map((l) => `${l}\n`).join("");
  }
}

/** A listener on `port`, or on port + 10000 when a port below 1024 is not ours to take. */
function listenAt(hostname: string, port: number): Deno.TcpListener {
  try {
    return Deno.listen({ hostname, port });
  } catch (err) {
    if (port >= 1024 || !(err instanceof Deno.errors.PermissionDenied)) throw err;
    return Deno.listen({ hostname, port: port + 10_000 });
  }
}

/** The kubelet's own lines of a pod's hosts file (pkg/kubelet/kubelet_pods.go `managedHostsHeader`). */
const HOSTS_HEADER = [
  "# Kubernetes-managed hosts file; the cluster's Services through vkubelet's tunnel.",
  "127.0.0.1\tlocalhost",
  "::1\tlocalhost ip6-localhost ip6-loopback",
  "fe00::0\tip6-localnet",
  "fe00::0\tip6-mcastprefix",
  "fe00::1\tip6-allnodes",
  "fe00::2\tip6-allrouters",
];

function key(s: TunnelService): string {
  return `${s.namespace}/${s.name}`;
}

function index(address: string): number {
  const [, , a, b] = address.split(".").map(Number);
  return a * 256 + b;
}

function names(s: TunnelService, list: ServiceList): string[] {
  const svc = `${s.name}.${s.namespace}.svc`;
  const out = [`${svc}.${list.clusterDomain}`, svc, `${s.name}.${s.namespace}`];
  if (s.namespace === list.namespace) out.push(s.name);
  return out;
}
