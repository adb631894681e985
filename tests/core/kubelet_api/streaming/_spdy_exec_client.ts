/**
 * A minimal SPDY exec client over {@link rawUpgrade}: opens the streams in client-go's order
 * (error, stdin, stdout, stderr, resize), sends stdin, collects output and the status.
 * @module
 */
import { spdyHeaders } from "../../../../spdy/headers.ts";
import { KUBELET_REMOTE_COMMAND_PROTOCOLS } from "../../../../core/kubelet_api/streaming/negotiation.ts";
import { rawUpgrade, readAll, spdyRequest } from "../../../../tools/harness/handler_server.ts";

/** What one exec produced. */
export interface SpdyExecResult {
  protocol: string;
  stdout: Uint8Array;
  stderr: string;
  /** The error stream's bytes (Status JSON on v4). */
  status: string;
}

/** Options for {@link spdyExec}. */
export interface SpdyExecOptions {
  stdin?: Uint8Array;
  tty?: boolean;
  resizes?: Array<{ Width: number; Height: number }>;
  protocols?: string[];
  /** Keep stdin open (never FIN) instead of half-closing after the bytes. */
  holdStdin?: boolean;
}

/** Runs `command` in default/web/app through the kubelet path `kind`. */
export async function spdyExec(
  port: number,
  command: string[],
  options: SpdyExecOptions = {},
  kind: "exec" | "attach" = "exec",
): Promise<SpdyExecResult> {
  const tty = options.tty ?? false;
  const query = new URLSearchParams();
  for (const word of command) query.append("command", word);
  if (options.stdin) query.set("input", "1");
  query.set("output", "1");
  if (!tty) query.set("error", "1");
  if (tty) query.set("tty", "1");
  const answer = await rawUpgrade(
    port,
    spdyRequest(
      `/${kind}/default/web/app?${query}`,
      options.protocols ?? ["v5.channel.k8s.io", ...KUBELET_REMOTE_COMMAND_PROTOCOLS],
    ),
  );
  if (!answer.session) throw new Error(`upgrade refused: ${answer.status} ${answer.body}`);
  const session = answer.session;
  const protocol = answer.headers.find(([n]) => n === "x-stream-protocol-version")?.[1] ?? "";
  const open = (type: string) => session.openStream(spdyHeaders({ streamtype: type }));
  const error = await open("error");
  await error.closeWrite();
  const stdin = options.stdin ? await open("stdin") : undefined;
  const stdout = await open("stdout");
  await stdout.closeWrite();
  const stderr = tty ? undefined : await open("stderr");
  await stderr?.closeWrite();
  const resize = tty ? await open("resize") : undefined;
  const feeding = (async () => {
    if (resize) {
      const writer = resize.writable.getWriter();
      for (const size of options.resizes ?? []) {
        await writer.write(new TextEncoder().encode(JSON.stringify(size) + "\n"));
      }
      writer.releaseLock();
    }
    if (!stdin) return;
    const writer = stdin.writable.getWriter();
    await writer.write(options.stdin!);
    writer.releaseLock();
    if (!options.holdStdin) await stdin.closeWrite();
  })().catch(() => {});
  const [out, err, status] = await Promise.all([
    readAll(stdout.readable).catch(() => new Uint8Array(0)),
    stderr ? readAll(stderr.readable).catch(() => new Uint8Array(0)) : new Uint8Array(0),
    readAll(error.readable).catch(() => new Uint8Array(0)),
  ]);
  await feeding;
  session.close();
  await session.closed;
  const text = new TextDecoder();
  return { protocol, stdout: out, stderr: text.decode(err), status: text.decode(status) };
}
