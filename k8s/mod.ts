/**
 * vkubelet's Kubernetes API client: configuration (kubeconfig, in-cluster, exec plugins), one
 * throttled and retried `request()` primitive, typed helpers per kind, watches and informers.
 *
 * ```ts
 * import { KubeClient, isKubeNotFound } from "./k8s/mod.ts";
 *
 * const kube = await KubeClient.fromConfig({ kubeconfig: flags.kubeconfig });
 * const pods = kube.pods.informer({ fieldSelector: `spec.nodeName=${nodeName}` });
 * pods.on("add", (pod) => queue.add(pod));
 * const running = pods.run(signal);
 * await pods.synced;
 * ```
 * @module
 */
export * from "./client.ts";
export * from "./request.ts";
export * from "./errors.ts";
export * from "./micro_time.ts";
export * from "./rate_limiter.ts";
export * from "./retry.ts";
export * from "./config/mod.ts";
export * from "./resources/mod.ts";
export * from "./watch/mod.ts";
