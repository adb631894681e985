/**
 * Wires the metrics and the tracer into the parts `app/` builds: the Kubernetes client's
 * request hooks (`vkubelet_kube_api_requests_total` and client-go's `rest_client_*`) and the
 * pod controller's (`workqueue_*`, `kubelet_pod_start_duration_seconds`, pod spans).
 * @module
 */
import type { KubeClientOptions } from "../k8s/mod.ts";
import type { VkubeletMetrics } from "../core/metrics.ts";
import type { PodControllerDeps } from "../core/pods/mod.ts";
import type { Tracer } from "../core/tracing.ts";

/** The client options that feed the request metrics. */
export function kubeClientHooks(
  metrics: VkubeletMetrics,
): Pick<KubeClientOptions, "onResponse" | "onRequestDone"> {
  const { restClientRequests, restClientDuration } = metrics.standard;
  return {
    onResponse: ({ verb, method, host, code }) => {
      metrics.apiRequests.inc({ verb, code: String(code) });
      // client-go counts an attempt that got no answer as `<error>` (rest/request.go, sanitize).
      restClientRequests.inc({ code: code === 0 ? "<error>" : String(code), method, host });
    },
    onRequestDone: ({ method, host, seconds }) =>
      restClientDuration.observe({ verb: method, host }, seconds),
  };
}

/** The pod controller deps that feed the queue and pod-start metrics and the pod spans. */
export function podControllerHooks(
  metrics: VkubeletMetrics,
  tracer: Tracer | undefined,
): Pick<PodControllerDeps, "queueMetrics" | "onPodStarted" | "tracer"> {
  return {
    queueMetrics: (name) => metrics.standard.queue(name),
    onPodStarted: (seconds) => metrics.standard.podStartDuration.observe(seconds),
    tracer,
  };
}
