/**
 * The pod network of a pod that runs elsewhere (issue #64): the same network namespace and CNI
 * ADD as a process pod (./pod_network.ts), with nothing running inside but relays. A Deno
 * process cannot listen in another network namespace, so for each declared port a host
 * `socat` under `nsenter --net=<netns>` listens there and hands each connection to a Unix
 * socket vkubelet listens on (a path, so it is reachable from any network namespace); Service
 * connections are dialed from inside the namespace as probes are (./dial.ts `dialInNetns`).
 * Structurally the `TunnelNetwork` of core/tunnel/host.ts, which app/ wires in.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { join } from "node:path";
import { halfClosing } from "../../../provider/mod.ts";
import { HELPER_ENV, toolPath } from "../host/host_tools.ts";
import { dialInNetns } from "./dial.ts";
import { isNetns } from "./netns.ts";
import { type PodNetworkRecord, type PodNetworks, sandboxId } from "./pod_network.ts";

/** A byte connection (the core's `TunnelConn`). */
export interface RelayedConn {
  readable: ReadableStream<Uint8Array>;
  writable: WritableStream<Uint8Array>;
  close(): void;
}

/** Remote pods' namespaces and relays under `stateDir/remote/`. */
export class RemotePodNetworks {
  readonly #records = new Map<string, PodNetworkRecord>();

  constructor(private readonly networks: PodNetworks, private readonly stateDir: string) {}

  /**
   * A namespace and IP for `pod`, by CNI ADD. A `hostNetwork` pod is refused: it runs on its
   * backend's host network, where no namespace of this node can be its (the kit does not attach
   * one).
   */
  async setUp(pod: Pod): Promise<{ ips: string[]; netns: string }> {
    if (pod.spec?.hostNetwork) {
      throw new Error(
        `Pod ${pod.metadata?.namespace}/${pod.metadata?.name} is on the host network: a remote ` +
          `pod with hostNetwork runs on its backend's host and gets no IP on this node; do not ` +
          `attach it to the pod network`,
      );
    }
    const uid = pod.metadata?.uid ?? "";
    const dir = join(this.stateDir, "remote", uid);
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    // No resolv.conf or hosts: the pod resolves where it runs (its agent's hosts file), so the
    // node's DNS settings (and the warning for a ClusterFirst pod without clusterDNS) are not its.
    const record = await this.networks.setUp(pod, dir, { files: false });
    this.#records.set(uid, record);
    return { ips: record.ips, netns: record.netns! };
  }

  /**
   * After a restart: the namespace and IPs an earlier process's {@link setUp} gave `pod`, taken
   * over (CNI CHECK; see `PodNetworks.adopt`). A namespace that is gone (a host reboot, removed
   * by hand; nothing runs in a remote pod's namespace to bind it again from) is made anew with
   * the same IPs, so that the pod's reported IP stays true; if CNI cannot give them, this throws
   * `PodIPUnavailableError` with nothing left set up (see `PodNetworks.recreate`).
   */
  async restore(pod: Pod, saved: { ips: string[]; netns: string }): Promise<void> {
    const record = this.#recordOf(pod, saved);
    if (isNetns(saved.netns)) await this.networks.adopt(pod, record, []);
    else await this.networks.recreate(pod, record);
    this.#records.set(pod.metadata?.uid ?? "", record);
  }

  /** CNI DEL and the namespace removed; `saved` for a pod an earlier process set up. */
  async tearDown(pod: Pod, saved?: { ips: string[]; netns: string }): Promise<void> {
    const uid = pod.metadata?.uid ?? "";
    const record = this.#records.get(uid) ?? (saved ? this.#recordOf(pod, saved) : undefined);
    this.#records.delete(uid);
    if (record) await this.networks.tearDown(pod, record);
    await Deno.remove(join(this.stateDir, "remote", uid), { recursive: true }).catch(() => {});
  }

  /** The record {@link setUp} made, rebuilt from what it gave. */
  #recordOf(pod: Pod, saved: { ips: string[]; netns: string }): PodNetworkRecord {
    const uid = pod.metadata?.uid ?? "";
    const dir = join(this.stateDir, "remote", uid);
    return {
      netns: saved.netns,
      containerId: sandboxId(uid),
      ips: saved.ips,
      resolvConf: join(dir, "resolv.conf"),
      hosts: join(dir, "hosts"),
    };
  }

  /** `host:port` dialed from inside `netns`. */
  dial(netns: string, host: string, port: number): RelayedConn {
    const conn = dialInNetns(netns, host, port);
    return { readable: conn.readable, writable: conn.writable, close: () => conn.close() };
  }

  /**
   * Why `stateDir` cannot hold the relays' Unix sockets, or undefined: a socket's path
   * (`<stateDir>/remote/<pod uid>-<port>.sock`) must fit Linux's `sun_path`, 107 bytes.
   */
  static stateDirProblem(stateDir: string): string | undefined {
    const longest = new TextEncoder().encode(socketPath(stateDir, "0".repeat(36), 65535)).length;
    if (longest <= MAX_SOCKET_PATH) return undefined;
    const allowed = new TextEncoder().encode(stateDir).length - (longest - MAX_SOCKET_PATH);
    return `stateDir ${stateDir} is too long for the relays' Unix sockets under it (` +
      `${longest} bytes with a pod's uid and port, over Linux's ${MAX_SOCKET_PATH}): choose a ` +
      `stateDir of at most ${allowed} bytes`;
  }

  /** Listens on `port` inside `netns`; each connection comes out of a Unix socket here. */
  async listen(
    netns: string,
    port: number,
    onConnection: (conn: RelayedConn) => void,
  ): Promise<{ close(): Promise<void> }> {
    const socket = socketPath(this.stateDir, netns.split("/").pop() ?? "", port);
    await Deno.remove(socket).catch(() => {});
    const listener = Deno.listen({ transport: "unix", path: socket });
    // The relay dies with this process (SIGKILL, a crash) instead of holding the port and the
    // namespace for ever: the kernel's parent-death signal, set by setpriv before the exec of
    // nsenter and kept through its exec of socat. It is sent only to this child, so unlike pids
    // kept and killed after a restart it can never hit an unrelated process that reused a pid.
    const relay = new Deno.Command(toolPath("setpriv"), {
      args: [
        "--pdeathsig",
        "KILL",
        "--",
        toolPath("nsenter"),
        `--net=${netns}`,
        "--",
        toolPath("socat"),
        "-t",
        "86400",
        `TCP-LISTEN:${port},fork,reuseaddr`,
        `UNIX-CONNECT:${socket}`,
      ],
      clearEnv: true,
      env: { ...HELPER_ENV },
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    const accepting = (async () => {
      try {
        for await (const conn of listener) {
          // Each direction ends on its own (Deno.Conn's own streams close the socket at the
          // first EOF): a client that half-closes after its request still gets the answer.
          onConnection({
            ...halfClosing(conn),
            close: () => {
              try {
                conn.close();
              } catch {
                // closed by the splice
              }
            },
          });
        }
      } catch {
        // the listener closed
      }
    })();
    const close = async () => {
      try {
        relay.kill("SIGKILL");
      } catch {
        // gone already
      }
      await relay.status;
      listener.close();
      await accepting;
      await Deno.remove(socket).catch(() => {});
    };
    try {
      await waitListening(netns, port);
    } catch (err) {
      await close(); // the relay, the listener and its accept loop are no one's to close after
      throw err;
    }
    return { close };
  }
}

/** Waits until socat listens on `port` in `netns` (up to 5 s) by reading its socket table. */
async function waitListening(netns: string, port: number): Promise<void> {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  for (let i = 0; i < 100; i++) {
    const out = await new Deno.Command(toolPath("nsenter"), {
      args: [`--net=${netns}`, "--", "cat", "/proc/net/tcp", "/proc/net/tcp6"],
      stdout: "piped",
      stderr: "null",
    }).output();
    const text = new TextDecoder().decode(out.stdout);
    if (text.split("\n").some((l) => l.split(/\s+/)[2]?.endsWith(hex) && / 0A /.test(l))) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`The relay for port ${port} in ${netns} did not start listening within 5 s`);
}

/** Linux's `sun_path` holds 108 bytes with the terminating NUL. */
const MAX_SOCKET_PATH = 107;

/** Where the relay of `port` in the namespace named `name` (the pod's uid) hands connections. */
function socketPath(stateDir: string, name: string, port: number): string {
  return join(stateDir, "remote", `${name}-${port}.sock`);
}
