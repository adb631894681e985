/**
 * systemd readiness (`Type=notify`): sends `READY=1` once vkubelet is ready (node registered,
 * pod caches synced) and `STOPPING=1` when it starts shutting down, as a datagram to the unix
 * socket in `$NOTIFY_SOCKET` (the sd_notify protocol, systemd's man page sd_notify(3)). Deno has
 * no sd_notify, but its unix datagram sockets (`Deno.listenDatagram` with transport
 * `"unixpacket"`, behind `--unstable-net`) can send one. Without `$NOTIFY_SOCKET` (not under
 * systemd) it does nothing. With `WatchdogSec=` in the unit, {@link feedWatchdog} sends
 * `WATCHDOG=1` every half period, as the kubelet does.
 * @module
 */
import type { Clock } from "../base/clock.ts";
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

/**
 * The watchdog period systemd asks this process for, in ms, or undefined when there is none:
 * sd_watchdog_enabled(3) — `$WATCHDOG_USEC` a positive number of microseconds, and
 * `$WATCHDOG_PID`, when set, this process's pid (a child that inherited the variables must not
 * answer for its parent). A malformed value is an error naming the variable.
 */
export function watchdogPeriodMs(
  env: Record<string, string | undefined>,
  pid: number,
): number | undefined {
  const usec = env.WATCHDOG_USEC;
  if (usec === undefined) return undefined;
  if (!/^\d+$/.test(usec) || Number(usec) === 0) {
    throw new RangeError(
      `WATCHDOG_USEC=${usec} is not a positive number of microseconds; set WatchdogSec= in the ` +
        "unit to a duration of at least 1s, or remove it",
    );
  }
  const owner = env.WATCHDOG_PID;
  if (owner !== undefined) {
    if (!/^\d+$/.test(owner)) {
      throw new RangeError(`WATCHDOG_PID=${owner} is not a process id; systemd sets it, unset it`);
    }
    if (Number(owner) !== pid) return undefined;
  }
  return Number(usec) / 1000;
}

/** What {@link feedWatchdog} needs: the environment, this pid, the clock and a logger. */
export interface WatchdogOptions {
  env: Record<string, string | undefined>;
  pid: number;
  clock: Clock;
  log: Logger;
  signal: AbortSignal;
  /** Sends one state; {@link sdNotify} by default. */
  notify?: (state: string) => Promise<void>;
}

/**
 * Sends `WATCHDOG=1` every half of systemd's watchdog period until `signal` aborts, so that
 * systemd kills and restarts a vkubelet whose event loop stopped turning. As the kubelet
 * (pkg/kubelet/watchdog/watchdog_linux.go: half of `sd_watchdog_enabled`'s period, and only
 * its local checks, not the API server's), it feeds the dog on this process's own liveness: an
 * unreachable API server or provider is not cured by a restart. Resolves at once without a
 * watchdog, and when the signal aborts.
 */
export async function feedWatchdog(options: WatchdogOptions): Promise<void> {
  const { clock, log, signal } = options;
  let periodMs: number | undefined;
  try {
    periodMs = watchdogPeriodMs(options.env, options.pid);
  } catch (err) {
    log.warn("not feeding systemd's watchdog: {err}", { err });
    return;
  }
  if (periodMs === undefined) return;
  const notify = options.notify ??
    ((state: string) => sdNotify(state, { env: options.env, log }));
  log.info("feeding systemd's watchdog every {seconds} s (WatchdogSec={period} s)", {
    seconds: periodMs / 2000,
    period: periodMs / 1000,
  });
  while (!signal.aborted) {
    await notify("WATCHDOG=1");
    try {
      await clock.sleep(periodMs / 2, signal);
    } catch {
      return;
    }
  }
}
