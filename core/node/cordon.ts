/**
 * vkubelet's own cordons (on shutdown, and for a provider outage under NodeRestriction), and
 * undoing them only while they are still ours. A cordon is marked with an annotation that says
 * when vkubelet made it. It is ours to undo while the annotation is there, `spec.unschedulable`
 * is true, and the Node's `managedFields` say vkubelet (our field manager) was the last to set
 * `spec.unschedulable`: an admin's `kubectl uncordon` then `kubectl cordon` or `drain`, or any
 * other write that set it, moves that field to the writer's manager, and the node is left
 * cordoned, our annotation removed. (A field written again with the value it has keeps its
 * manager, as server-side field management counts changes only.)
 *
 * What no Node field can show: `kubectl drain` or `kubectl cordon` on a node that is already
 * unschedulable writes nothing (kubernetes/kubectl pkg/drain/cordon.go `UpdateIfRequired`), so
 * an admin who drains during our cordon and wants the node to stay cordoned removes our
 * annotation (`kubectl annotate node NAME ANNOTATION-`); then the cordon is theirs.
 * @module
 */
import type { Node } from "kubernetes-types/core/v1.d.ts";
import { FIELD_MANAGER } from "./node_api.ts";

/** Set on the Node when vkubelet cordoned it on shutdown (the value: when, RFC 3339). */
export const CORDONED_ANNOTATION = "vkubelet.io/cordoned-on-shutdown";

/** Strategic merge patch that cordons the Node and marks the cordon ours with `annotation`. */
export function cordonPatch(annotation: string, now: number): Record<string, unknown> {
  return {
    metadata: { annotations: { [annotation]: new Date(now).toISOString() } },
    spec: { unschedulable: true },
  };
}

/**
 * The patch that takes our cordon marked with `annotation` off `server` (read with its
 * `managedFields`), or undefined when there is none. The cordon is undone only while it is still
 * ours (see the module doc); otherwise only the annotation goes. The patch carries the
 * resourceVersion it was decided at: a write in between makes it a 409, and the caller decides
 * again.
 */
export function uncordonPatch(
  server: Node,
  annotation: string,
): { patch: Record<string, unknown>; undone: boolean } | undefined {
  if (server.metadata?.annotations?.[annotation] === undefined) return undefined;
  const undone = cordonStillOurs(server);
  return {
    patch: {
      metadata: {
        resourceVersion: server.metadata?.resourceVersion,
        annotations: { [annotation]: null },
      },
      ...(undone ? { spec: { unschedulable: null } } : {}),
    },
    undone,
  };
}

/**
 * Whether vkubelet is still the one that set `spec.unschedulable` on `server`. Without any
 * `managedFields` (a fake, or a server that keeps none) the annotation alone decides, as before.
 */
export function cordonStillOurs(server: Node): boolean {
  if (server.spec?.unschedulable !== true) return false;
  const managed = server.metadata?.managedFields;
  if (managed === undefined || managed.length === 0) return true;
  const owners = managed.filter((entry) => {
    const spec = (entry.fieldsV1 as Record<string, Record<string, unknown>> | undefined)
      ?.["f:spec"];
    return spec !== undefined && "f:unschedulable" in spec;
  });
  return owners.length > 0 && owners.every((entry) => entry.manager === FIELD_MANAGER);
}
