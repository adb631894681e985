/**
 * Lifecycle hooks (`postStart`, `preStop`) on a remote provider's pods, decided once by the kit
 * for every remote provider by the {@link HookMode} it declares:
 *
 * - `backend`: the backend runs them itself (an interLink plugin translates them into its job):
 *   the pod reaches it unchanged.
 * - `exec`: the kit runs them through the provider's exec, as the kubelet does through the
 *   runtime: postStart once a container is seen running (again after each restart), preStop
 *   before the pod's run is removed, bounded by its grace period; a `sleep` action is waited out.
 *   A failure is a Warning event `FailedPostStartHook` or `FailedPreStopHook` with the kubelet's
 *   message (kubernetes/kubernetes pkg/kubelet/lifecycle/handlers.go,
 *   pkg/kubelet/kuberuntime/kuberuntime_container.go `startContainer`, `executePreStopHook`).
 *   An httpGet hook is refused: the kit does not assume a remote pod's IP is reachable from the
 *   node.
 * - `refuse` (the default): nothing can run a hook, so a pod with one is refused at create with
 *   an {@link InvalidInputError} naming the hook — never run without it.
 *
 * The kubelet kills a container whose postStart failed; a remote run's containers are started
 * and stopped together, so here the event is all (the README of each exec provider says so).
 * @module
 */
import type { Container, LifecycleHandler, Pod } from "kubernetes-types/core/v1.d.ts";
import type { Clock } from "../base/clock.ts";
import type { ContainerRef, ExecOptions } from "./contract.ts";
import { InvalidInputError } from "./errors.ts";
import type { PodEventSink } from "./events.ts";
import { isTerminalPhase } from "./pod_phase.ts";
import { podKeyOf } from "./pod_table.ts";

/** What a remote provider does with its pods' lifecycle hooks; see the module doc. */
export type HookMode = "backend" | "exec" | "refuse";

/** One hook of a pod: where it is, and what it runs. */
export interface PodHook {
  /** The container's name. */
  container: string;
  /** Which hook. */
  kind: "postStart" | "preStop";
  /** Its action. */
  handler: LifecycleHandler;
  /** Its field path, for messages: `spec.containers[app].lifecycle.postStart`. */
  field: string;
}

/** Every hook of the pod's containers (init containers, where sidecars have them, first). */
export function podHooks(pod: Pod): PodHook[] {
  const of = (list: Container[] | undefined, where: string) =>
    (list ?? []).flatMap((c) =>
      (["postStart", "preStop"] as const).flatMap((kind) => {
        const handler = c.lifecycle?.[kind];
        return handler
          ? [{ container: c.name, kind, handler, field: `${where}[${c.name}].lifecycle.${kind}` }]
          : [];
      })
    );
  return [
    ...of(pod.spec?.initContainers, "spec.initContainers"),
    ...of(pod.spec?.containers, "spec.containers"),
  ];
}

/**
 * Throws an {@link InvalidInputError} naming the first hook of `pod` that `mode` cannot run
 * (`why`: the provider's reason, for `refuse`); returns for a pod whose hooks will run.
 */
export function checkPodHooks(pod: Pod, mode: HookMode, why?: string): void {
  if (mode === "backend") return;
  for (const hook of podHooks(pod)) {
    const problem = mode === "refuse" ? refusedBecause(why) : execProblem(hook.handler);
    if (problem) throw new InvalidInputError(`${hook.field}: ${problem}`);
  }
}

function refusedBecause(why: string | undefined): string {
  return `this node's provider cannot run lifecycle hooks (${
    why ?? "its backend runs none and it has no exec"
  }); remove the hook, or schedule the pod on a node whose provider runs hooks`;
}

function execProblem(handler: LifecycleHandler): string | undefined {
  if (handler.exec?.command?.length || handler.sleep) return undefined;
  if (handler.httpGet) {
    return "an httpGet hook is not run on this node's provider: the pod's IP is not assumed reachable from the node; use an exec hook instead";
  }
  return "the hook has no action this node's provider can run (exec or sleep); give it an exec command";
}

/** What {@link ExecHooks} needs. */
export interface ExecHooksOptions {
  /** The provider's exec (its `runInContainer`). */
  exec: (ref: ContainerRef, options: ExecOptions) => Promise<number>;
  /** Sleep actions and the preStop bound go by it. */
  clock: Clock;
  /** Where a failed hook is recorded. */
  event: PodEventSink;
  /** The provider's signal: a hook running stops with it. */
  signal: AbortSignal;
}

/** The kubelet's cap on a hook's output kept for the message (pkg/kubelet/prober: 10 KiB). */
const OUTPUT_LIMIT = 10 * 1024;

/**
 * The `exec` mode's runner: {@link observe} each pod pushed (postStart for containers newly
 * running), {@link preStop} before a deletion. See the module doc.
 */
export class ExecHooks {
  readonly #o: ExecHooksOptions;
  /** Per pod uid, the container starts whose postStart was run (or was before we saw them). */
  readonly #started = new Map<string, Set<string>>();
  /** Pod uids whose postStart hooks this runner runs (created through this provider). */
  readonly #admitted = new Set<string>();
  /** Pod uids whose preStop hooks were run. */
  readonly #stopped = new Set<string>();
  readonly #running = new Set<Promise<void>>();

  /** A runner on the provider's exec. */
  constructor(options: ExecHooksOptions) {
    this.#o = options;
  }

  /**
   * Marks the containers of `pod` (with status) running now as started before this runner: a
   * run taken over from an earlier vkubelet had its postStart hooks run then.
   */
  adopted(pod: Pod): void {
    for (const start of this.#starts(pod)) this.#seen(pod).add(start.key);
  }

  /** From now on, `pod`'s containers get their postStart when seen running. */
  admit(pod: Pod): void {
    this.#admitted.add(pod.metadata?.uid ?? "");
  }

  /**
   * Runs postStart, in the background, for each container `pod`'s status shows newly running;
   * a pod not {@link admit}ted yet (adopted, its createPod not come) only has its starts noted.
   */
  observe(pod: Pod): void {
    const uid = pod.metadata?.uid ?? "";
    if (isTerminalPhase(pod.status?.phase)) {
      this.#started.delete(uid);
      this.#admitted.delete(uid);
      this.#stopped.delete(uid);
      return;
    }
    if (!this.#admitted.has(uid)) return this.adopted(pod);
    const hooks = podHooks(pod).filter((h) => h.kind === "postStart");
    for (const start of this.#starts(pod)) {
      const hook = hooks.find((h) => h.container === start.container);
      if (!hook || this.#seen(pod).has(start.key)) continue;
      this.#seen(pod).add(start.key);
      this.#track(
        this.#run(pod, hook, this.#o.signal).then((failure) => {
          if (failure) this.#o.event(pod, "Warning", "FailedPostStartHook", failure);
        }),
      );
    }
  }

  /**
   * Runs the preStop hooks of `pod`'s running containers (`running`: their names), together,
   * once per pod, within the deletion's grace period; a failure or overrun is an event.
   */
  async preStop(pod: Pod, running: string[]): Promise<void> {
    const uid = pod.metadata?.uid ?? "";
    if (this.#stopped.has(uid)) return;
    this.#stopped.add(uid);
    const graceS = pod.metadata?.deletionGracePeriodSeconds ??
      pod.spec?.terminationGracePeriodSeconds ?? 30;
    const bound = AbortSignal.any([this.#o.signal, AbortSignal.timeout(graceS * 1000)]);
    const hooks = podHooks(pod).filter((h) =>
      h.kind === "preStop" && running.includes(h.container)
    );
    await Promise.all(hooks.map(async (hook) => {
      const failure = await this.#run(pod, hook, bound);
      if (failure) this.#o.event(pod, "Warning", "FailedPreStopHook", failure);
    }));
  }

  /** Waits for the postStart hooks under way (they stop with the provider's signal). */
  async close(): Promise<void> {
    await Promise.all(this.#running);
  }

  #seen(pod: Pod): Set<string> {
    const uid = pod.metadata?.uid ?? "";
    let set = this.#started.get(uid);
    if (!set) this.#started.set(uid, set = new Set());
    return set;
  }

  /** Each running container of the status, keyed by its name, restart count and start. */
  #starts(pod: Pod): { container: string; key: string }[] {
    const status = pod.status;
    return [...status?.initContainerStatuses ?? [], ...status?.containerStatuses ?? []]
      .filter((c) => c.state?.running)
      .map((c) => ({
        container: c.name,
        key: `${c.name}/${c.restartCount}/${c.state?.running?.startedAt ?? ""}`,
      }));
  }

  #track(work: Promise<void>): void {
    this.#running.add(work);
    void work.finally(() => this.#running.delete(work));
  }

  /** Runs one hook; its failure message (the kubelet's), or undefined when it succeeded. */
  async #run(pod: Pod, hook: PodHook, signal: AbortSignal): Promise<string | undefined> {
    const where = `Container "${hook.container}" in Pod "${podKeyOf(pod)}"`;
    const { exec, sleep } = hook.handler;
    try {
      if (sleep) {
        await this.#o.clock.sleep(sleep.seconds * 1000, signal);
        return undefined;
      }
      const command = exec?.command ?? [];
      const output = new BoundedOutput();
      const code = await this.#o.exec({
        namespace: pod.metadata?.namespace ?? "",
        pod: pod.metadata?.name ?? "",
        container: hook.container,
      }, { command, io: { tty: false, stdout: output.stream(), stderr: output.stream() }, signal });
      if (code === 0) return undefined;
      return `Exec lifecycle hook (${
        JSON.stringify(command)
      }) for ${where} failed - error: command exited with ${code}, message: ${
        JSON.stringify(output.text())
      }`;
    } catch (err) {
      if (this.#o.signal.aborted) return undefined; // vkubelet is stopping: nothing to report
      const why = signal.aborted
        ? `did not complete within the grace period`
        : `failed - error: ${err instanceof Error ? err.message : String(err)}`;
      return `${hook.kind === "preStop" ? "PreStop" : "PostStart"} hook for ${where} ${why}`;
    }
  }
}

/** The first {@link OUTPUT_LIMIT} bytes written to its streams. */
class BoundedOutput {
  readonly #chunks: Uint8Array[] = [];
  #size = 0;

  stream(): WritableStream<Uint8Array> {
    return new WritableStream({
      write: (chunk) => {
        const room = OUTPUT_LIMIT - this.#size;
        if (room <= 0) return;
        const kept = chunk.subarray(0, room);
        this.#chunks.push(kept);
        this.#size += kept.length;
      },
    });
  }

  text(): string {
    const all = new Uint8Array(this.#size);
    let at = 0;
    for (const c of this.#chunks) all.set(c, at), at += c.length;
    return new TextDecoder().decode(all);
  }
}
