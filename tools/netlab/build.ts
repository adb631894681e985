/**
 * Builds the pod network's node components from Go modules, once, into `.cache/netlab/`:
 * kube-proxy at the control plane's Kubernetes version (`kube-proxy/go.mod` is
 * `tools/cluster/go.mod` tidied for it, so it reuses the control plane's build cache), CoreDNS
 * (`coredns/go.mod`) and flannel (`flannel/go.mod`). Each binary is named by its version, so a
 * second run finds it and builds nothing. As a command it builds all three (`.ci/run` does):
 *
 * ```sh
 * deno run -A tools/netlab/build.ts
 * ```
 * @module
 */
import { cacheDir } from "../cluster/build.ts";

const netlabDir = new URL(".", import.meta.url).pathname;

/** One of the components this folder builds. */
export type NetlabComponent = "kube-proxy" | "coredns" | "flanneld";

/** Options for the `ensure…` builders. */
export interface NetlabBuildOptions {
  /** Called with a line before a build starts (builds take up to minutes on 2 busy cores). */
  progress?: (line: string) => void;
  signal?: AbortSignal;
}

/** The version `folder/go.mod` requires `module` at. */
export function pinnedVersion(folder: string, module: string): string {
  const gomod = Deno.readTextFileSync(`${netlabDir}${folder}/go.mod`);
  const escaped = module.replace(/[./]/g, (c) => `\\${c}`);
  const match = gomod.match(new RegExp(`^\\s*(?:require\\s+)?${escaped} (v\\S+)`, "m"));
  if (!match) throw new Error(`${netlabDir}${folder}/go.mod does not require ${module}`);
  return match[1];
}

/** The versions of the three components, from their go.mod files. */
export function netlabVersions(): Record<NetlabComponent, string> {
  return {
    "kube-proxy": pinnedVersion("kube-proxy", "k8s.io/kubernetes"),
    coredns: pinnedVersion("coredns", "github.com/coredns/coredns"),
    flanneld: pinnedVersion("flannel", "github.com/flannel-io/flannel"),
  };
}

/** Where `component` is (or will be) built. */
export function netlabBinaryPath(component: NetlabComponent): string {
  return `${cacheDir}/netlab/${component}-${netlabVersions()[component]}`;
}

/** Returns kube-proxy's path, building it first (about 30 s after the control plane's build). */
export function ensureKubeProxy(options: NetlabBuildOptions = {}): Promise<string> {
  const version = netlabVersions()["kube-proxy"];
  const [major, minor] = version.slice(1).split(".");
  const ldflags = [
    `-X k8s.io/component-base/version.gitVersion=${version}`,
    `-X k8s.io/component-base/version.gitMajor=${major}`,
    `-X k8s.io/component-base/version.gitMinor=${minor}`,
    "-X k8s.io/component-base/version.gitTreeState=clean",
  ];
  return ensureBuilt("kube-proxy", `${netlabDir}kube-proxy`, ".", ldflags, options);
}

/** Returns CoreDNS's path, building it first (a few minutes on a cold Go cache). */
export function ensureCoreDns(options: NetlabBuildOptions = {}): Promise<string> {
  return ensureBuilt("coredns", `${netlabDir}coredns`, "github.com/coredns/coredns", [], options);
}

/**
 * Returns flanneld's path, building it first (about 90 s cold). Flannel's own main.go imports
 * its tencentvpc backend, whose module the proxy does not serve; the copy built here drops that
 * one import and keeps every other backend (vxlan among them).
 */
export async function ensureFlannel(options: NetlabBuildOptions = {}): Promise<string> {
  const version = netlabVersions().flanneld;
  const path = netlabBinaryPath("flanneld");
  if (await exists(path)) return path;
  const source = await moduleDir(`github.com/flannel-io/flannel@${version}`, options.signal);
  const work = `${cacheDir}/netlab/src/flannel-${version}`;
  await Deno.mkdir(work, { recursive: true });
  const main = await Deno.readTextFile(`${source}/main.go`);
  const without = main.split("\n").filter((line) => !line.includes('pkg/backend/tencentvpc"'));
  if (without.length !== main.split("\n").length - 1) {
    throw new Error(
      `flannel ${version}'s main.go no longer imports pkg/backend/tencentvpc exactly once; ` +
        "check whether tools/netlab/build.ts still needs to drop it",
    );
  }
  await Deno.writeTextFile(`${work}/main.go`, without.join("\n"));
  for (const file of ["go.mod", "go.sum"]) {
    await Deno.copyFile(`${netlabDir}flannel/${file}`, `${work}/${file}`);
  }
  const ldflags = [`-X github.com/flannel-io/flannel/pkg/version.Version=${version}`];
  return await ensureBuilt("flanneld", work, ".", ldflags, options);
}

async function ensureBuilt(
  component: NetlabComponent,
  cwd: string,
  pkg: string,
  ldflags: string[],
  options: NetlabBuildOptions,
): Promise<string> {
  const path = netlabBinaryPath(component);
  if (await exists(path)) return path;
  await Deno.mkdir(`${cacheDir}/netlab`, { recursive: true });
  options.progress?.(
    `building ${component} ${netlabVersions()[component]} from Go modules; later runs reuse it`,
  );
  const tmp = `${path}.tmp-${Deno.pid}`;
  const started = performance.now();
  const output = await go(
    ["build", "-trimpath", "-ldflags", ["-s", "-w", ...ldflags].join(" "), "-o", tmp, pkg],
    cwd,
    options.signal,
  );
  if (!output.success) {
    await Deno.remove(tmp).catch(() => {});
    const tail = new TextDecoder().decode(output.stderr).split("\n").slice(-20).join("\n");
    throw new Error(`go build of ${component} failed (exit ${output.code}):\n${tail}`);
  }
  await Deno.rename(tmp, path);
  options.progress?.(
    `built ${path} in ${((performance.now() - started) / 1000).toFixed(0)} s`,
  );
  return path;
}

/** The module cache directory of `module@version`, downloading it first if needed. */
async function moduleDir(moduleAtVersion: string, signal?: AbortSignal): Promise<string> {
  const output = await go(["mod", "download", "-json", moduleAtVersion], netlabDir, signal);
  const info = JSON.parse(new TextDecoder().decode(output.stdout) || "{}");
  if (!output.success || typeof info.Dir !== "string") {
    throw new Error(
      `go mod download ${moduleAtVersion} failed: ${
        info.Error ?? new TextDecoder().decode(output.stderr)
      }`,
    );
  }
  return info.Dir;
}

/** Runs `go` at the lowest CPU priority: these builds share the machine with test runs. */
async function go(args: string[], cwd: string, signal?: AbortSignal): Promise<Deno.CommandOutput> {
  try {
    return await new Deno.Command("nice", {
      args: ["-n", "19", "go", ...args],
      cwd,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal,
    }).output();
  } catch (err) {
    throw new Error(
      "cannot run `nice go`: the pod network's components are built from Go modules; " +
        "put Go 1.26 or newer on PATH",
      { cause: err },
    );
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

if (import.meta.main) {
  const encoder = new TextEncoder();
  const progress = (line: string) => Deno.stderr.writeSync(encoder.encode(line + "\n"));
  for (const ensure of [ensureKubeProxy, ensureCoreDns, ensureFlannel]) {
    Deno.stdout.writeSync(encoder.encode(`${await ensure({ progress })}\n`));
  }
}
