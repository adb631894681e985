/**
 * The zun provider's streams: `kubectl logs` (./logs.ts) and `exec` (./exec.ts) of the
 * container a pod's run is, when the run is a plain Zun container. A capsule's containers have
 * neither in Zun 18.0.0, so those are refused with {@link NO_STREAMS}.
 * @module
 */
import {
  type Clock,
  type ContainerLogOptions,
  type ContainerRef,
  type ExecOptions,
  InvalidInputError,
  NotSupportedError,
  notSupportedText,
  type RemoteLogRuns,
} from "../../../provider/mod.ts";
import type { ZunHandle } from "../status.ts";
import type { ZunApi } from "../client/zun_api.ts";
import { zunExec } from "./exec.ts";
import { zunLogs } from "./logs.ts";

/** The pod's runs, asked when the call comes (it throws for a pod or container not here). */
export type RunsOf = () => RemoteLogRuns<ZunHandle>;

/** Why a capsule's containers have neither logs nor exec. */
export const NO_STREAMS =
  "Zun keeps no logs and runs no exec for a capsule's containers (its /v1/containers/<uuid>/logs and /execute answer 404 for them); a pod with one container and no init containers runs as a plain Zun container, which has both";

/** Logs and exec of the pods' plain containers; see the module doc. */
export class ZunStreams {
  constructor(readonly api: ZunApi, readonly clock: Clock) {}

  /** The container of the current (or, `previous`, the last) run, when a plain one. */
  #container(
    kind: "logs" | "exec",
    ref: ContainerRef,
    runsOf: RunsOf,
    previous = false,
  ): string {
    const runs = runsOf();
    const run = previous ? runs.previous : runs.current;
    if (run?.handle?.kind === "capsule") {
      const what = kind === "logs" ? "logs are not available" : notSupportedText(kind);
      throw new NotSupportedError(`${what}: ${NO_STREAMS}`);
    }
    if (run?.handle) return run.handle.uuid;
    const what = previous ? "has no previous run" : "is not running";
    throw new InvalidInputError(
      `container ${ref.container} of pod ${ref.namespace}/${ref.pod} ${what} on Zun`,
    );
  }

  /** `kubectl logs` of the run's container (the pod's own: `runs` gives its runs). */
  logs(
    ref: ContainerRef,
    runs: RunsOf,
    options: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    try {
      const uuid = this.#container("logs", ref, runs, options.previous);
      const clock = this.clock;
      const deps = { api: this.api, now: () => clock.now(), sleep: clock.sleep.bind(clock) };
      return zunLogs(uuid, options, deps);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** `kubectl exec` in the current run's container; resolves with the exit code. */
  async exec(ref: ContainerRef, runs: RunsOf, options: ExecOptions): Promise<number> {
    return await zunExec(this.api, this.#container("exec", ref, runs), options);
  }
}
