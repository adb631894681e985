/**
 * The floor: the least a kubelet has to do for the bench's scenarios, with no provider, queue or
 * cache, so its times are the limit this machine's apiserver sets. It registers a Ready node,
 * renews its Lease every 10 s, watches the pods bound to it, writes a Running status for each
 * new pod (one merge patch) and, once a pod has a deletion timestamp, deletes it with grace 0
 * (one DELETE). With a backend (`aci`, `slurm`, `zun`) it first runs the pod there and waits until the
 * backend says it runs, and removes it there before the DELETE. Run as its own process by the
 * bench:
 *
 *   deno run -A bench/tools/floor.ts CONFIG_JSON
 *
 * It prints `ready` once the node exists and `reconciled N` after its first full pass.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { Kube, KubeError } from "./kube.ts";
import { aciFloorBackend, type AciFloorConfig } from "./floor_aci.ts";
import { slurmFloorBackend, type SlurmFloorConfig } from "./floor_slurm.ts";
import { zunFloorBackend, type ZunFloorConfig } from "./floor_zun.ts";

/** What the bench hands the floor. */
export interface FloorConfig {
  server: string;
  ca: string;
  cert: string;
  key: string;
  nodeName: string;
  capacity: Record<string, string>;
  /** Status writes and deletes in flight at once. */
  concurrency: number;
  /**
   * Run each pod in a backend too, as a provider's kubelet must before it reports Running and
   * after it is told to delete (./floor_aci.ts): the floor of a provider's bench.
   */
  aci?: AciFloorConfig;
  /** Run each pod as a SLURM job too (./floor_slurm.ts). */
  slurm?: SlurmFloorConfig;
  /** Run each pod as a Zun capsule too (./floor_zun.ts). */
  zun?: ZunFloorConfig;
}

/** The least a provider's kubelet asks of its backend for one pod. */
export interface FloorBackend {
  /** Runs the pod; resolves once the backend reports it running. */
  run(pod: Pod): Promise<void>;
  /** Removes what runs the pod; resolves once it is gone. */
  remove(pod: Pod): Promise<void>;
}

const say = (line: string) => Deno.stdout.writeSync(new TextEncoder().encode(line + "\n"));

function runningStatus(pod: Pod, now: string) {
  return {
    status: {
      phase: "Running",
      hostIP: "127.0.0.1",
      podIP: "127.0.0.1",
      startTime: now,
      conditions: ["PodScheduled", "Initialized", "ContainersReady", "Ready"].map((type) => ({
        type,
        status: "True",
        lastTransitionTime: now,
      })),
      containerStatuses: (pod.spec?.containers ?? []).map((c) => ({
        name: c.name,
        image: c.image ?? "",
        imageID: "",
        ready: true,
        started: true,
        restartCount: 0,
        state: { running: { startedAt: now } },
      })),
    },
  };
}

/** A tiny bounded executor: at most `limit` tasks run; the rest wait in FIFO order. */
class Limiter {
  #active = 0;
  #waiting: (() => void)[] = [];
  constructor(readonly limit: number) {}
  async run(task: () => Promise<void>): Promise<void> {
    if (this.#active >= this.limit) await new Promise<void>((r) => this.#waiting.push(r));
    this.#active++;
    try {
      await task();
    } finally {
      this.#active--;
      this.#waiting.shift()?.();
    }
  }
}

async function registerNode(kube: Kube, config: FloorConfig): Promise<string> {
  const now = new Date().toISOString();
  const node = {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: config.nodeName, labels: { "kubernetes.io/hostname": config.nodeName } },
    spec: {},
  };
  let created: { metadata: { uid: string } };
  try {
    created = await kube.request("POST", "/api/v1/nodes", { body: node });
  } catch (err) {
    if (!(err instanceof KubeError && err.status === 409)) throw err;
    created = await kube.request("GET", `/api/v1/nodes/${config.nodeName}`);
  }
  await kube.request("PATCH", `/api/v1/nodes/${config.nodeName}/status`, {
    contentType: "application/merge-patch+json",
    body: {
      status: {
        capacity: config.capacity,
        allocatable: config.capacity,
        addresses: [{ type: "InternalIP", address: "127.0.0.1" }],
        conditions: [{
          type: "Ready",
          status: "True",
          reason: "FloorReady",
          message: "the bench floor",
          lastHeartbeatTime: now,
          lastTransitionTime: now,
        }],
      },
    },
  });
  return created.metadata.uid;
}

async function renewLease(kube: Kube, config: FloorConfig, nodeUid: string): Promise<void> {
  const path = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases`;
  const spec = {
    holderIdentity: config.nodeName,
    leaseDurationSeconds: 40,
    renewTime: new Date().toISOString().replace("Z", "000Z"),
  };
  try {
    await kube.request("PATCH", `${path}/${config.nodeName}`, {
      contentType: "application/merge-patch+json",
      body: { spec },
    });
  } catch (err) {
    if (!(err instanceof KubeError && err.status === 404)) throw err;
    await kube.request("POST", path, {
      body: {
        metadata: {
          name: config.nodeName,
          ownerReferences: [{
            apiVersion: "v1",
            kind: "Node",
            name: config.nodeName,
            uid: nodeUid,
          }],
        },
        spec,
      },
    });
  }
}

/** Runs the floor until SIGTERM. */
async function main(config: FloorConfig): Promise<void> {
  const kube = new Kube(config);
  const stop = new AbortController();
  Deno.addSignalListener("SIGTERM", () => stop.abort());
  const nodeUid = await registerNode(kube, config);
  await renewLease(kube, config, nodeUid);
  say("ready");
  const lease = setInterval(() => renewLease(kube, config, nodeUid).catch(() => {}), 10_000);
  const limiter = new Limiter(config.concurrency);
  const backend = config.aci
    ? aciFloorBackend(config.aci, limiter)
    : config.slurm
    ? slurmFloorBackend(config.slurm, limiter)
    : config.zun
    ? zunFloorBackend(config.zun, limiter)
    : undefined;
  const handled = new Map<string, "running" | "deleting">();
  const handle = (pod: Pod): Promise<void> | undefined => {
    const { namespace, name, uid, deletionTimestamp } = pod.metadata ?? {};
    const key = `${namespace}/${name}`;
    const path = `/api/v1/namespaces/${namespace}/pods/${name}`;
    if (deletionTimestamp) {
      if (handled.get(key) === "deleting") return;
      handled.set(key, "deleting");
      return (backend ? backend.remove(pod) : Promise.resolve()).then(() =>
        limiter.run(() =>
          kube.request("DELETE", path, {
            body: { gracePeriodSeconds: 0, preconditions: { uid } },
          }).then(() => {}, () => {})
        )
      );
    }
    if (pod.status?.phase === "Running" || handled.has(key)) return;
    handled.set(key, "running");
    return (backend ? backend.run(pod) : Promise.resolve()).then(
      () =>
        limiter.run(() =>
          kube.request("PATCH", `${path}/status`, {
            contentType: "application/merge-patch+json",
            body: runningStatus(pod, new Date().toISOString().replace(/\.\d+Z$/, "Z")),
          }).then(() => {}, () => {
            handled.delete(key);
          })
        ),
      (err: unknown) => {
        handled.delete(key);
        Deno.stderr.writeSync(new TextEncoder().encode(`floor: ${key}: ${err}\n`));
      },
    );
  };
  const selector = `fieldSelector=spec.nodeName%3D${config.nodeName}`;
  const list = await kube.request<{ items: Pod[]; metadata: { resourceVersion: string } }>(
    "GET",
    `/api/v1/pods?${selector}`,
  );
  await Promise.all(list.items.map(handle));
  say(`reconciled ${list.items.length}`);
  let rv = list.metadata.resourceVersion;
  const watchClient = Deno.createHttpClient({
    caCerts: [config.ca],
    cert: config.cert,
    key: config.key,
  });
  while (!stop.signal.aborted) {
    try {
      const path =
        `/api/v1/pods?watch=1&allowWatchBookmarks=true&${selector}&resourceVersion=${rv}`;
      const res = await fetch(config.server + path, { client: watchClient, signal: stop.signal });
      const lines = res.body!.pipeThrough(new TextDecoderStream());
      let buffer = "";
      for await (const chunk of lines) {
        buffer += chunk;
        let nl: number;
        while ((nl = buffer.indexOf("\n")) >= 0) {
          const event = JSON.parse(buffer.slice(0, nl));
          buffer = buffer.slice(nl + 1);
          if (event.type === "ERROR") throw new Error(JSON.stringify(event.object));
          rv = event.object.metadata?.resourceVersion ?? rv;
          if (event.type === "ADDED" || event.type === "MODIFIED") handle(event.object);
          if (event.type === "DELETED") {
            handled.delete(`${event.object.metadata.namespace}/${event.object.metadata.name}`);
          }
        }
      }
    } catch (err) {
      if (stop.signal.aborted) break;
      Deno.stderr.writeSync(new TextEncoder().encode(`floor: watch ended: ${err}\n`));
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  clearInterval(lease);
  watchClient.close();
  kube.close();
}

if (import.meta.main) {
  const raw = JSON.parse(Deno.args[0]) as FloorConfig;
  const [ca, cert, key] = await Promise.all(
    [raw.ca, raw.cert, raw.key].map((f) => Deno.readTextFile(f)),
  );
  await main({ ...raw, ca, cert, key });
  Deno.exit(0);
}
