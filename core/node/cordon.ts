/**
 * Cordon on shutdown, and undoing it on the next start. The annotation marks a cordon as
 * vkubelet's own, so that a cordon an admin made is never undone by a restart.
 * @module
 */

/** Set on the Node when vkubelet cordoned it on shutdown. */
export const CORDONED_ANNOTATION = "vkubelet.io/cordoned-on-shutdown";

/** Strategic merge patch for `nodes/<name>` that cordons the Node and marks the cordon ours. */
export function cordonPatch(): Record<string, unknown> {
  return {
    metadata: { annotations: { [CORDONED_ANNOTATION]: "true" } },
    spec: { unschedulable: true },
  };
}

/** Strategic merge patch that undoes {@link cordonPatch}. */
export function uncordonPatch(): Record<string, unknown> {
  return {
    metadata: { annotations: { [CORDONED_ANNOTATION]: null } },
    spec: { unschedulable: null },
  };
}
