/**
 * The eci provider with N pods (default 1,000) against the ECI emulator, in this process and
 * without a control plane: creates them (20 in flight) and waits until every pod is pushed
 * Running (status rounds every 500 ms), times one status round's describes (DescribeContainerGroups
 * in batches of 20) on their own, then deletes them all. Prints wall times, the API calls made by
 * action, the process's memory and the load average. What it measures is the provider, Alibaba's
 * SDK and the emulator's answers on 127.0.0.1: not ECI, not the apiserver.
 * Run: `deno run -A bench/scenarios/eci_pods.ts [pods]`.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../base/clock.ts";
import { getLogger } from "../../base/log.ts";
import { createProvider, parseEciConfig } from "../../providers/eci/mod.ts";
import { EciApi } from "../../providers/eci/client/api.ts";
import { startEciEmulator } from "../../tools/harness/eci/emulator.ts";
import { emulatorConfig, useTestCredentials } from "../../tools/harness/eci/env.ts";

/** Runs `work` over `items` with at most `limit` in flight. */
async function inFlight<T>(items: T[], limit: number, work: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(Array.from({ length: limit }, async () => {
    while (next < items.length) await work(items[next++]);
  }));
}

function countBy(list: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of list) out[x] = (out[x] ?? 0) + 1;
  return out;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

const pods = Number(Deno.args[0] ?? 1000);
const emu = await startEciEmulator();
const unset = useTestCredentials();
const shutdown = new AbortController();
const config = emulatorConfig(emu, { statusInterval: "500ms" });
const provider = createProvider(config, {
  nodeName: "vk-bench-eci",
  log: getLogger(["vkubelet", "provider"]),
  clock: realClock,
  internalIp: "127.0.0.1",
  daemonPort: 10250,
  signal: shutdown.signal,
});
const running = new Set<string>();
let allRunning!: () => void;
const done = new Promise<void>((r) => allRunning = r);
provider.notifyPods((pod) => {
  if (pod.status?.phase === "Running") running.add(pod.metadata!.uid!);
  if (running.size === pods) allRunning();
});
const list: Pod[] = Array.from({ length: pods }, (_, i) => ({
  metadata: { namespace: "bench", name: `pod-${i}`, uid: crypto.randomUUID() },
  spec: { containers: [{ name: "main", image: "busybox", command: ["sh", "-c", "echo hi"] }] },
}));
const t0 = performance.now();
await inFlight(list, 20, (pod) => provider.createPod(pod, {}));
const created = performance.now();
await done;
const allUp = performance.now();
const parsed = parseEciConfig(config);
if (!parsed.ok) throw new Error(parsed.errors.join("; "));
const api = new EciApi(parsed.config, realClock);
const r0 = performance.now();
await api.describe([...emu.groups.keys()]);
const round = performance.now() - r0;
const callsBefore = emu.calls.length;
const d0 = performance.now();
await inFlight(list, 20, (pod) => provider.deletePod(pod, {}));
const deleted = performance.now();
const rss = Deno.memoryUsage().rss / 2 ** 20;
console.log(`eci provider, ${pods} pods against the emulator (in process, no control plane)`);
console.log(`  create (20 in flight):        ${seconds(created - t0)}`);
console.log(`  until all pushed Running:     ${seconds(allUp - t0)}`);
console.log(`  one status round's describes: ${seconds(round)} (${Math.ceil(pods / 20)} calls)`);
console.log(`  delete all (20 in flight):    ${seconds(deleted - d0)}`);
console.log(`  calls during delete:          ${emu.calls.length - callsBefore}`);
console.log(`  API calls by action:          ${JSON.stringify(countBy(emu.calls))}`);
console.log(`  requests off the metadata:    ${emu.strays.length}`);
console.log(`  process RSS after:            ${rss.toFixed(0)} MiB`);
console.log(`  load average (1, 5, 15 min):  ${Deno.loadavg().map((x) => x.toFixed(2)).join(" ")}`);
shutdown.abort();
await provider.close();
unset();
await emu.stop();
