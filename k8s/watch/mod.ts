/**
 * Watches as async iterables, and informers: a local cache kept in step by list+watch.
 * @module
 */
export * from "./watch.ts";
export * from "./store.ts";
export * from "./informer.ts";
export * from "./share.ts";
