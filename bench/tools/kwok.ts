/**
 * KWOK (sigs.k8s.io/kwok), the other subject of `deno task bench --nodes N --subjects vkubelet,kwok`: built from the
 * Go module proxy at a pinned release through the wrapper module in `bench/tools/kwok/` (go.mod and
 * go.sum only; nothing patched), run against the same kind of fresh control plane, managing the
 * nodes that carry its annotation, with the stages kwokctl uses by default
 * (`kustomize/stage/fast` of the module: node-initialize, node-heartbeat-with-lease, and the fast
 * pod stages), read from the downloaded module at run time. The KWOK binary itself ships none:
 * without a stage config it exits with "no stages found". KWOK keeps nodes Ready, renews
 * their Leases and moves pods to Running, but serves no kubelet API (no logs, exec or stats).
 * @module
 */
import type { Node } from "kubernetes-types/core/v1.d.ts";
import { cacheDir } from "../../tools/cluster/build.ts";

/** The pinned release; the newest the module proxy served when this bench was written. */
export const KWOK_VERSION = "v0.8.0";
const KWOK_PACKAGE = "sigs.k8s.io/kwok/cmd/kwok";
const wrapperDir = new URL("./kwok/", import.meta.url).pathname;
const decoder = new TextDecoder();

/** The annotation KWOK's `--manage-nodes-with-annotation-selector` picks nodes by. */
const MANAGED = { key: "kwok.x-k8s.io/node", value: "fake" };

/** Returns the path of the KWOK binary, building it first when it is not cached. */
export async function ensureKwok(progress: (line: string) => void): Promise<string> {
  const binary = `${cacheDir}/bench/tools/kwok/kwok-${KWOK_VERSION}`;
  try {
    await Deno.stat(binary);
    return binary;
  } catch {
    // Not built yet.
  }
  progress(`building KWOK: ${KWOK_PACKAGE}@${KWOK_VERSION}`);
  const started = performance.now();
  await Deno.mkdir(`${cacheDir}/bench/kwok`, { recursive: true });
  const tmp = `${binary}.tmp-${Deno.pid}`;
  const out = await new Deno.Command("go", {
    args: ["build", "-trimpath", "-ldflags", "-s -w", "-o", tmp, KWOK_PACKAGE],
    cwd: wrapperDir,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(`building KWOK failed:\n${decoder.decode(out.stderr)}`);
  await Deno.rename(tmp, binary);
  progress(`built KWOK in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  return binary;
}

/** The stage files of `kustomize/stage/fast`, the set kwokctl uses by default. */
const DEFAULT_STAGES = [
  "node/fast/node-initialize.yaml",
  "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
  "pod/fast/pod-ready.yaml",
  "pod/fast/pod-complete.yaml",
  "pod/fast/pod-delete.yaml",
];

/** Writes KWOK's default stages into one config file at `path`. */
export async function writeKwokStages(path: string): Promise<void> {
  // `go mod download` fetches the module when the cache lacks it (a fresh machine, before the
  // build) and names its directory; `go list -m` would print an empty one.
  const out = await new Deno.Command("go", {
    args: ["mod", "download", "-json", "sigs.k8s.io/kwok"],
    cwd: wrapperDir,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const module = out.success ? JSON.parse(decoder.decode(out.stdout)) as { Dir?: string } : {};
  if (!module.Dir) {
    throw new Error(
      `go mod download sigs.k8s.io/kwok gave no module directory:\n${
        decoder.decode(out.stderr) || decoder.decode(out.stdout)
      }`,
    );
  }
  const dir = `${module.Dir}/kustomize/stage`;
  const docs = await Promise.all(DEFAULT_STAGES.map((f) => Deno.readTextFile(`${dir}/${f}`)));
  await Deno.writeTextFile(path, docs.map((d) => d.trim()).join("\n---\n") + "\n");
}

/** The command line of KWOK for `kubeconfig`: the stages in `config`, only our annotated nodes. */
export function kwokArgs(kubeconfig: string, config: string): string[] {
  return [
    `--kubeconfig=${kubeconfig}`,
    `--config=${config}`,
    "--manage-all-nodes=false",
    `--manage-nodes-with-annotation-selector=${MANAGED.key}=${MANAGED.value}`,
    "--node-lease-duration-seconds=40",
    // No kubelet API: KWOK would serve a fake one only with --server-address.
  ];
}

/** A Node for KWOK to manage, with the same capacity the mock nodes report. */
export function kwokNode(name: string, capacity: Record<string, string>): Node {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name,
      annotations: { [MANAGED.key]: MANAGED.value, "node.alpha.kubernetes.io/ttl": "0" },
      labels: {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        type: "kwok",
      },
    },
    spec: {
      taints: [{ key: "virtual-kubelet.io/provider", value: "kwok", effect: "NoSchedule" }],
    },
    status: { allocatable: capacity, capacity },
  };
}
