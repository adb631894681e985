/**
 * The fake clock for tests; it lives in `base/fake_clock.ts` so that provider authors can import
 * it from the kit (`provider/testing`).
 * @module
 */
export { FakeClock, flush } from "../../base/fake_clock.ts";
