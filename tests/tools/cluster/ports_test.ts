import assert from "node:assert/strict";
import { freePort } from "../../../tools/cluster/ports.ts";

Deno.test("a free port lies below the ephemeral range, where outgoing connections cannot take it", () => {
  const low = Number(
    Deno.readTextFileSync("/proc/sys/net/ipv4/ip_local_port_range").trim().split(/\s+/)[0],
  );
  const ports = new Set(Array.from({ length: 20 }, () => freePort()));
  for (const port of ports) {
    assert.ok(port >= 10_000 && port < low, `port ${port} is not in [10000, ${low})`);
    const listener = Deno.listen({ hostname: "127.0.0.1", port });
    listener.close();
  }
  assert.ok(ports.size > 1, "the ports are spread, not always the same one");
});
