/**
 * The kubelet API's reads of forwarded pods, answered from B: logs, exec, attach and
 * port-forward through B's apiserver (`./streaming.ts`), stats and `/metrics/resource` from B's
 * metrics API (`../node/stats.ts`). Pods are found by their upstream namespace and name.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { KubeClient } from "../../../k8s/mod.ts";
import {
  type AttachOptions,
  type CallOptions,
  type Clock,
  type ContainerLogOptions,
  type ContainerRef,
  type ExecOptions,
  NotFoundError,
  type PodRef,
  type PortForwardOptions,
  type StatsSummary,
} from "../../../provider/mod.ts";
import { downstreamError } from "../errors.ts";
import { upstreamOf } from "../names.ts";
import { type CpuCounters, downstreamMetricsText, downstreamStatsSummary } from "../node/stats.ts";
import { attachDownstream, execDownstream, portForwardDownstream } from "./streaming.ts";

/** What {@link DownstreamAccess} needs. */
export interface DownstreamAccessDeps {
  downstream: KubeClient;
  nodeName: string;
  /** B's namespace of the forwarded pods; `undefined`: every namespace. */
  namespace: string | undefined;
  clock: Clock;
  /** Ends follow streams when vkubelet stops. */
  signal: AbortSignal;
  /** This node's downstream pods. */
  pods: () => Pod[];
  /** The downstream pod of the upstream pod `namespace/name`, if B has it. */
  find: (namespace: string, name: string) => Pod | undefined;
}

/** Logs, streams and stats of forwarded pods, from B. */
export class DownstreamAccess {
  readonly #deps: DownstreamAccessDeps;
  readonly #cpuCounters: CpuCounters = new Map();

  constructor(deps: DownstreamAccessDeps) {
    this.#deps = deps;
  }

  /** A container's log from B's `pods/log`. */
  async logs(
    container: ContainerRef,
    options: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    const b = this.#deps.downstream;
    const { namespace, pod: name } = this.#ref(container.namespace, container.pod);
    try {
      return await b.request({
        path: b.pods.path(namespace, name, "log"),
        query: {
          container: container.container,
          follow: options.follow || undefined,
          tailLines: options.tailLines,
          timestamps: options.timestamps || undefined,
          sinceSeconds: options.sinceSeconds,
          sinceTime: options.sinceTime?.toISOString(),
          limitBytes: options.limitBytes,
          previous: options.previous || undefined,
        },
        stream: true,
        signal: AbortSignal.any([this.#deps.signal, ...(options.signal ? [options.signal] : [])]),
      });
    } catch (err) {
      throw downstreamError(`reading the log of ${container.namespace}/${container.pod}`, err);
    }
  }

  /** `kubectl exec` through B's apiserver. */
  exec(container: ContainerRef, options: ExecOptions): Promise<number> {
    return execDownstream(this.#deps.downstream, this.#target(container), options);
  }

  /** `kubectl attach` through B's apiserver. */
  attach(container: ContainerRef, options: AttachOptions): Promise<void> {
    return attachDownstream(this.#deps.downstream, this.#target(container), options);
  }

  /** `kubectl port-forward` through B's apiserver. */
  portForward(pod: PodRef, options: PortForwardOptions): Promise<void> {
    const ref = this.#ref(pod.namespace, pod.name);
    return portForwardDownstream(this.#deps.downstream, ref, options);
  }

  /** `/stats/summary` of the forwarded pods. */
  statsSummary(options: CallOptions): Promise<StatsSummary> {
    return downstreamStatsSummary(this.#deps.downstream, this.#statsOptions(options));
  }

  /** `/metrics/resource` of the forwarded pods. */
  metrics(options: CallOptions): Promise<string> {
    return downstreamMetricsText(this.#deps.downstream, this.#statsOptions(options));
  }

  #statsOptions(options: CallOptions) {
    return {
      nodeName: this.#deps.nodeName,
      namespace: this.#deps.namespace,
      pods: this.#deps.pods(),
      toUpstream: (p: Pod) => upstreamOf(p.metadata),
      counters: this.#cpuCounters,
      nowMs: this.#deps.clock.now(),
      signal: options.signal,
    };
  }

  #ref(namespace: string, pod: string): { namespace: string; pod: string } {
    const downstream = this.#deps.find(namespace, pod);
    if (!downstream) {
      throw new NotFoundError(`pod ${namespace}/${pod} does not run in the downstream cluster`);
    }
    return { namespace: downstream.metadata!.namespace!, pod: downstream.metadata!.name! };
  }

  #target(container: ContainerRef) {
    return { ...this.#ref(container.namespace, container.pod), container: container.container };
  }
}
