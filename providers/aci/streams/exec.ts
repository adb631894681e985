/**
 * `kubectl exec` through `Containers_ExecuteCommand`: ACI answers with a terminal WebSocket and
 * a password; the client sends the password as its first message, then its input, and reads the
 * command's output until ACI closes the socket (as the Azure CLI's `az container exec` does).
 * That WebSocket is not part of Azure's API specification, so this is verified only against
 * vkubelet's test emulator. ACI runs one command string (argv is joined with spaces, without
 * shell quoting), always on a terminal (stdout and stderr arrive merged) and reports no exit
 * code: a session that ends normally answers 0.
 * @module
 */
import type { AttachIO } from "../../../provider/mod.ts";
import type { AciGroups } from "../client/groups.ts";

/** Where to run and what. */
export interface ExecTarget {
  groups: Pick<AciGroups, "exec">;
  group: string;
  container: string;
  command: string[];
  io: AttachIO;
  signal?: AbortSignal;
}

/** Runs the command; resolves with 0 when ACI closes the session (ACI gives no exit code). */
export async function execInContainer(target: ExecTarget): Promise<number> {
  const { io, signal } = target;
  const { webSocketUri, password } = await target.groups.exec(target.group, target.container, {
    command: target.command.join(" "),
    rows: 24,
    cols: 80,
  }, signal);
  const socket = new WebSocket(webSocketUri);
  socket.binaryType = "arraybuffer";
  const out = (io.stdout ?? io.stderr)?.getWriter();
  const encoder = new TextEncoder();
  let writes = Promise.resolve();
  let opened!: () => void;
  const open = new Promise<void>((r) => opened = r);
  const done = new Promise<void>((resolve, reject) => {
    socket.onopen = () => {
      socket.send(password);
      opened();
    };
    socket.onmessage = (e) => {
      const bytes = typeof e.data === "string"
        ? encoder.encode(e.data)
        : new Uint8Array(e.data as ArrayBuffer);
      writes = writes.then(() => out?.write(bytes)).catch(() => {});
    };
    socket.onerror = () => reject(new Error(`the exec WebSocket of ${target.group} failed`));
    socket.onclose = () => resolve();
  });
  const onAbort = () => socket.close();
  signal?.addEventListener("abort", onAbort, { once: true });
  const input = io.stdin ? open.then(() => pumpInput(io.stdin!, socket, done)) : Promise.resolve();
  try {
    await done;
    await writes;
  } finally {
    signal?.removeEventListener("abort", onAbort);
    out?.releaseLock();
    opened();
    await input;
  }
  return 0;
}

/** Sends the client's input to the socket until either ends. */
async function pumpInput(
  stdin: ReadableStream<Uint8Array>,
  socket: WebSocket,
  done: Promise<void>,
): Promise<void> {
  const reader = stdin.getReader();
  const ended = done.then(() => ({ done: true as const, value: undefined }), () => ({
    done: true as const,
    value: undefined,
  }));
  try {
    for (;;) {
      const chunk = await Promise.race([reader.read(), ended]);
      if (chunk.done) break;
      if (socket.readyState === WebSocket.OPEN) socket.send(chunk.value);
    }
  } finally {
    await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}
