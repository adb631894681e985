/**
 * vkubelet's entry point: parse and validate the config (exit 2 with every problem, before
 * anything touches the cluster), set up logging, then hand over to `runVkubelet` until SIGINT
 * or SIGTERM. `--help` and `--version` (with the git commit, app/version.ts) print and exit 0.
 * @module
 */
import { realClock } from "./base/clock.ts";
import { HELP_TEXT, loadConfig, VERSION } from "./app/config/config.ts";
import { getLogger, setupLogging } from "./base/log.ts";
import { detectInternalIp, runVkubelet, StartupConfigError } from "./app/run/mod.ts";
import { feedWatchdog, sdNotify } from "./app/sd_notify.ts";
import { openGlibcHeap, trimPeriodically } from "./base/native_heap.ts";
import { startTracing, type Tracing } from "./app/tracing.ts";
import { type BuildStamp, stampOfCheckout, versionLine } from "./app/version.ts";

const encoder = new TextEncoder();
const print = (stream: { writeSync(p: Uint8Array): number }, text: string) => {
  const bytes = encoder.encode(text);
  for (let written = 0; written < bytes.length;) {
    written += stream.writeSync(bytes.subarray(written));
  }
};

/** How often the C heap's free pages go back to the system. */
const TRIM_INTERVAL_MS = 10_000;

/**
 * This process's memory map. Deno refuses to read `/proc/self/maps` (or `/proc/<pid>/maps`)
 * itself without `--allow-all`, so `cat` reads it (vkubelet has `--allow-run`).
 */
async function ownMemoryMap(): Promise<string | { unreadable: string }> {
  try {
    const out = await new Deno.Command("cat", {
      args: [`/proc/${Deno.pid}/maps`],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (out.success) return new TextDecoder().decode(out.stdout);
    return { unreadable: new TextDecoder().decode(out.stderr).trim() || `cat exited ${out.code}` };
  } catch (err) {
    return { unreadable: err instanceof Error ? err.message : String(err) };
  }
}

/** Trims the C heap until `signal` aborts (base/native_heap.ts); resolves then. */
async function trimNativeHeap(signal: AbortSignal, enabled: boolean): Promise<void> {
  const log = getLogger(["vkubelet"]);
  if (!enabled) {
    log.info("not returning freed native memory to the system: --native-heap-trim=false");
    return;
  }
  const opened = openGlibcHeap(await ownMemoryMap());
  if ("unavailable" in opened) {
    log.info("not returning freed native memory to the system: {reason}", {
      reason: opened.unavailable,
    });
    return;
  }
  log.info("returning freed native memory to the system every {seconds} s (glibc's malloc_trim)", {
    seconds: TRIM_INTERVAL_MS / 1000,
  });
  try {
    await trimPeriodically(opened.heap, { signal, clock: realClock, intervalMs: TRIM_INTERVAL_MS });
  } finally {
    opened.heap.close();
  }
}

/** The `--version` line: the stamp `deno task compile` built in, else the checkout's HEAD. */
async function versionText(stamp: BuildStamp | undefined): Promise<string> {
  if (stamp) return versionLine(VERSION, { stamp, source: "stamped" });
  // A bundle or binary made without the stamp has no checkout of its own to ask.
  const url = new URL(import.meta.url);
  if (url.protocol !== "file:" || !url.pathname.endsWith("/main.ts")) {
    return versionLine(VERSION, {
      unknown: "built without one (deno task compile stamps it, or --commit=SHA)",
    });
  }
  if (Deno.permissions.querySync({ name: "run", command: "git" }).state !== "granted") {
    return versionLine(VERSION, { unknown: "git may not run (--allow-run) to read the checkout" });
  }
  const found = await stampOfCheckout(new URL(".", url).pathname);
  return versionLine(VERSION, "stamp" in found ? { ...found, source: "checkout" } : found);
}

/**
 * Runs the CLI with `args` and returns the process exit code; `stamp` is the commit that
 * `deno task compile` built from (scripts/compile.ts generates the entry that passes it).
 */
export async function main(args: string[], stamp?: BuildStamp): Promise<number> {
  if (args[0] === "agent") {
    // The remote side of a pod's tunnel (app/agent/): same program, its own small CLI.
    const { agentCommand } = await import("./app/agent/mod.ts");
    return await agentCommand(args.slice(1));
  }
  const end = args.indexOf("--");
  const flags = end < 0 ? args : args.slice(0, end);
  if (flags.includes("--help") || flags.includes("-h")) {
    print(Deno.stdout, HELP_TEXT);
    return 0;
  }
  if (flags.includes("--version")) {
    print(Deno.stdout, `${await versionText(stamp)}\n`);
    return 0;
  }
  // `deno task start` runs in the repository; relative paths are meant from where it was typed.
  const callerDir = Deno.env.get("VKUBELET_CALLER_DIR");
  if (callerDir) {
    try {
      Deno.chdir(callerDir);
    } catch (err) {
      print(Deno.stderr, `vkubelet: cannot change to VKUBELET_CALLER_DIR ${callerDir}: ${err}\n`);
      return 2;
    }
  }
  const loaded = await loadConfig({ args, env: Deno.env.toObject(), readFile: Deno.readTextFile });
  if (!loaded.ok) {
    const list = [...loaded.warnings.map((w) => `warning: ${w}`), ...loaded.errors]
      .map((e) => `  - ${e}\n`).join("");
    print(
      Deno.stderr,
      `vkubelet: invalid configuration:\n${list}Run vkubelet --help to see every option.\n`,
    );
    return 2;
  }
  const config = loaded.config;
  await setupLogging({ level: config.logLevel, format: config.logFormat });
  const configLog = getLogger(["vkubelet", "config"]);
  for (const warning of loaded.warnings) configLog.warn("{warning}", { warning });
  const stop = new AbortController();
  // Under systemd (Type=notify): ready once the node is registered, stopping on the signal.
  const notify = (state: string) =>
    sdNotify(state, { env: Deno.env.toObject(), log: getLogger(["vkubelet"]) });
  let stopping: Promise<void> | undefined;
  const onSignal = () => {
    stopping ??= notify("STOPPING=1");
    stop.abort(new Error("stopped by signal"));
  };
  const signals = ["SIGINT", "SIGTERM"] as const;
  for (const name of signals) Deno.addSignalListener(name, onSignal);
  const trimming = new AbortController();
  const trimmed = trimNativeHeap(trimming.signal, config.nativeHeapTrim);
  // WatchdogSec= in the unit: WATCHDOG=1 until vkubelet has stopped (STOPPING=1 goes first).
  const watchdog = feedWatchdog({
    env: Deno.env.toObject(),
    pid: Deno.pid,
    clock: realClock,
    log: getLogger(["vkubelet"]),
    signal: trimming.signal,
  });
  let tracing: Tracing | undefined;
  try {
    tracing = await startTracing({
      ...config,
      env: Deno.env.toObject(),
      // Several nodes in one process (--nodes) share one resource: no node name on it.
      nodeName: config.nodes.length > 0 ? undefined : config.nodeName,
      version: VERSION,
    });
    if (tracing) configLog.info("sending traces to {endpoint}", { endpoint: tracing.endpoint });
    await runVkubelet(config, {
      signal: stop.signal,
      clock: realClock,
      detectInternalIp,
      onReady: () => notify("READY=1"),
      tracer: tracing?.tracer,
    });
    return 0;
  } catch (err) {
    if (err instanceof StartupConfigError) {
      const list = err.problems.map((p) => `  - ${p}\n`).join("");
      // 1 for what a restart may fix (a port still held by a stopping process): the shipped
      // systemd unit restarts on 1 and not on 2 (RestartPreventExitStatus=2).
      const what = err.transient ? "cannot start" : "invalid configuration";
      print(Deno.stderr, `vkubelet: ${what}:\n${list}`);
      return err.transient ? 1 : 2;
    }
    getLogger(["vkubelet"]).fatal("vkubelet failed: {err}", { err });
    return 1;
  } finally {
    for (const name of signals) Deno.removeSignalListener(name, onSignal);
    trimming.abort();
    await trimmed;
    await watchdog;
    await tracing?.shutdown().catch((err) =>
      getLogger(["vkubelet"]).warn("traces not sent at shutdown: {err}", { err })
    );
    await stopping;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
