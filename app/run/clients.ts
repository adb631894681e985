/**
 * The three Kubernetes clients of a running vkubelet, each with a rate limiter of its own, as
 * the kubelet keeps them apart (kubernetes/kubernetes cmd/kubelet/app/server.go
 * `buildKubeletClientConfig`): the main one for pods, events and everything else; the heartbeat
 * one for the Node's status and Lease, without a limit (`heartbeatClientConfig.QPS =
 * float32(-1)`), so that nothing queued on the main one delays a renewal; and one for the
 * kubelet API's TokenReviews and SubjectAccessReviews, which callers of port 10250 cause and a
 * flood of made-up tokens must not turn into a wait for pod status writes. One process of many
 * nodes (`--nodes`) shares the three.
 * @module
 */
import type { Clock } from "../../base/clock.ts";
import { type ConnectionConfig, KubeClient } from "../../k8s/mod.ts";
import type { VkubeletMetrics } from "../../core/metrics.ts";
import { kubeClientHooks } from "../observe.ts";
import type { Config } from "../config/config.ts";

/** The clients; `close` closes all three. */
export interface Clients {
  /** Pods, events, the provider's calls. */
  kube: KubeClient;
  /** Node status and Lease, unlimited. */
  heartbeat: KubeClient;
  /** TokenReview and SubjectAccessReview, with a limiter of their own. */
  reviews: KubeClient;
  close(): void;
}

/** Optional hooks for every client. */
export interface ClientHooks {
  /** Checks each request before it is sent (the leadership fence of `--leader-elect`). */
  beforeSend?: (request: { method: string; path: string }) => void;
}

/** Builds the three clients on one connection config. */
export function createClients(
  connection: ConnectionConfig,
  config: Pick<Config, "kubeApiQps" | "kubeApiBurst" | "eventQps" | "eventBurst">,
  clock: Clock,
  metrics: VkubeletMetrics,
  hooks: ClientHooks = {},
): Clients {
  const { onResponse, onRequestDone } = kubeClientHooks(metrics);
  const kube = new KubeClient(connection, {
    qps: config.kubeApiQps,
    burst: config.kubeApiBurst,
    eventQps: config.eventQps,
    eventBurst: config.eventBurst,
    clock,
    onResponse,
    onRequestDone,
    beforeSend: hooks.beforeSend,
  });
  const heartbeat = new KubeClient(connection, {
    qps: 0,
    clock,
    onResponse,
    onRequestDone,
    beforeSend: hooks.beforeSend,
  });
  // Reviews write nothing, so the fence has nothing to guard there.
  const reviews = new KubeClient(connection, {
    qps: config.kubeApiQps,
    burst: config.kubeApiBurst,
    clock,
    onResponse,
    onRequestDone,
  });
  return {
    kube,
    heartbeat,
    reviews,
    close() {
      kube.close();
      heartbeat.close();
      reviews.close();
    },
  };
}
