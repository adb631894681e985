/**
 * Ephemeral containers (`kubectl debug`): the apiserver adds them to `spec.ephemeralContainers`
 * of a running pod, and the kubelet starts each once (pkg/kubelet/kuberuntime
 * `computePodActions` → `EphemeralContainersToStart`) and reports it in
 * `status.ephemeralContainerStatuses`. {@link withEphemeralContainers} wraps the provider so the
 * pod workers need not know: after a create or update it starts, through the provider's
 * `runEphemeralContainer`, every ephemeral container the provider reports no status for. A
 * provider without that capability gets its ephemeral containers reported waiting
 * (`EphemeralContainersNotSupported`) with a Warning event, instead of the silence that leaves
 * `kubectl debug -i` hanging.
 * @module
 */
import type { ContainerStatus, Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";
import { type CallOptions, isTransient, type Provider } from "../../provider/mod.ts";
import { podKey } from "./api.ts";
import type { PodEvent } from "./events.ts";

/** The waiting reason (and event reason) for a provider that cannot run ephemeral containers. */
export const EPHEMERAL_NOT_SUPPORTED = "EphemeralContainersNotSupported";

/** Records an event on a pod (the controller's recorder). */
export type RecordEvent = (pod: Pod, event: PodEvent) => void;

/** `provider` with ephemeral containers started or reported; see the module doc. */
export function withEphemeralContainers(provider: Provider, record: RecordEvent): Provider {
  const unsupported = new Map<string, { uid: string; names: Map<string, string> }>();
  let callback: ((pod: Pod) => void) | undefined;

  const augment = (pod: Pod): Pod => {
    const entry = unsupported.get(podKey(pod));
    if (!entry || entry.uid !== pod.metadata?.uid || !pod.status) return pod;
    return { ...pod, status: withWaiting(pod.status, entry.names) };
  };

  const startEphemeral = async (pod: Pod, options: CallOptions) => {
    const wanted = pod.spec?.ephemeralContainers ?? [];
    if (wanted.length === 0) return;
    const { namespace = "", name = "" } = pod.metadata ?? {};
    const running = await provider.getPod(namespace, name, options);
    const known = new Set((running?.status?.ephemeralContainerStatuses ?? []).map((s) => s.name));
    const fresh = wanted.filter((c) => !known.has(c.name));
    if (fresh.length === 0) return;
    if (provider.runEphemeralContainer) {
      for (const c of fresh) {
        try {
          await provider.runEphemeralContainer(pod, c.name, options);
        } catch (err) {
          // A debug container that cannot start must not fail the pod it debugs.
          if (isTransient(err)) throw err;
          record(pod, {
            type: "Warning",
            reason: "Failed",
            message: `Error: ${err instanceof Error ? err.message : String(err)}`,
            fieldPath: `spec.ephemeralContainers{${c.name}}`,
          });
        }
      }
      return;
    }
    const key = podKey(pod);
    let entry = unsupported.get(key);
    if (!entry || entry.uid !== pod.metadata?.uid) {
      entry = { uid: pod.metadata?.uid ?? "", names: new Map() };
      unsupported.set(key, entry);
    }
    for (const c of fresh) {
      if (entry.names.has(c.name)) continue;
      entry.names.set(c.name, c.image ?? "");
      record(pod, {
        type: "Warning",
        reason: EPHEMERAL_NOT_SUPPORTED,
        message: `Ephemeral container ${c.name} cannot start: ${notSupported}`,
        fieldPath: `spec.ephemeralContainers{${c.name}}`,
      });
    }
    // The provider's last report did not know about them: report them now.
    if (running && callback) callback(augment(running));
  };

  const overrides: Partial<Provider> = {
    async createPod(pod, options) {
      await provider.createPod(pod, options);
      await startEphemeral(pod, options);
    },
    async updatePod(pod, options) {
      await provider.updatePod(pod, options);
      await startEphemeral(pod, options);
    },
    async deletePod(pod, options) {
      unsupported.delete(podKey(pod));
      await provider.deletePod(pod, options);
    },
    async getPod(namespace, name, options) {
      const pod = await provider.getPod(namespace, name, options);
      return pod && augment(pod);
    },
  };
  if (provider.notifyPods) {
    overrides.notifyPods = (cb) => {
      callback = cb;
      const off = provider.notifyPods!((pod) => cb(augment(pod)));
      return () => {
        if (callback === cb) callback = undefined;
        off?.();
      };
    };
  }
  if (provider.getPodStatus) {
    overrides.getPodStatus = async (namespace, name, options) => {
      const status = await provider.getPodStatus!(namespace, name, options);
      const entry = unsupported.get(`${namespace}/${name}`);
      return status && entry ? withWaiting(status, entry.names) : status;
    };
  }
  return new Proxy(provider, {
    get(target, property, receiver) {
      if (Object.hasOwn(overrides, property)) {
        return overrides[property as keyof Provider];
      }
      const value = Reflect.get(target, property, receiver);
      // Providers keep state in private fields: their methods run with the provider as `this`.
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

const notSupported = "this node's provider cannot run ephemeral containers (kubectl debug); " +
  "debug with kubectl exec, or run the pod on a node whose provider supports them";

function withWaiting(status: PodStatus, names: Map<string, string>): PodStatus {
  const reported = status.ephemeralContainerStatuses ?? [];
  const waiting = [...names].filter(([name]) => !reported.some((s) => s.name === name))
    .map(([name, image]): ContainerStatus => ({
      name,
      image,
      imageID: "",
      ready: false,
      restartCount: 0,
      state: { waiting: { reason: EPHEMERAL_NOT_SUPPORTED, message: notSupported } },
    }));
  if (waiting.length === 0) return status;
  return { ...status, ephemeralContainerStatuses: [...reported, ...waiting] };
}
