/**
 * Leader election over a Lease, as client-go's `tools/leaderelection` does it, and the fence that
 * lets a replica write only while its lease is surely its own. `app/` runs a term of the node's
 * work under it (`--leader-elect`).
 * @module
 */
export * from "./elector.ts";
export * from "./fence.ts";
