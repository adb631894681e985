/**
 * The conformance suite itself: against providers that each break one rule of the contract (the
 * mock with one behaviour changed), the suite fails exactly that rule, with a message naming it,
 * and does not hang on a call that never settles.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { Provider, ProviderDeps } from "../../../provider/mod.ts";
import { runProviderConformance } from "../../../provider/testing/mod.ts";
import { createProvider } from "../../../providers/mock/mod.ts";

type Outcome = "ok" | "ignored" | string;

/** Runs the suite with a stand-in TestContext that records each step's outcome by rule id. */
async function outcomes(
  change: (inner: Provider, deps: ProviderDeps) => Partial<Provider>,
  timeoutMs = 2_000,
  inMemory = true,
): Promise<Map<string, Outcome>> {
  const results = new Map<string, Outcome>();
  const t = {
    step: async (step: { name: string; ignore?: boolean; fn: () => Promise<void> }) => {
      const id = step.name.slice(0, step.name.indexOf(":"));
      if (step.ignore) {
        results.set(id, `ignored${step.name.slice(step.name.lastIndexOf(" (not run:"))}`);
        return false;
      }
      try {
        await step.fn();
        results.set(id, "ok");
        return true;
      } catch (err) {
        results.set(id, err instanceof Error ? err.message : String(err));
        return false;
      }
    },
  } as unknown as Deno.TestContext;
  await runProviderConformance(t, {
    create: (deps) => {
      const inner = createProvider(undefined, deps);
      const methods = Object.getOwnPropertyNames(Object.getPrototypeOf(inner))
        .filter((m) => m !== "constructor" && typeof Reflect.get(inner, m) === "function");
      const base = Object.fromEntries(
        methods.map((m) => [m, (Reflect.get(inner, m) as () => unknown).bind(inner)]),
      );
      return { ...base, ...change(inner, deps) } as Provider;
    },
    inMemory,
    timeoutMs,
  });
  return results;
}

function onlyFailure(results: Map<string, Outcome>): [string, string] {
  const failed = [...results].filter(([, o]) => o !== "ok" && !o.startsWith("ignored"));
  assert.equal(failed.length, 1, `expected one failed rule, got ${JSON.stringify(failed)}`);
  return failed[0];
}

Deno.test("the unchanged mock passes every rule the suite runs", async () => {
  const results = await outcomes(() => ({}));
  assert.deepEqual([...results].filter(([, o]) => o !== "ok"), [
    ["restart", "ignored (not run: the provider keeps its pods in memory)"],
    ["hooks", "ignored (not run: the provider declares no hookMode)"],
  ]);
});

Deno.test("a provider that loses its pods on restart fails the restart rule alone, by name", async () => {
  // The mock keeps its pods in memory; run as if it claimed to keep them across a restart.
  const results = await outcomes(() => ({}), 500, false);
  const [rule, message] = onlyFailure(results);
  assert.equal(rule, "restart");
  assert.match(message, /^\[restart\] a new provider instance over the same backing store/);
  assert.match(message, /the new instance's listPods to show default\/conformance-/);
  // The delete rule is not run against the new, empty instance (it would fail, wrongly).
  assert.equal(results.get("delete"), "ignored (not run: the restart rule failed)");
  assert.equal(results.get("unknown-pod"), "ok");
});

Deno.test("skipping the restart rule by hand is refused, naming the inMemory option", async () => {
  const t = { step: () => Promise.resolve(true) } as unknown as Deno.TestContext;
  await assert.rejects(
    runProviderConformance(t, {
      create: (deps) => createProvider(undefined, deps),
      skip: ["restart"],
    }),
    (err: Error) => err instanceof TypeError && /inMemory: true/.test(err.message),
  );
});

Deno.test("a provider that never pushes the terminal status fails the delete rule", async () => {
  const results = await outcomes((inner) => ({
    notifyPods: (callback: (pod: Pod) => void) =>
      inner.notifyPods!((pod) => {
        if (pod.status?.phase === "Running") callback(pod);
      }),
  }));
  const [rule, message] = onlyFailure(results);
  assert.equal(rule, "delete");
  assert.match(message, /^\[delete\] deletePod stops the pod: a terminal status .* is pushed/);
  assert.match(message, /the last status pushed is Running/);
});

Deno.test("a provider that lists another node's pods fails the own-node rule", async () => {
  const everyone: Provider[] = [];
  const results = await outcomes((inner) => {
    everyone.push(inner);
    return {
      listPods: async (options) =>
        (await Promise.all(everyone.map((p) => p.listPods(options)))).flat(),
    };
  });
  const [rule, message] = onlyFailure(results);
  assert.equal(rule, "own-node");
  assert.match(message, /^\[own-node\] listPods returns only this node's pods/);
});

Deno.test("a provider that ignores limitBytes fails the logs rule", async () => {
  const results = await outcomes((inner) => ({
    getContainerLogs: (ref, options) =>
      inner.getContainerLogs!(ref, { ...options, limitBytes: undefined }),
  }));
  const [rule, message] = onlyFailure(results);
  assert.equal(rule, "logs");
  assert.match(
    message,
    /limitBytes: 4 gave "mock: container.*", not the log's first 4 bytes "mock"/,
  );
});

Deno.test("a provider whose exec always answers 0 fails the exec rule", async () => {
  const results = await outcomes((inner) => ({
    runInContainer: async (ref, options) => (await inner.runInContainer!(ref, options), 0),
  }));
  const [rule, message] = onlyFailure(results);
  assert.equal(rule, "exec");
  assert.match(message, /sh -c "exit 3" gave exit code 0/);
});

Deno.test("a ping that never settles fails the streams-end rule after the timeout", async () => {
  const started = Date.now();
  const results = await outcomes(() => ({
    ping: ({ signal }) =>
      new Promise<void>((_, reject) =>
        // Settles only when the suite gives up (its deadline aborts the signal).
        signal?.addEventListener("abort", () => reject(signal.reason), { once: true })
      ),
  }), 500);
  const [rule, message] = onlyFailure(results);
  assert.equal(rule, "streams-end");
  assert.match(message, /ping\(\) did not settle within 500 ms/);
  assert.ok(Date.now() - started < 10_000);
});
