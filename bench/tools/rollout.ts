/**
 * The providers' benches' common measure: a Deployment of N pods placed on one node (a
 * `sleep 3600` container that tolerates the virtual node's taint), timed from `kubectl apply`
 * until every pod is Running, then from `kubectl delete` until every pod is gone and the backend
 * says nothing of it is left.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";

/** What {@link timeRollout} needs. */
export interface RolloutOptions {
  /** kubectl in the bench's namespace. */
  kubectl: (args: string[], stdin?: string) => Promise<string>;
  nodeName: string;
  pods: number;
  /** The container's resource requests. */
  requests: Record<string, string>;
  /** What the backend still runs for the node (0 once all is gone). */
  left: () => number | Promise<number>;
  /** How often the pods are listed, in ms (default 1,000). */
  everyMs?: number;
  /** The Deployment's name (default `bench`). */
  name?: string;
}

/** Times to all Running and to all gone, in ms. */
export async function timeRollout(o: RolloutOptions): Promise<{ upMs: number; downMs: number }> {
  const name = o.name ?? "bench";
  const everyMs = o.everyMs ?? 1000;
  const pods =
    async () => (JSON.parse(await o.kubectl(["get", "pods", "-l", `app=${name}`, "-o", "json"]))
      .items as Pod[]);
  const deployment = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name },
    spec: {
      replicas: o.pods,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          nodeSelector: { "kubernetes.io/hostname": o.nodeName },
          tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          containers: [{
            name: "main",
            image: "busybox",
            command: ["sleep", "3600"],
            resources: { requests: o.requests },
          }],
        },
      },
    },
  };
  const started = performance.now();
  await o.kubectl(["apply", "-f", "-"], JSON.stringify(deployment));
  while ((await pods()).filter((p) => p.status?.phase === "Running").length < o.pods) {
    await new Promise((r) => setTimeout(r, everyMs));
  }
  const upMs = performance.now() - started;
  const deleting = performance.now();
  await o.kubectl(["delete", "deployment", name, "--wait=false"]);
  while ((await pods()).length > 0 || (await o.left()) > 0) {
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return { upMs, downMs: performance.now() - deleting };
}
