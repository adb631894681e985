/**
 * The options bag every long or I/O-bound call takes: an abort signal, which the call honours
 * promptly. One definition for the whole tree; bags of more options extend it.
 * @module
 */

/** Options that carry only an abort signal. */
export interface SignalOptions {
  /** Aborts the call; it then rejects promptly. */
  signal?: AbortSignal;
}
