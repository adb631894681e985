/**
 * Free loopback ports for the servers the tests and the bench start and hand a port to (control
 * plane, vkubelet, metrics-server, moto).
 * @module
 */

/** Where the lowest of our ports may start: above the well-known and common service ports. */
const LOWEST = 10_000;

/**
 * A TCP port free on 127.0.0.1 now, chosen below the kernel's ephemeral range
 * (`net.ipv4.ip_local_port_range`). A port the kernel hands out for port 0 comes from that range,
 * and between closing the probe and the process's own bind any outgoing connection on the machine
 * may take it as its local port: a bench run lost its kube-apiserver to "bind: address already in
 * use" that way. Below the range, only another explicit bind can take it. Falls back to the
 * kernel's choice when the range leaves fewer than 1,000 ports below it.
 */
export function freePort(): number {
  const top = ephemeralLow() - 1;
  if (top - LOWEST >= 1000) {
    for (let attempt = 0; attempt < 100; attempt++) {
      const port = LOWEST + Math.floor(Math.random() * (top - LOWEST + 1));
      if (isFree(port)) return port;
    }
  }
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

function isFree(port: number): boolean {
  try {
    Deno.listen({ hostname: "127.0.0.1", port }).close();
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.AddrInUse) return false;
    throw err;
  }
}

/** The first port of the ephemeral range; Linux's default when it cannot be read. */
function ephemeralLow(): number {
  try {
    const low = Number(
      Deno.readTextFileSync("/proc/sys/net/ipv4/ip_local_port_range").trim().split(/\s+/)[0],
    );
    if (Number.isInteger(low) && low > 0 && low <= 65535) return low;
  } catch {
    // Not Linux, or not readable: keep the default.
  }
  return 32768;
}
