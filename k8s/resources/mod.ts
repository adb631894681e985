/**
 * Typed helpers per kind (`pods`, `nodes`, `leases`, ...), built on one `KubeRequester` so that
 * tests can hand them a fake.
 * @module
 */
export * from "./resource.ts";
export * from "./scoped.ts";
export * from "./apis.ts";
export * from "./certificates.ts";
