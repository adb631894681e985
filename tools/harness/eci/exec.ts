/**
 * The emulator's exec session: runs the command in this process's sandbox (test code; the
 * conformance suite's commands are `sh -c` one-liners) and speaks the Kubernetes channel
 * protocol on the WebSocket (first byte: 1 stdout, 2 stderr, 3 a v1 Status with the exit code).
 * @module
 */

function frame(channel: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(payload.length + 1);
  out[0] = channel;
  out.set(payload, 1);
  return out;
}

/** Runs `command` once the socket opens, then closes it. */
export function runExecSocket(socket: WebSocket, command: string[]): void {
  socket.onopen = async () => {
    try {
      const out = await new Deno.Command(command[0], { args: command.slice(1), stdin: "null" })
        .output();
      if (out.stdout.length) socket.send(frame(1, out.stdout));
      if (out.stderr.length) socket.send(frame(2, out.stderr));
      const status = out.code === 0 ? { status: "Success" } : {
        status: "Failure",
        reason: "NonZeroExitCode",
        message: `command terminated with non-zero exit code: ${out.code}`,
        details: { causes: [{ reason: "ExitCode", message: String(out.code) }] },
      };
      socket.send(frame(3, new TextEncoder().encode(JSON.stringify(status))));
    } catch (err) {
      const status = { status: "Failure", message: String(err) };
      socket.send(frame(3, new TextEncoder().encode(JSON.stringify(status))));
    }
    socket.close();
  };
}
