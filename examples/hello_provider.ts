/**
 * A minimal vkubelet provider, as a module outside vkubelet's own tree: every pod is "running"
 * at once (nothing is started anywhere) and each container's log is one greeting line, then one
 * line per ConfigMap the pod mounts, read through vkubelet's client (`deps.kube`). Run it:
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
import type { Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";
import {
  type CallOptions,
  type ContainerLogOptions,
  type ContainerRef,
  isKubeNotFound,
  type Provider,
  type ProviderDeps,
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

  notifyPods(callback: (pod: Pod) => void): void {
    this.#notify = callback;
  }

  async createPod(pod: Pod, options: CallOptions): Promise<void> {
    const now = new Date().toISOString();
    const running: Pod = { ...pod, status: this.#status(pod, { running: { startedAt: now } }) };
    const k = key(pod.metadata!.namespace!, pod.metadata!.name!);
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
    const k = key(pod.metadata!.namespace!, pod.metadata!.name!);
    const known = this.#pods.get(k);
    if (known) this.#pods.set(k, { ...pod, status: known.status });
    return Promise.resolve();
  }

  deletePod(pod: Pod, _options: CallOptions): Promise<void> {
    const k = key(pod.metadata!.namespace!, pod.metadata!.name!);
    const known = this.#pods.get(k);
    this.#pods.delete(k);
    this.#mounted.delete(k);
    if (known) {
      const now = new Date().toISOString();
      const terminated = { terminated: { exitCode: 0, reason: "Completed", finishedAt: now } };
      this.#notify({ ...known, status: this.#status(known, terminated, "Succeeded") });
    }
    return Promise.resolve();
  }

  getPod(namespace: string, name: string, _options: CallOptions): Promise<Pod | undefined> {
    const pod = this.#pods.get(key(namespace, name));
    return Promise.resolve(pod && structuredClone(pod));
  }

  listPods(_options: CallOptions): Promise<Pod[]> {
    return Promise.resolve([...this.#pods.values()].map((p) => structuredClone(p)));
  }

  getContainerLogs(
    container: ContainerRef,
    _options: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    const line =
      `${this.greeting} from ${container.namespace}/${container.pod}/${container.container}`;
    const mounted = this.#mounted.get(key(container.namespace, container.pod)) ?? [];
    const bytes = new TextEncoder().encode([line, ...mounted].map((l) => l + "\n").join(""));
    return Promise.resolve(
      new ReadableStream({
        start(controller) {
          controller.enqueue(bytes);
          controller.close();
        },
      }),
    );
  }

  #status(
    pod: Pod,
    state: NonNullable<PodStatus["containerStatuses"]>[number]["state"],
    phase = "Running",
  ): PodStatus {
    const ready = phase === "Running" ? "True" : "False";
    const now = new Date().toISOString();
    return {
      phase,
      hostIP: this.deps.internalIp,
      podIP: this.deps.internalIp,
      startTime: pod.status?.startTime ?? now,
      conditions: ["PodScheduled", "Initialized", "ContainersReady", "Ready"].map((type) => ({
        type,
        status: type === "PodScheduled" || type === "Initialized" ? "True" : ready,
        lastTransitionTime: now,
      })),
      containerStatuses: (pod.spec?.containers ?? []).map((c) => ({
        name: c.name,
        image: c.image ?? "",
        imageID: `hello://${c.image ?? ""}`,
        ready: phase === "Running",
        restartCount: 0,
        started: phase === "Running",
        state,
      })),
    };
  }
}

function key(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}
