/**
 * Builds the control-plane binary (etcd, kube-apiserver, kube-controller-manager,
 * kube-scheduler, kubectl in one multi-call executable) from the Go module under
 * `tools/cluster/`, once: the output is cached under `.cache/bin/`, named by a hash of the
 * module's sources, so a second run finds it and builds nothing.
 * @module
 */

import { realClock } from "../../base/clock.ts";
import { BuildProgress, forEachLine } from "./build_progress.ts";

const moduleDir = new URL(".", import.meta.url).pathname;
/** The repository root. */
export const repoRoot = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");
/** Where build output and cluster state live (git-ignored). */
export const cacheDir = Deno.env.get("VKUBELET_CACHE_DIR") ?? `${repoRoot}/.cache`;

/** The Kubernetes version the control plane is built at, read from the wrapper's go.mod. */
export function kubernetesVersion(): string {
  const gomod = Deno.readTextFileSync(`${moduleDir}go.mod`);
  const match = gomod.match(/^\s*k8s\.io\/kubernetes (v[0-9.]+)/m);
  if (!match) throw new Error(`${moduleDir}go.mod does not require k8s.io/kubernetes`);
  return match[1];
}

/** The etcd server version the control plane is built with. */
export function etcdVersion(): string {
  const gomod = Deno.readTextFileSync(`${moduleDir}go.mod`);
  const match = gomod.match(/^\s*go\.etcd\.io\/etcd\/server\/v3 (v[0-9.]+)/m);
  if (!match) throw new Error(`${moduleDir}go.mod does not require go.etcd.io/etcd/server/v3`);
  return match[1];
}

async function sourceHash(): Promise<string> {
  const files = ["go.mod", "go.sum"];
  for await (const entry of Deno.readDir(`${moduleDir}cmd/k8s`)) {
    if (entry.name.endsWith(".go")) files.push(`cmd/k8s/${entry.name}`);
  }
  files.sort();
  const hasher = new Uint8Array(
    await crypto.subtle.digest(
      "SHA-256",
      new TextEncoder().encode(
        files.map((f) => `${f}\n${Deno.readTextFileSync(moduleDir + f)}`).join("\n"),
      ),
    ),
  );
  return Array.from(hasher.slice(0, 6), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Path the binary for the current sources is (or will be) at. */
export async function binaryPath(): Promise<string> {
  return `${cacheDir}/bin/k8s-${kubernetesVersion()}-${await sourceHash()}`;
}

/** Options for {@link ensureBinary}. */
export interface BuildOptions {
  /** Called with progress lines for a person watching. */
  progress?: (line: string) => void;
  signal?: AbortSignal;
}

/** Returns the path of the control-plane binary, building it first if it is not cached. */
export async function ensureBinary(options: BuildOptions = {}): Promise<string> {
  const path = await binaryPath();
  try {
    await Deno.stat(path);
    return path;
  } catch {
    // Not built yet.
  }
  const progress = options.progress ?? (() => {});
  const version = kubernetesVersion();
  const [major, minor] = version.slice(1).split(".");
  await Deno.mkdir(`${cacheDir}/bin`, { recursive: true });
  progress(
    `building the control plane (Kubernetes ${version}, etcd ${etcdVersion()}) from Go modules; ` +
      "the first build takes a while, later runs reuse it",
  );
  const started = performance.now();
  const tmp = `${path}.tmp-${Deno.pid}`;
  const ldflags = [
    "-s",
    "-w",
    `-X k8s.io/component-base/version.gitVersion=${version}`,
    `-X k8s.io/component-base/version.gitMajor=${major}`,
    `-X k8s.io/component-base/version.gitMinor=${minor}`,
    "-X k8s.io/component-base/version.gitTreeState=clean",
  ].join(" ");
  let child: Deno.ChildProcess;
  try {
    // -v names each package as it is compiled: the progress lines count them.
    child = new Deno.Command("go", {
      args: ["build", "-v", "-trimpath", "-ldflags", ldflags, "-o", tmp, "./cmd/k8s"],
      cwd: moduleDir,
      stdout: "inherit",
      stderr: "piped",
      signal: options.signal,
    }).spawn();
  } catch (err) {
    throw new Error(
      "cannot run `go`: the control plane is built from Go modules, so Go 1.26 or newer must be on PATH",
      { cause: err },
    );
  }
  const watcher = new BuildProgress({ clock: realClock, print: progress });
  const ticking = new AbortController();
  const ticker = watcher.run(ticking.signal);
  await forEachLine(child.stderr, (line) => watcher.line(line));
  const status = await child.status;
  ticking.abort();
  await ticker;
  if (!status.success) {
    await Deno.remove(tmp).catch(() => {});
    throw new Error(
      `go build of the control plane failed (exit ${status.code}); see the output above`,
    );
  }
  await Deno.rename(tmp, path);
  progress(`built ${path} in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  return path;
}
