/**
 * moto for the fargate tests: tools/harness/moto.ts, which the bench shares.
 * @module
 */
export * from "../../../tools/harness/moto.ts";
