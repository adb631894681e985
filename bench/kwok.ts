/**
 * KWOK (sigs.k8s.io/kwok), the other subject of `deno task bench --nodes N --kwok`: built from the
 * Go module proxy at a pinned release through the wrapper module in `bench/kwok/` (go.mod and
 * go.sum only; nothing patched), run with its default stages against the same kind of fresh
 * control plane, managing the nodes that carry its annotation. KWOK keeps nodes Ready, renews
 * their Leases and moves pods to Running, but serves no kubelet API (no logs, exec or stats).
 * @module
 */
import type { Node } from "kubernetes-types/core/v1.d.ts";
import { cacheDir } from "../tests/cluster/build.ts";

/** The pinned release; the newest the module proxy served when this bench was written. */
export const KWOK_VERSION = "v0.8.0";
const KWOK_PACKAGE = "sigs.k8s.io/kwok/cmd/kwok";
const wrapperDir = new URL("./kwok/", import.meta.url).pathname;
const decoder = new TextDecoder();

/** The annotation KWOK's `--manage-nodes-with-annotation-selector` picks nodes by. */
const MANAGED = { key: "kwok.x-k8s.io/node", value: "fake" };

/** Returns the path of the KWOK binary, building it first when it is not cached. */
export async function ensureKwok(progress: (line: string) => void): Promise<string> {
  const binary = `${cacheDir}/bench/kwok/kwok-${KWOK_VERSION}`;
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

/** The command line of KWOK for `kubeconfig`: its default stages, only our annotated nodes. */
export function kwokArgs(kubeconfig: string): string[] {
  return [
    `--kubeconfig=${kubeconfig}`,
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
