/**
 * `deno task demo`: brings up the local control plane (built from Go modules on first use) and
 * shows what to try against it.
 * @module
 */
import { clusterPaths, up } from "./tests/cluster/cluster.ts";

const say = (line: string) => Deno.stdout.writeSync(new TextEncoder().encode(line + "\n"));

if (import.meta.main) {
  const state = await up({ progress: (line) => say(`  ${line}`) });
  say(`
The local control plane is up at ${state.server} (Kubernetes, etcd, controllers and scheduler on
loopback). Try:

  deno task kubectl -- get --raw /readyz
  deno task kubectl -- get namespaces
  deno task kubectl -- create deployment web --image=nginx --replicas=2
  deno task kubectl -- get pods        # Pending: no node has joined yet
  deno task cluster down

KUBECONFIG=${clusterPaths().adminKubeconfig}`);
}
