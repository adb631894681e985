/**
 * The reference interLink plugin (examples/interlink_plugin/plugin.py, Python standard library
 * only) started for a test on 127.0.0.1 (or a unix socket), with its own state directory; it can
 * be killed and started again on the same port and state, as a plugin restarted mid-rollout.
 * With `realLike` it answers as the real SLURM plugin does (./_real_like.ts): the tests that run
 * in both modes keep the provider working against the real plugin's behaviour.
 * @module
 */
import { type RealLikeOptions, type RealLikeProxy, startRealLike } from "./_real_like.ts";

const root = new URL("../../../", import.meta.url).pathname;
/** The plugin's script. */
export const PLUGIN = `${root}examples/interlink_plugin/plugin.py`;

/** A running reference plugin. */
export interface TestPlugin {
  /** `http://127.0.0.1:<port>` (or undefined with a socket). */
  url?: string;
  /** The socket path, when started on one. */
  socket?: string;
  /** Its state directory. */
  state: string;
  /** The SLURM-like proxy in front of it, when started `realLike`. */
  realLike?: RealLikeProxy;
  /** Kills it (SIGKILL); its pods' processes live on. */
  kill(): Promise<void>;
  /** Starts it again on the same address and state. */
  restart(): Promise<void>;
  /** Kills it and every pod process it started, and removes its state. */
  stop(): Promise<void>;
}

/** How to start the plugin. */
export interface PluginOptions {
  /** Listen on a unix socket in its state directory (not with `realLike`). */
  socket?: boolean;
  /** Answer as the real SLURM plugin (./_real_like.ts); `true` for its defaults. */
  realLike?: boolean | RealLikeOptions;
}

/** Starts the plugin; see {@link PluginOptions}. */
export async function startPlugin(options: PluginOptions = {}): Promise<TestPlugin> {
  if (options.socket && options.realLike) {
    throw new TypeError("the real-like plugin listens on 127.0.0.1, not on a socket");
  }
  const state = await Deno.makeTempDir({ prefix: "vk-interlink-" });
  const socket = options.socket ? `${state}/plugin.sock` : undefined;
  let port = 0;
  let child: Deno.ChildProcess | undefined;
  const spawn = async () => {
    const args = [PLUGIN, "--state", `${state}/pods`];
    args.push(...(socket ? ["--socket", socket] : ["--listen", `127.0.0.1:${port}`]));
    child = new Deno.Command("python3", { args, stdout: "piped", stderr: "null" }).spawn();
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    const { value } = await reader.read();
    reader.releaseLock();
    child.stdout.cancel().catch(() => {});
    const m = value?.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
    if (m) port = Number(m[1]);
    else if (!value?.includes("listening on unix:")) {
      throw new Error(`the reference plugin did not start: ${value}`);
    }
  };
  await spawn();
  const realLike = options.realLike
    ? await startRealLike(
      () => `http://127.0.0.1:${port}`,
      options.realLike === true ? {} : options.realLike,
    )
    : undefined;
  const kill = async () => {
    try {
      child?.kill("SIGKILL");
    } catch { /* already gone */ }
    await child?.status;
  };
  return {
    get url() {
      return realLike?.url ?? (socket ? undefined : `http://127.0.0.1:${port}`);
    },
    socket,
    state,
    realLike,
    kill,
    restart: spawn,
    async stop() {
      await kill();
      await realLike?.close();
      // The pods' processes run in sessions of their own: end them by the pids the state holds.
      const entries: string[] = [];
      try {
        for await (const e of Deno.readDir(`${state}/pods`)) entries.push(e.name);
      } catch { /* no pods */ }
      for (const name of entries) {
        try {
          const rec = JSON.parse(await Deno.readTextFile(`${state}/pods/${name}/pod.json`));
          for (const c of Object.values(rec.containers) as { pid: number }[]) {
            try {
              Deno.kill(-c.pid, "SIGKILL");
            } catch { /* gone */ }
          }
        } catch { /* not a pod */ }
      }
      await Deno.remove(state, { recursive: true }).catch(() => {});
    },
  };
}
