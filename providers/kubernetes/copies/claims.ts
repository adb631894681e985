/**
 * `persistentVolumeClaims: copy`: every claim a forwarded pod uses gets a copy in B (named by
 * Placement, the configured `storageClassName`, the claim's access modes, volume mode and
 * request, marked with the virtual node and the claim's uid), created before the pod. B's
 * scheduler then binds it as B's StorageClass says (at once, or for its first pod with
 * WaitForFirstConsumer), so the pod is not held here: a copy that never binds leaves the pod
 * Pending in B, and `unschedulableTimeout` fails it upstream.
 *
 * The copy outlives the pods, as a StatefulSet's claims do: a pod of the same claim finds the
 * copy (and its data) again. It is deleted when A's claim is deleted (also when that happened
 * while vkubelet was away: copies whose claim A no longer has go once both caches have synced),
 * so this needs `list`/`watch` on A's claims. With `upstreamProvisioner`, A's claims selected
 * for this node are bound here too (`./upstream_provisioner.ts`).
 * @module
 */
import type { PersistentVolumeClaim, Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type Informer,
  isAlreadyExists,
  isConflict,
  isKubeNotFound,
  type KubeClient,
} from "../../../k8s/mod.ts";
import {
  type CallOptions,
  type Clock,
  InvalidInputError,
  type Logger,
  podKey,
  type ProviderKubeClient,
  type ProviderObjectApi,
  TransientError,
} from "../../../provider/mod.ts";
import { markLabels, MARKS, nodeSelector } from "../names.ts";
import type { Placement } from "../placement.ts";
import { UpstreamProvisioner } from "./upstream_provisioner.ts";
import type { KubernetesConfig } from "../config.ts";

/** What the copies need. */
export interface ClaimCopiesDeps {
  /** A's claims: list and watch in every namespace (rights beyond a kubelet's). */
  upstream: ProviderObjectApi<PersistentVolumeClaim>;
  downstream: KubeClient;
  placement: Placement;
  nodeName: string;
  /** The copies' StorageClass in B; B's default class when absent. */
  storageClassName?: string;
  provisioner?: UpstreamProvisioner;
  /** False while this replica stands by (`--leader-elect`): it deletes nothing then. */
  leading: () => boolean;
  /** B's namespace lost its last copy (with `namespaces: same` it may go now). */
  onNamespaceEmptied: (namespace: string) => void;
  log: Logger;
}

/** What {@link claimCopiesFor} needs besides the config. */
export type ClaimCopiesOptions =
  & Omit<ClaimCopiesDeps, "upstream" | "provisioner" | "storageClassName">
  & {
    upstream: ProviderKubeClient;
    /** The virtual node's `kubernetes.io/hostname` label. */
    hostname: () => string;
    clock: Clock;
    signal: AbortSignal;
  };

/**
 * The copies for `persistentVolumeClaims: copy` (with A's provisioner when
 * `upstreamProvisioner` is set), or `undefined` in the other modes.
 */
export function claimCopiesFor(
  config: Pick<
    KubernetesConfig,
    "persistentVolumeClaims" | "storageClassName" | "upstreamProvisioner"
  >,
  options: ClaimCopiesOptions,
): ClaimCopies | undefined {
  if (config.persistentVolumeClaims !== "copy") return undefined;
  const { upstream, hostname, clock, signal, ...rest } = options;
  if (!upstream.persistentVolumeClaims) {
    throw new InvalidInputError(
      "persistentVolumeClaims: copy needs a client of cluster A that reads PersistentVolumeClaims",
    );
  }
  let provisioner: UpstreamProvisioner | undefined;
  if (config.upstreamProvisioner) {
    if (!upstream.persistentVolumes) {
      throw new InvalidInputError(
        "upstreamProvisioner needs a client of cluster A that writes PersistentVolumes",
      );
    }
    provisioner = new UpstreamProvisioner({
      volumes: upstream.persistentVolumes,
      provisioner: config.upstreamProvisioner,
      nodeName: rest.nodeName,
      hostname,
      placement: rest.placement,
      clock,
      log: rest.log,
      signal,
    });
  }
  return new ClaimCopies({
    ...rest,
    upstream: upstream.persistentVolumeClaims,
    storageClassName: config.storageClassName,
    provisioner,
  });
}

/** A's claims copied to B; see the module doc. */
export class ClaimCopies {
  readonly #deps: ClaimCopiesDeps;
  /** A's claims by `namespace/name`. */
  readonly #upstream = new Map<string, PersistentVolumeClaim>();
  readonly #upstreamInformer;
  readonly #copies: Informer<PersistentVolumeClaim>;

  constructor(deps: ClaimCopiesDeps) {
    this.#deps = deps;
    this.#upstreamInformer = deps.upstream.informer({ name: "upstream claims" });
    this.#copies = deps.downstream.persistentVolumeClaims.informer({
      namespace: deps.placement.watched,
      labelSelector: nodeSelector(deps.nodeName),
      name: "claim copies",
    });
    for (const event of ["add", "update"] as const) {
      this.#upstreamInformer.on(event, (c: PersistentVolumeClaim) => {
        this.#upstream.set(podKey(c.metadata?.namespace, c.metadata?.name), c);
        if (deps.leading()) deps.provisioner?.observe(c);
      });
    }
    this.#copies.on("delete", (c: PersistentVolumeClaim) => {
      const namespace = c.metadata!.namespace!;
      if (deps.leading() && !this.holds(namespace)) deps.onNamespaceEmptied(namespace);
    });
    this.#upstreamInformer.on("delete", (c: PersistentVolumeClaim) => {
      const k = podKey(c.metadata?.namespace, c.metadata?.name);
      if (this.#upstream.get(k)?.metadata?.uid === c.metadata?.uid) this.#upstream.delete(k);
      if (!deps.leading()) return;
      void this.#removeCopiesOf(c.metadata?.uid);
      deps.provisioner?.release(c).catch((err) =>
        deps.log.warn("could not delete the volume of claim {claim} in A: {err}", {
          claim: k,
          err: String(err),
        })
      );
    });
  }

  /** Runs both caches; once both synced, removes the copies of claims A no longer has. */
  async run(signal: AbortSignal): Promise<void> {
    const running = [this.#upstreamInformer.run(signal), this.#copies.run(signal)];
    const synced = Promise.all([this.#upstreamInformer.synced, this.#copies.synced]);
    await Promise.race([synced, Promise.all(running)]);
    if (!signal.aborted && this.#deps.leading()) {
      const uids = new Set([...this.#upstream.values()].map((c) => c.metadata?.uid));
      const stale = this.#copies.store.list()
        .map((c) => c.metadata?.labels?.[MARKS.uid])
        .filter((uid) => uid && !uids.has(uid));
      for (const uid of new Set(stale)) await this.#removeCopiesOf(uid);
    }
    await Promise.allSettled(running);
  }

  /** `--leader-elect`: a new term; claims that waited for a provisioner meanwhile get one now. */
  resume(): void {
    for (const claim of this.#upstream.values()) this.#deps.provisioner?.observe(claim);
  }

  /** True when B's `namespace` holds a copy (it must stay while A has the claim). */
  holds(namespace: string): boolean {
    return this.#copies.store.list().some((c) => c.metadata?.namespace === namespace);
  }

  /**
   * Makes sure B has a copy of each of `pod`'s claims `claims` (names in A) before the pod is
   * created there: throws {@link TransientError} while A's claim is not readable yet or an
   * older copy is being removed, {@link InvalidInputError} when B has a claim of that name
   * that is not a copy.
   */
  async ensure(pod: Pod, claims: string[], options: CallOptions): Promise<void> {
    const namespace = pod.metadata!.namespace!;
    for (const claim of new Set(claims)) {
      const source = this.#upstream.get(podKey(namespace, claim)) ??
        await this.#deps.upstream.get(namespace, claim, options).catch(() => undefined);
      if (!source) {
        throw new TransientError(`PersistentVolumeClaim ${namespace}/${claim} not found in A`);
      }
      await this.#ensureOne(source, options);
    }
  }

  async #ensureOne(source: PersistentVolumeClaim, options: CallOptions): Promise<void> {
    const { namespace, name, uid } = source.metadata as Record<string, string>;
    const { placement, downstream } = this.#deps;
    const where = placement.namespaceOf(namespace), copyName = placement.nameOf(namespace, name);
    const what = `the copy ${where}/${copyName} in B of PersistentVolumeClaim ${namespace}/${name}`;
    const api = downstream.persistentVolumeClaims;
    const existing = this.#copies.store.get(where, copyName) ??
      await api.get(where, copyName, options).catch((err) => {
        if (isKubeNotFound(err)) return undefined;
        throw new TransientError(`reading ${what}: ${err}`, { cause: err });
      });
    if (existing) {
      const labels = existing.metadata?.labels ?? {};
      if (labels[MARKS.uid] === uid) return; // the same claim: its data is there
      if (labels[MARKS.node] !== markLabels(this.#deps.nodeName, "")[MARKS.node]) {
        throw new InvalidInputError(
          `B already has a PersistentVolumeClaim ${where}/${copyName} that this virtual node did not copy; ` +
            `remove or rename it in B to run pods of claim ${namespace}/${name} here`,
        );
      }
      // A copy of an older claim of that name, deleted in A: its data goes with it.
      await this.#delete(existing);
      throw new TransientError(`${what} holds a deleted claim's volume; removing it first`, {
        retryAfterMs: 2000,
      });
    }
    const copy: PersistentVolumeClaim = {
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      metadata: {
        name: copyName,
        namespace: where,
        labels: { ...markLabels(this.#deps.nodeName, namespace, uid), [MARKS.role]: "claim" },
        annotations: { [MARKS.name]: name },
      },
      spec: {
        accessModes: source.spec?.accessModes,
        volumeMode: source.spec?.volumeMode,
        resources: { requests: source.spec?.resources?.requests },
        ...(this.#deps.storageClassName ? { storageClassName: this.#deps.storageClassName } : {}),
      },
    };
    try {
      await api.create(where, copy, { signal: options.signal });
    } catch (err) {
      if (isAlreadyExists(err)) throw new TransientError(`${what} appeared meanwhile`);
      throw new TransientError(`creating ${what}: ${err}`, { cause: err });
    }
  }

  async #removeCopiesOf(uid: string | undefined): Promise<void> {
    if (!uid) return;
    const copies = this.#copies.store.list().filter((c) => c.metadata?.labels?.[MARKS.uid] === uid);
    for (const copy of copies) {
      await this.#delete(copy).catch((err) =>
        this.#deps.log.warn("could not delete claim copy {claim} in B: {err}", {
          claim: podKey(copy.metadata?.namespace, copy.metadata?.name),
          err: String(err),
        })
      );
    }
  }

  async #delete(copy: PersistentVolumeClaim): Promise<void> {
    await this.#deps.downstream.persistentVolumeClaims.delete(
      copy.metadata!.namespace!,
      copy.metadata!.name!,
      { preconditions: { uid: copy.metadata?.uid } },
    ).catch((err) => {
      if (!isKubeNotFound(err) && !isConflict(err)) throw err;
    });
  }
}
