/**
 * interLink's SLURM plugin (`github.com/intertwin-eu/interlink-slurm-plugin`, the module of
 * github.com/interlink-hq/interlink-slurm-plugin) for the interlink provider's tests, on a unix
 * socket in front of a one-node SLURM (../slurm.ts). The Go module proxy does not serve this
 * module, so it is built from a copy of its source at {@link PLUGIN_COMMIT} named by
 * `VK_INTERLINK_SLURM_PLUGIN_SRC` (a checkout or an archive of that commit) into
 * `.cache/interlink-slurm-plugin-<commit>/`; its dependencies come from Go modules as usual.
 * Without the binary or the source the tests that need it are skipped, saying so.
 *
 * The plugin runs containers with singularity; nothing can be pulled here, so its
 * `SingularityPath` is `./singularity_stand_in.sh`, which drops the image and runs the command
 * with the plugin's `--bind` mounts and `--env-file`.
 * @module
 */
import { cacheDir } from "../../cluster/build.ts";
import type { Slurm } from "../slurm.ts";

/** The plugin's Go module path (its go.mod's, not the repository's name). */
export const PLUGIN_MODULE = "github.com/intertwin-eu/interlink-slurm-plugin";
/** The commit the tests are written against (its go.mod requires interLink 9ed14a4e). */
export const PLUGIN_COMMIT = "f8451d93e063b7addc606d227a525fe614d91958";
/** Where the binary is (or will be) built. */
export const pluginBinary = `${cacheDir}/interlink-slurm-plugin-${
  PLUGIN_COMMIT.slice(0, 8)
}/slurm-plugin`;
/** The singularity stand-in the plugin's job scripts call. */
export const singularityStandIn = new URL("./singularity_stand_in.sh", import.meta.url).pathname;

/**
 * The plugin's path, built first from `source` (default `VK_INTERLINK_SLURM_PLUGIN_SRC`) when
 * it is not there yet; undefined, with why, when there is neither binary nor source.
 */
export async function ensureSlurmPlugin(
  options: { source?: string; progress?: (line: string) => void } = {},
): Promise<{ path: string } | { missing: string }> {
  if (await Deno.stat(pluginBinary).then(() => true, () => false)) return { path: pluginBinary };
  const source = options.source ?? Deno.env.get("VK_INTERLINK_SLURM_PLUGIN_SRC");
  if (!source) {
    return {
      missing:
        `interLink's SLURM plugin is not built (${pluginBinary}) and VK_INTERLINK_SLURM_PLUGIN_SRC names no source of it at ${PLUGIN_COMMIT}`,
    };
  }
  const gomod = await Deno.readTextFile(`${source}/go.mod`);
  if (!new RegExp(`^module ${PLUGIN_MODULE}$`, "m").test(gomod)) {
    throw new Error(`${source}/go.mod is not the module ${PLUGIN_MODULE}`);
  }
  const head = await run("git", ["-C", source, "rev-parse", "HEAD"]).catch(() => undefined);
  if (head !== undefined && head.trim() !== PLUGIN_COMMIT) {
    throw new Error(`${source} is at ${head.trim()}, not ${PLUGIN_COMMIT}: check that commit out`);
  }
  options.progress?.(`building interLink's SLURM plugin ${PLUGIN_COMMIT.slice(0, 8)}`);
  await Deno.mkdir(new URL(".", `file://${pluginBinary}`).pathname, { recursive: true });
  const tmp = `${pluginBinary}.tmp-${Deno.pid}`;
  await run("go", ["build", "-trimpath", "-ldflags", "-s -w", "-o", tmp, "./cmd"], source);
  await Deno.rename(tmp, pluginBinary);
  return { path: pluginBinary };
}

async function run(cmd: string, args: string[], cwd?: string): Promise<string> {
  const out = await new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) {
    const tail = new TextDecoder().decode(out.stderr).split("\n").slice(-20).join("\n");
    throw new Error(`${cmd} ${args.join(" ")} failed (exit ${out.code}):\n${tail}`);
  }
  return new TextDecoder().decode(out.stdout);
}

/** A running plugin. */
export interface SlurmPlugin extends AsyncDisposable {
  /** `unix://<socket>`: interLink's server's `pluginUrl`. */
  url: string;
  /** Its data root: a pod's job directory is `<namespace>-<uid>/` in it. */
  dataRoot: string;
  /** Its log (stderr). */
  logFile: string;
  /** Stops it and removes its directory. */
  stop(): Promise<void>;
}

/** Starts the plugin (`binary`) on a unix socket, submitting to `slurm`; resolves once it listens. */
export async function startSlurmPlugin(binary: string, slurm: Slurm): Promise<SlurmPlugin> {
  const dir = await Deno.makeTempDir({ prefix: "vk-slurm-plugin-" });
  const socket = `${dir}/plugin.sock`;
  const dataRoot = `${dir}/jobs/`;
  const logFile = `${dir}/plugin.log`;
  // The keys of the plugin's SlurmConfig (pkg/slurm/types.go); no flavors: SLURM's defaults.
  const config = `${dir}/SlurmConfig.yaml`;
  await Deno.writeTextFile(
    config,
    [
      `Socket: "unix://${socket}"`,
      `SidecarPort: ""`,
      `SbatchPath: "/usr/bin/sbatch"`,
      `ScancelPath: "/usr/bin/scancel"`,
      `SqueuePath: "/usr/bin/squeue"`,
      `SinfoPath: "/usr/bin/sinfo"`,
      `CommandPrefix: ""`,
      `ImagePrefix: "docker://"`,
      `SingularityPath: "${singularityStandIn}"`,
      `ExportPodData: true`,
      `DataRootFolder: "${dataRoot}"`,
      `Namespace: "vk"`,
      `Tsocks: false`,
      `BashPath: /bin/bash`,
      `VerboseLogging: true`,
      `ErrorsOnlyLogging: false`,
      `EnableProbes: false`,
      "",
    ].join("\n"),
  );
  const log = await Deno.open(logFile, { create: true, append: true });
  const child = new Deno.Command(binary, {
    cwd: dir,
    env: { SLURMCONFIGPATH: config, ...slurm.env },
    stdin: "null",
    stdout: "null",
    stderr: "piped", // logrus writes there
  }).spawn();
  const copies = child.stderr.pipeTo(log.writable);
  const stop = async () => {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
    await child.status;
    await copies.catch(() => {});
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  let exited: Deno.CommandStatus | undefined;
  child.status.then((status) => exited = status);
  const deadline = Date.now() + 30_000;
  while (!(await Deno.stat(socket).then(() => true, () => false))) {
    if (exited || Date.now() > deadline) {
      const said = await Deno.readTextFile(logFile).catch(() => "");
      await stop();
      throw new Error(
        `interLink's SLURM plugin ${
          exited ? `exited with code ${exited.code}` : "did not listen within 30 s"
        }:\n${said.split("\n").slice(-15).join("\n")}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url: `unix://${socket}`, dataRoot, logFile, stop, [Symbol.asyncDispose]: stop };
}
