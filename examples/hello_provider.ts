/**
 * A minimal vkubelet provider, as a module outside vkubelet's own tree: every pod is "running"
 * at once (nothing is started anywhere) and each container's log is one greeting line, then one
 * line per ConfigMap the pod mounts, read through vkubelet's client (`deps.kube`). It passes
 * the provider conformance suite (tests/ship/example_provider_conformance_test.ts). Run it:
 *
 * ```sh
 * deno task start --provider=./examples/hello_provider.ts --provider-config=greeting.yaml ...
 * ```
 *
 * `greeting.yaml` (optional): `greeting: hello from my provider`. It imports only the provider
 * kit (provider/mod.ts, `@vkubelet/vkubelet/provider` from outside), so this file could live
 * anywhere (a path or an https URL given to `--provider`).
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  buildPodStatus,
  type CallOptions,
  type ContainerLogOptions,
  type ContainerRef,
  isKubeNotFound,
  NotFoundError,
  podKey,
  podKeyOf,
  type Provider,
  type ProviderDeps,
  terminalPodStatus,
} from "../provider/mod.ts";

/** vkubelet calls this with the parsed `--provider-config` file and its dependencies. */
export function createProvider(config: unknown, deps: ProviderDeps): Provider {
  const greeting = (config as { greeting?: string } | undefined)?.greeting ?? "hello";
  return new HelloProvider(greeting, deps);
}

class HelloProvider implements Provider {
  readonly #pods = new Map<string, Pod>();
  /** Lines about the pod's ConfigMaps, by pod key. */
  readonly #mounted = new Map<string, string[]>();
  #notify: (pod: Pod) => void = () => {};

  constructor(readonly greeting: string, readonly deps: ProviderDeps) {}

  notifyPods(callback: (pod: Pod) => void): () => void {
    this.#notify = callback;
    return () => {
      if (this.#notify === callback) this.#notify = () => {};
    };
  }

  async createPod(pod: Pod, options: CallOptions): Promise<void> {
    const known = this.#pods.get(podKeyOf(pod));
    if (known && known.metadata?.uid === pod.metadata?.uid) return; // runs already
    const running: Pod = { ...pod, status: this.#runningStatus(pod) };
    const k = podKeyOf(pod);
    this.#mounted.set(k, await this.#configMapLines(pod, options));
    this.#pods.set(k, running);
    this.deps.log.info("running {pod}", {
      pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`,
    });
    this.#notify(structuredClone(running));
  }

  /** `configMap <name>: <keys>` for each ConfigMap volume, read with the typed client. */
  async #configMapLines(pod: Pod, options: CallOptions): Promise<string[]> {
    const lines: string[] = [];
    for (const volume of pod.spec?.volumes ?? []) {
      const name = volume.configMap?.name;
      if (!name || !this.deps.kube) continue;
      try {
        const cm = await this.deps.kube.configMaps.get(pod.metadata!.namespace!, name, options);
        lines.push(`configMap ${name}: ${Object.keys(cm.data ?? {}).sort().join(", ")}`);
      } catch (err) {
        if (!isKubeNotFound(err)) throw err;
        lines.push(`configMap ${name}: not found`);
      }
    }
    return lines;
  }

  updatePod(pod: Pod, _options: CallOptions): Promise<void> {
    const k = podKeyOf(pod);
    const known = this.#pods.get(k);
    if (known) this.#pods.set(k, { ...pod, status: known.status });
    return Promise.resolve();
  }

  deletePod(pod: Pod, _options: CallOptions): Promise<void> {
    const k = podKeyOf(pod);
    const known = this.#pods.get(k);
    this.#pods.delete(k);
    this.#mounted.delete(k);
    if (known) {
      // Every container stopped on SIGTERM (exit 0): the kit words the final status.
      const status = terminalPodStatus(known, known.status, { nowMs: Date.now() });
      this.#notify({ ...known, status });
    }
    return Promise.resolve();
  }

  getPod(namespace: string, name: string, _options: CallOptions): Promise<Pod | undefined> {
    const pod = this.#pods.get(podKey(namespace, name));
    return Promise.resolve(pod && structuredClone(pod));
  }

  listPods(_options: CallOptions): Promise<Pod[]> {
    return Promise.resolve([...this.#pods.values()].map((p) => structuredClone(p)));
  }

  getContainerLogs(
    container: ContainerRef,
    options: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    const pod = this.#pods.get(podKey(container.namespace, container.pod));
    if (!pod?.spec?.containers.some((c) => c.name === container.container)) {
      const what = `${container.namespace}/${container.pod}/${container.container}`;
      return Promise.reject(new NotFoundError(`container ${what} does not run here`));
    }
    // The options the kubelet honours (kubectl logs --tail, --limit-bytes, --timestamps).
    const stamp = options.timestamps ? `${pod.status?.startTime} ` : "";
    const greeting =
      `${this.greeting} from ${container.namespace}/${container.pod}/${container.container}`;
    const mounted = this.#mounted.get(podKey(container.namespace, container.pod)) ?? [];
    const lines = [greeting, ...mounted].map((line) => `${stamp}${line}\n`);
    const kept = lines.slice(Math.max(lines.length - (options.tailLines ?? lines.length), 0));
    const bytes = new TextEncoder().encode(kept.join("")).subarray(0, options.limitBytes);
    return Promise.resolve(
      new ReadableStream({
        start(controller) {
          controller.enqueue(bytes);
          controller.close();
        },
      }),
    );
  }

  /** Every container running since now; phase and conditions come from the kit's builder. */
  #runningStatus(pod: Pod) {
    const nowMs = Date.now();
    const containers = Object.fromEntries(
      (pod.spec?.containers ?? []).map((
        c,
      ) => [c.name, { state: { running: { startedAtMs: nowMs } } }]),
    );
    return buildPodStatus(pod, {
      containers,
      nowMs,
      podIP: this.deps.internalIp,
      hostIP: this.deps.internalIp,
    });
  }
}
