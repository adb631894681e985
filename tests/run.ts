/**
 * `deno task test`: brings the local control plane up (building it on first use), runs the
 * whole suite with `deno test`, stops the cluster again if this run started it, and ends with
 * a plain `N passed, M failed` line read from the JUnit report.
 *
 * Extra arguments go to `deno test` (e.g. `deno task test tests/k8s/`).
 * Set `VKUBELET_KEEP_CLUSTER=1` to leave the cluster running afterwards.
 * @module
 */
import { cacheDir } from "../tools/cluster/build.ts";
import { clusterPaths, readState } from "../tools/cluster/cluster.ts";

const cli = new URL("../tools/cluster/cli.ts", import.meta.url).pathname;
const root = new URL("../", import.meta.url).pathname;
const encoder = new TextEncoder();
const say = (line: string) => Deno.stdout.writeSync(encoder.encode(line + "\n"));

/** Names of the clusters that have recorded state (are, or were meant to be, running). */
function clustersWithState(): string[] {
  const names: string[] = [];
  try {
    for (const entry of Deno.readDirSync(cacheDir)) {
      const name = entry.name === "cluster" ? "default" : entry.name.replace(/^cluster-/, "");
      if (entry.name.startsWith("cluster") && readState(clusterPaths(name))) names.push(name);
    }
  } catch {
    // No cache yet.
  }
  return names;
}

async function cluster(...args: string[]): Promise<{ code: number; stdout: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", cli, ...args],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  return { code: out.code, stdout: new TextDecoder().decode(out.stdout) };
}

/** Counts test cases and failures in a JUnit report written by `deno test`. */
export function countJunit(xml: string): { passed: number; failed: number; skipped: number } {
  let passed = 0, failed = 0, skipped = 0;
  for (const match of xml.matchAll(/<testcase\b[^>]*?(\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const body = match[2] ?? "";
    if (/<(failure|error)\b/.test(body)) failed++;
    else if (/<skipped\b/.test(body)) skipped++;
    else passed++;
  }
  return { passed, failed, skipped };
}

async function main(): Promise<number> {
  const wasUp = (await cluster("status")).code === 0;
  const before = new Set(clustersWithState());
  const started = await cluster("up");
  if (started.code !== 0) {
    say("the local control plane did not start; see the messages above");
    say("0 passed, 1 failed");
    return 1;
  }
  const junit = `${cacheDir}/junit.xml`;
  await Deno.remove(junit).catch(() => {});
  const testArgs = Deno.args.length ? Deno.args : [];
  const status = await new Deno.Command(Deno.execPath(), {
    args: ["test", "-A", `--junit-path=${junit}`, ...testArgs],
    cwd: root,
    stdout: "inherit",
    stderr: "inherit",
  }).spawn().status;
  if (Deno.env.get("VKUBELET_KEEP_CLUSTER") !== "1") {
    if (!wasUp) await cluster("down");
    // Second clusters that tests started (e.g. for the kubernetes provider).
    for (const name of clustersWithState()) {
      if (name !== "default" && !before.has(name)) await cluster(`--name=${name}`, "down");
    }
  }
  let counts = { passed: 0, failed: status.success ? 0 : 1, skipped: 0 };
  try {
    counts = countJunit(await Deno.readTextFile(junit));
    if (!status.success && counts.failed === 0) counts.failed = 1;
  } catch {
    // No report: deno test failed before running anything; count that as one failure.
  }
  say(
    `${counts.passed} passed, ${counts.failed} failed` +
      (counts.skipped ? `, ${counts.skipped} skipped` : ""),
  );
  return status.success && counts.failed === 0 ? 0 : 1;
}

if (import.meta.main) Deno.exit(await main());
