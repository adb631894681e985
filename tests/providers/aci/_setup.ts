/**
 * One virtual node with the aci provider against the local control plane, and the ACI emulator
 * behind Prism: what the aci integration tests share.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { type TestCluster, useCluster } from "../../../tools/cluster/harness.ts";
import { type RunningVkubelet, startVkubelet } from "../../../tools/cluster/vkubelet.ts";
import { type AciBackend, aciConfig, startBackend } from "../../../tools/harness/aci/env.ts";

/** Polls until a check gives a value (the same helper as the kubernetes provider's tests). */

/** A group's JSON as the emulator stored it. */
// deno-lint-ignore no-explicit-any
export type Json = any;

/** The node, its cluster, the backend and helpers. */
export interface AciEnv {
  cluster: TestCluster;
  backend: AciBackend;
  nodeName: string;
  ns: string;
  kubectl: (args: string[], stdin?: string) => Promise<string>;
  /** Scheduling onto the virtual node. */
  placement: { nodeSelector: Record<string, string>; tolerations: unknown[] };
  node: RunningVkubelet;
  /** The namespace's pods with `selector`, leaving out those being deleted. */
  pods(selector: string): Promise<Pod[]>;
  /** The node's groups as PUT (secrets included), by the pod name in their tags. */
  groupsOf(podPrefix: string): { name: string; body: Json }[];
  /** Stops vkubelet and starts it again with the same node, certificate and config. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** Starts the backend and a vkubelet with `--provider aci` pointed at Prism. */
export async function startAciEnv(
  prefix: string,
  extra: Record<string, unknown> = {},
): Promise<AciEnv> {
  const cluster = await useCluster();
  const backend = await startBackend();
  const nodeName = `vk-${prefix}-${crypto.randomUUID().slice(0, 6)}`;
  const ns = await cluster.newNamespace(prefix);
  const kubectl = cluster.kubectlIn(ns);
  const providerConfig = JSON.stringify(
    aciConfig(backend.prism.url, {
      statusInterval: "500ms",
      tags: { team: "platform" },
      // Azure Monitor's metrics go to the emulator directly: Prism has no description for them.
      monitorEndpoint: backend.emu.url,
      metricsInterval: "1s",
      ...extra,
    }),
  );
  const node = await startVkubelet(cluster, { nodeName, provider: "aci", providerConfig })
    .catch(async (err) => {
      await backend.close();
      throw err;
    });
  const env: AciEnv = {
    cluster,
    backend,
    nodeName,
    ns,
    kubectl,
    node,
    placement: {
      nodeSelector: { "kubernetes.io/hostname": nodeName },
      tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
    },
    async pods(selector) {
      const list = JSON.parse(await kubectl(["get", "pods", "-l", selector, "-o", "json"]));
      return (list.items as Pod[]).filter((p) => !p.metadata?.deletionTimestamp);
    },
    groupsOf(podPrefix) {
      return [...backend.emu.groups.values()].filter((g) =>
        g.body.tags?.["vkubelet-node"] === nodeName &&
        g.body.tags?.["vkubelet-pod"]?.startsWith(podPrefix)
      );
    },
    async restart() {
      await env.node.stop();
      env.node = await startVkubelet(cluster, { nodeName, provider: "aci", like: env.node });
    },
    async close() {
      await env.node.stop();
      await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
      await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
      await backend.close();
    },
  };
  return env;
}
