/**
 * `gateway`: the agent that carries the node's pods' streams, deployed in B with least privilege:
 * its namespace (created if absent, marked as the provider marks its namespaces), a
 * ServiceAccount whose token is never mounted and that no Role names, a Secret with the agent's
 * credential (given as `VKUBELET_AGENT_CREDENTIAL` by secretKeyRef, never on the command line),
 * and a Deployment of one replica running the gateway's `agentCommand` in the config's image.
 * The pod template carries the credential's SHA-256, so a new credential replaces the pod. On
 * start the Secret's credential is handed to `gateway()`, so a restart keeps the running gateway.
 * Kept in step by watches of the Deployment (recreated if deleted), of the Secret and of the
 * gateway's pod, whose IP in B is every reflected Service's endpoint. Deleting the Secret revokes
 * the credential (say it leaked): vkubelet issues a new one, ends the old one's session and writes
 * the Secret and the Deployment again (a new gateway pod).
 * @module
 */
import type { Deployment } from "kubernetes-types/apps/v1.d.ts";
import type { PodTemplateSpec, Secret, ServiceAccount } from "kubernetes-types/core/v1.d.ts";
import {
  isAlreadyExists,
  isKubeNotFound,
  type KubeClient,
  NamespacedApi,
} from "../../../k8s/mod.ts";
import type { Clock, Logger, PodNetworkGateway, PodNetworkHandle } from "../../../provider/mod.ts";
import type { KubernetesConfig } from "../config.ts";
import { markLabels, MARKS } from "../names.ts";

/** Label of the gateway's objects and pod: the node (as a label value) it carries. */
export const GATEWAY_LABEL = "vkubelet.io/gateway";
/** Pod-template annotation: the credential's SHA-256 (hex). */
export const CREDENTIAL_HASH = "vkubelet.io/credential-sha256";
/** Deployment annotation: the SHA-256 of the template vkubelet wrote (B defaults its fields). */
export const TEMPLATE_HASH = "vkubelet.io/template-sha256";
/** The Secret's key holding the credential. */
export const CREDENTIAL_KEY = "credential";

/** What {@link GatewayDeployment} needs. */
export interface GatewayDeploymentOptions {
  config: NonNullable<KubernetesConfig["gateway"]>;
  /** The forwarded pods' node selection in B: the gateway runs on the same nodes. */
  placement: Pick<KubernetesConfig, "nodeSelector" | "tolerations">;
  downstream: KubeClient;
  podNetwork: Pick<Required<PodNetworkHandle>, "gateway">;
  nodeName: string;
  clock: Clock;
  log: Logger;
  /** Told the gateway pod's IP in B whenever it changes (undefined: none now). */
  onAddress: (address: string | undefined) => void;
}

/** The gateway's objects in B, kept in step; {@link gateway} once they are written. */
export class GatewayDeployment {
  readonly #o: GatewayDeploymentOptions;
  readonly #deployments: NamespacedApi<Deployment>;
  readonly #ready = Promise.withResolvers<PodNetworkGateway>();
  #gateway?: PodNetworkGateway;
  #wanted?: Deployment;
  #address?: string;
  /** Rewrites of the objects, one at a time. */
  #pending: Promise<void> = Promise.resolve();

  constructor(options: GatewayDeploymentOptions) {
    this.#o = options;
    this.#deployments = new NamespacedApi(options.downstream, {
      group: "apps",
      version: "v1",
      plural: "deployments",
    });
    this.#ready.promise.catch(() => {}); // awaited by callers with their own signal
  }

  /** The gateway, once its objects are in B. */
  get gateway(): Promise<PodNetworkGateway> {
    return this.#ready.promise;
  }

  /** The names of the gateway's objects in B (Deployment, ServiceAccount, Secret). */
  get name(): string {
    return `gateway-${this.#label}`;
  }

  get namespace(): string {
    return this.#o.config.namespace;
  }

  /** Writes the objects (retrying with backoff), then keeps them and the pod's IP in step. */
  async run(signal: AbortSignal): Promise<void> {
    for (let delay = 1000; !signal.aborted; delay = Math.min(delay * 2, 30_000)) {
      try {
        await this.#ensure(signal);
        break;
      } catch (err) {
        if (signal.aborted) return;
        this.#o.log.warn("could not deploy the gateway in B, retrying: {err}", {
          err: String(err),
        });
        await this.#o.clock.sleep(delay, signal).catch(() => {});
      }
    }
    if (signal.aborted) return;
    this.#ready.resolve(this.#gateway!);
    await Promise.all([
      this.#watchPods(signal),
      this.#watchDeployment(signal),
      this.#watchSecret(signal),
    ]);
    await this.#pending;
  }

  get #label(): string {
    return markLabels(this.#o.nodeName, "")[MARKS.node];
  }

  async #ensure(signal: AbortSignal): Promise<void> {
    const b = this.#o.downstream;
    const { namespace, name } = this;
    // Read first: an admin may have made it (and granted no create).
    const exists = await b.namespaces.get(namespace, { signal }).then(() => true, (err) => {
      if (isKubeNotFound(err)) return false;
      throw err;
    });
    if (!exists) {
      await b.namespaces.create({
        apiVersion: "v1",
        kind: "Namespace",
        metadata: { name: namespace, labels: { [MARKS.node]: this.#label } },
      }, { signal }).catch((err) => {
        if (!isAlreadyExists(err)) throw err;
      });
    }
    const secret = await b.secrets.get(namespace, name, { signal }).catch((err) => {
      if (isKubeNotFound(err)) return undefined;
      throw err;
    });
    const encoded = secret?.data?.[CREDENTIAL_KEY];
    const kept = encoded ? new TextDecoder().decode(decodeBase64(encoded)) : undefined;
    // No Secret (deleted to revoke the credential, say): a new credential, the old one revoked.
    if (!this.#gateway || kept === undefined) {
      this.#gateway = await this.#o.podNetwork.gateway({ credential: kept });
    }
    const credential = this.#gateway.agentCredential;
    if (kept !== credential) await this.#writeSecret(secret, credential, signal);
    await createIfAbsent(b.serviceAccounts, namespace, this.#serviceAccount(), signal);
    this.#wanted = await this.#deployment(await sha256(credential));
    const current = await this.#deployments.get(namespace, name, { signal }).catch((err) => {
      if (isKubeNotFound(err)) return undefined;
      throw err;
    });
    if (!current) {
      await this.#deployments.create(namespace, this.#wanted, { signal });
    } else if (this.#differs(current)) {
      await this.#deployments.patch(namespace, name, { type: "merge", body: this.#wanted, signal });
    }
  }

  /** True when B's Deployment is not the one last written (by its template's hash). */
  #differs(current: Deployment): boolean {
    const wanted = this.#wanted?.metadata?.annotations?.[TEMPLATE_HASH];
    return current.metadata?.annotations?.[TEMPLATE_HASH] !== wanted ||
      current.spec?.replicas !== 1;
  }

  async #writeSecret(current: Secret | undefined, credential: string, signal: AbortSignal) {
    const secret: Secret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: this.name, namespace: this.namespace, labels: this.#labels() },
      type: "Opaque",
      data: { [CREDENTIAL_KEY]: btoa(credential) },
    };
    const api = this.#o.downstream.secrets;
    if (current) {
      await api.update({ ...secret, metadata: { ...current.metadata, ...secret.metadata } }, {
        signal,
      });
    } else {
      await api.create(this.namespace, secret, { signal });
    }
  }

  #labels(): Record<string, string> {
    return { [MARKS.node]: this.#label, [GATEWAY_LABEL]: this.#label };
  }

  #serviceAccount(): ServiceAccount {
    return {
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: this.name, namespace: this.namespace, labels: this.#labels() },
      automountServiceAccountToken: false,
    };
  }

  /** The Deployment; `hash` is the credential's SHA-256, so a new one rolls the pod. */
  async #deployment(hash: string): Promise<Deployment> {
    const { config, placement } = this.#o;
    const labels = { [GATEWAY_LABEL]: this.#label };
    const template: PodTemplateSpec = {
      // Not the virtual-node label: the provider's informer of its forwarded pods selects by it.
      metadata: { labels, annotations: { [CREDENTIAL_HASH]: hash } },
      spec: {
        serviceAccountName: this.name,
        automountServiceAccountToken: false,
        enableServiceLinks: false,
        nodeSelector: Object.keys(placement.nodeSelector).length
          ? placement.nodeSelector
          : undefined,
        tolerations: placement.tolerations.length ? placement.tolerations : undefined,
        containers: [{
          name: "gateway",
          image: config.image,
          command: this.#gateway!.agentCommand,
          env: [{
            name: "VKUBELET_AGENT_CREDENTIAL",
            valueFrom: { secretKeyRef: { name: this.name, key: CREDENTIAL_KEY } },
          }],
          resources: config.resources,
          // It dials out and listens on ports from 20000 up: no capability needed. The user is
          // the image's (vkubelet's image: 65532).
          securityContext: {
            allowPrivilegeEscalation: false,
            capabilities: { drop: ["ALL"] },
            seccompProfile: { type: "RuntimeDefault" },
          },
        }],
      },
    };
    return {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: {
        name: this.name,
        namespace: this.namespace,
        labels: this.#labels(),
        annotations: { [TEMPLATE_HASH]: await sha256(JSON.stringify(template)) },
      },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        // One gateway at a time: the tunnel takes one agent per credential.
        strategy: { type: "Recreate" },
        template,
      },
    };
  }

  /** The gateway pod's IP: the running, non-deleted pod's, else none. */
  async #watchPods(signal: AbortSignal): Promise<void> {
    const informer = this.#o.downstream.pods.informer({
      namespace: this.namespace,
      labelSelector: `${GATEWAY_LABEL}=${this.#label}`,
      name: "gateway pod",
    });
    const changed = () => {
      const running = informer.store.list().find((p) =>
        !p.metadata?.deletionTimestamp && p.status?.phase === "Running" && p.status?.podIP
      );
      const address = running?.status?.podIP;
      if (address === this.#address) return;
      this.#address = address;
      this.#o.log.info("the gateway pod in B is at {address}", { address: address ?? "none" });
      this.#o.onAddress(address);
    };
    for (const event of ["add", "update", "delete"] as const) informer.on(event, changed);
    await informer.run(signal);
  }

  /** A deleted or changed Deployment is written again (and its Secret and ServiceAccount). */
  async #watchDeployment(signal: AbortSignal): Promise<void> {
    const informer = this.#deployments.informer({
      namespace: this.namespace,
      fieldSelector: `metadata.name=${this.name}`,
      name: "gateway deployment",
    });
    informer.on("delete", () => this.#again(signal));
    informer.on("update", (d: Deployment) => {
      if (this.#differs(d)) this.#again(signal);
    });
    await informer.run(signal);
  }

  /** A deleted Secret: a new credential (the old one revoked), the objects written again. */
  async #watchSecret(signal: AbortSignal): Promise<void> {
    const informer = this.#o.downstream.secrets.informer({
      namespace: this.namespace,
      fieldSelector: `metadata.name=${this.name}`,
      name: "gateway secret",
    });
    informer.on("delete", () => {
      this.#o.log.info("the gateway's Secret was deleted in B: issuing a new credential");
      this.#again(signal);
    });
    await informer.run(signal);
  }

  /** The objects written again, after any rewrite under way. */
  #again(signal: AbortSignal): void {
    this.#pending = this.#pending.then(() => this.#ensure(signal)).catch((err) => {
      if (signal.aborted) return;
      this.#o.log.warn("could not restore the gateway in B: {err}", { err: String(err) });
    });
  }
}

async function createIfAbsent<T>(
  api: { create(namespace: string, object: T, options: { signal: AbortSignal }): Promise<T> },
  namespace: string,
  object: T,
  signal: AbortSignal,
): Promise<void> {
  await api.create(namespace, object, { signal }).catch((err) => {
    if (!isAlreadyExists(err)) throw err;
  });
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function decodeBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}
