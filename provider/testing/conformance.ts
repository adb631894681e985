/**
 * The provider conformance suite: runs the rules of {@link CONFORMANCE_RULES} against a provider,
 * in memory, each as a `t.step` whose failure names the rule broken. Pods need no real image: the
 * default pod's container runs `/bin/sh -c` (a provider reshapes it with `podFor`).
 *
 * Rules whose capability the provider lacks are ignored (the kubelet API answers 501 there), and
 * so are the rules that need the pod once `create` or `restart` failed: they would otherwise run
 * against an instance without the pod and fail for the wrong reason. An ignored step's name says
 * why. Restart reconcile and "this node's pods only" start more instances through `create`, so a
 * provider with a backing store gets it from there; one that keeps its pods in memory says so
 * with `inMemory` and the restart rule is not run. The hooks rule runs for a provider that
 * declares what lifecycle hooks do on it (a remote provider's `hookMode`), on a pod of its own.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { Clock } from "../../base/clock.ts";
import { FakeClock } from "../../base/fake_clock.ts";
import { getLogger, type Logger } from "../../base/log.ts";
import type { Provider, ProviderDeps } from "../contract.ts";
import { closeInstance, type Instance, removePod, type Rule, type Session } from "./_session.ts";
import { declaredHookMode, hooksStep } from "./hooks_step.ts";
import { execStep, logsStep, streamsEndStep, unknownPodStep } from "./io_steps.ts";
import {
  createStep,
  createTwiceStep,
  deleteStep,
  ownNodeStep,
  type PodMaker,
  restartStep,
  statusStep,
  updateStep,
} from "./lifecycle_steps.ts";
import { CONFORMANCE_RULES, type ConformanceRule } from "./rules.ts";

/** Options for {@link runProviderConformance}. */
export interface ProviderConformanceOptions {
  /**
   * Builds a provider instance from vkubelet's deps (add `kube` or anything else it needs). Called
   * once per node name, and again for the same node by the restart rule, after `close()`: give
   * each node the same backing store across calls (state directory, downstream namespace).
   */
  create: (deps: ProviderDeps) => Promise<Provider> | Provider;
  /** The node's name (default `vk-conformance`); the own-node rule also uses `<nodeName>-other`. */
  nodeName?: string;
  /** The deps' clock (default: a new {@link FakeClock}; the suite never advances it). */
  clock?: Clock;
  /** Shapes the suite's pod for this provider (image, command); see {@link conformancePod}. */
  podFor?: (name: string) => Pod;
  /**
   * The provider keeps its pods in memory only, by design: a new instance starts empty, so the
   * restart rule cannot hold and is not run. Default false.
   */
  inMemory?: boolean;
  /**
   * Rules to leave out, each with a comment in the caller naming the gap. Not `restart`: a
   * provider that cannot restart says why with `inMemory`.
   */
  skip?: ConformanceRule[];
  /** How long one call or one wait may take (default 10 s). */
  timeoutMs?: number;
  /** The deps' logger (default category `["vkubelet", "provider", "conformance"]`). */
  log?: Logger;
  /** The deps' internalIp (default 127.0.0.1). */
  internalIp?: string;
}

/**
 * The suite's default pod: one container `main` that prints three lines and sleeps, restart
 * policy Always, a 1 s grace period; namespace `default`, a fresh uid.
 */
export function conformancePod(name: string): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      namespace: "default",
      name,
      uid: crypto.randomUUID(),
      labels: { "conformance.vkubelet.io/pod": name },
    },
    spec: {
      restartPolicy: "Always",
      terminationGracePeriodSeconds: 1,
      containers: [{
        name: "main",
        image: "busybox:1.36",
        command: [
          "/bin/sh",
          "-c",
          "echo line one; echo line two; echo line three; exec sleep 3600",
        ],
      }],
    },
  };
}

/** Runs the conformance rules as steps of `t`; resolves when every step is done and cleaned up. */
export async function runProviderConformance(
  t: Deno.TestContext,
  options: ProviderConformanceOptions,
): Promise<void> {
  const nodeName = options.nodeName ?? "vk-conformance";
  const clock = options.clock ?? new FakeClock(Date.now());
  const log = options.log ?? getLogger(["vkubelet", "provider", "conformance"]);
  const skip = new Set<string>(options.skip ?? []);
  if (skip.has("restart")) {
    throw new TypeError(
      'runProviderConformance: skip: ["restart"] is not accepted; a provider that keeps its pods in memory passes inMemory: true instead',
    );
  }
  const suffix = crypto.randomUUID().slice(0, 6);
  const makePod: PodMaker = (name, node) => {
    const pod = structuredClone(options.podFor?.(name) ?? conformancePod(name));
    pod.metadata = {
      namespace: "default",
      ...pod.metadata,
      name,
      uid: pod.metadata?.uid ?? crypto.randomUUID(),
    };
    pod.spec = { containers: [], ...pod.spec, nodeName: node };
    return pod;
  };
  const start = async (node: string): Promise<Instance> => {
    const shutdown = new AbortController();
    const deps: ProviderDeps = {
      nodeName: node,
      log,
      clock,
      internalIp: options.internalIp ?? "127.0.0.1",
      daemonPort: 10250,
      signal: shutdown.signal,
    };
    const instance: Instance = { provider: await options.create(deps), deps, shutdown, pushed: [] };
    instance.provider.notifyPods?.((pod) => void instance.pushed.push(structuredClone(pod)));
    session.instances.push(instance);
    return instance;
  };
  const session: Session = {
    main: undefined as unknown as Instance,
    running: false,
    timeoutMs: options.timeoutMs ?? 10_000,
    start,
    instances: [],
  };
  session.main = await start(nodeName);
  const pod = makePod(`conformance-${suffix}`, nodeName);
  const p = () => session.main.provider;
  // Each step with why it would not run now (undefined: it runs).
  const steps: [ConformanceRule, () => string | undefined, (rule: Rule) => Promise<void>][] = [
    ["create", () => undefined, (rule) => createStep(session, rule, pod)],
    ["status", needsPod, (rule) => statusStep(session, rule)],
    ["create-twice", needsPod, (rule) => createTwiceStep(session, rule)],
    ["update", needsPod, (rule) => updateStep(session, rule)],
    ["logs", () => needsPod() ?? lacks("getContainerLogs"), (rule) => logsStep(session, rule)],
    ["exec", () => needsPod() ?? lacks("runInContainer"), (rule) => execStep(session, rule)],
    ["streams-end", needsPod, (rule) => streamsEndStep(session, rule)],
    ["own-node", needsPod, (rule) => ownNodeStep(session, rule, makePod)],
    ["restart", () => options.inMemory ? "the provider keeps its pods in memory" : needsPod(), (
      rule,
    ) => restartStep(session, rule)],
    ["delete", needsPod, (rule) => deleteStep(session, rule, !options.inMemory)],
    ["unknown-pod", () => undefined, (rule) => unknownPodStep(session, rule)],
    [
      "hooks",
      () => hookMode() ? undefined : "the provider declares no hookMode",
      (rule) =>
        hooksStep(session, rule, makePod(`conformance-hooks-${suffix}`, nodeName), hookMode()!),
    ],
  ];
  function hookMode() {
    return declaredHookMode(p());
  }
  let lost = "";
  function needsPod() {
    return session.running ? undefined : `the ${lost || "create"} rule failed`;
  }
  function lacks(method: keyof Provider) {
    return p()[method] ? undefined : `the provider has no ${method}`;
  }
  try {
    for (const [id, notNow, fn] of steps) {
      const rule: Rule = { id, statement: CONFORMANCE_RULES[id] };
      const why = skip.has(id) ? "skipped by the caller" : notNow();
      const passed = await t.step({
        name: `${id}: ${rule.statement}${why ? ` (not run: ${why})` : ""}`,
        ignore: why !== undefined,
        fn: () => fn(rule),
      });
      // Without its pod on the instance under test, the later rules would fail for the wrong
      // reason (a new instance that lost the pod is not one that cannot delete it).
      if (!passed && !why && (id === "create" || id === "restart")) {
        session.running = false;
        lost = id;
      }
    }
  } finally {
    for (const instance of session.instances) {
      if (instance.shutdown.signal.aborted) continue;
      if (session.pod) await removePod(instance, session.pod, session.timeoutMs);
      await closeInstance(instance, session.timeoutMs).catch(() => {});
    }
  }
}
