/**
 * Builds interLink's API server, and with `--virtual-kubelet` its own virtual kubelet, from Go
 * modules into `.cache/interlink-<version>/` (see ./interlink.ts):
 *
 * ```sh
 * deno run -A tools/harness/interlink/build.ts --virtual-kubelet
 * ```
 * @module
 */
import { ensureInterlinkServer, ensureInterlinkVirtualKubelet } from "./interlink.ts";

const progress = (line: string) => console.error(line);
console.log(await ensureInterlinkServer({ progress }));
if (Deno.args.includes("--virtual-kubelet")) {
  console.log(await ensureInterlinkVirtualKubelet({ progress }));
}
