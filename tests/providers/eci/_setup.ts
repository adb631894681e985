/**
 * One virtual node with the eci provider against the local control plane and a fresh ECI
 * emulator in this process: what the eci integration tests share.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { type TestCluster, useCluster } from "../../../tools/cluster/harness.ts";
import { type RunningVkubelet, startVkubelet } from "../../../tools/cluster/vkubelet.ts";
import {
  ECI_TEST_ENV,
  type EciEmulator,
  type EmulatedGroup,
  startEciEmulator,
} from "../../../tools/harness/eci/emulator.ts";
import { emulatorConfig } from "../../../tools/harness/eci/env.ts";

/** Polls until a check gives a value (the same helper as the kubernetes provider's tests). */

/** The node, its cluster, the emulator and helpers. */
export interface EciEnv {
  cluster: TestCluster;
  emu: EciEmulator;
  nodeName: string;
  ns: string;
  kubectl: (args: string[], stdin?: string) => Promise<string>;
  /** Scheduling onto the virtual node. */
  placement: { nodeSelector: Record<string, string>; tolerations: unknown[] };
  node: RunningVkubelet;
  /** The namespace's pods with `selector`, leaving out those being deleted. */
  pods(selector: string): Promise<Pod[]>;
  /** The emulator's groups of a pod (by its uid tag). */
  groupsOf(pod: Pod): EmulatedGroup[];
  /** Stops vkubelet and starts it again with the same node, certificate and config. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** Starts an emulator and a vkubelet with `--provider eci` pointed at it. */
export async function startEciEnv(prefix: string): Promise<EciEnv> {
  const cluster = await useCluster();
  const emu = await startEciEmulator();
  const nodeName = `vk-${prefix}-${crypto.randomUUID().slice(0, 6)}`;
  const ns = await cluster.newNamespace(prefix);
  const kubectl = cluster.kubectlIn(ns);
  const providerConfig = JSON.stringify(
    emulatorConfig(emu, { statusInterval: "500ms", tags: { team: "platform" } }),
  );
  const node = await startVkubelet(cluster, {
    nodeName,
    provider: "eci",
    providerConfig,
    env: ECI_TEST_ENV,
  }).catch(async (err) => {
    await emu.stop();
    throw err;
  });
  const env: EciEnv = {
    cluster,
    emu,
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
    groupsOf(pod) {
      return [...emu.groups.values()].filter((g) =>
        g.tags.some((t) => t.Key === "vkubelet.io/uid" && t.Value === pod.metadata?.uid)
      );
    },
    async restart() {
      await env.node.stop();
      env.node = await startVkubelet(cluster, {
        nodeName,
        provider: "eci",
        like: env.node,
        env: ECI_TEST_ENV,
      });
    },
    async close() {
      await env.node.stop();
      await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
      await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
      await emu.stop();
    },
  };
  return env;
}
