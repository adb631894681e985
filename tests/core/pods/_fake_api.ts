/**
 * In-memory fakes of the API slices in core/pods/api.ts: a tiny "apiserver" for pods with
 * resourceVersions, conflicts, graceful deletion and an informer fed by it; ConfigMaps, Secrets,
 * Services and Events.
 * @module
 */
import type {
  ConfigMap,
  Event,
  PersistentVolumeClaim,
  Pod,
  Secret,
  Service,
} from "kubernetes-types/core/v1.d.ts";
import { KubeApiError } from "../../../k8s/errors.ts";
import type {
  DeleteOptions,
  EventsApi,
  InformerLike,
  InformerOptions,
  MergePatch,
  NamedObjectsApi,
  PodControllerApi,
  PodsApi,
} from "../../../core/pods/api.ts";

type Obj = { metadata?: { name?: string; namespace?: string; resourceVersion?: string } };
const keyOf = (o: Obj) => `${o.metadata?.namespace}/${o.metadata?.name}`;

export function apiError(code: number, reason: string, path = "/fake"): KubeApiError {
  return new KubeApiError(code, { method: "FAKE", path, status: { reason, message: reason } });
}

/** An informer whose contents a test (or a fake apiserver) sets. */
export class FakeInformer<T extends Obj> implements InformerLike<T> {
  readonly synced: Promise<void>;
  #resolve!: () => void;
  #items = new Map<string, T>();
  #handlers = {
    add: new Set<(o: T) => void>(),
    update: new Set<(o: T, old: T) => void>(),
    delete: new Set<(o: T) => void>(),
  };
  #syncOnRun: boolean;
  runs = 0;
  stopped = false;

  constructor(options: { syncOnRun?: boolean } = {}) {
    this.#syncOnRun = options.syncOnRun ?? true;
    this.synced = new Promise((r) => this.#resolve = r);
  }

  readonly store = {
    list: () => [...this.#items.values()],
    getByKey: (key: string) => this.#items.get(key),
  };

  on(event: "add" | "update" | "delete", handler: (o: T, old: T) => void): () => void {
    const set = this.#handlers[event] as Set<(o: T, old: T) => void>;
    set.add(handler);
    return () => set.delete(handler);
  }

  /** Marks the informer synced (initial list delivered). */
  sync(): void {
    this.#resolve();
  }

  async run(signal: AbortSignal): Promise<void> {
    this.runs++;
    if (this.#syncOnRun) this.sync();
    if (!signal.aborted) {
      await new Promise<void>((r) => signal.addEventListener("abort", () => r(), { once: true }));
    }
    this.stopped = true;
  }

  /** Stores an object and tells the handlers; `silent` stores it as if its event were lost. */
  set(object: T, options: { silent?: boolean } = {}): void {
    const key = keyOf(object);
    const old = this.#items.get(key);
    this.#items.set(key, structuredClone(object));
    if (options.silent) return;
    if (old) { for (const h of this.#handlers.update) h(structuredClone(object), old); }
    else for (const h of this.#handlers.add) h(structuredClone(object));
  }

  remove(object: T): void {
    const key = keyOf(object);
    const old = this.#items.get(key);
    if (!old) return;
    this.#items.delete(key);
    for (const h of this.#handlers.delete) h(old);
  }
}

/** A fake apiserver for pods; every write reaches the informer at once. */
export class FakePodsApi implements PodsApi {
  pods = new Map<string, Pod>();
  informerInstance: FakeInformer<Pod>;
  #rv = 1;
  statusWrites: Pod[] = [];
  deletes: { key: string; options: DeleteOptions }[] = [];
  /** Makes the next N status writes fail with 409, as if another writer got there first. */
  conflictsToInject = 0;
  /** Delivers writes to the informer; off to simulate a lost watch event. */
  deliver = true;
  /** Holds watch events back until {@link catchUp}, as a watch that lags behind the writes. */
  lagging = false;
  #held: (() => void)[] = [];

  constructor(options: { syncOnRun?: boolean } = {}) {
    this.informerInstance = new FakeInformer<Pod>(options);
  }

  informer(_options: InformerOptions): InformerLike<Pod> {
    return this.informerInstance;
  }

  /** Creates or replaces a pod as another client would (bumps resourceVersion, defaults uid). */
  put(pod: Pod): Pod {
    const stored = structuredClone(pod);
    stored.metadata = {
      ...stored.metadata,
      uid: stored.metadata?.uid ?? crypto.randomUUID(),
      resourceVersion: String(++this.#rv),
    };
    this.pods.set(keyOf(stored), stored);
    if (this.deliver) this.#watch(() => this.informerInstance.set(stored));
    return structuredClone(stored);
  }

  /** Watch events held back while {@link lagging}. */
  get heldEvents(): number {
    return this.#held.length;
  }

  /** Delivers the oldest `count` watch events held back while {@link lagging}. */
  catchUp(count = Infinity): void {
    for (const deliver of this.#held.splice(0, count)) deliver();
  }

  #watch(deliver: () => void): void {
    if (this.lagging) this.#held.push(deliver);
    else deliver();
  }

  /** Deletes as the apiserver does after grace: the object is gone. */
  #remove(key: string): void {
    const pod = this.pods.get(key);
    this.pods.delete(key);
    if (pod && this.deliver) this.#watch(() => this.informerInstance.remove(pod));
  }

  get(namespace: string, name: string): Promise<Pod> {
    const pod = this.pods.get(`${namespace}/${name}`);
    if (!pod) return Promise.reject(apiError(404, "NotFound"));
    return Promise.resolve(structuredClone(pod));
  }

  updateStatus(pod: Pod): Promise<Pod> {
    const key = keyOf(pod);
    const current = this.pods.get(key);
    if (!current) return Promise.reject(apiError(404, "NotFound"));
    if (this.conflictsToInject > 0) {
      this.conflictsToInject--;
      // Someone else wrote meanwhile: bump the version.
      this.put(current);
      return Promise.reject(apiError(409, "Conflict"));
    }
    if (pod.metadata?.resourceVersion !== current.metadata?.resourceVersion) {
      return Promise.reject(apiError(409, "Conflict"));
    }
    this.statusWrites.push(structuredClone(pod));
    return Promise.resolve(this.put({ ...current, status: structuredClone(pod.status) }));
  }

  delete(namespace: string, name: string, options: DeleteOptions = {}): Promise<unknown> {
    const key = `${namespace}/${name}`;
    this.deletes.push({ key, options });
    const pod = this.pods.get(key);
    if (!pod) return Promise.reject(apiError(404, "NotFound"));
    if (options.preconditions?.uid && options.preconditions.uid !== pod.metadata?.uid) {
      return Promise.reject(apiError(409, "Conflict"));
    }
    this.#remove(key);
    return Promise.resolve({});
  }

  /** `kubectl delete --grace-period=N`: sets deletionTimestamp, keeps the object. */
  requestDeletion(key: string, graceSeconds: number, now: number): void {
    const pod = structuredClone(this.pods.get(key)!);
    pod.metadata = {
      ...pod.metadata,
      deletionTimestamp: new Date(now + graceSeconds * 1000).toISOString().slice(0, 19) + "Z",
      deletionGracePeriodSeconds: graceSeconds,
    };
    this.put(pod);
  }
}

/** ConfigMaps or Secrets held in a map, with a per-name informer. */
export class FakeNamedObjects<T extends Obj> implements NamedObjectsApi<T> {
  objects = new Map<string, T>();
  informers: { namespace: string; name: string; informer: FakeInformer<T> }[] = [];
  gets = 0;

  get(namespace: string, name: string): Promise<T> {
    this.gets++;
    const found = this.objects.get(`${namespace}/${name}`);
    return found
      ? Promise.resolve(structuredClone(found))
      : Promise.reject(apiError(404, "NotFound"));
  }

  informer(options: InformerOptions): InformerLike<T> {
    const name = options.fieldSelector!.replace(/^metadata\.name=/, "");
    const informer = new FakeInformer<T>();
    const found = this.objects.get(`${options.namespace}/${name}`);
    if (found) informer.set(found);
    this.informers.push({ namespace: options.namespace!, name, informer });
    return informer;
  }

  /** Creates or changes an object and tells the informers watching it. */
  put(object: T): void {
    const key = keyOf(object);
    this.objects.set(key, structuredClone(object));
    for (const w of this.informers) {
      if (`${w.namespace}/${w.name}` === key) w.informer.set(object);
    }
  }

  /** Watches still open (informers whose run has not ended). */
  get watching(): string[] {
    return this.informers.filter((w) => w.informer.runs > 0 && !w.informer.stopped).map((w) =>
      `${w.namespace}/${w.name}`
    );
  }
}

/** Events created and patched. */
export class FakeEventsApi implements EventsApi {
  events = new Map<string, Event>();
  patches: { name: string; body: unknown }[] = [];
  failNext = 0;

  create(namespace: string, event: Event): Promise<Event> {
    if (this.failNext > 0) {
      this.failNext--;
      return Promise.reject(apiError(500, "InternalError"));
    }
    const stored = { ...structuredClone(event), metadata: { ...event.metadata, namespace } };
    this.events.set(stored.metadata!.name!, stored);
    return Promise.resolve(stored);
  }

  patch(_namespace: string, name: string, options: MergePatch): Promise<Event> {
    const event = this.events.get(name);
    if (!event) return Promise.reject(apiError(404, "NotFound"));
    this.patches.push({ name, body: options.body });
    Object.assign(event, options.body);
    return Promise.resolve(structuredClone(event));
  }

  /** Events with this reason, for any object. */
  withReason(reason: string): Event[] {
    return [...this.events.values()].filter((e) => e.reason === reason);
  }
}

/** A full fake of {@link PodControllerApi}. */
export class FakeApi implements PodControllerApi {
  pods: FakePodsApi;
  configMaps = new FakeNamedObjects<ConfigMap>();
  secrets = new FakeNamedObjects<Secret>();
  persistentVolumeClaims = new FakeNamedObjects<PersistentVolumeClaim>();
  serviceInformer = new FakeInformer<Service>();
  services = { informer: () => this.serviceInformer };
  events = new FakeEventsApi();

  constructor(options: { syncOnRun?: boolean } = {}) {
    this.pods = new FakePodsApi(options);
  }
}
