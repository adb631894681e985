/**
 * A provider outage: the provider's ping fails, so it cannot reach its backend's control plane
 * (interLink's API, a cloud API, slurmctld), which is not the same as the workloads being gone.
 * The kubelet turns Ready False at once because its runtime is on the node; a virtual node's
 * workloads are elsewhere and usually keep running, so evicting them for an API's bad five
 * minutes (the node-lifecycle controller's `not-ready:NoExecute` after the pods' 300 s
 * toleration) kills what was healthy. So, while the outage is younger than `--provider-outage-grace`:
 *
 * - the node stays Ready and its Lease is renewed;
 * - the `ProviderReachable` condition is False with the provider's message (True otherwise);
 * - a `NoSchedule` taint of vkubelet's own ({@link UNREACHABLE_TAINT}) keeps new pods away; a
 *   node under NodeRestriction may not change its own taints (kubernetes/kubernetes
 *   plugin/pkg/admission/noderestriction/admission.go `admitNode`), so there it is cordoned
 *   instead, marked with {@link OUTAGE_CORDON_ANNOTATION}, and on recovery undone only while it is
 *   still ours (`./cordon.ts`: an admin's cordon, or one an admin wrote again since, stays);
 * - an event says when the backend became unreachable, and another when it answers again.
 *
 * Past the grace, Ready turns False as it does today (grace 0: at once), and the lease stops.
 * @module
 */
import type { Node, NodeCondition, Taint } from "kubernetes-types/core/v1.d.ts";
import { isConflict, isForbidden } from "../../k8s/errors.ts";
import { cordonPatch, uncordonPatch } from "./cordon.ts";
import type { Clock } from "../../base/clock.ts";
import type { Logger } from "../../base/log.ts";
import type { Health } from "./health_monitor.ts";
import type { NodeApi, NodeEvent } from "./node_api.ts";

/** The node condition that says whether the provider reaches its backend. */
export const PROVIDER_REACHABLE = "ProviderReachable";

/** vkubelet's taint while the provider cannot reach its backend. */
export const UNREACHABLE_TAINT: Readonly<Taint> = {
  key: "virtual-kubelet.io/provider-unreachable",
  effect: "NoSchedule",
};

/**
 * Set on the Node while vkubelet cordons it because the taint was refused (the value: when,
 * RFC 3339).
 */
export const OUTAGE_CORDON_ANNOTATION = "vkubelet.io/cordoned-provider-unreachable";

/** True once an outage has lasted `graceMs`: Ready goes False and the lease stops. */
export function pastGrace(health: Health, now: number, graceMs: number): boolean {
  return !health.healthy && now - health.since >= graceMs;
}

/** The {@link PROVIDER_REACHABLE} condition for `health`. */
export function reachableCondition(health: Health): NodeCondition {
  if (health.healthy) {
    return {
      type: PROVIDER_REACHABLE,
      status: "True",
      reason: "ProviderReachable",
      message: "the provider reaches its backend",
    };
  }
  return {
    type: PROVIDER_REACHABLE,
    status: "False",
    reason: health.reason ?? "ProviderPingFailed",
    message: `since ${new Date(health.since).toISOString()}: ${health.message ?? "ping failed"}`
      .slice(0, 1024),
  };
}

/** What {@link OutageMarker} needs. */
export interface OutageMarkerDeps {
  api: Pick<NodeApi, "getNode" | "patchNode" | "createEvent">;
  clock: Clock;
  log: Logger;
  nodeName: string;
  graceMs: number;
  /** Runs one API call with the node controller's turn and deadline. */
  call<T>(signal: AbortSignal, call: (signal: AbortSignal) => Promise<T>): Promise<T>;
}

/** Keeps the taint (or cordon) and the events in step with the provider's reachability. */
export class OutageMarker {
  #deps: OutageMarkerDeps;
  /** The reachability last told in an event; undefined before the first sync. */
  #told?: Health;
  /** The taint was refused (NodeRestriction): cordon instead, from now on. */
  #cordon = false;

  constructor(deps: OutageMarkerDeps) {
    this.#deps = deps;
  }

  /** Brings `server` in step with `health`; returns the Node as written, or undefined if unchanged. */
  async sync(server: Node, health: Health, signal: AbortSignal): Promise<Node | undefined> {
    this.#event(health, signal);
    const taint = this.#cordon ? undefined : taintPatch(server, !health.healthy);
    if (taint) {
      try {
        const node = await this.#patch(taint, signal);
        this.#deps.log.info("node {node}: taint {taint} {change}", {
          node: this.#deps.nodeName,
          taint: UNREACHABLE_TAINT.key,
          change: health.healthy ? "removed" : "added",
        });
        return node;
      } catch (err) {
        if (!isForbidden(err)) throw err;
        this.#cordon = true;
        this.#deps.log.warn(
          "node {node} may not change its own taints (NodeRestriction): it is cordoned instead " +
            "while the provider cannot reach its backend: {err}",
          { node: this.#deps.nodeName, err: err instanceof Error ? err.message : String(err) },
        );
      }
    }
    if (!health.healthy) {
      if (!this.#cordon || !needsCordon(server)) return undefined;
      const now = this.#deps.clock.now();
      return await this.#patch(cordonPatch(OUTAGE_CORDON_ANNOTATION, now), signal);
    }
    // Undoing a cordon is checked on the taint's path too: one left by an earlier run.
    if (server.metadata?.annotations?.[OUTAGE_CORDON_ANNOTATION] === undefined) return undefined;
    return await this.#uncordon(signal);
  }

  /** Takes our outage cordon off, or only its annotation if it is no longer ours. */
  async #uncordon(signal: AbortSignal): Promise<Node | undefined> {
    const node = await this.#deps.call(
      signal,
      (s) => this.#deps.api.getNode(this.#deps.nodeName, { signal: s, managedFields: true }),
    );
    const undo = uncordonPatch(node, OUTAGE_CORDON_ANNOTATION);
    if (!undo) return undefined;
    let written: Node;
    try {
      written = await this.#patch(undo.patch, signal);
    } catch (err) {
      if (isConflict(err)) return undefined; // Written meanwhile: the next sync decides again.
      throw err;
    }
    if (undo.undone) {
      this.#deps.log.info("uncordoned node {node}: the provider reaches its backend again", {
        node: this.#deps.nodeName,
      });
    } else if (node.spec?.unschedulable) {
      this.#deps.log.info(
        "node {node} stays cordoned after the outage: someone set spec.unschedulable after " +
          "vkubelet cordoned it; uncordon it with kubectl uncordon when it should take pods",
        { node: this.#deps.nodeName },
      );
    }
    return written;
  }

  #patch(patch: Record<string, unknown>, signal: AbortSignal): Promise<Node> {
    return this.#deps.call(
      signal,
      (s) => this.#deps.api.patchNode(this.#deps.nodeName, patch, { signal: s }),
    );
  }

  /** One event per change of reachability (none for the first, healthy, sync). */
  #event(health: Health, signal: AbortSignal): void {
    const told = this.#told;
    this.#told = health;
    if (told ? told.healthy === health.healthy : health.healthy) return;
    const grace = formatGrace(this.#deps.graceMs);
    const event: NodeEvent = health.healthy
      ? {
        type: "Normal",
        reason: "ProviderReachable",
        message: `the provider reaches its backend again after ${
          formatGrace(health.since - told!.since)
        }; pod status is refreshed before anything is deleted or created again`,
      }
      : {
        type: "Warning",
        reason: "ProviderUnreachable",
        message: `the provider cannot reach its backend: ${health.message ?? "ping failed"}; ` +
          `pods keep their last status and no new pod is scheduled here; ` +
          (this.#deps.graceMs > 0
            ? `the node turns NotReady if this lasts ${grace}`
            : "the node is NotReady (--provider-outage-grace=0)"),
      };
    if (!this.#deps.api.createEvent) return;
    this.#deps.api.createEvent(this.#deps.nodeName, event, { signal }).catch((err) => {
      if (signal.aborted) return;
      this.#deps.log.warn("recording event {reason} on node {node} failed: {err}", {
        node: this.#deps.nodeName,
        reason: event.reason,
        err: err instanceof Error ? err.message : String(err),
      });
    });
  }
}

/**
 * The patch that adds or removes {@link UNREACHABLE_TAINT}, or undefined when the Node is right.
 * Taints have no merge key, so the patch carries the whole list, guarded by the resourceVersion
 * it was read at: a taint the node-lifecycle controller added meanwhile makes it a 409, and the
 * next sync tries again.
 */
export function taintPatch(
  server: Node,
  unreachable: boolean,
): Record<string, unknown> | undefined {
  const taints = server.spec?.taints ?? [];
  const has = taints.some((t) => t.key === UNREACHABLE_TAINT.key);
  if (has === unreachable) return undefined;
  const others = taints.filter((t) => t.key !== UNREACHABLE_TAINT.key);
  return {
    metadata: { resourceVersion: server.metadata?.resourceVersion },
    spec: { taints: unreachable ? [...others, { ...UNREACHABLE_TAINT }] : others },
  };
}

/**
 * Whether the outage needs a cordon on `server`: not when it is unschedulable already (an
 * admin's cordon is not taken for ours), nor when our annotation is there (an admin uncordoned
 * the node during the outage).
 */
function needsCordon(server: Node): boolean {
  const ours = server.metadata?.annotations?.[OUTAGE_CORDON_ANNOTATION] !== undefined;
  return !ours && server.spec?.unschedulable !== true;
}

/** `30m`, `90s`, `1h30m`: a duration as the flag takes it. */
export function formatGrace(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const [h, m, sec] = [Math.floor(s / 3600), Math.floor((s % 3600) / 60), s % 60];
  const out = `${h ? `${h}h` : ""}${m ? `${m}m` : ""}${sec ? `${sec}s` : ""}`;
  return out || "0s";
}
