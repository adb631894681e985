/**
 * The actions probes and lifecycle hooks run: exec (inside the container), httpGet and
 * tcpSocket (only to loopback addresses, 127.0.0.0/8: a process provider's pods share the
 * host's network, and probing elsewhere would let a pod spec make the node connect anywhere),
 * and the hooks' `sleep`. A pod with its own network namespace is probed inside it: an empty
 * host is the pod IP there, as the kubelet's default, and 127.0.0.0/8 is the pod's own loopback
 * (../network/dial.ts). Success rules follow the kubelet's probers (kubernetes/kubernetes
 * pkg/probe/{exec,http,tcp}): exit code 0; HTTP status 200-399 without following redirects to
 * other hosts; a TCP connection that opens.
 * @module
 */
import type {
  Container,
  ExecAction,
  HTTPGetAction,
  SleepAction,
  TCPSocketAction,
} from "kubernetes-types/core/v1.d.ts";
import { type Clock, InvalidInputError } from "../../../provider/mod.ts";
import { type ExecContext, runCaptured } from "../streams/exec.ts";
import { canConnectInNetns, httpGetInNetns } from "../network/dial.ts";

/** Any probe or hook action. */
export interface Action {
  exec?: ExecAction;
  httpGet?: HTTPGetAction;
  tcpSocket?: TCPSocketAction;
  grpc?: unknown;
  sleep?: SleepAction;
}

/** The outcome of one action. */
export interface ActionResult {
  ok: boolean;
  message: string;
}

/** What running an action needs. */
export interface ActionContext {
  exec: ExecContext;
  container: Container;
  timeoutMs: number;
  clock: Clock;
  signal?: AbortSignal;
}

/** The loopback address for a probe or hook host, or an error naming the fix. */
export function loopbackHost(host: string | undefined, what: string): string {
  if (!host || host === "localhost") return "127.0.0.1";
  const parts = host.split(".").map(Number);
  const ipv4 = parts.length === 4 && parts.every((p) => Number.isInteger(p) && p >= 0 && p <= 255);
  if (ipv4 && parts[0] === 127) return host;
  throw new InvalidInputError(
    `${what}: host ${host} is not a loopback address; the process provider only probes 127.0.0.0/8 (leave host empty to use 127.0.0.1)`,
  );
}

/** Checks an action once at pod creation so that a pod that can never work is refused. */
export function validateAction(action: Action | undefined, what: string): void {
  if (!action) return;
  if (action.httpGet) loopbackHost(action.httpGet.host, what);
  if (action.tcpSocket) loopbackHost(action.tcpSocket.host, what);
  if (action.grpc) {
    throw new InvalidInputError(`${what}: gRPC probes are not supported by the process provider`);
  }
}

/** Resolves a named port against the container's ports. */
function portOf(port: number | string, container: Container): number {
  if (typeof port === "number") return port;
  if (/^\d+$/.test(port)) return Number(port);
  const named = container.ports?.find((p) => p.name === port);
  if (!named) throw new Error(`port ${port} is not a named port of container ${container.name}`);
  return named.containerPort;
}

/** Runs `action` once. */
export async function runAction(action: Action, ctx: ActionContext): Promise<ActionResult> {
  try {
    if (action.exec) return await execAction(action.exec, ctx);
    if (action.httpGet) return await httpAction(action.httpGet, ctx);
    if (action.tcpSocket) return await tcpAction(action.tcpSocket, ctx);
    if (action.sleep) {
      await ctx.clock.sleep(action.sleep.seconds * 1000, ctx.signal);
      return { ok: true, message: "" };
    }
    return { ok: false, message: "the action names no handler" };
  } catch (err) {
    return { ok: false, message: err instanceof Error ? err.message : String(err) };
  }
}

async function execAction(action: ExecAction, ctx: ActionContext): Promise<ActionResult> {
  const command = action.command ?? [];
  if (command.length === 0) return { ok: false, message: "exec action has no command" };
  const result = await runCaptured(ctx.exec, command, ctx.timeoutMs, ctx.signal);
  if (result.timedOut) {
    return { ok: false, message: `command timed out after ${ctx.timeoutMs / 1000}s` };
  }
  return { ok: result.code === 0, message: result.output.trim() };
}

/** Where a probe connects: in the pod's namespace its IP by default, else loopback. */
function probeHost(host: string | undefined, ctx: ActionContext, what: string): string {
  const loopback = loopbackHost(host, what);
  return ctx.exec.netns && !host && ctx.exec.podIp ? ctx.exec.podIp : loopback;
}

async function httpAction(action: HTTPGetAction, ctx: ActionContext): Promise<ActionResult> {
  const host = probeHost(action.host, ctx, "httpGet");
  const port = portOf(action.port, ctx.container);
  if (action.scheme === "HTTPS") {
    // Deno cannot skip certificate checks per request as the kubelet does; check the socket.
    return await tcpAction({ port, host: action.host }, ctx);
  }
  const path = action.path?.startsWith("/") ? action.path : `/${action.path ?? ""}`;
  const headers = new Headers({ "user-agent": "kube-probe/vkubelet", accept: "*/*" });
  for (const h of action.httpHeaders ?? []) headers.set(h.name, h.value);
  if (ctx.exec.netns) {
    const response = await httpGetInNetns(
      ctx.exec.netns,
      { host, port, path, headers },
      ctx.timeoutMs,
    );
    const ok = response.status >= 200 && response.status < 400;
    return {
      ok,
      message: ok ? response.body : `HTTP probe failed with statuscode: ${response.status}`,
    };
  }
  const signal = AbortSignal.any([
    AbortSignal.timeout(ctx.timeoutMs),
    ...(ctx.signal ? [ctx.signal] : []),
  ]);
  const response = await fetch(`http://${host}:${port}${path}`, {
    headers,
    redirect: "manual",
    signal,
  });
  const body = (await response.text()).slice(0, 10_240);
  const ok = response.status >= 200 && response.status < 400;
  return { ok, message: ok ? body : `HTTP probe failed with statuscode: ${response.status}` };
}

async function tcpAction(action: TCPSocketAction, ctx: ActionContext): Promise<ActionResult> {
  const hostname = probeHost(action.host, ctx, "tcpSocket");
  const port = portOf(action.port, ctx.container);
  if (ctx.exec.netns) return await canConnectInNetns(ctx.exec.netns, hostname, port, ctx.timeoutMs);
  let timer: ReturnType<typeof setTimeout> | undefined;
  let timedOut = false;
  const connecting = Deno.connect({ hostname, port });
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      timedOut = true;
      reject(new Error(`dial tcp ${hostname}:${port}: i/o timeout`));
    }, ctx.timeoutMs);
  });
  // A connection that opens after the deadline is closed, not leaked.
  connecting.then((conn) => timedOut && conn.close(), () => {});
  try {
    const conn = await Promise.race([connecting, timeout]);
    conn.close();
    return { ok: true, message: "" };
  } finally {
    clearTimeout(timer);
  }
}
