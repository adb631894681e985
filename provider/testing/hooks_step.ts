/**
 * The suite's lifecycle-hook rule: a provider that declares what hooks do on it (a remote
 * provider's `hookMode`, ../lifecycle_hooks.ts) does that. The kit runs `exec` hooks through the
 * provider's own `runInContainer`, so the step records that method's calls on the instance under
 * test (and puts it back after).
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { ContainerRef, ExecOptions, Provider } from "../contract.ts";
import { isInvalidInput } from "../errors.ts";
import type { HookMode } from "../lifecycle_hooks.ts";
import { podKeyOf } from "../pod_table.ts";
import {
  ConformanceError,
  deleting,
  eventually,
  removePod,
  type Rule,
  type Session,
  within,
} from "./_session.ts";

/** The postStart hook the rule's pod has. */
export const POST_START = ["/bin/sh", "-c", "echo started > /tmp/vk-conformance-post-start"];
/** The preStop hook the rule's pod has. */
export const PRE_STOP = ["/bin/sh", "-c", "echo stopping > /tmp/vk-conformance-pre-stop"];

/** The hook mode `provider` declares, if it declares one. */
export function declaredHookMode(provider: Provider): HookMode | undefined {
  const mode = (provider as { hookMode?: unknown }).hookMode;
  return mode === "backend" || mode === "exec" || mode === "refuse" ? mode : undefined;
}

/** `hooks`: refused at create, left to the backend, or run through exec, as declared. */
export async function hooksStep(s: Session, rule: Rule, pod: Pod, mode: HookMode): Promise<void> {
  const main = pod.spec!.containers[0];
  main.lifecycle = {
    postStart: { exec: { command: POST_START } },
    preStop: { exec: { command: PRE_STOP } },
  };
  const calls: string[] = [];
  const restore = recordExec(s.main.provider, calls);
  try {
    if (mode === "refuse") {
      return await refused(s, rule, pod, `spec.containers[${main.name}].lifecycle.`);
    }
    if (mode === "exec") {
      const httpGet = structuredClone(pod);
      httpGet.metadata = {
        ...httpGet.metadata,
        name: `${pod.metadata!.name}-http`,
        uid: crypto.randomUUID(),
      };
      httpGet.spec!.containers[0].lifecycle = { postStart: { httpGet: { port: 8080, path: "/" } } };
      await refused(s, rule, httpGet, `spec.containers[${main.name}].lifecycle.postStart`);
    }
    await runs(s, rule, pod, mode, calls);
  } finally {
    restore();
    await removePod(s.main, pod, s.timeoutMs);
  }
}

/** Creates `pod`, expects the refusal naming `field`, and that the pod is not kept. */
async function refused(s: Session, rule: Rule, pod: Pod, field: string): Promise<void> {
  const { provider } = s.main;
  const err = await within(
    rule,
    `createPod(${podKeyOf(pod)})`,
    s.timeoutMs,
    (signal) => provider.createPod(structuredClone(pod), { signal }),
  ).then(() => undefined, (e: unknown) => e);
  if (err instanceof ConformanceError) throw err;
  if (!isInvalidInput(err)) {
    throw new ConformanceError(
      rule,
      `createPod of a pod whose hook the provider cannot run ${
        err ? `failed with ${String(err)}` : "succeeded"
      }, not with an InvalidInputError`,
    );
  }
  if (!err.message.includes(field)) {
    throw new ConformanceError(rule, `the refusal "${err.message}" does not name ${field}`);
  }
  const got = await provider.getPod(pod.metadata!.namespace!, pod.metadata!.name!, {});
  if (got?.metadata?.uid === pod.metadata?.uid) {
    throw new ConformanceError(rule, `the refused pod ${podKeyOf(pod)} is in getPod`);
  }
}

/** `backend` and `exec`: the pod runs; exec's hooks go through runInContainer, backend's never. */
async function runs(s: Session, rule: Rule, pod: Pod, mode: HookMode, calls: string[]) {
  const { provider } = s.main;
  const [ns, name] = [pod.metadata!.namespace!, pod.metadata!.name!];
  const container = pod.spec!.containers[0].name;
  await within(
    rule,
    `createPod(${podKeyOf(pod)})`,
    s.timeoutMs,
    (signal) => provider.createPod(structuredClone(pod), { signal }),
  );
  await eventually(
    rule,
    `${podKeyOf(pod)} with hooks to be Running`,
    s.timeoutMs,
    async () => (await provider.getPod(ns, name, {}))?.status?.phase === "Running",
  );
  const postStart = `${container}: ${POST_START.join(" ")}`;
  const preStop = `${container}: ${PRE_STOP.join(" ")}`;
  if (mode === "exec") {
    await eventually(
      rule,
      `the postStart hook run through runInContainer (calls: ${JSON.stringify(calls)})`,
      s.timeoutMs,
      () => calls.includes(postStart),
    );
  }
  const gone = deleting(pod, s.main.deps.clock.now());
  await within(
    rule,
    `deletePod(${podKeyOf(pod)})`,
    s.timeoutMs,
    (signal) => provider.deletePod(gone, { signal }),
  );
  const expected = mode === "exec" ? [postStart, preStop] : [];
  if (JSON.stringify(calls) !== JSON.stringify(expected)) {
    throw new ConformanceError(
      rule,
      `declared hooks: "${mode}", so runInContainer is called ${
        mode === "exec"
          ? "with postStart once Running and preStop before deletePod returns"
          : "for no hook"
      }; the calls were ${JSON.stringify(calls)}`,
    );
  }
}

/** Records each `runInContainer` call of `provider` in `calls`; the function returned undoes it. */
function recordExec(provider: Provider, calls: string[]): () => void {
  const own = Object.getOwnPropertyDescriptor(provider, "runInContainer");
  const exec = provider.runInContainer;
  if (!exec) return () => {};
  provider.runInContainer = (ref: ContainerRef, options: ExecOptions) => {
    calls.push(`${ref.container}: ${options.command.join(" ")}`);
    return exec.call(provider, ref, options);
  };
  return () => {
    if (own) Object.defineProperty(provider, "runInContainer", own);
    else delete provider.runInContainer;
  };
}
