/**
 * The rules of the provider contract (provider/contract.ts) that the conformance suite checks,
 * by id. A failure message quotes the rule's statement; `skip` takes the ids.
 * @module
 */

/** Every rule the suite checks, in the order it runs them. */
export const CONFORMANCE_RULES = {
  create: "createPod starts the pod: getPod and listPods show it (same uid) and it reaches Running",
  status:
    "every status change is pushed through notifyPods (or answered by getPodStatus where there is no notifyPods): the last status pushed agrees with getPod",
  "create-twice":
    "createPod of a pod the provider already runs (same uid) succeeds without a second instance: one listed pod, containers not restarted",
  update:
    "updatePod applies changed labels and annotations (getPod shows them) without restarting the containers",
  logs:
    "getContainerLogs honours tailLines (the last N lines), limitBytes (the first N bytes) and timestamps (an RFC 3339 time and a space before each line)",
  exec:
    "runInContainer resolves with the command's exit code (0 and non-zero) and writes its stdout",
  "streams-end":
    "optional capabilities never hang: ping, stats, metrics and configureNode resolve or reject with an Error (NotSupportedError where the backend lacks one); a follow log stream and an attach session end when their signal aborts",
  "own-node":
    "listPods returns only this node's pods: a pod another node's provider runs over the same backing store is not listed",
  restart:
    "a new provider instance over the same backing store (after close, which must not stop pods) lists the pods the old one ran, still running",
  delete:
    "deletePod stops the pod: a terminal status (Succeeded or Failed, no container running) is pushed, then the pod leaves getPod and listPods; unless the provider keeps its pods in memory, this holds for a deletion that is a new instance's first call",
  "unknown-pod":
    "calls for a pod the provider does not run answer undefined (getPod, getPodStatus) or NotFoundError (logs, exec, attach, port-forward); deletePod of it resolves or throws NotFoundError",
  hooks:
    "lifecycle hooks do what the provider declares (hookMode): refuse fails createPod with an InvalidInputError naming the hook; backend runs the pod with no hook run by vkubelet; exec runs postStart through runInContainer once the container runs and preStop before deletePod returns, and refuses an httpGet hook",
} as const;

/** The id of one rule in {@link CONFORMANCE_RULES}. */
export type ConformanceRule = keyof typeof CONFORMANCE_RULES;
