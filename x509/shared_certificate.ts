/**
 * One certificate source shared by every kubelet API server a process starts: it runs once,
 * from start-up, and each server that starts later gets the newest pair at once. Under
 * `--leader-elect` the serving certificate is thereby obtained (and its CSR approved) while the
 * replica stands by, so a takeover never waits for an approval.
 * @module
 */
import type { CertificateSource, KeyPair } from "./certificate_source.ts";

/** A {@link CertificateSource} started now; `done` settles after `signal` aborts. */
export interface SharedCertificates extends CertificateSource {
  readonly done: Promise<void>;
}

/** Starts `source` now and hands its pairs to every `run` (the newest first). */
export function sharedCertificates(
  source: CertificateSource,
  signal: AbortSignal,
): SharedCertificates {
  let latest: KeyPair | undefined;
  const listeners = new Set<(pair: KeyPair) => void>();
  const done = source.run((pair) => {
    latest = pair;
    for (const listener of listeners) listener(pair);
  }, signal);
  return {
    done,
    async run(onKeyPair, runSignal) {
      if (latest) onKeyPair(latest);
      listeners.add(onKeyPair);
      try {
        await new Promise<void>((resolve) => {
          const both = AbortSignal.any([signal, runSignal]);
          if (both.aborted) return resolve();
          both.addEventListener("abort", () => resolve(), { once: true });
          done.finally(resolve);
        });
      } finally {
        listeners.delete(onKeyPair);
      }
    },
  };
}
