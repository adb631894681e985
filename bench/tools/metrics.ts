/**
 * The apiserver's own count of the kubelet's requests: the dispatch counter of the bench's
 * FlowSchema (which matches only the kubelet's user), and per verb/resource counts from
 * `apiserver_request_total` for the break-down.
 * @module
 */
import { FLOW_SCHEMA } from "./control_plane.ts";
import type { Kube } from "./kube.ts";

/** One scrape of the figures the bench uses. */
export interface MetricsSnapshot {
  /** Requests the apiserver dispatched for the kubelet's user. */
  kubelet: number;
  /** apiserver_request_total summed over codes, by "VERB resource[/subresource]". */
  byVerb: Map<string, number>;
}

function labels(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) out[m[1]] = m[2];
  return out;
}

/** Scrapes the apiserver's /metrics as the admin. */
export async function scrape(admin: Kube): Promise<MetricsSnapshot> {
  const text = await admin.text("/metrics");
  let kubelet = 0;
  const byVerb = new Map<string, number>();
  for (const line of text.split("\n")) {
    const m = /^(\w+)\{(.*)\} (\S+)$/.exec(line);
    if (!m) continue;
    const value = Number(m[3]);
    if (m[1] === "apiserver_flowcontrol_dispatched_requests_total") {
      if (labels(m[2]).flow_schema === FLOW_SCHEMA) kubelet += value;
    } else if (m[1] === "apiserver_request_total") {
      const l = labels(m[2]);
      if (!l.resource) continue;
      const key = `${l.verb} ${l.resource}${l.subresource ? `/${l.subresource}` : ""}`;
      byVerb.set(key, (byVerb.get(key) ?? 0) + value);
    }
  }
  return { kubelet, byVerb };
}

/** The kubelet's request count between two scrapes. */
export function kubeletRequests(before: MetricsSnapshot, after: MetricsSnapshot): number {
  return after.kubelet - before.kubelet;
}

/** Per verb/resource deltas between two scrapes, largest first, leaving out small ones. */
export function verbDeltas(
  before: MetricsSnapshot,
  after: MetricsSnapshot,
  minimum: number,
): [string, number][] {
  const out: [string, number][] = [];
  for (const [key, value] of after.byVerb) {
    const delta = value - (before.byVerb.get(key) ?? 0);
    if (delta >= minimum) out.push([key, delta]);
  }
  return out.sort((a, b) => b[1] - a[1]);
}
