/**
 * `vkubelet agent`: the remote side of a pod's tunnel, run beside the pod's containers (in a
 * SLURM job, an interLink job, a gateway pod). It dials vkubelet (./dial.ts), serves each
 * inbound stream by connecting to `127.0.0.1:<containerPort>` where the pod runs, and serves the
 * cluster's Services on loopback addresses named in an `/etc/hosts` fragment
 * (./services.ts), from the list vkubelet pushes on the control stream. It never talks to the
 * apiserver. Reconnects with backoff until stopped.
 *
 * With `--gateway` it is a node's gateway in another cluster (the kubernetes provider's): one
 * agent for all the node's pods, with the node's gateway credential. It dials each inbound
 * stream's `host:port` (the pod's address in that cluster), listens on each gateway port
 * vkubelet lists (./gateway.ts) and opens a Service stream with the caller's address as its
 * `source`; it writes no hosts or env file.
 *
 * ```sh
 * VKUBELET_AGENT_CREDENTIAL=vkt1.… vkubelet agent --server=https://node:10250 \
 *   --ca-base64=… --hosts-file=/etc/hosts.d/cluster
 * ```
 * @module
 */
import { MuxSession, type MuxStream } from "../../core/tunnel/session.ts";
import {
  parseHeader,
  readMessage,
  type ServiceList,
  splice,
  type StreamAnswer,
  type StreamHeader,
  writeMessage,
} from "../../core/tunnel/protocol.ts";
import { halfClosing } from "../../base/half_close.ts";
import { type DialTarget, dialTunnel } from "./dial.ts";
import { GatewayPorts } from "./gateway.ts";
import { ServiceListeners } from "./services.ts";

/** The agent's settings. */
export interface AgentOptions extends DialTarget {
  hostsFile?: string;
  /** Where the Services' env vars go (./services.ts). */
  envFile?: string;
  loopbackPrefix?: string;
  /** Where pod ports are dialed; default 127.0.0.1. */
  podHost?: string;
  /** A node's gateway (see the module doc), not a pod's agent. */
  gateway?: boolean;
  /** The gateway's listeners' address; default 0.0.0.0. */
  listenAddress?: string;
  log?: (message: string) => void;
  /** Called each time the tunnel is up and the first Service list applied. */
  onReady?: () => void;
}

/** Usage text of `vkubelet agent`. */
export const AGENT_HELP =
  `Usage: vkubelet agent --server=URL (--ca-base64=PEM64 | --ca-file=PATH) [options]

The remote side of a pod's network tunnel. The credential is read from
VKUBELET_AGENT_CREDENTIAL (or --credential-file=PATH), never from the command line.
With --gateway it is a node's gateway in another cluster (the kubernetes provider
deploys it): it carries the streams of all the node's pods there, dialing each
pod's address for connections to its IP on the node, and listening on the ports
vkubelet lists for the pods' calls to the node's cluster's Services.

  --server=URL           vkubelet's kubelet API, https://<node address>:10250
  --ca-base64=PEM64      the CA or certificate to trust for it, base64 of the PEM
  --ca-file=PATH         the same, from a file
  --credential-file=PATH the pod's tunnel credential, from a file
  --hosts-file=PATH      where to write the pod's hosts file, Services named (default: none)
  --env-file=PATH        where to write the Services' env vars, NAME=value (default: none)
  --loopback-prefix=A.B  first octets of the Services' addresses (default 127.77)
  --gateway              be the node's gateway (with the node's gateway credential;
                         no --hosts-file, --env-file or --loopback-prefix)
  --listen-address=IP    the gateway's listeners' address (default 0.0.0.0)
`;

/** Parses `vkubelet agent` arguments; returns the options or every problem. */
export async function parseAgentArgs(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<AgentOptions | { problems: string[] }> {
  const flags = new Map<string, string>();
  const problems: string[] = [];
  let gateway = false;
  for (const arg of args) {
    const m = /^--([a-z0-9-]+)=(.*)$/.exec(arg);
    if (arg === "--gateway") gateway = true;
    else if (m) flags.set(m[1], m[2]);
    else problems.push(`unknown argument ${arg}: every option but --gateway is --name=value`);
  }
  for (const name of ["hosts-file", "env-file", "loopback-prefix"]) {
    if (gateway && flags.has(name)) {
      problems.push(`--${name} is a pod's agent's: a gateway writes no files; drop it`);
    }
  }
  if (!gateway && flags.has("listen-address")) {
    problems.push("--listen-address is a gateway's: give --gateway too, or drop it");
  }
  let server: URL | undefined;
  try {
    server = new URL(flags.get("server") ?? "");
    if (server.protocol !== "https:") problems.push("--server must be an https:// URL");
  } catch {
    problems.push("--server must be vkubelet's kubelet API URL, https://<node address>:10250");
  }
  let caPem = "";
  if (flags.has("ca-base64")) caPem = atob(flags.get("ca-base64")!);
  else if (flags.has("ca-file")) caPem = await Deno.readTextFile(flags.get("ca-file")!);
  if (!caPem.includes("BEGIN CERTIFICATE")) {
    problems.push("--ca-base64 or --ca-file must give the PEM certificate to trust for --server");
  }
  let credential = env.VKUBELET_AGENT_CREDENTIAL ?? "";
  if (flags.has("credential-file")) {
    credential = (await Deno.readTextFile(flags.get("credential-file")!)).trim();
  }
  if (!credential) {
    problems.push("set VKUBELET_AGENT_CREDENTIAL (or --credential-file) to the pod's credential");
  }
  if (problems.length) return { problems };
  return {
    server: server!,
    caPem,
    credential,
    hostsFile: flags.get("hosts-file"),
    envFile: flags.get("env-file"),
    loopbackPrefix: flags.get("loopback-prefix"),
    ...(gateway ? { gateway, listenAddress: flags.get("listen-address") } : {}),
  };
}

/** Runs the agent until `signal` aborts. */
export async function runAgent(options: AgentOptions, signal: AbortSignal): Promise<void> {
  const log = options.log ?? ((m: string) => console.error(`vkubelet agent: ${m}`));
  let session: MuxSession | undefined;
  const listeners = new ServiceListeners({
    hostsFile: options.hostsFile,
    envFile: options.envFile,
    prefix: options.loopbackPrefix,
    log,
    dial: (service, port, conn) =>
      void dialService(session, {
        kind: "service",
        namespace: service.namespace,
        name: service.name,
        port,
      }, conn),
  });
  const gatewayPorts = new GatewayPorts({
    hostname: options.listenAddress,
    log,
    dial: (listener, source, conn) =>
      void dialService(session, {
        kind: "service",
        namespace: listener.namespace,
        name: listener.name,
        port: listener.port,
        source,
      }, conn),
  });
  const gateway = options.gateway === true;
  const stop = () => session?.close();
  signal.addEventListener("abort", stop);
  let delay = 500;
  try {
    while (!signal.aborted) {
      try {
        const transport = await dialTunnel(options);
        session = new MuxSession(transport, {
          client: true,
          onStream: (s) => void servePort(s, options.podHost ?? "127.0.0.1", gateway),
        });
        delay = 500;
        log(`connected to ${options.server}${gateway ? " as the gateway" : ""}`);
        const apply = gateway
          ? (line: string) => gatewayPorts.update(JSON.parse(line))
          : (line: string) => listeners.update(JSON.parse(line) as ServiceList);
        void control(session, apply, options, log);
        const err = await session.closed;
        if (!signal.aborted) log(`tunnel closed${err ? `: ${err.message}` : ""}; reconnecting`);
      } catch (err) {
        if (signal.aborted) break;
        log(`${err instanceof Error ? err.message : err}; retrying in ${delay} ms`);
      }
      await sleep(delay, signal);
      delay = Math.min(delay * 2, 30_000);
    }
  } finally {
    signal.removeEventListener("abort", stop);
    session?.close();
    listeners.close();
    gatewayPorts.close();
  }
}

/** Reads Service lists (a gateway's listener lists) from the control stream and applies each. */
async function control(
  session: MuxSession,
  apply: (line: string) => void | Promise<void>,
  options: AgentOptions,
  log: (m: string) => void,
) {
  try {
    const stream = session.open();
    const writer = stream.writable.getWriter();
    await writeMessage(writer, { kind: "control" });
    const { value, rest } = await readMessage(stream.readable);
    if (!("ok" in (value as StreamAnswer))) throw new Error((value as { error: string }).error);
    const lines = rest.pipeThrough(new TextDecoderStream());
    let pending = "";
    for await (const text of lines) {
      pending += text;
      for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n")) {
        await apply(pending.slice(0, nl));
        pending = pending.slice(nl + 1);
        options.onReady?.();
      }
    }
  } catch (err) {
    log(`control stream ended: ${err instanceof Error ? err.message : err}`);
  }
}

/**
 * A connection to a Service's loopback address (or a gateway port): a stream vkubelet dials from
 * the pod IP.
 */
async function dialService(
  session: MuxSession | undefined,
  header: StreamHeader & { kind: "service" },
  conn: Deno.Conn,
) {
  let stream: MuxStream | undefined;
  try {
    if (!session) throw new Error("no tunnel");
    stream = session.open();
    const writer = stream.writable.getWriter();
    await writeMessage(writer, header);
    writer.releaseLock();
    const { value, rest } = await readMessage(stream.readable);
    if (!("ok" in (value as StreamAnswer))) throw new Error((value as { error: string }).error);
    await splice(halfClosing(conn), { readable: rest, writable: stream.writable });
  } catch {
    stream?.reset();
  } finally {
    try {
      conn.close();
    } catch {
      // closed by the splice
    }
  }
}

/**
 * A stream from vkubelet: a connection to the pod's port on this host's loopback, or for a
 * gateway to the pod's address that vkubelet names (it trusts the vkubelet it pinned).
 */
export async function servePort(stream: MuxStream, host: string, gateway: boolean) {
  const writer = stream.writable.getWriter();
  let conn: Deno.Conn | undefined;
  try {
    const { value, rest } = await readMessage(stream.readable);
    const header = parseHeader(value);
    if (header.kind !== "port") throw new Error("vkubelet opens port streams only");
    if (!gateway && header.host !== undefined) {
      throw new Error("A pod's agent dials its own pod only: a port stream names no host");
    }
    if (gateway && header.host === undefined) {
      throw new Error("A gateway dials the pod's address: a port stream must name its host");
    }
    conn = await Deno.connect({ hostname: header.host ?? host, port: header.port });
    await writeMessage(writer, { ok: true });
    writer.releaseLock();
    await splice(halfClosing(conn), { readable: rest, writable: stream.writable });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    await writeMessage(writer, { error: message }).catch(() => {});
    await writer.close().catch(() => {});
  } finally {
    try {
      conn?.close();
    } catch {
      // closed by the splice
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

/** `vkubelet agent …` from main.ts: parses, runs until SIGINT/SIGTERM; the exit code. */
export async function agentCommand(args: string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(AGENT_HELP);
    return 0;
  }
  const parsed = await parseAgentArgs(args, Deno.env.toObject());
  if ("problems" in parsed) {
    console.error(
      `vkubelet agent: invalid arguments:\n${parsed.problems.map((p) => `  - ${p}\n`).join("")}`,
    );
    return 2;
  }
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  for (const s of ["SIGINT", "SIGTERM"] as const) Deno.addSignalListener(s, onSignal);
  try {
    await runAgent(parsed, stop.signal);
    return 0;
  } finally {
    for (const s of ["SIGINT", "SIGTERM"] as const) Deno.removeSignalListener(s, onSignal);
  }
}
