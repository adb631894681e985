/**
 * `HealthMonitor`: pings the provider on a fixed interval and keeps the last answer, so that the
 * lease controller can stop renewing and the node controller can say why Ready is False.
 * This is virtual-kubelet's ping controller (virtual-kubelet/virtual-kubelet
 * node/node_ping_controller.go): one ping in flight at a time, an optional deadline, and
 * consumers read the latest result instead of pinging themselves.
 * @module
 */
import type { Clock } from "../../base/clock.ts";
import type { Logger } from "../../base/log.ts";
import { isBackendUnreachable, type Provider } from "../../provider/mod.ts";
import { withDeadline } from "./_timing.ts";

/** The provider's health as last seen. */
export interface Health {
  healthy: boolean;
  /** Why the last ping failed; absent while healthy. */
  message?: string;
  /** The provider's CamelCase reason (`BackendUnreachableError.reason`), if it gave one. */
  reason?: string;
  /** When the current state began (ms since the epoch, on the injected clock). */
  since: number;
}

/** Something that knows the provider's health; what the node and lease controllers consume. */
export interface HealthSource {
  /** The latest result; healthy until the first ping says otherwise. */
  current(): Health;
  /** Calls `listener` after each change between healthy and unhealthy; returns an unsubscribe. */
  onChange(listener: (health: Health) => void): () => void;
  /** Resolves after the first ping has answered (at once for providers without `ping`). */
  readonly ready: Promise<void>;
}

/** What {@link HealthMonitor} needs. */
export interface HealthMonitorDeps {
  provider: Pick<Provider, "ping">;
  clock: Clock;
  log: Logger;
  /** Time between pings; default 10 s (virtual-kubelet's `DefaultPingInterval`). */
  pingIntervalMs?: number;
  /** A ping that takes longer fails; default the ping interval. */
  pingTimeoutMs?: number;
}

/** Pings the provider until aborted; see the module doc. */
export class HealthMonitor implements HealthSource {
  readonly ready: Promise<void>;
  #deps: HealthMonitorDeps;
  #health: Health;
  #listeners = new Set<(health: Health) => void>();
  #resolveReady!: () => void;

  constructor(deps: HealthMonitorDeps) {
    this.#deps = deps;
    this.#health = { healthy: true, since: deps.clock.now() };
    this.ready = new Promise((resolve) => (this.#resolveReady = resolve));
    if (!deps.provider.ping) this.#resolveReady();
  }

  current(): Health {
    return this.#health;
  }

  onChange(listener: (health: Health) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Pings every interval until `signal` aborts; resolves once the last ping has settled. */
  async run(signal: AbortSignal): Promise<void> {
    const { provider, clock } = this.#deps;
    if (!provider.ping) return;
    const interval = this.#deps.pingIntervalMs ?? 10_000;
    while (!signal.aborted) {
      await this.#pingOnce(signal);
      this.#resolveReady();
      try {
        await clock.sleep(interval, signal);
      } catch {
        break;
      }
    }
  }

  async #pingOnce(signal: AbortSignal): Promise<void> {
    const { provider, clock } = this.#deps;
    const timeout = this.#deps.pingTimeoutMs ?? this.#deps.pingIntervalMs ?? 10_000;
    try {
      await withDeadline(clock, timeout, signal, (s) => provider.ping!({ signal: s }));
      this.#set({ healthy: true, since: clock.now() });
    } catch (err) {
      if (signal.aborted) return;
      const message = err instanceof Error ? err.message : String(err);
      const reason = isBackendUnreachable(err) ? err.reason : undefined;
      this.#set({ healthy: false, message: message || "ping failed", reason, since: clock.now() });
    }
  }

  #set(next: Health): void {
    const previous = this.#health;
    if (previous.healthy === next.healthy && previous.message === next.message) return;
    // A new failure message while already unhealthy keeps `since` but updates the reason.
    this.#health = previous.healthy === next.healthy ? { ...next, since: previous.since } : next;
    if (next.healthy) {
      this.#deps.log.info("provider ping succeeds again", {});
    } else {
      this.#deps.log.warn("provider ping failed: {err}", { err: next.message });
    }
    for (const listener of this.#listeners) listener(this.#health);
  }
}

/** A {@link HealthSource} that is always healthy, for wiring without a monitor. */
export const ALWAYS_HEALTHY: HealthSource = {
  current: () => ({ healthy: true, since: 0 }),
  onChange: () => () => {},
  ready: Promise.resolve(),
};
