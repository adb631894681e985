/**
 * In-memory fakes for the node tests: a {@link NodeApi} that keeps one Node and one Lease and
 * applies strategic merge patches the way the apiserver does for the fields vkubelet writes,
 * a provider with a switchable ping, and a logger that records what was logged.
 * @module
 */
import type { Node } from "kubernetes-types/core/v1.d.ts";
import type { Lease } from "kubernetes-types/coordination/v1.d.ts";
import { KubeApiError } from "../../../k8s/errors.ts";
import type { Logger } from "../../../base/log.ts";
import type { NodeApi, NodeEvent } from "../../../core/node/mod.ts";
import type { GetNodeOptions } from "../../../core/node/node_api.ts";
import type { Provider } from "../../../provider/mod.ts";

/** A KubeApiError as the apiserver would send it. */
export function apiError(code: number, reason: string, message: string): KubeApiError {
  return new KubeApiError(code, {
    method: "TEST",
    path: "/test",
    status: { kind: "Status", status: "Failure", code, reason, message },
  });
}

type Call = { name: string; at: number; args: unknown[] };

/** A fake apiserver holding one Node and one Lease. */
export class FakeNodeApi implements NodeApi {
  node?: Node;
  lease?: Lease;
  calls: Call[] = [];
  /** Errors to throw, by call name, once each, in order. */
  failures = new Map<string, Error[]>();
  /** Label keys a NodeRestriction-like check refuses (create and patch). */
  restrictedLabels = new Set<string>();
  /** Refuse changes to `spec.taints`, as NodeRestriction does for a node's own credentials. */
  restrictTaints = false;
  /** Events recorded with `createEvent`. */
  events: (NodeEvent & { node: string })[] = [];
  #uid = 0;
  #rv = 0;
  #now: () => number;

  constructor(now: () => number = () => 0) {
    this.#now = now;
  }

  /** Makes the next call of `name` fail with `err`. */
  failNext(name: keyof NodeApi, err: Error): void {
    this.failures.set(name, [...(this.failures.get(name) ?? []), err]);
  }

  /** Calls made, by name. */
  count(name: keyof NodeApi): number {
    return this.calls.filter((c) => c.name === name).length;
  }

  /** Write calls made (create, patch, update). */
  writes(): number {
    return this.calls.filter((c) => /^(create|patch|update)/.test(c.name)).length;
  }

  #enter(name: string, args: unknown[]): void {
    this.calls.push({ name, at: this.#now(), args: structuredClone(args) });
    const queued = this.failures.get(name);
    const err = queued?.shift();
    if (err) throw err;
  }

  #checkLabels(node: Node, old: Node | undefined, create: boolean): void {
    const changed = [...this.restrictedLabels].filter((k) =>
      node.metadata?.labels?.[k] !== old?.metadata?.labels?.[k]
    ).sort();
    if (changed.length === 0) return;
    const name = node.metadata?.name;
    throw apiError(
      403,
      "Forbidden",
      create
        ? `nodes "${name}" is forbidden: node "${name}" is not allowed to set the following labels: ${
          changed.join(", ")
        }`
        : `nodes "${name}" is forbidden: is not allowed to modify labels: ${changed.join(", ")}`,
    );
  }

  getNode(name: string, options: GetNodeOptions = {}): Promise<Node> {
    return this.#async(() => {
      this.#enter("getNode", [name]);
      if (!this.node) throw apiError(404, "NotFound", `nodes "${name}" not found`);
      const node = structuredClone(this.node);
      if (!options.managedFields) delete node.metadata?.managedFields;
      return node;
    });
  }

  /** False acts as an apiserver older than 1.35, which drops `status.declaredFeatures`. */
  knowsDeclaredFeatures = true;

  #dropUnknown(node: Node): Node {
    if (!this.knowsDeclaredFeatures && node.status) {
      delete (node.status as { declaredFeatures?: string[] }).declaredFeatures;
    }
    return node;
  }

  createNode(node: Node): Promise<Node> {
    return this.#async(() => {
      this.#enter("createNode", [node]);
      if (this.node) throw apiError(409, "AlreadyExists", "already exists");
      this.#checkLabels(node, undefined, true);
      this.node = this.#dropUnknown({
        ...structuredClone(node),
        metadata: { ...node.metadata, uid: `uid-${++this.#uid}`, resourceVersion: this.#next() },
      });
      return structuredClone(this.node);
    });
  }

  patchNode(name: string, patch: unknown): Promise<Node> {
    return this.#patch("patchNode", name, patch, false);
  }

  /**
   * A patch on `nodes/<name>` by someone else (`kubectl cordon` is `kubectl`), recorded in
   * `managedFields` under `manager`; not counted in {@link calls}.
   */
  async patchAs(manager: string, patch: unknown): Promise<Node> {
    const before = this.node;
    const written = await this.#patch("patchAs", this.node!.metadata!.name!, patch, false);
    this.calls.pop();
    this.node = withUnschedulableOwner(before!, this.node!, manager);
    return written;
  }

  patchNodeStatus(name: string, patch: unknown): Promise<Node> {
    return this.#patch("patchNodeStatus", name, patch, true);
  }

  #patch(call: string, name: string, patch: unknown, status: boolean): Promise<Node> {
    return this.#async(() => {
      this.#enter(call, [name, patch]);
      if (!this.node) throw apiError(404, "NotFound", `nodes "${name}" not found`);
      const precondition = (patch as Node).metadata?.resourceVersion;
      if (precondition && precondition !== this.node.metadata?.resourceVersion) {
        throw apiError(409, "Conflict", "the object has been modified");
      }
      const next = strategicMerge(this.node, patch) as Node;
      if (status) next.spec = this.node.spec; // The status subresource ignores spec.
      this.#checkLabels(next, this.node, false);
      const taints = (n: Node) => JSON.stringify(n.spec?.taints ?? []);
      if (this.restrictTaints && taints(next) !== taints(this.node)) {
        throw apiError(403, "Forbidden", `node "${name}" is not allowed to modify taints`);
      }
      const written = this.#dropUnknown({
        ...next,
        metadata: { ...next.metadata, resourceVersion: this.#next() },
      });
      const old = this.node;
      this.node = status ? written : withUnschedulableOwner(old, written, "vkubelet");
      const node = structuredClone(this.node);
      delete node.metadata?.managedFields; // As the adapter returns them.
      return node;
    });
  }

  getLease(namespace: string, name: string): Promise<Lease> {
    return this.#async(() => {
      this.#enter("getLease", [namespace, name]);
      if (!this.lease) throw apiError(404, "NotFound", `leases "${name}" not found`);
      return structuredClone(this.lease);
    });
  }

  createLease(lease: Lease): Promise<Lease> {
    return this.#async(() => {
      this.#enter("createLease", [lease]);
      if (this.lease) throw apiError(409, "AlreadyExists", "already exists");
      this.lease = { ...lease, metadata: { ...lease.metadata, resourceVersion: this.#next() } };
      return structuredClone(this.lease);
    });
  }

  updateLease(lease: Lease): Promise<Lease> {
    return this.#async(() => {
      this.#enter("updateLease", [lease]);
      if (!this.lease) throw apiError(404, "NotFound", "not found");
      if (lease.metadata?.resourceVersion !== this.lease.metadata?.resourceVersion) {
        throw apiError(409, "Conflict", "the object has been modified");
      }
      this.lease = { ...lease, metadata: { ...lease.metadata, resourceVersion: this.#next() } };
      return structuredClone(this.lease);
    });
  }

  createEvent(node: string, event: NodeEvent): Promise<void> {
    return this.#async(() => {
      this.#enter("createEvent", [node, event]);
      this.events.push({ node, ...event });
    });
  }

  /** Bumps the lease's resourceVersion, as another writer would. */
  touchLease(): void {
    this.lease = {
      ...this.lease,
      metadata: { ...this.lease!.metadata, resourceVersion: this.#next() },
    };
  }

  #next(): string {
    return String(++this.#rv);
  }

  async #async<T>(body: () => T): Promise<T> {
    await Promise.resolve();
    return body();
  }
}

/**
 * `node` with the `managedFields` owner of `spec.unschedulable` as the apiserver tracks it for
 * an update: the writer takes the field when its value changed, and nobody owns it once it is
 * gone; a write of the value it had changes nothing.
 */
function withUnschedulableOwner(old: Node, node: Node, manager: string): Node {
  const was = old.spec?.unschedulable;
  const now = node.spec?.unschedulable;
  if (was === now) return node;
  const others = (node.metadata?.managedFields ?? []).filter((e) =>
    !("f:unschedulable" in ((e.fieldsV1 as Record<string, object>)?.["f:spec"] ?? {}))
  );
  const owner = now === undefined ? [] : [{
    manager,
    operation: "Update",
    apiVersion: "v1",
    fieldsType: "FieldsV1",
    fieldsV1: { "f:spec": { "f:unschedulable": {} } },
  }];
  return { ...node, metadata: { ...node.metadata, managedFields: [...others, ...owner] } };
}

/**
 * Strategic merge as the apiserver applies it to the fields vkubelet patches: maps merge with
 * `null` deleting, `conditions` merge by `type` (with `$patch: delete`), a list starting with
 * `{$patch: replace}` replaces, any other list replaces.
 */
export function strategicMerge(target: unknown, patch: unknown, key = ""): unknown {
  if (Array.isArray(patch)) {
    if (key === "conditions" && Array.isArray(target)) return mergeByType(target, patch);
    return patch.filter((item) => !(isObject(item) && "$patch" in item));
  }
  if (!isObject(patch)) return patch;
  const out: Record<string, unknown> = isObject(target) ? structuredClone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = strategicMerge(out[k], v, k);
  }
  return out;
}

function mergeByType(target: unknown[], patch: unknown[]): unknown[] {
  const out = structuredClone(target) as Record<string, unknown>[];
  for (const item of patch as Record<string, unknown>[]) {
    const i = out.findIndex((c) => c.type === item.type);
    if (item.$patch === "delete") {
      if (i >= 0) out.splice(i, 1);
    } else if (i >= 0) out[i] = strategicMerge(out[i], item) as Record<string, unknown>;
    else out.push(item);
  }
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A provider whose ping can be made to fail and whose node can change. */
export class FakeNodeProvider
  implements Pick<Provider, "configureNode" | "notifyNodeChanged" | "ping"> {
  pingError?: Error;
  pings = 0;
  capacity: Record<string, string> = { cpu: "8", memory: "32Gi", pods: "100" };
  labels: Record<string, string> = {};
  #notify?: () => void;

  configureNode(node: Node): void {
    node.status!.capacity = { ...this.capacity };
    node.status!.allocatable = { ...this.capacity };
    Object.assign(node.metadata!.labels!, this.labels);
  }

  notifyNodeChanged(callback: () => void): void {
    this.#notify = callback;
  }

  /** Tells the node controller that configureNode would now answer differently. */
  changed(): void {
    this.#notify?.();
  }

  ping(): Promise<void> {
    this.pings++;
    return this.pingError ? Promise.reject(this.pingError) : Promise.resolve();
  }
}

/** One recorded log call. */
export interface LogRecord {
  level: string;
  message: string;
  properties: Record<string, unknown>;
}

/** A logger that records instead of printing; only the methods the node code calls. */
export function recordingLogger(): { log: Logger; records: LogRecord[] } {
  const records: LogRecord[] = [];
  const at = (level: string) => (message: string, properties: Record<string, unknown> = {}) => {
    records.push({ level, message, properties });
  };
  const log = {
    debug: at("debug"),
    info: at("info"),
    warn: at("warning"),
    warning: at("warning"),
    error: at("error"),
    fatal: at("fatal"),
    getChild: () => log,
  } as unknown as Logger;
  return { log, records };
}
