/**
 * `kubectl exec`, `attach` and `port-forward` against a forwarded pod, relayed to the pod's twin
 * through cluster B's apiserver over SPDY/3.1 — the client side of what the kubelet API serves:
 * client-go `tools/remotecommand/v4.go` (error, stdin, stdout, stderr and resize streams; the
 * exit status as a metav1.Status on the error stream) and `tools/portforward/portforward.go`
 * (an error and a data stream per connection, tagged with port and requestID).
 * @module
 */
import type { KubeClient } from "../../../k8s/mod.ts";
import { StreamProtocol } from "../../../spdy/protocols.ts";
import type { SpdySession } from "../../../spdy/session.ts";
import type { SpdyStream } from "../../../spdy/stream.ts";
import {
  type AttachIO,
  type AttachOptions,
  type ExecOptions,
  NotSupportedError,
  type PortForwardOptions,
  TransientError,
} from "../../../provider/mod.ts";
import { openSpdy } from "./upgrade.ts";

/** A container of B. */
export interface DownstreamContainer {
  namespace: string;
  pod: string;
  container: string;
}

type Kube = Pick<KubeClient, "config" | "pods">;

/** Runs `options.command` in the downstream container; resolves with its exit code. */
export function execDownstream(
  kube: Kube,
  target: DownstreamContainer,
  options: ExecOptions,
): Promise<number> {
  const query = streamQuery(target.container, options.io);
  for (const arg of options.command) query.append("command", arg);
  return remoteCommand(kube, kube.pods.path(target.namespace, target.pod, "exec"), query, options);
}

/** Attaches to the downstream container's main process until either side ends. */
export async function attachDownstream(
  kube: Kube,
  target: DownstreamContainer,
  options: AttachOptions,
): Promise<void> {
  const path = kube.pods.path(target.namespace, target.pod, "attach");
  await remoteCommand(kube, path, streamQuery(target.container, options.io), options);
}

function streamQuery(container: string, io: AttachIO): URLSearchParams {
  const query = new URLSearchParams({ container });
  if (io.stdin) query.set("stdin", "true");
  if (io.stdout) query.set("stdout", "true");
  if (io.stderr && !io.tty) query.set("stderr", "true");
  if (io.tty) query.set("tty", "true");
  return query;
}

async function remoteCommand(
  kube: Kube,
  path: string,
  query: URLSearchParams,
  options: { io: AttachIO; signal?: AbortSignal },
): Promise<number> {
  const { io, signal } = options;
  const { session, protocol } = await openSpdy(kube, path, query, [StreamProtocol.v4], signal);
  const onAbort = () => session.close();
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    if (protocol !== StreamProtocol.v4) {
      throw new NotSupportedError(
        `the downstream apiserver chose stream protocol "${protocol}"; v4.channel.k8s.io is needed`,
      );
    }
    const open = (streamtype: string) =>
      session.openStream({ streamtype: [streamtype] }, { signal });
    const error = await open("error");
    const stdin = io.stdin ? await open("stdin") : undefined;
    const stdout = io.stdout ? await open("stdout") : undefined;
    const stderr = io.stderr && !io.tty ? await open("stderr") : undefined;
    const resize = io.tty && io.resize ? await open("resize") : undefined;
    await error.writable.close().catch(() => {});
    const pumps: Promise<void>[] = [];
    if (stdin && io.stdin) void pipeOpen(io.stdin, stdin.writable, true);
    if (stdout && io.stdout) pumps.push(pipeOpen(stdout.readable, io.stdout, false));
    if (stderr && io.stderr) pumps.push(pipeOpen(stderr.readable, io.stderr, false));
    if (resize && io.resize) void sendResizes(io.resize, resize);
    const statusText = await new Response(error.readable).text();
    await Promise.all(pumps);
    return exitCodeOf(statusText);
  } finally {
    signal?.removeEventListener("abort", onAbort);
    await session.shutdown({ timeoutMs: 1000 }).catch(() => session.close());
  }
}

/** Copies `from` into `to`; closes `to` at the end only if `close`; releases both locks. */
async function pipeOpen(
  from: ReadableStream<Uint8Array>,
  to: WritableStream<Uint8Array>,
  close: boolean,
): Promise<void> {
  const reader = from.getReader();
  const writer = to.getWriter();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      await writer.write(value);
    }
    if (close) await writer.close();
  } catch {
    // Either side went away; the session's end settles the rest.
  } finally {
    reader.releaseLock();
    writer.releaseLock();
  }
}

async function sendResizes(
  sizes: AsyncIterable<{ width: number; height: number }>,
  stream: SpdyStream,
): Promise<void> {
  const writer = stream.writable.getWriter();
  const encoder = new TextEncoder();
  try {
    for await (const size of sizes) {
      await writer.write(
        encoder.encode(JSON.stringify({ Width: size.width, Height: size.height })),
      );
    }
  } catch {
    // The session ended.
  } finally {
    writer.releaseLock();
  }
}

/** The exit code in a v4 error-stream Status (empty or Success: 0). */
export function exitCodeOf(statusText: string): number {
  if (statusText.trim() === "") return 0;
  let status: {
    status?: string;
    message?: string;
    reason?: string;
    details?: { causes?: { reason?: string; message?: string }[] };
  };
  try {
    status = JSON.parse(statusText);
  } catch {
    throw new TransientError(`the downstream exec failed: ${statusText.trim()}`);
  }
  if (status.status === "Success") return 0;
  const cause = status.details?.causes?.find((c) => c.reason === "ExitCode");
  if (status.reason === "NonZeroExitCode" && cause?.message) return Number(cause.message);
  throw new TransientError(`the downstream exec failed: ${status.message ?? statusText.trim()}`);
}

/** Connects one port-forward connection to `port` of the downstream pod. */
export async function portForwardDownstream(
  kube: Kube,
  target: { namespace: string; pod: string },
  options: PortForwardOptions,
): Promise<void> {
  const { port, stream, signal } = options;
  const path = kube.pods.path(target.namespace, target.pod, "portforward");
  const { session } = await openSpdy(kube, path, {}, [StreamProtocol.portForward], signal);
  const onAbort = () => session.close();
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    await forwardOne(session, port, stream);
  } finally {
    signal?.removeEventListener("abort", onAbort);
    await session.shutdown({ timeoutMs: 1000 }).catch(() => session.close());
  }
}

async function forwardOne(
  session: SpdySession,
  port: number,
  stream: PortForwardOptions["stream"],
): Promise<void> {
  const headers = (streamtype: string) => ({
    streamtype: [streamtype],
    port: [String(port)],
    requestid: ["0"],
  });
  const error = await session.openStream(headers("error"));
  await error.writable.close().catch(() => {});
  const data = await session.openStream(headers("data"));
  const failure = new Response(error.readable).text();
  const upstreamDone = pipeOpen(stream.readable, data.writable, true);
  await pipeOpen(data.readable, stream.writable, false);
  await stream.writable.close().catch(() => {});
  const message = (await failure.catch(() => "")).trim();
  void upstreamDone; // ends with the client's side of the connection
  if (message) throw new TransientError(`port-forward in the downstream cluster: ${message}`);
}
