/**
 * What the collector end-to-end tests (./collector_*_test.ts) share: a temp pod log directory with
 * the collector of tools/otelcol tailing it, and the checks on its output — each instance's lines
 * once, in order, with the pod's metadata and restart count.
 * @module
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type CollectorRecord,
  type RunningCollector,
  startCollector,
} from "../../tools/otelcol/collector.ts";
import { eventually } from "../../tools/harness/wait.ts";

/** A temp pod log directory (`<root>/pods`, links in `<root>/containers`) and its collector. */
export interface LogAgent {
  root: string;
  podLogDir: string;
  collector: RunningCollector;
  /** vkubelet's flags for this directory, rotating past `maxSize`. */
  flags(maxSize: string): string[];
  /** The collector's records of one container instance of `pod`. */
  instance(pod: Pod, container: string, restartCount: number): Promise<CollectorRecord[]>;
  /** Waits until the instance's records include a body `last` (and returns them). */
  waitFor(
    pod: Pod,
    container: string,
    restartCount: number,
    last: (bodies: string[]) => boolean,
    what: string,
    ms?: number,
  ): Promise<string[]>;
  /** Stops the collector and removes the directory. */
  close(): Promise<void>;
}

/** Makes the directory and starts the collector on it. */
export async function startLogAgent(prefix: string): Promise<LogAgent> {
  const root = await Deno.makeTempDir({ prefix: `vk-${prefix}-` });
  const podLogDir = `${root}/pods`;
  await Deno.mkdir(podLogDir);
  const collector = await startCollector({ podLogDir, workDir: `${root}/otel` });
  const agent: LogAgent = {
    root,
    podLogDir,
    collector,
    flags: (maxSize) => [`--pod-log-dir=${podLogDir}`, `--container-log-max-size=${maxSize}`],
    async instance(pod, container, restartCount) {
      const { namespace, name, uid } = pod.metadata!;
      return (await collector.records()).filter((r) =>
        r.uid === uid && r.container === container && r.restartCount === String(restartCount) &&
        r.pod === name && r.namespace === namespace
      );
    },
    async waitFor(pod, container, restartCount, last, what, ms = 60_000) {
      return await eventually(
        what,
        async () => {
          const bodies = (await agent.instance(pod, container, restartCount)).map((r) => r.body);
          return last(bodies) && bodies;
        },
        ms,
        200,
      ).catch(async (err) => {
        const files = await listFiles(podLogDir);
        const said = collector.output().slice(-2000);
        throw new Error(`${err.message}\nfiles: ${files.join(" ")}\ncollector said: ${said}`);
      });
    },
    async close() {
      await collector.stop();
      await Deno.remove(root, { recursive: true }).catch(() => {});
    },
  };
  return agent;
}

/** The pod log files and the collector's records by restart count, for a failure's message. */
export async function describeLogs(agent: LogAgent, pod: Pod): Promise<string> {
  const files = await listFiles(agent.podLogDir);
  const byRestart = new Map<string, string[]>();
  for (const r of await agent.collector.records()) {
    if (r.uid !== pod.metadata?.uid) continue;
    const key = `${r.container}/${r.restartCount}`;
    byRestart.set(key, [...byRestart.get(key) ?? [], r.body.slice(0, 12)]);
  }
  const records = [...byRestart].map(([k, v]) => `${k}: ${v.join(",")}`).join("\n");
  return `files: ${files.join(" ")}\nrecords:\n${records}`;
}

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const entries = await Array.fromAsync(Deno.readDir(dir)).catch(() => []);
  for (const e of entries) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory) out.push(...await listFiles(path));
    else out.push(`${path} (${(await Deno.lstat(path)).size} B)`);
  }
  return out;
}

/**
 * Every record the collector read from `podLogDir` carries the pod's namespace, name, uid and a
 * container name and restart count (none lost its metadata on the way).
 */
export async function assertAllLabelled(agent: LogAgent, pod: Pod): Promise<void> {
  const mine = (await agent.collector.records()).filter((r) => r.uid === pod.metadata?.uid);
  assert.ok(mine.length > 0, "the collector exported nothing of the pod");
  for (const r of mine) {
    assert.equal(r.namespace, pod.metadata?.namespace);
    assert.equal(r.pod, pod.metadata?.name);
    assert.ok(r.container, `a record without k8s.container.name: ${r.body}`);
    assert.match(r.restartCount ?? "", /^\d+$/, `a record without a restart count: ${r.body}`);
  }
  const unlabelled = (await agent.collector.records()).filter((r) => !r.uid);
  assert.deepEqual(unlabelled.map((r) => r.body), [], "records without k8s.pod.uid");
}

/**
 * `bodies` are `<tag> 1`, `<tag> 2`, ... `<tag> n` (each maybe followed by padding) with no
 * number missing or repeated, n at least `atLeast`; returns n.
 */
export function assertCounted(bodies: string[], tag: string, atLeast: number): number {
  const numbers = bodies.map((b) => {
    const m = b.match(new RegExp(`^${tag} (\\d+)\\b`));
    assert.ok(m, `a line that is not "${tag} <n>": ${JSON.stringify(b.slice(0, 80))}`);
    return Number(m[1]);
  });
  const expected = numbers.map((_, i) => i + 1);
  if (JSON.stringify(numbers) !== JSON.stringify(expected)) {
    const at = numbers.findIndex((n, i) => n !== i + 1);
    assert.fail(
      `"${tag}" lines not each once in order: at ${at} got ${
        numbers.slice(Math.max(0, at - 3), at + 4).join(",")
      } (${numbers.length} lines)`,
    );
  }
  assert.ok(numbers.length >= atLeast, `only ${numbers.length} "${tag}" lines, want ${atLeast}`);
  return numbers.length;
}

/** The rotated files (`<n>.log.<time>` and `.gz`) of a container instance. */
export async function rotatedFiles(
  agent: LogAgent,
  pod: Pod,
  container: string,
  restartCount: number,
): Promise<string[]> {
  const { namespace, name, uid } = pod.metadata!;
  const dir = `${agent.podLogDir}/${namespace}_${name}_${uid}/${container}`;
  const names = (await Array.fromAsync(Deno.readDir(dir))).map((e) => e.name);
  return names.filter((n) => n.startsWith(`${restartCount}.log.`)).sort();
}
