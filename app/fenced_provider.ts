/**
 * The provider as a leader sees it: the calls that change what runs are refused while the
 * leadership fence is closed (k8s/leader_election/fence.ts says why the check is made at each call).
 * @module
 */
import type { Provider } from "../provider/mod.ts";
import type { LeadershipFence } from "../k8s/leader_election/mod.ts";

/** The provider calls that change what runs; the rest only read. */
const ACTIONS = new Set(["createPod", "updatePod", "deletePod", "runEphemeralContainer"]);

/** `provider` with createPod, updatePod and deletePod refused while `fence` is closed. */
export function fenceProvider(provider: Provider, fence: LeadershipFence): Provider {
  return new Proxy(provider, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      if (typeof property === "string" && ACTIONS.has(property)) {
        return (...args: unknown[]) => {
          try {
            fence.check(`provider.${property}`);
          } catch (err) {
            return Promise.reject(err);
          }
          return value.apply(target, args);
        };
      }
      return value.bind(target);
    },
  });
}
