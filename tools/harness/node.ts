/**
 * A Node object and a pod bound to it in the real cluster, pointing the apiserver at a test
 * kubelet API on 127.0.0.1 (it dials `InternalIP:daemonEndpoints.kubeletEndpoint.Port`).
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { TestCluster } from "../cluster/harness.ts";
import type { ClusterServer } from "./cluster_server.ts";

/** Registers `nodeName` with the server's port; returns a cleanup. */
export async function registerNode(
  cluster: TestCluster,
  nodeName: string,
  port: number,
): Promise<() => Promise<void>> {
  const node = { apiVersion: "v1", kind: "Node", metadata: { name: nodeName } };
  const created = await cluster.kubectl(["create", "-f", "-"], { stdin: JSON.stringify(node) });
  if (created.code !== 0) throw new Error(`creating node ${nodeName}: ${created.stderr}`);
  await setNodeAddress(cluster, nodeName, "127.0.0.1", port);
  return async () => {
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false", "--ignore-not-found"]);
  };
}

/** Sets the node's InternalIP and kubelet port (what the apiserver dials). */
export async function setNodeAddress(
  cluster: TestCluster,
  nodeName: string,
  address: string,
  port: number,
): Promise<void> {
  const status = {
    status: {
      addresses: [{ type: "InternalIP", address }],
      daemonEndpoints: { kubeletEndpoint: { Port: port } },
    },
  };
  const patched = await cluster.kubectl([
    "patch",
    "node",
    nodeName,
    "--subresource=status",
    "--type=merge",
    "-p",
    JSON.stringify(status),
  ]);
  if (patched.code !== 0) throw new Error(`patching node ${nodeName}: ${patched.stderr}`);
}

/** Creates a pod bound to the node in `namespace`, and runs it in the server's mock. */
export async function bindPod(
  cluster: TestCluster,
  server: ClusterServer,
  namespace: string,
  name: string,
  nodeName: string,
): Promise<Pod> {
  const manifest: Pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace },
    spec: { nodeName, containers: [{ name: "app", image: "busybox" }] },
  };
  const created = await cluster.kubectl(["create", "-o", "json", "-f", "-"], {
    stdin: JSON.stringify(manifest),
  });
  if (created.code !== 0) throw new Error(`creating pod ${name}: ${created.stderr}`);
  const pod = JSON.parse(created.stdout) as Pod;
  await server.mock.createPod(pod, {});
  server.pods.push(pod);
  return pod;
}
