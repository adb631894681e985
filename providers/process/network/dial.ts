/**
 * TCP connections made inside a pod's network namespace, for port-forward (as containerd dials
 * `localhost:<port>` inside the sandbox's namespace, internal/cri/server/
 * sandbox_portforward_linux.go `portForward`) and for httpGet and tcpSocket probes and hooks
 * (the kubelet connects to the pod IP; in the pod's own namespace that address is local, so no
 * route from vkubelet's namespace to the pod network is needed). A Deno process cannot enter
 * another network namespace per connection, so a host `socat` does it under
 * `nsenter --net=<netns>` and relays the connection over its stdin and stdout. Each relay dies
 * with the process that started it (the kernel's parent-death signal, set by `setpriv`, as the
 * listening relays of ./tunnel_network.ts): a vkubelet killed with SIGKILL leaves no socat
 * holding a connection to a Service or a pod for up to a day (`-t 86400`, after its stdin's EOF).
 * Each direction ends on its own: the caller's EOF (closing the writable) shuts the TCP
 * connection's write side, and the peer's EOF closes the readable, each leaving the other
 * direction open until it ends too.
 * @module
 */
import { HELPER_ENV, toolPath } from "../host/host_tools.ts";

/** A connection relayed from inside a network namespace. */
export interface NetnsConnection {
  readable: ReadableStream<Uint8Array>;
  writable: WritableStream<Uint8Array>;
  /** Resolves with socat's exit code and what it said once both directions are done. */
  done: Promise<{ code: number; stderr: string }>;
  close(): void;
}

/** The program and arguments that run `args` (socat's) inside `netns`, dying with this process. */
function inNetns(netns: string, args: string[]): [string, string[]] {
  return [toolPath("setpriv"), [
    "--pdeathsig",
    "KILL",
    "--",
    toolPath("nsenter"),
    `--net=${netns}`,
    "--",
    toolPath("socat"),
    ...args,
  ]];
}

function address(host: string, port: number): string {
  return host.includes(":") ? `TCP6:[${host}]:${port}` : `TCP4:${host}:${port}`;
}

/** Opens `host:port` from inside `netns`; the relay ends when both directions are done. */
export function dialInNetns(
  netns: string,
  host: string,
  port: number,
  options: { connectTimeoutMs?: number } = {},
): NetnsConnection {
  const timeout = (options.connectTimeoutMs ?? 10_000) / 1000;
  const [program, args] = inNetns(netns, [
    // After one side's EOF, wait for the other as long as it takes (half-close).
    "-t",
    "86400",
    // The peer's EOF reaches the caller: socat's default for a pipe is to leave it open
    // (`shutdown` does nothing on a pipe), so a caller reading to EOF would wait until it
    // closed its own side first. `shut-close` closes socat's stdout instead.
    "STDIO,shut-close",
    `${address(host, port)},connect-timeout=${timeout}`,
  ]);
  const child = new Deno.Command(program, {
    args,
    clearEnv: true,
    env: { ...HELPER_ENV },
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text().catch(() => "");
  const done = (async () => ({ code: (await child.status).code, stderr: (await stderr).trim() }))();
  return {
    readable: child.stdout,
    writable: child.stdin,
    done,
    close: () => {
      try {
        child.kill("SIGKILL");
      } catch {
        // gone already
      }
    },
  };
}

/** Whether a TCP connection to `host:port` opens inside `netns` within `timeoutMs`. */
export async function canConnectInNetns(
  netns: string,
  host: string,
  port: number,
  timeoutMs: number,
): Promise<{ ok: boolean; message: string }> {
  const [program, args] = inNetns(netns, [
    "-u",
    "OPEN:/dev/null",
    `${address(host, port)},connect-timeout=${timeoutMs / 1000}`,
  ]);
  const out = await new Deno.Command(program, {
    args,
    clearEnv: true,
    env: { ...HELPER_ENV },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
    signal: AbortSignal.timeout(timeoutMs + 2000),
  }).output();
  if (out.success) return { ok: true, message: "" };
  const said = new TextDecoder().decode(out.stderr).trim().split("\n").pop() ?? "";
  return { ok: false, message: `dial tcp ${host}:${port}: ${said.replace(/^.*E /, "")}` };
}

/**
 * One HTTP GET inside `netns` (the kubelet's httpGet probe, pkg/probe/http): HTTP/1.1 with
 * `Connection: close`; the status code and up to 10 KiB of the body.
 */
export async function httpGetInNetns(
  netns: string,
  target: { host: string; port: number; path: string; headers: Headers },
  timeoutMs: number,
): Promise<{ status: number; body: string }> {
  const conn = dialInNetns(netns, target.host, target.port, { connectTimeoutMs: timeoutMs });
  const timer = setTimeout(() => conn.close(), timeoutMs);
  try {
    const hostHeader = target.headers.get("host") ??
      (target.host.includes(":") ? `[${target.host}]` : target.host) + `:${target.port}`;
    let request = `GET ${target.path} HTTP/1.1\r\nHost: ${hostHeader}\r\n`;
    for (const [name, value] of target.headers) {
      if (name !== "host") request += `${name}: ${value}\r\n`;
    }
    request += "Connection: close\r\n\r\n";
    const writer = conn.writable.getWriter();
    await writer.write(new TextEncoder().encode(request)).catch(() => {});
    const text = (await new Response(conn.readable).text()).slice(0, 64 * 1024);
    await writer.close().catch(() => {});
    const match = /^HTTP\/\d(?:\.\d)? (\d{3})/.exec(text);
    if (!match) {
      const { stderr } = await conn.done;
      throw new Error(
        stderr
          ? `dial tcp ${target.host}:${target.port}: ${stderr.split("\n").pop()}`
          : `no HTTP response from ${target.host}:${target.port}`,
      );
    }
    const body = text.slice(text.indexOf("\r\n\r\n") + 4).slice(0, 10_240);
    return { status: Number(match[1]), body };
  } finally {
    clearTimeout(timer);
    conn.close();
  }
}
