/**
 * Serving one node: its own informers and clock, the kubelet API with the serving certificate the
 * config asks for (files, a kubelet-serving CSR, or self-signed), the node side and the pods,
 * started in that order; under `--leader-elect`, as the terms of a warm standby
 * (`../leader_run.ts`).
 * @module
 */
import type { Config } from "../config/config.ts";
import { getLogger } from "../../base/log.ts";
import type { Provider } from "../../provider/mod.ts";
import type { KubeClient } from "../../k8s/mod.ts";
import type { VkubeletMetrics } from "../../core/metrics.ts";
import type { EventRecorder } from "../../core/pods/mod.ts";
import { type CertificateSource, sharedCertificates } from "../../x509/mod.ts";
import { wireNode } from "../wire_node.ts";
import { observePodController, serveMetrics } from "../metrics_server.ts";
import { parseHostPort } from "../config/schema.ts";
import { runLeaderElected, type WarmStandby } from "../leader_run.ts";
import { createKubeletApiServer, servingCsrSource } from "./kubelet_api.ts";
import { drain, Loops } from "./loops.ts";
import { abortion, type ServeContext, withStartupTimeout } from "./parts.ts";
import type { RunDeps } from "./mod.ts";

/** Serves the one node of `ctx.entries` until `ctx.deps.signal` aborts; see the module doc. */
export async function serveOneNode(ctx: ServeContext): Promise<void> {
  const { config, deps, loaded, metrics, fence, loops, log } = ctx;
  const { signal, clock } = deps;
  const provider = loaded.providers.get(config.nodeName)!;
  const internalIp = ctx.entries[0].nodeIp;
  // --rotate-server-certificates: the serving certificate is asked for now, once per process,
  // on the client leader election does not fence, so a standby has its own before it ever
  // takes over (issue 43).
  const serving = config.rotateServerCertificates
    ? sharedCertificates(
      servingCsrSource(config, { kube: loaded.reviews, clock, internalIp }),
      signal,
    )
    : undefined;
  if (serving) ctx.atExit.push(() => serving.done);
  const parts = {
    kube: loaded.kube,
    heartbeat: loaded.heartbeat,
    reviews: loaded.reviews,
    internalIp,
    metrics,
    certificates: serving,
    recorder: loaded.recorders.get(config.nodeName),
  };
  // ── Leader election (issue 21): a warm standby that runs the writers below (leadTerm)
  // only while it holds the lease; see app/leader_run.ts.
  if (fence) {
    await runLeaderElected(config, {
      signal,
      clock,
      kube: loaded.kube,
      provider,
      fence,
      metrics,
      onReady: () => deps.onReady?.(provider),
      lead: (termSignal, fenced, warm) =>
        leadTerm(config, { ...deps, signal: termSignal }, { ...parts, provider: fenced, warm }),
    });
    return;
  }
  // ── End of leader election.
  // A loop that fails while starting ends start-up too, instead of leaving it waiting.
  const starting = start(config, deps, { ...parts, provider, loops });
  starting.catch(() => {}); // Its failure after a stop is not news.
  await Promise.race([starting, abortion(signal)]);
  if (signal.aborted) return;
  log.info("vkubelet is ready");
  deps.onReady?.(provider);
  await abortion(signal);
}

interface Parts {
  kube: KubeClient;
  /** The Node's status and Lease go through it (see ./clients.ts). */
  heartbeat: KubeClient;
  /** The kubelet API's TokenReviews and SubjectAccessReviews. */
  reviews: KubeClient;
  provider: Provider;
  internalIp: string;
  loops: Loops;
  metrics: VkubeletMetrics;
  /** A standby's caches and provider health (`--leader-elect`); default their own. */
  warm?: WarmStandby;
  /** Filled with what to undo when the parts stop (a term's metrics collector). */
  cleanups?: (() => void)[];
  /** The serving certificate started at start-up, if it comes from a CSR. */
  certificates?: CertificateSource;
  /** The node's event recorder, shared with its provider (./load.ts). */
  recorder?: EventRecorder;
}

/** Starts the kubelet API, the node side and the pods, in that order, each awaited ready. */
async function start(config: Config, deps: RunDeps, parts: Parts): Promise<void> {
  const { kube, provider, internalIp, loops, metrics, warm } = parts;
  const { signal, clock, tracer } = deps;
  const { side, pods } = wireNode(config, {
    // Its own client, as the kubelet's heartbeat client: pod writes never delay a renewal.
    heartbeat: { client: parts.heartbeat },
    podApi: kube,
    provider,
    clock,
    metrics,
    internalIp,
    side: { health: warm?.health },
    pods: { caches: warm?.caches, recorder: parts.recorder },
    tracer,
  });
  const api = await createKubeletApiServer(config, {
    kube,
    reviews: parts.reviews,
    provider,
    clock,
    metrics,
    tracer,
    internalIp,
    port: config.port,
    podCache: () => pods.pods(),
    certificates: parts.certificates,
  });
  const unobserve = observePodController(metrics, pods);
  parts.cleanups?.push(unobserve);
  if (config.metricsAddr) {
    const listener = await serveMetrics({
      address: parseHostPort(config.metricsAddr)!,
      metrics,
      health: side.health,
      log: getLogger(["vkubelet", "metrics"]).with({ node: config.nodeName }),
    }, signal);
    loops.add("metrics listener", listener.done);
  }
  // The kubelet API first, so the apiserver can reach it once the node says where it is.
  loops.add("kubelet API", api.run(signal));
  loops.add("node", side.run(signal));
  await withStartupTimeout(config, clock, side.ready, "the node to be registered");
  loops.add("pods", pods.run(signal));
  await withStartupTimeout(config, clock, pods.ready, "the pod caches to sync");
}

/**
 * One term of a leader under `--leader-elect`: the writers as {@link start} starts them (the
 * metrics listener runs for the whole process instead), until `deps.signal` aborts or one of
 * them fails (then the term ends with that failure).
 */
async function leadTerm(
  config: Config,
  deps: RunDeps,
  parts: Omit<Parts, "loops">,
): Promise<void> {
  const term = new AbortController();
  const onAbort = () => term.abort(deps.signal.reason);
  deps.signal.addEventListener("abort", onAbort, { once: true });
  if (deps.signal.aborted) onAbort();
  const loops = new Loops(term, getLogger(["vkubelet"]).with({ node: config.nodeName }));
  const cleanups: (() => void)[] = [];
  try {
    await start({ ...config, metricsAddr: undefined }, { ...deps, signal: term.signal }, {
      ...parts,
      loops,
      cleanups,
    });
    await abortion(term.signal);
  } finally {
    term.abort();
    deps.signal.removeEventListener("abort", onAbort);
    await drain(loops.all, deps.drainTimeoutMs ?? 10_000, deps.clock);
    for (const cleanup of cleanups) cleanup();
  }
  if (loops.failure) throw loops.failure;
}
