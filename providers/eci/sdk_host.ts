/**
 * Alibaba's SDK reads the machine's host name when it loads (its nonce helper, `kitx`), which
 * Deno allows only with `--allow-sys=hostname`; vkubelet's permissions do not include it. This
 * module, imported before the SDK, makes `os.hostname()` answer `vkubelet` instead of throwing
 * when the permission is missing (the SDK only mixes it into request nonces).
 * @module
 */
import os from "node:os";

const original = os.hostname;
(os as { hostname: () => string }).hostname = () => {
  try {
    return original();
  } catch {
    return "vkubelet";
  }
};
