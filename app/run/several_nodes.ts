/**
 * Serving several nodes from one process (`--nodes`): one kubelet API port listening on every
 * node's address, one watch of the virtual nodes under the heartbeat client, and a
 * {@link NodeSet} running every node's controllers. The clients and the providers come from the
 * common start-up (`./load.ts`). See docs/multinode.md for what is shared and why.
 * @module
 */
import type { Config } from "../config/config.ts";
import type { RunDeps } from "./mod.ts";
import { getLogger } from "../../base/log.ts";
import type { KubeClient } from "../../k8s/mod.ts";
import { nodeApiFromClient } from "../../core/node/mod.ts";
import { KubeletServer } from "../../core/kubelet_api/mod.ts";
import { fileCertificates, selfSignedCertificate } from "../../x509/mod.ts";
import { clientCa, reviewersFor } from "./kubelet_api.ts";
import { createStreamingHandler } from "../../core/kubelet_api/streaming/handler.ts";
import { observePodController, serveMetrics } from "../metrics_server.ts";
import { parseHostPort } from "../config/schema.ts";
import { cachedNodeReads, Gate } from "../heartbeat_api.ts";
import { type NodeEntry, NodeSet } from "../node_set.ts";
import { abortion, type ServeContext, withStartupTimeout } from "./parts.ts";

/** Node and lease calls in flight at once across all nodes. */
const HEARTBEAT_CONCURRENCY = 64;

/** Serves every node of `ctx.entries` until `ctx.deps.signal` aborts; see the module doc. */
export async function serveNodeSet(ctx: ServeContext): Promise<void> {
  const { config, deps, entries, loaded, metrics, loops, log } = ctx;
  const { kube, heartbeat, reviews, providers, recorders } = loaded;
  const { signal, clock } = deps;
  const auth = await authFor(config, kube, reviews);
  const nodes = heartbeat.nodes.informer({
    labelSelector: "type=virtual-kubelet",
    clock,
    name: "virtual nodes",
  });
  loops.add("node watch", nodes.run(signal));
  const set = new NodeSet(config, {
    kube,
    heartbeat: cachedNodeReads(nodeApiFromClient(heartbeat), nodes),
    heartbeatSlots: new Gate(HEARTBEAT_CONCURRENCY),
    clock,
    metrics,
    tracer: deps.tracer,
    providers,
    recorders,
    apiBase: {
      clock,
      metrics,
      tracer: deps.tracer,
      auth,
      streaming: createStreamingHandler({
        log: getLogger(["vkubelet", "streaming"]),
        clock,
        streamIdleTimeoutMs: config.streamIdleTimeout,
        streamCreationTimeoutMs: config.streamCreationTimeout,
      }),
    },
  });
  deps.onNodeSet?.(set);
  const api = new KubeletServer({
    auth,
    log: getLogger(["vkubelet", "kubelet-api"]),
    port: config.port,
    hostnames: entries.map((e) => e.nodeIp),
    certificates: certificatesFor(config, entries, deps),
    nodeAt: (address) => set.apiDepsAt(address),
  });
  observePodController(metrics, set);
  if (config.metricsAddr) {
    const listener = await serveMetrics({
      address: parseHostPort(config.metricsAddr)!,
      metrics,
      health: set.health,
      log: getLogger(["vkubelet", "metrics"]),
    }, signal);
    loops.add("metrics listener", listener.done);
  }
  loops.add("kubelet API", api.run(signal));
  // A loop that fails while starting ends start-up too, instead of leaving it waiting.
  const starting = (async () => {
    await withStartupTimeout(config, clock, api.ready, "the kubelet API to listen");
    loops.add("nodes", set.run(signal));
    await withStartupTimeout(
      config,
      clock,
      set.ready,
      `${entries.length} nodes to be registered and their pod caches to sync`,
    );
  })();
  starting.catch(() => {}); // Its failure after a stop is not news.
  await Promise.race([starting, abortion(signal)]);
  if (signal.aborted) return;
  log.info("vkubelet is ready: {count} nodes", { count: entries.length });
  deps.onReady?.(providers.get(entries[0].name)!);
  await abortion(signal);
}

/** Authentication and authorization as one node has them (./kubelet_api.ts). */
async function authFor(config: Config, kube: KubeClient, reviews: KubeClient) {
  return {
    clientCaPem: await clientCa(config, kube, getLogger(["vkubelet", "kubelet-api"])),
    anonymous: config.anonymousAuth,
    ...reviewersFor(config, reviews),
  };
}

/** One serving certificate for every node: the files given, or self-signed for all addresses. */
function certificatesFor(config: Config, entries: NodeEntry[], deps: RunDeps) {
  const log = getLogger(["vkubelet", "kubelet-api"]);
  if (config.tlsCertFile) {
    return fileCertificates({
      certFile: config.tlsCertFile,
      keyFile: config.tlsPrivateKeyFile!,
      clock: deps.clock,
      log,
    });
  }
  return selfSignedCertificate({
    nodeName: entries[0].name,
    dnsNames: entries.map((e) => e.name),
    ipAddresses: entries.map((e) => e.nodeIp),
    clock: deps.clock,
    log,
  });
}
