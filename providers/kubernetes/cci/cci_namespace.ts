/**
 * `profile: cci`, namespace side: what CCI needs in the namespace before a pod can run there,
 * checked (never created) before the first pod is sent, and the event that tells the upstream
 * pod's owner how the profile changed the pod.
 *
 * CCI needs (https://support.huaweicloud.com/en-us/api-cci/cci_02_3002.html, "Creating a
 * Namespace"; https://support.huaweicloud.com/en-us/api-cci/cci_02_2012.html, "Creating a
 * Network"): the namespace annotated `namespace.kubernetes.io/flavor` (`general-computing` or
 * `gpu-accelerated`), and a `networking.cci.io/v1beta1` Network in it that maps the namespace to
 * a VPC subnet. Both carry account-level choices (the resource type; VPC, subnet and security
 * group IDs) that vkubelet cannot know, so the user creates them and vkubelet only checks: a
 * missing one fails the pod (`ProviderFailed`) with what to create.
 * @module
 */
import type { Event, Namespace, Pod } from "kubernetes-types/core/v1.d.ts";
import type { KubeClient } from "../../../k8s/mod.ts";
import {
  type CallOptions,
  formatTime,
  InvalidInputError,
  type ProviderKubeClient,
} from "../../../provider/mod.ts";
import { downstreamError } from "../errors.ts";

/** The namespace annotation CCI reads the resource type from. */
export const CCI_FLAVOR_ANNOTATION = "namespace.kubernetes.io/flavor";
const FLAVORS = ["general-computing", "gpu-accelerated"];

/** Checks B's namespace once it passes; a failed check is asked again on the next pod. */
export class CciNamespaceCheck {
  readonly #b: Pick<KubeClient, "request">;
  readonly #namespace: string;
  #passed = false;

  constructor(downstream: Pick<KubeClient, "request">, namespace: string) {
    this.#b = downstream;
    this.#namespace = namespace;
  }

  /** Resolves when the namespace is ready for CCI pods; throws a provider error otherwise. */
  async check(options: CallOptions): Promise<void> {
    if (this.#passed) return;
    const ns = this.#namespace;
    const namespace = await this.#b.request<Namespace>({
      path: `/api/v1/namespaces/${ns}`,
      signal: options.signal,
    }).catch((err) => {
      throw downstreamError(`profile cci: reading namespace ${ns}`, err);
    });
    const flavor = namespace.metadata?.annotations?.[CCI_FLAVOR_ANNOTATION];
    if (!flavor || !FLAVORS.includes(flavor)) {
      throw new InvalidInputError(
        `profile cci: namespace ${ns} has ${CCI_FLAVOR_ANNOTATION}=${flavor ?? "(none)"}; ` +
          `CCI runs pods only in a namespace created with ${FLAVORS.join(" or ")}`,
      );
    }
    const networks = await this.#b.request<{ items?: unknown[] }>({
      path: `/apis/networking.cci.io/v1beta1/namespaces/${ns}/networks`,
      signal: options.signal,
    }).catch((err) => {
      throw downstreamError(`profile cci: listing the Networks (networking.cci.io) of ${ns}`, err);
    });
    if (!networks.items?.length) {
      throw new InvalidInputError(
        `profile cci: namespace ${ns} has no Network (networking.cci.io/v1beta1); ` +
          "create one mapping it to a VPC subnet before pods can get an address",
      );
    }
    this.#passed = true;
  }
}

/** Records a Normal event on the upstream `pod` saying how the profile changed it (best effort). */
export async function recordShaping(
  upstream: ProviderKubeClient | undefined,
  pod: Pod,
  changes: string[],
  options: { nodeName: string; nowMs: number; signal?: AbortSignal },
): Promise<void> {
  if (!upstream?.events || changes.length === 0) return;
  const m = pod.metadata ?? {};
  const at = formatTime(options.nowMs);
  const event: Event = {
    apiVersion: "v1",
    kind: "Event",
    metadata: { generateName: `${m.name}.`, namespace: m.namespace },
    involvedObject: {
      apiVersion: "v1",
      kind: "Pod",
      namespace: m.namespace,
      name: m.name,
      uid: m.uid,
    },
    type: "Normal",
    reason: "ShapedForCci",
    message: `profile cci: ${changes.join("; ")}`.slice(0, 1024),
    source: { component: "kubelet", host: options.nodeName },
    reportingComponent: "kubelet",
    reportingInstance: options.nodeName,
    firstTimestamp: at,
    lastTimestamp: at,
    count: 1,
  };
  await upstream.events.create(m.namespace!, event, { signal: options.signal }).catch(() => {});
}
