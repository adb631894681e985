/**
 * A CNI runtime for the process provider, as the kubelet's container runtime drives CNI
 * (containernetworking/cni SPEC.md "Section 4: Plugin Delegation" and "Section 3: Execution of
 * Network Configurations"; libcni's `AddNetworkList`, `DelNetworkList`, `CheckNetworkList` and
 * `GCNetworkList` in containernetworking/cni libcni/api.go): each plugin of the network
 * configuration list is an executable found in the bin directories, run with `CNI_COMMAND`,
 * `CNI_CONTAINERID`, `CNI_NETNS`, `CNI_IFNAME`, `CNI_ARGS` and `CNI_PATH` in its environment and
 * its configuration on stdin, with the list's `name` and `cniVersion` injected, the previous
 * plugin's result as `prevResult`, and the runtime's capability arguments a plugin advertises in
 * `capabilities` as `runtimeConfig`. ADD runs the plugins in order, DEL in reverse with the cached
 * ADD result; the results are cached per attachment (as libcni caches them under
 * `/var/lib/cni/results`) so that a DEL, CHECK or garbage collection after a restart has them.
 * Plugins run in a configurable "host" network namespace (`nsenter --net=<path>`), which is where
 * the bridge and the host ends of the veths are made; by default vkubelet's own.
 * @module
 */
import { join } from "node:path";
import { HELPER_ENV, toolPath } from "../host/host_tools.ts";

/** A network configuration list (SPEC.md "Section 1: Network configuration format"). */
export interface NetworkConfigList {
  cniVersion: string;
  name: string;
  disableCheck?: boolean;
  disableGC?: boolean;
  plugins: PluginConfig[];
  /** The file it was read from. */
  file?: string;
}

/** One plugin's configuration in a list. */
export interface PluginConfig {
  type: string;
  capabilities?: Record<string, boolean>;
  [key: string]: unknown;
}

/** What identifies one attachment of a network to a pod (SPEC.md: container ID + ifname). */
export interface Attachment {
  containerId: string;
  ifName: string;
  netns: string;
  /** `CNI_ARGS` pairs (K8S_POD_NAMESPACE, ...), in order. */
  args: [string, string][];
  /** Capability arguments (portMappings, ipRanges, ...), given to plugins that advertise them. */
  capabilityArgs: Record<string, unknown>;
}

/** An attachment with the list's ADD result, as cached. */
export interface CachedAttachment extends Attachment {
  network: string;
  result: CniResult;
}

/** The part of a CNI result the provider reads (SPEC.md "Section 5: Result Types"). */
export interface CniResult {
  cniVersion?: string;
  interfaces?: { name: string; sandbox?: string }[];
  ips?: { address: string; gateway?: string; interface?: number }[];
  [key: string]: unknown;
}

/** A plugin that failed, with the CNI error it printed (SPEC.md "Error"). */
export class CniError extends Error {
  override name = "CniError";
  constructor(readonly code: number, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/**
 * The network configuration the runtime uses from `confDir`, as libcni's `ConfFiles` + the
 * kubelet's runtimes pick it: the first file by name ending in `.conflist`, `.conf` or `.json`
 * that parses (a single-plugin `.conf` becomes a list of one). Undefined if there is none.
 */
export async function loadNetworkConfig(confDir: string): Promise<NetworkConfigList | undefined> {
  let names: string[];
  try {
    names = [];
    for await (const entry of Deno.readDir(confDir)) {
      if (entry.isFile && /\.(conflist|conf|json)$/.test(entry.name)) names.push(entry.name);
    }
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
  for (const name of names.sort()) {
    const file = join(confDir, name);
    const list = parseNetworkConfig(await Deno.readTextFile(file), name.endsWith(".conflist"));
    if (list) return { ...list, file };
  }
  return undefined;
}

/** A list from a `.conflist`, or a one-plugin list from a `.conf`; undefined if it is not one. */
export function parseNetworkConfig(text: string, isList: boolean): NetworkConfigList | undefined {
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof raw !== "object" || raw === null || typeof raw.name !== "string") return undefined;
  const cniVersion = typeof raw.cniVersion === "string" ? raw.cniVersion : "0.1.0";
  if (isList) {
    if (!Array.isArray(raw.plugins) || raw.plugins.length === 0) return undefined;
    if (raw.plugins.some((p) => typeof p?.type !== "string")) return undefined;
    return {
      cniVersion,
      name: raw.name,
      disableCheck: raw.disableCheck === true,
      disableGC: raw.disableGC === true,
      plugins: raw.plugins as PluginConfig[],
    };
  }
  if (typeof raw.type !== "string") return undefined;
  return { cniVersion, name: raw.name, plugins: [raw as PluginConfig] };
}

/** Whether semantic version `a` is at least `b` ("1.1.0" >= "1.0.0"). */
export function versionAtLeast(a: string, b: string): boolean {
  const pa = a.split(".").map(Number);
  const pb = b.split(".").map(Number);
  for (let i = 0; i < 3; i++) {
    const x = pa[i] || 0, y = pb[i] || 0;
    if (x !== y) return x > y;
  }
  return true;
}

/** Where and how plugins run. */
export interface CniRunnerOptions {
  /** Directories searched for plugin executables (`CNI_PATH`). */
  binDirs: string[];
  /** Where ADD results are cached, one file per attachment. */
  cacheDir: string;
  /** The network namespace the plugins run in (a path); default vkubelet's own. */
  hostNetns?: string;
  /** Deadline of one plugin call; default 60 s. */
  timeoutMs?: number;
}

/** Runs one network configuration list's plugins for attachments. */
export class CniRunner {
  constructor(readonly list: NetworkConfigList, readonly options: CniRunnerOptions) {}

  /** ADD: every plugin in order, chaining results; caches and returns the last result. */
  async add(att: Attachment): Promise<CniResult> {
    let prev: CniResult | undefined;
    for (const plugin of this.list.plugins) {
      prev = await this.#exec("ADD", plugin, att, prev);
    }
    const result = prev ?? {};
    await this.#writeCache({ ...att, network: this.list.name, result });
    return result;
  }

  /**
   * DEL: every plugin in reverse order with the cached ADD result as `prevResult` (SPEC.md:
   * DEL must be given the result of ADD where the runtime has it); removes the cache entry. DEL
   * of what is gone succeeds (plugins must treat it as done).
   */
  async del(att: Attachment): Promise<void> {
    const cached = await this.cached(att.containerId, att.ifName);
    const use = cached ?? { ...att, network: this.list.name, result: undefined };
    const errors: string[] = [];
    for (const plugin of [...this.list.plugins].reverse()) {
      try {
        await this.#exec("DEL", plugin, use, use.result);
      } catch (err) {
        errors.push(`${plugin.type}: ${(err as Error).message}`);
      }
    }
    if (errors.length) throw new CniError(999, `CNI DEL failed: ${errors.join("; ")}`);
    await Deno.remove(this.#cacheFile(att.containerId, att.ifName)).catch(() => {});
  }

  /**
   * CHECK (SPEC.md, since 0.4.0; skipped with `disableCheck`): every plugin in order with the
   * cached result; false where there is nothing cached or the version has no CHECK.
   */
  async check(att: Attachment): Promise<boolean> {
    if (this.list.disableCheck || !versionAtLeast(this.list.cniVersion, "0.4.0")) return true;
    const cached = await this.cached(att.containerId, att.ifName);
    if (!cached) return false;
    for (const plugin of this.list.plugins) {
      await this.#exec("CHECK", plugin, cached, cached.result);
    }
    return true;
  }

  /**
   * Garbage collection, as libcni's `GCNetworkList`: DEL of every cached attachment of this
   * network that is not in `valid`, then, where the list's version is at least 1.1.0 (and not
   * `disableGC`), the `GC` verb on every plugin with `cni.dev/valid-attachments`, so that the
   * plugins release what they hold for attachments the runtime has forgotten. Errors are
   * collected and returned.
   */
  async gc(valid: { containerId: string; ifName: string }[]): Promise<string[]> {
    const keep = new Set(valid.map((v) => `${v.containerId}/${v.ifName}`));
    const errors: string[] = [];
    for (const cached of await this.allCached()) {
      if (keep.has(`${cached.containerId}/${cached.ifName}`)) continue;
      try {
        await this.del(cached);
      } catch (err) {
        errors.push(`stale attachment ${cached.containerId}: ${(err as Error).message}`);
      }
    }
    if (this.list.disableGC || !versionAtLeast(this.list.cniVersion, "1.1.0")) return errors;
    const attachments = valid.map((v) => ({ containerID: v.containerId, ifname: v.ifName }));
    for (const plugin of this.list.plugins) {
      const extra = {
        "cni.dev/valid-attachments": attachments,
        // libcni sends both: the spec named the key wrongly once (containernetworking/cni#1101).
        "cni.dev/attachments": attachments,
      };
      try {
        await this.#run("GC", { ...plugin, ...this.#inject(), ...extra }, undefined);
      } catch (err) {
        errors.push(`GC of ${plugin.type}: ${(err as Error).message}`);
      }
    }
    return errors;
  }

  /** The cached attachment, if any. */
  async cached(containerId: string, ifName: string): Promise<CachedAttachment | undefined> {
    try {
      return JSON.parse(await Deno.readTextFile(this.#cacheFile(containerId, ifName)));
    } catch {
      return undefined;
    }
  }

  /** Every cached attachment of this network. */
  async allCached(): Promise<CachedAttachment[]> {
    const found: CachedAttachment[] = [];
    try {
      for await (const entry of Deno.readDir(this.options.cacheDir)) {
        if (!entry.name.startsWith(`${this.list.name}-`) || !entry.name.endsWith(".json")) continue;
        try {
          const cached = JSON.parse(
            await Deno.readTextFile(join(this.options.cacheDir, entry.name)),
          );
          if (cached?.network === this.list.name) found.push(cached);
        } catch {
          // half-written or foreign: left alone
        }
      }
    } catch {
      // no cache yet
    }
    return found;
  }

  #cacheFile(containerId: string, ifName: string): string {
    return join(this.options.cacheDir, `${this.list.name}-${containerId}-${ifName}.json`);
  }

  async #writeCache(cached: CachedAttachment): Promise<void> {
    await Deno.mkdir(this.options.cacheDir, { recursive: true, mode: 0o700 });
    const file = this.#cacheFile(cached.containerId, cached.ifName);
    await Deno.writeTextFile(`${file}.tmp`, JSON.stringify(cached), { mode: 0o600 });
    await Deno.rename(`${file}.tmp`, file);
  }

  #inject(): Record<string, unknown> {
    return { name: this.list.name, cniVersion: this.list.cniVersion };
  }

  /** One plugin call of a list verb: its config with name, version, prevResult, runtimeConfig. */
  #exec(
    verb: "ADD" | "DEL" | "CHECK",
    plugin: PluginConfig,
    att: Attachment,
    prev: CniResult | undefined,
  ): Promise<CniResult> {
    const config: Record<string, unknown> = { ...plugin, ...this.#inject() };
    if (prev !== undefined) config.prevResult = prev;
    const runtimeConfig: Record<string, unknown> = {};
    for (const [capability, on] of Object.entries(plugin.capabilities ?? {})) {
      if (on && att.capabilityArgs[capability] !== undefined) {
        runtimeConfig[capability] = att.capabilityArgs[capability];
      }
    }
    if (Object.keys(runtimeConfig).length) config.runtimeConfig = runtimeConfig;
    return this.#run(verb, config, att);
  }

  /** Execs the plugin `config.type` with the CNI environment; parses its result or error. */
  async #run(
    verb: string,
    config: Record<string, unknown>,
    att: Attachment | undefined,
  ): Promise<CniResult> {
    const type = String(config.type);
    const plugin = this.#find(type);
    const env: Record<string, string> = {
      ...HELPER_ENV,
      CNI_COMMAND: verb,
      CNI_PATH: this.options.binDirs.join(":"),
    };
    if (att) {
      env.CNI_CONTAINERID = att.containerId;
      env.CNI_NETNS = att.netns;
      env.CNI_IFNAME = att.ifName;
      env.CNI_ARGS = att.args.map(([k, v]) => `${k}=${v}`).join(";");
    }
    const argv = this.options.hostNetns
      ? [toolPath("nsenter"), `--net=${this.options.hostNetns}`, "--", plugin]
      : [plugin];
    const child = new Deno.Command(argv[0], {
      args: argv.slice(1),
      clearEnv: true,
      env,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(this.options.timeoutMs ?? 60_000),
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(JSON.stringify(config)));
    await writer.close();
    const out = await child.output();
    const stdout = new TextDecoder().decode(out.stdout).trim();
    if (out.success) return stdout ? JSON.parse(stdout) : {};
    let message = new TextDecoder().decode(out.stderr).trim() || `exit ${out.code}`;
    let code = 999;
    try {
      const error = JSON.parse(stdout);
      code = Number(error.code) || code;
      message = [error.msg, error.details].filter(Boolean).join(": ") || message;
    } catch {
      // not a CNI error object
    }
    throw new CniError(code, `plugin ${type} ${verb} failed: ${message}`);
  }

  #find(type: string): string {
    if (type.includes("/")) throw new CniError(999, `plugin type ${type} is not a plain name`);
    for (const dir of this.options.binDirs) {
      const path = join(dir, type);
      try {
        if (Deno.statSync(path).isFile) return path;
      } catch {
        // not here
      }
    }
    throw new CniError(
      999,
      `CNI plugin ${type} is not in ${
        this.options.binDirs.join(", ")
      }; install it there or set network.cniBinDir`,
    );
  }
}
