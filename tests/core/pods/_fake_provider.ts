/**
 * A provider fake for the pod controller's unit tests: records every call, reports status
 * through notifyPods (or only through polling), and can fail or stop slowly on demand.
 * @module
 */
import type { Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";
import { NotFoundError, type Provider } from "../../../provider/mod.ts";

export interface FakeProviderOptions {
  /** Without it the provider has no notifyPods and the controller polls. */
  push?: boolean;
  now?: () => number;
}

const keyOf = (p: Pod) => `${p.metadata?.namespace}/${p.metadata?.name}`;

export class FakeProvider implements Provider {
  pods = new Map<string, Pod>();
  calls: { op: string; key: string; uid?: string }[] = [];
  /** Return an error to make createPod throw it. */
  createError?: (pod: Pod) => Error | undefined;
  /** When false, deletePod leaves containers running until {@link finishStop}. */
  stopImmediately = true;
  notifyPods?: (callback: (pod: Pod) => void) => () => void;
  /** Absent unless a test sets it: the controller then reports ephemeral containers waiting. */
  runEphemeralContainer?: (pod: Pod, name: string) => Promise<void>;
  #callbacks: ((pod: Pod) => void)[] = [];
  #ip = 10;
  #now: () => number;

  constructor(options: FakeProviderOptions = {}) {
    this.#now = options.now ?? (() => Date.UTC(2026, 0, 1));
    if (options.push ?? true) {
      this.notifyPods = (cb) => {
        this.#callbacks.push(cb);
        return () => void (this.#callbacks = this.#callbacks.filter((c) => c !== cb));
      };
    }
  }

  /** Status callbacks registered and not unsubscribed. */
  get subscribers(): number {
    return this.#callbacks.length;
  }

  ops(op: string): string[] {
    return this.calls.filter((c) => c.op === op).map((c) => c.key);
  }

  /** Puts a pod in the provider as if it had been created before a restart. */
  preload(pod: Pod): void {
    this.pods.set(keyOf(pod), { ...structuredClone(pod), status: this.#running(pod) });
  }

  #emit(pod: Pod): void {
    for (const cb of this.#callbacks) cb(structuredClone(pod));
  }

  #time(): string {
    return new Date(this.#now()).toISOString().slice(0, 19) + "Z";
  }

  #running(pod: Pod): PodStatus {
    const ip = `10.1.0.${this.#ip++}`;
    return {
      phase: "Running",
      podIP: ip,
      podIPs: [{ ip }],
      startTime: this.#time(),
      conditions: [{ type: "Ready", status: "True", lastTransitionTime: this.#time() }],
      containerStatuses: (pod.spec?.containers ?? []).map((c) => ({
        name: c.name,
        image: c.image ?? "",
        imageID: "",
        ready: true,
        restartCount: 0,
        state: { running: { startedAt: this.#time() } },
      })),
    };
  }

  createPod(pod: Pod): Promise<void> {
    this.calls.push({ op: "create", key: keyOf(pod), uid: pod.metadata?.uid });
    const err = this.createError?.(pod);
    if (err) return Promise.reject(err);
    const stored = { ...structuredClone(pod), status: this.#running(pod) };
    this.pods.set(keyOf(pod), stored);
    this.#emit(stored);
    return Promise.resolve();
  }

  updatePod(pod: Pod): Promise<void> {
    this.calls.push({ op: "update", key: keyOf(pod), uid: pod.metadata?.uid });
    const old = this.pods.get(keyOf(pod));
    if (!old) return Promise.reject(new NotFoundError("no such pod"));
    this.pods.set(keyOf(pod), { ...structuredClone(pod), status: old.status });
    return Promise.resolve();
  }

  deletePod(pod: Pod): Promise<void> {
    this.calls.push({ op: "delete", key: keyOf(pod), uid: pod.metadata?.uid });
    const old = this.pods.get(keyOf(pod));
    if (!old || old.metadata?.uid !== pod.metadata?.uid) {
      return Promise.reject(new NotFoundError("no such pod"));
    }
    if (this.stopImmediately) this.finishStop(keyOf(pod));
    return Promise.resolve();
  }

  /** The containers of a pod being deleted have stopped: terminal status, then gone. */
  finishStop(key: string): void {
    const pod = this.pods.get(key);
    if (!pod) return;
    const status: PodStatus = {
      ...pod.status,
      phase: "Succeeded",
      containerStatuses: (pod.status?.containerStatuses ?? []).map((s) => ({
        ...s,
        ready: false,
        state: { terminated: { exitCode: 0, reason: "Completed", finishedAt: this.#time() } },
      })),
    };
    this.pods.delete(key);
    this.#emit({ ...pod, status });
  }

  getPod(namespace: string, name: string): Promise<Pod | undefined> {
    const pod = this.pods.get(`${namespace}/${name}`);
    return Promise.resolve(pod ? structuredClone(pod) : undefined);
  }

  getPodStatus(namespace: string, name: string): Promise<PodStatus | undefined> {
    return Promise.resolve(structuredClone(this.pods.get(`${namespace}/${name}`)?.status));
  }

  listPods(): Promise<Pod[]> {
    this.calls.push({ op: "list", key: "" });
    return Promise.resolve([...this.pods.values()].map((p) => structuredClone(p)));
  }

  /** Changes a pod's status as the backend would, and reports it (if pushing). */
  setStatus(key: string, change: (status: PodStatus) => PodStatus): void {
    const old = this.pods.get(key)!;
    const pod = { ...old, status: change(structuredClone(old.status ?? {})) };
    this.pods.set(key, pod);
    this.#emit(pod);
  }
}
