/**
 * systemd readiness (`Type=notify`): sends `READY=1` once vkubelet is ready (node registered,
 * pod caches synced) and `STOPPING=1` when it starts shutting down, as a datagram to the unix
 * socket in `$NOTIFY_SOCKET` (the sd_notify protocol, systemd's man page sd_notify(3)). Deno has
 * no sd_notify, but its unix datagram sockets (`Deno.listenDatagram` with transport
 * `"unixpacket"`, behind `--unstable-net`) can send one. Without `$NOTIFY_SOCKET` (not under
 * systemd) it does nothing.
 * @module
 */
import type { Logger } from "../base/log.ts";

interface DatagramConn {
  send(data: Uint8Array, addr: { transport: "unixpacket"; path: string }): Promise<number>;
  close(): void;
}

type ListenDatagram = (options: { transport: "unixpacket"; path: string }) => DatagramConn;

/** Sends `state` (e.g. `READY=1`) to systemd; never throws, logs what went wrong. */
export async function sdNotify(
  state: string,
  options: { env: Record<string, string | undefined>; log: Logger },
): Promise<void> {
  const target = options.env.NOTIFY_SOCKET;
  if (!target) return;
  const listen = (Deno as unknown as { listenDatagram?: ListenDatagram }).listenDatagram;
  if (target.startsWith("@") || !listen) {
    options.log.warn(
      "cannot tell systemd {state}: {why}; use Type=exec in the unit instead of Type=notify",
      {
        state,
        why: listen
          ? `abstract socket ${target} is not supported`
          : "this Deno runs without --unstable-net",
      },
    );
    return;
  }
  // A datagram needs a bound sender; bind one in a private temp dir for this one message.
  let dir: string | undefined;
  let conn: DatagramConn | undefined;
  try {
    dir = await Deno.makeTempDir({ prefix: "vkubelet-notify-" });
    conn = listen({ transport: "unixpacket", path: `${dir}/s` });
    await conn.send(new TextEncoder().encode(state), { transport: "unixpacket", path: target });
  } catch (err) {
    options.log.warn("cannot tell systemd {state} on {socket}: {err}", {
      state,
      socket: target,
      err,
    });
  } finally {
    conn?.close();
    if (dir) await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
