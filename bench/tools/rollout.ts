/**
 * The providers' benches' common measure: a Deployment of N pods placed on one node (a
 * `sleep 3600` container that tolerates the virtual node's taint), timed from `kubectl apply`
 * until every pod is Running, then from `kubectl delete` until every pod is gone and the backend
 * says nothing of it is left.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { TestCluster } from "../../tools/cluster/harness.ts";
import type { FloorConfig } from "./floor.ts";

/** What {@link timeRollout} needs. */
export interface RolloutOptions {
  /** kubectl in the bench's namespace. */
  kubectl: (args: string[], stdin?: string) => Promise<string>;
  nodeName: string;
  pods: number;
  /** The container's resource requests. */
  requests: Record<string, string>;
  /** The container's image (default `busybox`). */
  image?: string;
  /** What the backend still runs for the node (0 once all is gone). */
  left: () => number | Promise<number>;
  /** How often the pods are listed, in ms (default 1,000). */
  everyMs?: number;
  /** The Deployment's name (default `bench`). */
  name?: string;
  /** The pods' grace period on deletion, in seconds (default the API's, 30). */
  terminationGracePeriodSeconds?: number;
  /** Runs once all are Running, before the deletion (not timed). */
  afterUp?: () => Promise<void>;
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
          ...(o.terminationGracePeriodSeconds === undefined
            ? {}
            : { terminationGracePeriodSeconds: o.terminationGracePeriodSeconds }),
          containers: [{
            name: "main",
            image: o.image ?? "busybox",
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
  await o.afterUp?.();
  const deleting = performance.now();
  await o.kubectl(["delete", "deployment", name, "--wait=false"]);
  while ((await pods()).length > 0 || (await o.left()) > 0) {
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return { upMs, downMs: performance.now() - deleting };
}

/**
 * The floor kubelet (./floor.ts, with the backend `backend` names, and at most `concurrency`
 * writes in flight, 16 unless given) on node `nodeName` as its own process, with a node client
 * certificate; resolves once its node is registered.
 */
export async function startFloorKubelet(
  cluster: TestCluster,
  nodeName: string,
  backend: Pick<FloorConfig, "capacity" | "aci" | "slurm" | "zun"> & { concurrency?: number },
): Promise<{ stop(): Promise<void> }> {
  const cert = await cluster.issueClientCert(`system:node:${nodeName}`, ["system:nodes"]);
  const config = {
    server: cluster.server,
    ca: `${cluster.pkiDir}/ca.crt`,
    cert: cert.certFile,
    key: cert.keyFile,
    nodeName,
    concurrency: 16,
    ...backend,
  };
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("./floor.ts", import.meta.url).pathname, JSON.stringify(config)],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  while (!seen.includes("ready")) {
    const { value, done } = await lines.read();
    if (done) throw new Error("the floor kubelet exited before its node was registered");
    seen += value;
  }
  // Keep reading (and dropping) what it prints, so that its pipe never fills.
  (async () => {
    while (!(await lines.read()).done);
  })().catch(() => {});
  return {
    async stop() {
      child.kill("SIGTERM");
      await child.status;
    },
  };
}
