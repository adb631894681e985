/**
 * `kubectl exec` through ExecContainerCommand: ECI opens a session and answers with its
 * WebSocket URL; vkubelet connects and speaks the Kubernetes channel protocol there
 * (`v4.channel.k8s.io`: a first byte naming the stream — 0 stdin, 1 stdout, 2 stderr, 3 the
 * status, 4 resize). That ECI's session speaks this protocol is an assumption checked only
 * against the test emulator, never against ECI (said in the README).
 * @module
 */
import type { AttachIO, ExecOptions } from "../../../provider/mod.ts";
import type { EciApi } from "../client/api.ts";

/** Runs `options.command` in the group's container through ExecContainerCommand. */
export async function execInGroup(
  api: Pick<EciApi, "exec">,
  target: { groupId: string; container: string },
  options: ExecOptions,
): Promise<number> {
  const { io, command, signal } = options;
  const url = await api.exec(target.groupId, target.container, command, {
    stdin: io.stdin !== undefined,
    tty: io.tty,
    signal,
  });
  return await runExecSession(url, io, signal);
}

/** The subprotocol asked for. */
export const EXEC_PROTOCOL = "v4.channel.k8s.io";

/** Runs the session at `url` with `io`; resolves with the command's exit code. */
export async function runExecSession(
  url: string,
  io: AttachIO,
  signal?: AbortSignal,
): Promise<number> {
  const socket = new WebSocket(url, [EXEC_PROTOCOL]);
  socket.binaryType = "arraybuffer";
  const writers = {
    1: io.stdout?.getWriter(),
    2: (io.tty ? io.stdout : io.stderr)?.getWriter(),
  };
  if (io.tty) writers[2] = writers[1];
  let status = "";
  const onAbort = () => socket.close();
  signal?.addEventListener("abort", onAbort, { once: true });
  const closed = new Promise<void>((resolve, reject) => {
    socket.onerror = () => reject(new Error(`exec session ${redact(url)} failed`));
    socket.onclose = () => resolve();
  });
  socket.onmessage = (e) => {
    const data = new Uint8Array(e.data as ArrayBuffer);
    const channel = data[0], payload = data.subarray(1);
    if (channel === 3) status += new TextDecoder().decode(payload);
    else if (channel === 1 || channel === 2) void writers[channel]?.write(payload.slice());
  };
  try {
    await new Promise<void>((resolve, reject) => {
      socket.onopen = () => resolve();
      closed.then(
        () => reject(new Error(`exec session ${redact(url)} closed before it opened`)),
        reject,
      );
    });
    const reader = io.stdin?.getReader();
    const pumping = pumpStdin(socket, reader, io.resize).catch(() => {});
    await closed;
    // A pending read ends when the lock goes; the caller owns the stream and closes it.
    reader?.releaseLock();
    await pumping;
  } finally {
    signal?.removeEventListener("abort", onAbort);
    for (const w of new Set(Object.values(writers))) {
      await w?.ready.catch(() => {});
      w?.releaseLock();
    }
  }
  signal?.throwIfAborted();
  return exitCodeOf(status);
}

async function pumpStdin(
  socket: WebSocket,
  reader: ReadableStreamDefaultReader<Uint8Array> | undefined,
  resize: AttachIO["resize"],
): Promise<void> {
  void (async () => {
    for await (const size of resize ?? []) {
      if (socket.readyState !== WebSocket.OPEN) break;
      socket.send(
        frame(
          4,
          new TextEncoder().encode(JSON.stringify({ Width: size.width, Height: size.height })),
        ),
      );
    }
  })().catch(() => {});
  while (reader && socket.readyState === WebSocket.OPEN) {
    const { value, done } = await reader.read();
    if (done) break;
    socket.send(frame(0, value));
  }
}

function frame(channel: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(payload.length + 1);
  out[0] = channel;
  out.set(payload, 1);
  return out;
}

/** The exit code in a v1 Status on the status channel: 0 on Success, else its ExitCode cause. */
export function exitCodeOf(status: string): number {
  if (!status.trim()) return 0;
  const parsed = JSON.parse(status) as {
    status?: string;
    details?: { causes?: { reason?: string; message?: string }[] };
    message?: string;
  };
  if (parsed.status === "Success") return 0;
  const cause = parsed.details?.causes?.find((c) => c.reason === "ExitCode");
  const code = Number(cause?.message);
  if (Number.isInteger(code)) return code;
  throw new Error(`exec failed: ${parsed.message ?? status}`);
}

/** The URL without its query (which carries the session's token). */
function redact(url: string): string {
  return url.replace(/\?.*$/, "?…");
}
