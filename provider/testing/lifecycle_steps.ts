/**
 * The suite's pod-lifecycle rules: create, status push, create twice, update, this node's pods
 * only, restart reconcile and delete. Each takes the shared {@link Session} and its rule.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { podKeyOf } from "../pod_table.ts";
import {
  closeInstance,
  ConformanceError,
  containerIdentity,
  deleting,
  eventually,
  isTerminal,
  lastPushed,
  removePod,
  type Rule,
  runningContainers,
  type Session,
  statusSummary,
  within,
} from "./_session.ts";

/** Makes the suite's pod for a node; given by the runner. */
export type PodMaker = (name: string, nodeName: string) => Pod;

/** `create`: createPod, then getPod and listPods show the pod, Running. */
export async function createStep(s: Session, rule: Rule, pod: Pod): Promise<void> {
  const { provider } = s.main;
  await within(
    rule,
    `createPod(${podKeyOf(pod)})`,
    s.timeoutMs,
    (signal) => provider.createPod(structuredClone(pod), { signal }),
  );
  s.pod = pod;
  const [ns, name] = [pod.metadata!.namespace!, pod.metadata!.name!];
  const got = await eventually(
    rule,
    `getPod(${podKeyOf(pod)}) to show phase Running`,
    s.timeoutMs,
    async () => {
      const p = await provider.getPod(ns, name, {});
      return p?.status?.phase === "Running" && p;
    },
  );
  if (got.metadata?.uid !== pod.metadata?.uid) {
    throw new ConformanceError(rule, `getPod gave uid ${got.metadata?.uid}, not the pod's uid`);
  }
  const listed = await within(
    rule,
    "listPods",
    s.timeoutMs,
    (signal) => provider.listPods({ signal }),
  );
  const mine = listed.filter((p) => podKeyOf(p) === podKeyOf(pod));
  if (mine.length !== 1 || mine[0].metadata?.uid !== pod.metadata?.uid) {
    throw new ConformanceError(
      rule,
      `listPods has ${mine.length} entries for ${podKeyOf(pod)} with uid ${pod.metadata?.uid}`,
    );
  }
  s.running = true;
}

/** `status`: the last pushed status (or getPodStatus) agrees with getPod. */
export async function statusStep(s: Session, rule: Rule): Promise<void> {
  const { provider } = s.main;
  const pod = s.pod!;
  const [ns, name] = [pod.metadata!.namespace!, pod.metadata!.name!];
  if (!provider.notifyPods && !provider.getPodStatus) {
    throw new ConformanceError(rule, "the provider has neither notifyPods nor getPodStatus");
  }
  await eventually(
    rule,
    `the status of ${podKeyOf(pod)} to agree with getPod`,
    s.timeoutMs,
    async () => {
      const current = statusSummary((await provider.getPod(ns, name, {}))?.status);
      const reported = provider.notifyPods
        ? statusSummary(lastPushed(s.main, pod)?.status)
        : statusSummary(await provider.getPodStatus!(ns, name, {}));
      if (reported === current) return true;
      throw new Error(`getPod shows ${current}, the provider reported ${reported}`);
    },
  );
  if (provider.notifyPods && !s.main.pushed.some((p) => p.status?.phase === "Running")) {
    throw new ConformanceError(rule, `no Running status was pushed for ${podKeyOf(pod)}`);
  }
}

/** `create-twice`: a second createPod of the same pod leaves one instance, not restarted. */
export async function createTwiceStep(s: Session, rule: Rule): Promise<void> {
  const { provider } = s.main;
  const pod = s.pod!;
  const [ns, name] = [pod.metadata!.namespace!, pod.metadata!.name!];
  const before = containerIdentity((await provider.getPod(ns, name, {}))?.status);
  await within(
    rule,
    `the second createPod(${podKeyOf(pod)})`,
    s.timeoutMs,
    (signal) => provider.createPod(structuredClone(pod), { signal }),
  );
  // A provider that starts a second instance may do it in the background: give it a moment.
  await new Promise((r) => setTimeout(r, Math.min(500, s.timeoutMs / 10)));
  const listed = (await provider.listPods({})).filter((p) => podKeyOf(p) === podKeyOf(pod));
  if (listed.length !== 1) {
    throw new ConformanceError(rule, `listPods has ${listed.length} entries for ${podKeyOf(pod)}`);
  }
  const after = containerIdentity((await provider.getPod(ns, name, {}))?.status);
  if (after !== before) {
    throw new ConformanceError(rule, `containers changed from ${before} to ${after}`);
  }
}

/** `update`: new labels and an annotation reach getPod; containers keep running. */
export async function updateStep(s: Session, rule: Rule): Promise<void> {
  const { provider } = s.main;
  const pod = s.pod!;
  const [ns, name] = [pod.metadata!.namespace!, pod.metadata!.name!];
  const before = containerIdentity((await provider.getPod(ns, name, {}))?.status);
  const updated: Pod = structuredClone(pod);
  updated.metadata!.labels = { ...updated.metadata!.labels, "conformance.vkubelet.io/step": "2" };
  updated.metadata!.annotations = {
    ...updated.metadata!.annotations,
    "conformance.vkubelet.io/note": "updated by the conformance suite",
  };
  await within(
    rule,
    `updatePod(${podKeyOf(pod)})`,
    s.timeoutMs,
    (signal) => provider.updatePod(structuredClone(updated), { signal }),
  );
  s.pod = updated;
  const got = await eventually(
    rule,
    "getPod to show the new label and annotation",
    s.timeoutMs,
    async () => {
      const p = await provider.getPod(ns, name, {});
      return p?.metadata?.labels?.["conformance.vkubelet.io/step"] === "2" &&
        p.metadata.annotations?.["conformance.vkubelet.io/note"] !== undefined && p;
    },
  );
  if (containerIdentity(got.status) !== before) {
    throw new ConformanceError(
      rule,
      `containers changed from ${before} to ${containerIdentity(got.status)}`,
    );
  }
}

/** `own-node`: another node's provider over the same backing store; neither lists the other's. */
export async function ownNodeStep(s: Session, rule: Rule, makePod: PodMaker): Promise<void> {
  const otherNode = `${s.main.deps.nodeName}-other`;
  const other = await within(
    rule,
    `starting a provider for node ${otherNode}`,
    s.timeoutMs,
    () => s.start(otherNode),
  );
  const pod = makePod(`${s.pod!.metadata!.name}-other`, otherNode);
  let deleted = false;
  try {
    await within(
      rule,
      `createPod(${podKeyOf(pod)}) on ${otherNode}`,
      s.timeoutMs,
      (signal) => other.provider.createPod(structuredClone(pod), { signal }),
    );
    await eventually(
      rule,
      `${otherNode}'s listPods to show ${podKeyOf(pod)}`,
      s.timeoutMs,
      async () => (await other.provider.listPods({})).some((p) => podKeyOf(p) === podKeyOf(pod)),
    );
    const mine = await s.main.provider.listPods({});
    if (mine.some((p) => p.metadata?.uid === pod.metadata?.uid)) {
      throw new ConformanceError(
        rule,
        `listPods of node ${s.main.deps.nodeName} shows ${
          podKeyOf(pod)
        }, which node ${otherNode} runs`,
      );
    }
    const theirs = await other.provider.listPods({});
    if (theirs.some((p) => p.metadata?.uid === s.pod!.metadata?.uid)) {
      throw new ConformanceError(
        rule,
        `listPods of node ${otherNode} shows ${
          podKeyOf(s.pod ?? {})
        } of node ${s.main.deps.nodeName}`,
      );
    }
    await within(
      rule,
      `deletePod(${podKeyOf(pod)}) on ${otherNode}`,
      s.timeoutMs,
      (signal) => other.provider.deletePod(deleting(pod, s.main.deps.clock.now()), { signal }),
    );
    deleted = true;
  } finally {
    if (!deleted) await removePod(other, pod, s.timeoutMs);
    await closeInstance(other, s.timeoutMs);
  }
}

/** `restart`: close the provider, start a new instance; it lists the pod, still running. */
export async function restartStep(s: Session, rule: Rule): Promise<void> {
  const pod = s.pod!;
  await replaceInstance(s, rule);
  const { provider } = s.main;
  await eventually(
    rule,
    `the new instance's listPods to show ${podKeyOf(pod)}`,
    s.timeoutMs,
    async () =>
      (await provider.listPods({})).some((p) =>
        podKeyOf(p) === podKeyOf(pod) && p.metadata?.uid === pod.metadata?.uid
      ),
  );
  const [ns, name] = [pod.metadata!.namespace!, pod.metadata!.name!];
  await eventually(
    rule,
    `getPod(${podKeyOf(pod)}) on the new instance to show it Running`,
    s.timeoutMs,
    async () => {
      const p = await provider.getPod(ns, name, {});
      return p?.status?.phase === "Running" && runningContainers(p.status).length > 0;
    },
  );
}

/**
 * `delete`: a terminal status is pushed (or polled), then the pod leaves getPod and listPods.
 * With `first`, on a new instance whose first call it is: a kubelet that restarts may see the
 * deletion before anything else, and a provider still adopting its backend's pods must not answer
 * "not mine" and leave the pod running.
 */
export async function deleteStep(s: Session, rule: Rule, first: boolean): Promise<void> {
  if (first) await replaceInstance(s, rule);
  const { provider } = s.main;
  const pod = deleting(s.pod!, s.main.deps.clock.now());
  const [ns, name] = [pod.metadata!.namespace!, pod.metadata!.name!];
  await within(
    rule,
    `deletePod(${podKeyOf(pod)})${first ? " as the first call on a new instance" : ""}`,
    s.timeoutMs,
    (signal) => provider.deletePod(structuredClone(pod), { signal }),
  );
  s.running = false;
  if (provider.notifyPods) {
    await eventually(rule, `a terminal status pushed for ${podKeyOf(pod)}`, s.timeoutMs, () => {
      const last = lastPushed(s.main, pod);
      if (isTerminal(last?.status)) return true;
      throw new Error(`the last status pushed is ${statusSummary(last?.status)}`);
    });
  }
  await eventually(rule, `${podKeyOf(pod)} to leave getPod and listPods`, s.timeoutMs, async () => {
    const got = await provider.getPod(ns, name, {});
    if (got && got.metadata?.uid === pod.metadata?.uid) {
      throw new Error(`getPod still shows it: ${statusSummary(got.status)}`);
    }
    const listed = await provider.listPods({});
    if (listed.some((p) => p.metadata?.uid === pod.metadata?.uid)) {
      throw new Error("listPods still shows it");
    }
    return true;
  });
}

/** Closes the instance under test and starts a new one for the same node in its place. */
async function replaceInstance(s: Session, rule: Rule): Promise<void> {
  const old = s.main;
  await closeInstance(old, s.timeoutMs, rule);
  s.main = await within(
    rule,
    "starting a new provider instance",
    s.timeoutMs,
    () => s.start(old.deps.nodeName),
  );
}
