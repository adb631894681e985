/**
 * Shared set-up for the process provider's tests: a provider on a temporary state directory,
 * pod builders, bounded waits and stream helpers.
 * @module
 */
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import { getLogger } from "@logtape/logtape";
import type { Clock } from "../../../base/clock.ts";
import { realClock } from "../../../base/clock.ts";
import type { ProviderDeps } from "../../../provider/mod.ts";
import { createProvider, type ProcessProvider } from "../../../providers/process/mod.ts";
import type { VolumeSource } from "../../../providers/process/volumes/volumes.ts";
import { probeMountNamespace } from "../../../providers/process/launch/mount_ns.ts";
import { eventually } from "../../../tools/harness/wait.ts";

/** Options for {@link startProvider}. */
export interface TestProviderOptions {
  stateDir?: string;
  clock?: Clock;
  volumeSource?: VolumeSource;
  config?: Record<string, unknown>;
}

const viewSupport = await probeMountNamespace();

/** A provider on a fresh (or given) state directory, with host probing as configured. */
export async function startProvider(options: TestProviderOptions = {}) {
  const stateDir = options.stateDir ?? await Deno.makeTempDir({ prefix: "vk-process-test-" });
  const shutdown = new AbortController();
  const deps: ProviderDeps = {
    nodeName: "vk-test",
    log: getLogger(["vkubelet", "provider", "test"]),
    clock: options.clock ?? realClock,
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal: shutdown.signal,
  };
  // The tests' non-root pods run as uid and gid 1000, often a login user of a developer's
  // machine: listed by itself, as an admin would list it (allowedIds, ../launch/id_allowlist.ts).
  const allowedIds = { uids: ["1000-65535", "1000"], gids: ["1000-65535", "1000"] };
  // Where this machine cannot make views (not root), the provider refuses every pod unless told
  // to run them without isolation, as a vkubelet there would be: the tests of everything else
  // run so, and the isolation tests skip.
  const views = viewSupport.ok ? {} : { mountNamespace: "off" };
  const config = { stateDir, cgroups: "off", allowedIds, ...views, ...options.config };
  const provider = await createProvider(config, deps, {
    volumeSource: options.volumeSource,
  });
  return {
    provider,
    stateDir,
    shutdown,
    /** Closes the provider without stopping pods (as a vkubelet exit would). */
    async close(options: { keepState?: boolean } = {}) {
      shutdown.abort();
      await provider.close();
      if (!options.keepState) await Deno.remove(stateDir, { recursive: true }).catch(() => {});
    },
  };
}

let counter = 0;

/** A pod with the given containers (and spec fields). */
export function makePod(containers: Container[], spec: Partial<Pod["spec"]> = {}): Pod {
  counter++;
  return {
    metadata: {
      namespace: "default",
      name: `p${counter}-${Date.now() % 100000}`,
      uid: crypto.randomUUID(),
      labels: { app: "test" },
    },
    spec: { nodeName: "vk-test", containers, terminationGracePeriodSeconds: 2, ...spec },
  };
}

/** Polls `check` every 25 ms of real time until it returns a value, or throws after `ms`. */
export function waitFor<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  ms = 10_000,
): Promise<T> {
  return eventually(what, check, ms, 25);
}

/** Reads a whole stream as text. */
export async function readAll(stream: ReadableStream<Uint8Array>): Promise<string> {
  return await new Response(stream).text();
}

/** A writable that collects what is written, as text. */
export function collector(): { writable: WritableStream<Uint8Array>; text: () => string } {
  const chunks: Uint8Array[] = [];
  const decoder = new TextDecoder();
  return {
    writable: new WritableStream({ write: (c) => void chunks.push(c.slice()) }),
    text: () => chunks.map((c) => decoder.decode(c, { stream: true })).join(""),
  };
}

/** Deletes a pod if the provider still has it (cleanup in `finally`). */
export async function cleanup(provider: ProcessProvider, pod: Pod): Promise<void> {
  const { namespace = "", name = "" } = pod.metadata ?? {};
  if (await provider.getPod(namespace, name, {})) {
    await provider.deletePod({
      ...pod,
      metadata: { ...pod.metadata, deletionGracePeriodSeconds: 0 },
    }, {});
  }
}

/**
 * {@link waitFor} while a session (attach, exec) is open: a session that fails or ends first fails
 * the wait with its own error instead of a time-out and an unhandled rejection.
 */
export async function waitDuring<T>(
  session: Promise<unknown>,
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
): Promise<T> {
  const ended = session.then(() => {
    throw new Error(`the session ended while waiting for ${what}`);
  });
  ended.catch(() => {});
  return await Promise.race([waitFor(what, check), ended]);
}

/** Awaits `promise`, or throws after `ms` of real time saying what did not happen. */
export async function within<T>(what: string, promise: Promise<T>, ms = 10_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
