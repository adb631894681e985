/**
 * `NodeController`: registers the Node (or adopts one that exists), then keeps its status true.
 *
 * Every `statusUpdateIntervalMs` (10 s, the kubelet's `nodeStatusUpdateFrequency`) and at once
 * when the provider reports a change or its health changes, it builds the desired Node and
 * reads the server's from the apiserver's cache. It writes only when one of them changed since
 * the last write, or when `statusReportIntervalMs` (1 min, virtual-kubelet's
 * `DefaultStatusUpdateInterval`) passed — the lease is the heartbeat in between. While the
 * provider's ping has failed for longer than `outageGraceMs` (`--provider-outage-grace`), Ready is
 * False with the reason and the status is the heartbeat instead: it is written every update
 * interval, so that the node-lifecycle controller keeps our reason rather than overwriting it with
 * Unknown. Within the grace the node stays Ready, marked unreachable (`./outage.ts`).
 * @module
 */
import type { Node } from "kubernetes-types/core/v1.d.ts";
import { isAlreadyExists, isConflict, isKubeNotFound } from "../../k8s/errors.ts";
import type { Clock } from "../../base/clock.ts";
import type { Logger } from "../../base/log.ts";
import type { Provider } from "../../provider/mod.ts";
import { backoffDelay, Wakeup, withTurnAndDeadline } from "./_timing.ts";
import { raceSignal } from "../../base/cancel.ts";
import { forbiddenLabels } from "./forbidden_labels.ts";
import { OutageMarker, pastGrace } from "./outage.ts";
import { ALWAYS_HEALTHY, type HealthSource } from "./health_monitor.ts";
import { type CallSlots, type NodeApi, type NodeApiClient, nodeApiFromClient } from "./node_api.ts";
import { CORDONED_ANNOTATION, cordonPatch, uncordonPatch } from "./cordon.ts";
import { desiredNode, type NodeTemplateOptions } from "./node_template.ts";
import {
  declaredFeatures,
  nodeForCreate,
  type OwnedKeys,
  ownedKeys,
  ownedView,
  readOwnedKeys,
  statusPatch,
  withoutLabels,
} from "./node_status.ts";

/** What the lease controller needs from the node controller. */
export interface NodeOwner {
  /** Resolves once the Node exists on the server. */
  readonly ready: Promise<void>;
  /** The Node's current uid; it changes when the Node is deleted and registered again. */
  uid(): string | undefined;
}

/** What {@link NodeController} needs; see {@link NodeTemplateOptions} for the Node's fields. */
export interface NodeControllerDeps extends NodeTemplateOptions {
  /** The API, or a `KubeClient` to adapt with {@link nodeApiFromClient}. */
  api?: NodeApi;
  client?: NodeApiClient;
  provider: Pick<Provider, "configureNode" | "notifyNodeChanged" | "observeNode">;
  clock: Clock;
  log: Logger;
  /** The provider's health; default always healthy. */
  health?: HealthSource;
  /** How often the status is checked; default 10 s. */
  statusUpdateIntervalMs?: number;
  /** How often it is written when nothing changed; default 60 s. */
  statusReportIntervalMs?: number;
  /** Register the Node again when someone deletes it; default true. */
  recreateNode?: boolean;
  /** Mark the Node unschedulable when `run` stops; undone on the next start. Default false. */
  cordonOnShutdown?: boolean;
  /** Deadline of each API call, counted from when it gets its turn in `slots`; default 10 s. */
  requestTimeoutMs?: number;
  /** Where the calls wait their turn when many nodes share a client (after lease renewals). */
  slots?: CallSlots;
  /**
   * How long a failing ping leaves the node Ready (tainted, `ProviderReachable=False`) before
   * Ready turns False; default 0, Ready False at once (`--provider-outage-grace`).
   */
  outageGraceMs?: number;
}

/** Registers the Node and keeps its status; see the module doc. */
export class NodeController implements NodeOwner {
  readonly ready: Promise<void>;
  #deps: NodeControllerDeps;
  #api: NodeApi;
  #health: HealthSource;
  #wakeup = new Wakeup();
  #server?: Node;
  #owned?: OwnedKeys;
  #lastApplied?: string;
  #lastServerView?: string;
  #lastWrite = -Infinity;
  #forbidden = new Set<string>();
  #deleted = false;
  #featuresDropped = false;
  #settleReady!: (err?: unknown) => void;
  #outage: OutageMarker;

  constructor(deps: NodeControllerDeps) {
    if (!deps.api && !deps.client) throw new TypeError("NodeController needs api or client");
    this.#deps = deps;
    this.#api = deps.api ?? nodeApiFromClient(deps.client!);
    this.#health = deps.health ?? ALWAYS_HEALTHY;
    this.#outage = new OutageMarker({
      api: this.#api,
      clock: deps.clock,
      log: deps.log,
      nodeName: deps.nodeName,
      graceMs: deps.outageGraceMs ?? 0,
      call: (signal, call) => this.#call(signal, call),
    });
    this.ready = new Promise<void>((resolve, reject) => {
      this.#settleReady = (err) => err === undefined ? resolve() : reject(err);
    });
    this.ready.catch(() => {}); // Rejected only when run stops first; callers may not await it.
  }

  uid(): string | undefined {
    return this.#server?.metadata?.uid;
  }

  /** The Node as the server last returned it. */
  get node(): Node | undefined {
    return this.#server;
  }

  /** Registers, then syncs status until `signal` aborts; then cordons if asked, and resolves. */
  async run(signal: AbortSignal): Promise<void> {
    let running = true;
    const unsubscribe = this.#health.onChange(() => this.#wakeup.wake());
    this.#deps.provider.notifyNodeChanged?.(() => running && this.#wakeup.wake());
    try {
      await raceSignal(this.#health.ready, signal);
      await this.#register(signal);
      this.#settleReady();
      await this.#syncLoop(signal);
    } catch (err) {
      if (!signal.aborted) throw err;
    } finally {
      running = false;
      unsubscribe();
      this.#settleReady(signal.reason ?? new Error("node controller stopped"));
    }
    if (this.#deps.cordonOnShutdown && this.#server) await this.#cordon();
  }

  async #syncLoop(signal: AbortSignal): Promise<void> {
    const interval = this.#deps.statusUpdateIntervalMs ?? 10_000;
    while (!signal.aborted) {
      await this.#wakeup.sleep(this.#deps.clock, interval, signal);
      try {
        await this.#sync(signal);
      } catch (err) {
        if (signal.aborted) return;
        this.#deps.log.error("updating node {node} status failed: {err}", this.#fields(err));
      }
    }
  }

  /** Creates or adopts the Node, retrying with backoff until it works or `signal` aborts. */
  async #register(signal: AbortSignal): Promise<void> {
    for (let attempt = 0;; attempt++) {
      const started = this.#deps.clock.now();
      try {
        const server = await this.#call(signal, (s) => this.#api.getNode(this.#name, { signal: s }))
          .catch((err) => (isKubeNotFound(err) ? undefined : Promise.reject(err)));
        if (server) await this.#adopt(server, signal);
        else await this.#create(signal);
        return;
      } catch (err) {
        if (signal.aborted) throw err;
        const delay = backoffDelay(attempt);
        // The attempt itself may have taken seconds (the client retries reads): say so, so
        // that the time to the next line adds up.
        this.#deps.log.error(
          "registering node {node} failed after {elapsed} ms: {err}; trying again in {delay} ms",
          {
            ...this.#fields(err),
            elapsed: Math.round(this.#deps.clock.now() - started),
            delay: Math.round(delay),
          },
        );
        await this.#deps.clock.sleep(delay, signal);
      }
    }
  }

  async #create(signal: AbortSignal): Promise<void> {
    const desired = await this.#desired();
    for (;;) {
      const body = nodeForCreate(withoutLabels(desired, this.#forbidden), this.#deps.clock.now());
      try {
        const created = await this.#call(signal, (s) => this.#api.createNode(body, { signal: s }));
        this.#recordWrite(withoutLabels(desired, this.#forbidden), created);
        this.#observe(created);
        this.#deps.log.info("registered node {node} (uid {uid})", {
          node: this.#name,
          uid: created.metadata?.uid,
        });
        return;
      } catch (err) {
        if (isAlreadyExists(err)) {
          const server = await this.#call(
            signal,
            (s) => this.#api.getNode(this.#name, { signal: s }),
          );
          return await this.#adopt(server, signal);
        }
        if (!this.#learnForbidden(err)) throw err;
      }
    }
  }

  /**
   * Takes over an existing Node as the kubelet does (kubernetes/kubernetes
   * pkg/kubelet/kubelet_node_status.go `tryRegisterWithAPIServer`): spec stays as it is —
   * `unschedulable` set by an admin, taints others added, providerID — and only labels and
   * status are reconciled. Taints are a registration-time choice: the kubelet's
   * `registerWithTaints` applies only on create, and NodeRestriction forbids a node to change
   * its own taints. A cordon vkubelet itself made on shutdown is undone while it is still ours
   * (`./cordon.ts`).
   */
  async #adopt(server: Node, signal: AbortSignal): Promise<void> {
    this.#server = server;
    this.#observe(server);
    if (server.metadata?.annotations?.[CORDONED_ANNOTATION] !== undefined) {
      this.#server = await this.#uncordon(signal) ?? server;
    }
    this.#deps.log.info("adopting existing node {node} (uid {uid})", {
      node: this.#name,
      uid: server.metadata?.uid,
    });
    await this.#write(await this.#desired(), this.#server!, signal);
  }

  /** Shows the provider the Node as the server has it (its podCIDRs); a throw is logged. */
  #observe(server: Node): void {
    try {
      this.#deps.provider.observeNode?.(server);
    } catch (err) {
      this.#deps.log.warn("the provider could not take node {node} as it is: {err}", {
        node: this.#name,
        err,
      });
    }
  }

  /** One status check: read, compare, and write only if something changed or is due. */
  async #sync(signal: AbortSignal): Promise<void> {
    let server: Node;
    try {
      server = await this.#call(
        signal,
        (s) => this.#api.getNode(this.#name, { signal: s, cached: true }),
      );
    } catch (err) {
      if (!isKubeNotFound(err)) throw err;
      return await this.#nodeDeleted(signal);
    }
    this.#deleted = false;
    this.#server = server;
    this.#observe(server);
    const desired = withoutLabels(await this.#desired(), this.#forbidden);
    const owned = ownedKeys(desired);
    const health = this.#health.current();
    const now = this.#deps.clock.now();
    const heartbeat = pastGrace(health, now, this.#deps.outageGraceMs ?? 0)
      ? this.#deps.statusUpdateIntervalMs ?? 10_000
      : this.#deps.statusReportIntervalMs ?? 60_000;
    const due = now - this.#lastWrite >= heartbeat;
    if (
      due || ownedView(desired, owned) !== this.#lastApplied ||
      ownedView(server, owned) !== this.#lastServerView
    ) await this.#write(desired, server, signal);
    if (!this.#server) return; // Deleted meanwhile (and not registered again).
    const marked = await this.#outage.sync(this.#server, health, signal);
    if (marked) this.#server = marked;
  }

  async #write(desired: Node, server: Node, signal: AbortSignal): Promise<void> {
    for (;;) {
      const wanted = withoutLabels(desired, this.#forbidden);
      const previous = this.#owned ?? readOwnedKeys(server);
      const owned = { ...previous, labels: previous.labels.filter((l) => !this.#forbidden.has(l)) };
      const patch = statusPatch(wanted, server, owned, this.#deps.clock.now());
      try {
        const updated = await this.#call(
          signal,
          (s) => this.#api.patchNodeStatus(this.#name, patch, { signal: s }),
        );
        this.#recordWrite(wanted, updated);
        return;
      } catch (err) {
        if (isKubeNotFound(err)) return await this.#nodeDeleted(signal);
        if (!this.#learnForbidden(err)) throw err;
      }
    }
  }

  #recordWrite(written: Node, server: Node): void {
    let desired = written;
    if (declaredFeatures(desired) && !declaredFeatures(server) && !this.#featuresDropped) {
      // An apiserver older than 1.35 drops the field; asking again would write every cycle.
      this.#featuresDropped = true;
      this.#deps.log.info(
        "the apiserver does not keep status.declaredFeatures (older than 1.35); exec and " +
          "port-forward will reach node {node} over SPDY",
        { node: this.#name },
      );
    }
    if (this.#featuresDropped && declaredFeatures(desired)) {
      // Remember what we will ask for from now on, or the next check sees a difference.
      desired = structuredClone(desired);
      delete (desired.status as { declaredFeatures?: string[] }).declaredFeatures;
    }
    const owned = ownedKeys(desired);
    this.#server = server;
    this.#owned = owned;
    this.#lastApplied = ownedView(desired, owned);
    this.#lastServerView = ownedView(server, owned);
    this.#lastWrite = this.#deps.clock.now();
  }

  /** Someone deleted the Node: register it again (logged), or say once that we will not. */
  async #nodeDeleted(signal: AbortSignal): Promise<void> {
    const first = !this.#deleted;
    this.#deleted = true;
    this.#server = undefined;
    this.#owned = undefined;
    if (this.#deps.recreateNode ?? true) {
      this.#deps.log.warn("node {node} was deleted by someone else; registering it again", {
        node: this.#name,
      });
      await this.#create(signal);
      this.#deleted = false;
    } else if (first) {
      this.#deps.log.error(
        "node {node} was deleted by someone else and recreateNode is off; " +
          "the node stays away until it is created again or vkubelet restarts",
        { node: this.#name },
      );
    }
  }

  /** Records labels a 403 names as forbidden; false if the error was something else. */
  #learnForbidden(err: unknown): boolean {
    const labels = forbiddenLabels(err).filter((l) => !this.#forbidden.has(l));
    if (labels.length === 0) return false;
    for (const label of labels) this.#forbidden.add(label);
    this.#deps.log.warn(
      "the apiserver does not let node {node} set labels {labels} (NodeRestriction); " +
        "continuing without them — an admin can add them with kubectl label node",
      { node: this.#name, labels: labels.join(", ") },
    );
    return true;
  }

  /** Undoes our shutdown cordon, or drops only its annotation if someone cordoned since. */
  async #uncordon(signal: AbortSignal): Promise<Node | undefined> {
    for (;;) {
      const node = await this.#call(
        signal,
        (s) => this.#api.getNode(this.#name, { signal: s, managedFields: true }),
      );
      const undo = uncordonPatch(node, CORDONED_ANNOTATION);
      if (!undo) return undefined;
      try {
        const written = await this.#call(
          signal,
          (s) => this.#api.patchNode(this.#name, undo.patch, { signal: s }),
        );
        this.#deps.log.info(
          undo.undone
            ? "uncordoned node {node}, cordoned at vkubelet's last shutdown"
            : "node {node} stays cordoned: someone set spec.unschedulable after vkubelet " +
              "cordoned it at its last shutdown",
          { node: this.#name },
        );
        return written;
      } catch (err) {
        if (!isConflict(err)) throw err; // Else written meanwhile: decide again.
      }
    }
  }

  async #cordon(): Promise<void> {
    if (this.#server?.spec?.unschedulable) return; // An admin's cordon: not ours to mark.
    const signal = new AbortController().signal;
    const patch = cordonPatch(CORDONED_ANNOTATION, this.#deps.clock.now());
    try {
      await this.#call(signal, (s) => this.#api.patchNode(this.#name, patch, { signal: s }));
      this.#deps.log.info("cordoned node {node} on shutdown", { node: this.#name });
    } catch (err) {
      this.#deps.log.warn("cordoning node {node} on shutdown failed: {err}", this.#fields(err));
    }
  }

  async #desired(): Promise<Node> {
    const node = await desiredNode(this.#deps, this.#deps.provider, this.#health.current(), {
      graceMs: this.#deps.outageGraceMs ?? 0,
      now: this.#deps.clock.now(),
    });
    if (this.#featuresDropped && node.status) {
      delete (node.status as { declaredFeatures?: string[] }).declaredFeatures;
    }
    return node;
  }

  #call<T>(signal: AbortSignal, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const timeout = this.#deps.requestTimeoutMs ?? 10_000;
    return withTurnAndDeadline(this.#deps.slots, false, this.#deps.clock, timeout, signal, call);
  }

  get #name(): string {
    return this.#deps.nodeName;
  }

  #fields(err: unknown): Record<string, unknown> {
    return { node: this.#name, err: err instanceof Error ? err.message : String(err) };
  }
}
