/**
 * The logger a provider is given: one line per call, a message in sentence case and structured
 * properties with stable keys (`pod: "ns/name"`, `err`). vkubelet passes its own logger, which
 * has more to it; a provider needs no more than this, and a test can pass any object of this shape.
 * @module
 */

/** Structured properties of one log line. */
export type LogProperties = Record<string, unknown>;

/**
 * A logger by severity.
 *
 * @example Logging a pod's failure with its key
 * ```ts
 * import type { Logger } from "@vkubelet/vkubelet/provider";
 *
 * function reportFailure(log: Logger, pod: string, err: unknown): void {
 *   log.warn("pod failed to start", { pod, err });
 * }
 * ```
 */
export interface Logger {
  /** Detail for whoever debugs the provider. */
  debug(message: string, properties?: LogProperties): void;
  /** Something an operator may want to know happened. */
  info(message: string, properties?: LogProperties): void;
  /** Something went wrong and was handled (retried, reported on the pod). */
  warn(message: string, properties?: LogProperties): void;
  /** The same as {@link Logger.warn}. */
  warning(message: string, properties?: LogProperties): void;
  /** Something went wrong that needs an operator. */
  error(message: string, properties?: LogProperties): void;
}
