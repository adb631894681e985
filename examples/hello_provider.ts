/**
 * A minimal vkubelet provider, as a module outside vkubelet's own tree: every pod is "running"
 * at once (nothing is started anywhere) and each container's log is one greeting line. It passes
 * the provider conformance suite (tests/ship/example_provider_conformance_test.ts). Run it:
 *
 * ```sh
 * deno task start --provider=./examples/hello_provider.ts --provider-config=greeting.yaml ...
 * ```
 *
 * `greeting.yaml` (optional): `greeting: hello from my provider`. The contract is
 * provider/mod.ts; only types are imported from it, so this file could live anywhere (a path or
 * an https URL given to `--provider`).
 * @module
 */
import type { Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";
import type {
  CallOptions,
  ContainerLogOptions,
  ContainerRef,
  Provider,
  ProviderDeps,
} from "../provider/mod.ts";

/** vkubelet calls this with the parsed `--provider-config` file and its dependencies. */
export function createProvider(config: unknown, deps: ProviderDeps): Provider {
  const greeting = (config as { greeting?: string } | undefined)?.greeting ?? "hello";
  return new HelloProvider(greeting, deps);
}

class HelloProvider implements Provider {
  readonly #pods = new Map<string, Pod>();
  #notify: (pod: Pod) => void = () => {};

  constructor(readonly greeting: string, readonly deps: ProviderDeps) {}

  notifyPods(callback: (pod: Pod) => void): void {
    this.#notify = callback;
  }

  createPod(pod: Pod, _options: CallOptions): Promise<void> {
    const known = this.#pods.get(key(pod.metadata!.namespace!, pod.metadata!.name!));
    if (known?.metadata?.uid === pod.metadata?.uid) return Promise.resolve(); // runs already
    const now = new Date().toISOString();
    const running: Pod = { ...pod, status: this.#status(pod, { running: { startedAt: now } }) };
    this.#pods.set(key(pod.metadata!.namespace!, pod.metadata!.name!), running);
    this.deps.log.info("running {pod}", {
      pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`,
    });
    this.#notify(structuredClone(running));
    return Promise.resolve();
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
    options: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    const pod = this.#pods.get(key(container.namespace, container.pod));
    if (!pod?.spec?.containers.some((c) => c.name === container.container)) {
      const what = `${container.namespace}/${container.pod}/${container.container}`;
      return Promise.reject(new NotFoundError(`container ${what} does not run here`));
    }
    // The options the kubelet honours (kubectl logs --tail, --limit-bytes, --timestamps).
    const stamp = options.timestamps ? `${pod.status?.startTime} ` : "";
    const lines = [
      `${stamp}${this.greeting} from ${container.namespace}/${container.pod}/${container.container}\n`,
    ];
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

/** vkubelet recognises provider errors by name, so this module needs no import of its own. */
class NotFoundError extends Error {
  override name = "NotFoundError";
}

function key(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}
