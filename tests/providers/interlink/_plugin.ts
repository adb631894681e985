/**
 * The reference interLink plugin (examples/interlink_plugin/plugin.py, Python standard library
 * only) started for a test on 127.0.0.1 (or a unix socket), with its own state directory; it can
 * be killed and started again on the same port and state, as a plugin restarted mid-rollout.
 * @module
 */
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
  /** Kills it (SIGKILL); its pods' processes live on. */
  kill(): Promise<void>;
  /** Starts it again on the same address and state. */
  restart(): Promise<void>;
  /** Kills it and every pod process it started, and removes its state. */
  stop(): Promise<void>;
}

/** Starts the plugin; `socket: true` listens on a unix socket in its state directory. */
export async function startPlugin(options: { socket?: boolean } = {}): Promise<TestPlugin> {
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
  const kill = async () => {
    try {
      child?.kill("SIGKILL");
    } catch { /* already gone */ }
    await child?.status;
  };
  return {
    get url() {
      return socket ? undefined : `http://127.0.0.1:${port}`;
    },
    socket,
    state,
    kill,
    restart: spawn,
    async stop() {
      await kill();
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
