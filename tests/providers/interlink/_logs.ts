/**
 * Every log record of a test, through a logtape memory sink on the category `["test-interlink"]`,
 * and every Event the provider records, through a fake events API.
 * @module
 */
import { configure, getLogger, type Logger, type LogRecord, reset } from "@logtape/logtape";
import type { Event } from "kubernetes-types/core/v1.d.ts";
import type { PodEventRecorder, ProviderKubeClient } from "../../../provider/mod.ts";
import { eventually } from "../../../tools/harness/wait.ts";

/** What {@link captureLogs} hands the test. */
export interface Captured {
  /** The logger to give the provider. */
  log: Logger;
  /** Every record so far. */
  records: LogRecord[];
  /** A record's message with its properties filled in, as a sink would print it. */
  text(record: LogRecord): string;
}

/** Runs `fn` with logging configured into memory; resets logging afterwards. */
export async function captureLogs<T>(fn: (captured: Captured) => Promise<T>): Promise<T> {
  const records: LogRecord[] = [];
  await configure({
    reset: true,
    sinks: { memory: (r) => records.push(r) },
    loggers: [
      { category: ["test-interlink"], lowestLevel: "debug", sinks: ["memory"] },
      { category: ["logtape", "meta"], lowestLevel: "warning", sinks: ["memory"] },
    ],
  });
  const text = (r: LogRecord) =>
    r.message.map((m) => typeof m === "string" ? m : String(m)).join("") + " " +
    JSON.stringify(r.properties);
  try {
    return await fn({ log: getLogger(["test-interlink"]), records, text });
  } finally {
    await reset();
  }
}

/**
 * The node's event recorder as the provider sees it (`deps.events`), keeping what it is given
 * in `events` as Events; and a client with no API, for the deps that also want one.
 */
export function eventsKube(): {
  kube: ProviderKubeClient;
  recorder: PodEventRecorder;
  events: Event[];
} {
  const events: Event[] = [];
  const recorder: PodEventRecorder = {
    record: (pod, e) =>
      events.push({
        metadata: { namespace: pod.metadata?.namespace },
        involvedObject: { kind: "Pod", name: pod.metadata?.name, uid: pod.metadata?.uid },
        type: e.type,
        reason: e.reason,
        message: e.message,
        source: { component: e.component },
      }),
  };
  return { kube: {} as ProviderKubeClient, recorder, events };
}

/** Waits (25 ms steps, up to 10 s) until `probe` answers; see {@link eventually}. */
export function until<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
): Promise<T> {
  return eventually(what, probe, 10_000, 25);
}
