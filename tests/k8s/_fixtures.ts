/**
 * Helpers shared by the k8s unit tests: temporary folders, fake PEM blocks, a recording clock.
 * @module
 */
import type { Clock } from "../../base/clock.ts";

/** A syntactically PEM-shaped block; enough for parsing, never used for TLS. */
export function fakePem(label: string, body = "ZmFrZQ=="): string {
  return `-----BEGIN ${label}-----\n${body}\n-----END ${label}-----\n`;
}

/** Base64 of a string, as kubeconfig `*-data` fields hold it. */
export function b64(text: string): string {
  return btoa(text);
}

/** A temporary folder removed when the returned object is disposed. */
export async function tempDir(): Promise<{ path: string } & AsyncDisposable> {
  const path = await Deno.makeTempDir({ prefix: "vk-k8s-test-" });
  return {
    path,
    [Symbol.asyncDispose]: () => Deno.remove(path, { recursive: true }),
  };
}

/** A clock with real `now()` whose sleeps end at once and are recorded (milliseconds). */
export class RecordingClock implements Clock {
  readonly sleeps: number[] = [];
  now(): number {
    return Date.now();
  }
  monotonic(): number {
    return performance.now();
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    this.sleeps.push(ms);
    return Promise.resolve();
  }
}
