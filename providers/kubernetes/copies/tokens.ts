/**
 * `serviceAccountToken: upstream`: the pod in B gets tokens of its service account in A, so it
 * can call A's apiserver as itself. For each forwarded pod that mounts a token, a Secret in B
 * holds one TokenRequest answer of A per projected token source (bound to the upstream pod, so A
 * invalidates it when the pod goes) plus A's namespace; it is renewed at 80 % of its lifetime,
 * as the kubelet renews projected tokens, and the kubelet in B refreshes the mounted files.
 * @module
 */
import type { Pod, Secret } from "kubernetes-types/core/v1.d.ts";
import type { KubeClient } from "../../../k8s/mod.ts";
import type { Clock, Logger, ProviderKubeClient } from "../../../provider/mod.ts";
import { type KindApi, upsert } from "./dependencies.ts";
import { markLabels, MARKS } from "../names.ts";
import type { TokenNeed } from "../translate/translate.ts";
import type { Placement } from "../placement.ts";

/** What {@link TokenMirror} needs. */
export interface TokenMirrorOptions {
  upstream: Pick<ProviderKubeClient, "serviceAccounts">;
  downstream: Pick<KubeClient, "secrets">;
  /** Where the token Secrets go in B. */
  placement: Placement;
  nodeName: string;
  expirationSeconds: number;
  clock: Clock;
  log: Logger;
  signal: AbortSignal;
}

/** Token Secrets of forwarded pods, renewed until the pod goes. */
export class TokenMirror {
  #o: TokenMirrorOptions;
  #renewals = new Map<string, AbortController>();

  constructor(options: TokenMirrorOptions) {
    this.#o = options;
  }

  /** Writes the pod's token Secret now and keeps renewing it until {@link stop}. */
  async start(
    pod: Pod,
    secret: { name: string; needs: TokenNeed[] },
    options: { signal?: AbortSignal } = {},
  ): Promise<void> {
    const key = `${pod.metadata!.namespace}/${pod.metadata!.name}`;
    const renewInMs = await this.#write(pod, secret, options.signal);
    if (this.#renewals.has(key)) return;
    const stop = new AbortController();
    this.#renewals.set(key, stop);
    const signal = AbortSignal.any([stop.signal, this.#o.signal]);
    void this.#renewLoop(pod, secret, renewInMs, signal);
  }

  /** Whether the token Secret of the upstream pod `ns/name` is being renewed. */
  renews(key: string): boolean {
    return this.#renewals.has(key);
  }

  /** Stops renewing and deletes the Secret. */
  async stop(pod: Pod, name: string, options: { signal?: AbortSignal } = {}): Promise<void> {
    const key = `${pod.metadata!.namespace}/${pod.metadata!.name}`;
    this.#renewals.get(key)?.abort();
    this.#renewals.delete(key);
    const namespace = this.#o.placement.namespaceOf(pod.metadata!.namespace!);
    await this.#o.downstream.secrets.delete(namespace, name, options).catch(() => {});
  }

  /** Stops every renewal (vkubelet is shutting down; the Secrets stay for the next run). */
  close(): void {
    for (const stop of this.#renewals.values()) stop.abort();
    this.#renewals.clear();
  }

  async #renewLoop(
    pod: Pod,
    secret: { name: string; needs: TokenNeed[] },
    firstMs: number,
    signal: AbortSignal,
  ): Promise<void> {
    let waitMs = firstMs;
    while (!signal.aborted) {
      if (!await this.#o.clock.sleep(waitMs, signal).then(() => true, () => false)) return;
      try {
        waitMs = await this.#write(pod, secret, signal);
      } catch (err) {
        if (signal.aborted) return;
        this.#o.log.warn("could not renew the token of {pod}: {err}", {
          pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`,
          err: String(err),
        });
        waitMs = 10_000;
      }
    }
  }

  /** Requests the tokens and writes the Secret; answers when to renew, in ms. */
  async #write(
    pod: Pod,
    secret: { name: string; needs: TokenNeed[] },
    signal?: AbortSignal,
  ): Promise<number> {
    const { namespace, name, uid } = pod.metadata!;
    const account = pod.spec?.serviceAccountName || "default";
    const data: Record<string, string> = {};
    let renewMs = Infinity;
    for (const need of secret.needs) {
      if (need.key === "namespace") {
        data.namespace = btoa(namespace!);
        continue;
      }
      const seconds = Math.max(need.expirationSeconds ?? 0, this.#o.expirationSeconds);
      const answer = await this.#o.upstream.serviceAccounts.createToken(namespace!, account, {
        spec: {
          audiences: need.audience ? [need.audience] : [],
          expirationSeconds: seconds,
          boundObjectRef: { apiVersion: "v1", kind: "Pod", name, uid },
        },
      }, { signal });
      data[need.key] = btoa(answer.status?.token ?? "");
      const expires = Date.parse(answer.status?.expirationTimestamp ?? "");
      const lifetimeMs = Number.isNaN(expires) ? seconds * 1000 : expires - this.#o.clock.now();
      renewMs = Math.min(renewMs, Math.max(lifetimeMs * 0.8, 10_000));
    }
    const object: Secret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: secret.name,
        namespace: this.#o.placement.namespaceOf(namespace!),
        labels: { ...markLabels(this.#o.nodeName, namespace!, uid), [MARKS.role]: "token" },
        annotations: { [MARKS.name]: name! },
      },
      type: "Opaque",
      data,
    };
    const api = this.#o.downstream.secrets as unknown as KindApi;
    const where = this.#o.placement.namespaceOf(namespace!);
    await upsert(api, where, object, signal ?? this.#o.signal);
    return Number.isFinite(renewMs) ? renewMs : 3_600_000;
  }
}
