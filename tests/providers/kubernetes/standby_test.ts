/**
 * `--leader-elect` with the kubernetes provider: a standby writes nothing to cluster B (issue 41,
 * item 9). B here is a loopback listener that records every request and answers reads with an
 * unschedulable pod of this node, so the provider has something it would fail and remove.
 * @module
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { getLogger } from "../../../base/log.ts";
import type { ProviderKubeClient, WriteFence } from "../../../provider/mod.ts";
import { createProvider } from "../../../providers/kubernetes/mod.ts";
import { markLabels, MARKS } from "../../../providers/kubernetes/names.ts";
import { FakeClock, flush } from "../../fakes/clock.ts";

const NODE = "vk-standby";

/** A pod in B that B's scheduler could not place, forwarded by {@link NODE}. */
const unschedulable: Pod = {
  metadata: {
    name: "web",
    namespace: "offload",
    uid: "b-uid",
    resourceVersion: "5",
    labels: { ...markLabels(NODE, "shop", "a-uid") },
    annotations: { [MARKS.name]: "web" },
  },
  spec: { containers: [{ name: "main", image: "nginx" }] },
  status: {
    phase: "Pending",
    conditions: [{
      type: "PodScheduled",
      status: "False",
      reason: "Unschedulable",
      message: "0/3 nodes are available",
      lastTransitionTime: "2025-01-01T00:00:00Z",
    }],
  },
};

/** Cluster B as far as this test needs it: lists, endless watches, and a record of writes. */
function recordingCluster() {
  const writes: string[] = [];
  const watches = new Set<ReadableStreamDefaultController>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const url = new URL(req.url);
    if (req.method !== "GET") {
      writes.push(`${req.method} ${url.pathname}`);
      return Response.json({});
    }
    if (url.searchParams.get("watch") === "true") {
      const body = new ReadableStream({
        start: (controller) => void watches.add(controller),
        cancel: () => {},
      });
      return new Response(body, { headers: { "content-type": "application/json" } });
    }
    const items = url.pathname.endsWith("/pods") ? [unschedulable] : [];
    return Response.json({ kind: "List", metadata: { resourceVersion: "10" }, items });
  });
  const close = async () => {
    for (const watch of watches) watch.close();
    await server.shutdown();
  };
  return { writes, close, url: `http://127.0.0.1:${server.addr.port}` };
}

Deno.test("a standby's kubernetes provider writes nothing to cluster B", async () => {
  const b = recordingCluster();
  const dir = await Deno.makeTempDir();
  const kubeconfig = `${dir}/b.yaml`;
  await Deno.writeTextFile(
    kubeconfig,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "b", cluster: { server: b.url } }],
      users: [{ name: "b", user: {} }],
      contexts: [{ name: "b", context: { cluster: "b", user: "b" } }],
      "current-context": "b",
    }),
  );
  const clock = new FakeClock();
  const stop = new AbortController();
  let leading = false;
  const fence: WriteFence = {
    get open() {
      return leading;
    },
    check(what) {
      if (!leading) throw new Error(`${what} refused: not the leader`);
    },
    guardRequest(request) {
      if (request.method !== "GET") this.check(`${request.method} ${request.path}`);
    },
  };
  const provider = await createProvider({
    kubeconfig,
    namespace: "offload",
    unschedulableTimeout: "10s",
  }, {
    nodeName: NODE,
    log: getLogger(["vkubelet", "test"]),
    clock,
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal: stop.signal,
    kube: {} as ProviderKubeClient,
    fence,
  });
  try {
    provider.standby();
    await provider.listPods({ signal: stop.signal }); // B's pods are listed: the standby is warm
    for (let i = 0; i < 30; i++) await clock.advance(1_000);
    await flush();
    assert.deepEqual(b.writes, [], "a standby sent writes to B");
    // Leading, the same pod is failed upstream and removed from B.
    leading = true;
    provider.resume([]);
    for (let i = 0; i < 3; i++) await clock.advance(1_000);
    for (let i = 0; i < 20 && b.writes.length === 0; i++) await flush();
    assert.deepEqual(b.writes, ["DELETE /api/v1/namespaces/offload/pods/web"]);
  } finally {
    stop.abort();
    await provider.close();
    await b.close();
    await Deno.remove(dir, { recursive: true });
  }
});
