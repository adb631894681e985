/**
 * `gateway` (issue #64 item 4) against the real apiservers of A and B, with a fake of the node's
 * gateway (`PodNetworkGateway`) that records what the provider tells it. B has a process-provider
 * node, so the gateway Deployment's pod and the forwarded pod really run there (the fake's
 * `agentCommand` is `sleep`). What it checks: the gateway's objects in B (least privilege, the
 * credential by secretKeyRef and its hash on the template), the pod attached before it exists in
 * B, A's status with the A-side IP, B's IP told to the gateway, A's Service reflected into B at
 * the gateway pod with a port of 20000 and up, the same port after a restart (from B's
 * EndpointSlice), the credential kept across a restart (and a new one rolling the pod), the
 * Deployment recreated when deleted, and all of it let go with the pod.
 * @module
 */
import assert from "node:assert/strict";
import type { Deployment } from "kubernetes-types/apps/v1.d.ts";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { EndpointSlice } from "kubernetes-types/discovery/v1.d.ts";
import { realClock } from "../../../base/clock.ts";
import { getLogger, setupLogging } from "../../../base/log.ts";
import { isKubeNotFound, KubeClient, NamespacedApi } from "../../../k8s/mod.ts";
import type {
  GatewayService,
  PodNetworkGateway,
  PodNetworkHandle,
  ProviderKubeClient,
} from "../../../provider/mod.ts";
import { createProvider, type KubernetesProvider } from "../../../providers/kubernetes/mod.ts";
import { useCluster } from "../../../tools/cluster/harness.ts";
import { eventually } from "../../../tools/harness/wait.ts";
import { downstreamCluster } from "./_setup.ts";

/** A gateway that hands out 127.0.1.x addresses and records every call. */
class FakeGateway implements PodNetworkGateway {
  agentCommand = ["sleep", "3600"];
  agentCredential: string;
  /** Whether the gateway existed in B when each pod was attached. */
  readonly attachedBeforeB: boolean[] = [];
  readonly remote = new Map<string, string | undefined>();
  readonly ips = new Map<string, string>();
  readonly detached: string[] = [];
  adoptedWith?: string[];
  services: GatewayService[] = [];
  #next = 10;

  constructor(credential: string, private readonly existsInB: (pod: Pod) => Promise<boolean>) {
    this.agentCredential = credential;
  }

  async attach(pod: Pod) {
    this.attachedBeforeB.push(!await this.existsInB(pod));
    const ip = `127.0.1.${this.#next++}`;
    this.ips.set(pod.metadata!.uid!, ip);
    return { podIP: ip, podIPs: [ip] };
  }
  reattach(pod: Pod) {
    const ip = this.ips.get(pod.metadata!.uid!);
    return Promise.resolve(ip ? { podIP: ip, podIPs: [ip] } : undefined);
  }
  detach(pod: Pod) {
    this.detached.push(pod.metadata!.uid!);
    this.ips.delete(pod.metadata!.uid!);
    return Promise.resolve();
  }
  adopted(pods: Pod[]) {
    this.adoptedWith = pods.map((p) => p.metadata!.uid!);
    return Promise.resolve();
  }
  setRemoteAddress(pod: Pod, address: string | undefined) {
    this.remote.set(pod.metadata!.uid!, address);
  }
  setServices(services: GatewayService[]) {
    this.services = services;
  }
}

/** The node's pod network: one gateway, which keeps a credential it was given if `accept`. */
function podNetwork(gateway: FakeGateway, accept: boolean, asked: (string | undefined)[]) {
  return {
    attach: () => Promise.reject(new Error("pods go through the gateway")),
    detach: () => Promise.resolve(),
    gateway(options?: { credential?: string }) {
      asked.push(options?.credential);
      if (!accept || !options?.credential) gateway.agentCredential = crypto.randomUUID();
      else gateway.agentCredential = options.credential;
      return Promise.resolve(gateway);
    },
  } satisfies PodNetworkHandle;
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

Deno.test({
  name:
    "kubernetes provider with a gateway: deployed in B, pods attached with their A-side IP, A's Services reflected at the gateway pod, kept across a restart",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    if (Deno.env.get("KGW_DEBUG")) await setupLogging({ level: "info" });
    const suffix = crypto.randomUUID().slice(0, 6);
    const a = await useCluster();
    const down = await downstreamCluster(`gw${suffix}`);
    const adminA = await KubeClient.fromConfig({ kubeconfig: a.kubeconfigPath });
    const adminB = await KubeClient.fromConfig({ kubeconfig: down.b.kubeconfigPath });
    const deployments = new NamespacedApi<Deployment>(adminB, {
      group: "apps",
      version: "v1",
      plural: "deployments",
    });
    const slices = new NamespacedApi<EndpointSlice>(adminB, {
      group: "discovery.k8s.io",
      version: "v1",
      plural: "endpointslices",
    });
    const ns = await a.newNamespace("kgw");
    const gwNs = `gw-${suffix}`;
    const nodeName = `vk-gw-${suffix}`;
    const existsInB = (pod: Pod) =>
      adminB.pods.get(ns, pod.metadata!.name!).then(() => true, (err) => {
        if (isKubeNotFound(err)) return false;
        throw err;
      });
    const gateway = new FakeGateway("", existsInB);
    const asked: (string | undefined)[] = [];
    const config = {
      kubeconfig: down.b.kubeconfigPath,
      namespaces: "same",
      nodeSelector: { "kubernetes.io/hostname": down.nodeB.nodeName },
      tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
      gateway: { image: "vkubelet:test", namespace: gwNs },
    };
    let stop = new AbortController();
    const start = (accept: boolean) =>
      createProvider(config, {
        nodeName,
        log: getLogger(["vkubelet", "test"]),
        clock: realClock,
        internalIp: "127.0.0.1",
        daemonPort: 10250,
        signal: stop.signal,
        kube: adminA as unknown as ProviderKubeClient,
        podNetwork: podNetwork(gateway, accept, asked),
      });
    let provider: KubernetesProvider | undefined;
    const call = () => ({ signal: AbortSignal.timeout(60_000) });
    const restart = async (accept: boolean) => {
      stop.abort();
      await provider?.close();
      stop = new AbortController();
      provider = await start(accept);
    };
    try {
      await adminA.services.create(ns, {
        metadata: { name: "web" },
        spec: {
          selector: { app: "web" },
          ports: [{ name: "http", port: 80 }, { name: "dns", port: 53, protocol: "UDP" }],
        },
      });
      await adminA.services.create(ns, {
        metadata: { name: "peers" },
        spec: { clusterIP: "None", selector: { app: "web" }, ports: [{ port: 7000 }] },
      });
      provider = await start(true);

      // The gateway's objects in B.
      const deployment = await eventually("the gateway Deployment in B", async () => {
        return await deployments.get(gwNs, `gateway-${nodeName}`).catch(() => false as const);
      }, 30_000);
      const template = deployment.spec!.template!;
      const container = template.spec!.containers[0];
      assert.deepEqual(container.command, ["sleep", "3600"]);
      assert.equal(container.image, "vkubelet:test");
      assert.deepEqual(container.env, [{
        name: "VKUBELET_AGENT_CREDENTIAL",
        valueFrom: { secretKeyRef: { name: `gateway-${nodeName}`, key: "credential" } },
      }]);
      assert.equal(deployment.spec?.replicas, 1);
      assert.equal(template.spec?.automountServiceAccountToken, false);
      assert.deepEqual(container.securityContext?.capabilities, { drop: ["ALL"] });
      assert.equal(container.securityContext?.allowPrivilegeEscalation, false);
      assert.equal(
        template.metadata?.labels?.["vkubelet.io/virtual-node"],
        undefined,
        "the gateway pod would pass for a forwarded pod",
      );
      const firstCredential = gateway.agentCredential;
      assert.equal(
        template.metadata?.annotations?.["vkubelet.io/credential-sha256"],
        await sha256(firstCredential),
      );
      assert.ok(!JSON.stringify(deployment).includes(firstCredential), "credential in the spec");
      const secret = await adminB.secrets.get(gwNs, `gateway-${nodeName}`);
      assert.equal(atob(secret.data!.credential), firstCredential);
      const account = await adminB.serviceAccounts.get(gwNs, `gateway-${nodeName}`);
      assert.equal(account.automountServiceAccountToken, false);
      const namespace = await adminB.namespaces.get(gwNs);
      assert.equal(namespace.metadata?.labels?.["vkubelet.io/virtual-node"], nodeName);
      assert.deepEqual(asked, [undefined]);

      const gatewayIP = await eventually("the gateway pod Running in B", async () => {
        const pods = await adminB.pods.list({ namespace: gwNs });
        const running = pods.items.find((p) => p.status?.phase === "Running");
        return running?.status?.podIP ?? false;
      }, 60_000);

      // A pod: attached before it is created in B, its A-side IP in A's status.
      const pod: Pod = {
        apiVersion: "v1",
        kind: "Pod",
        metadata: {
          name: "web-0",
          namespace: ns,
          uid: crypto.randomUUID(),
          labels: { app: "web" },
        },
        spec: {
          nodeName,
          containers: [{ name: "main", image: "busybox", command: ["sleep", "3600"] }],
        },
      };
      await provider.createPod(pod, call());
      assert.deepEqual(gateway.attachedBeforeB, [true]);
      const aSideIP = gateway.ips.get(pod.metadata!.uid!)!;
      const bIP = await eventually("the pod Running in B", async () => {
        const p = await adminB.pods.get(ns, "web-0");
        return p.status?.phase === "Running" && p.status.podIP;
      }, 60_000);
      await eventually("B's IP told to the gateway", () => {
        return gateway.remote.get(pod.metadata!.uid!) === bIP;
      }, 10_000);
      const reported = await provider.getPod(ns, "web-0", call());
      assert.equal(reported?.status?.podIP, aSideIP);
      assert.deepEqual(reported?.status?.podIPs, [{ ip: aSideIP }]);

      // A's Service reflected into B, pointing at the gateway pod. The test clusters' pods have
      // loopback IPs, which B refuses in an EndpointSlice: then the slice keeps its ports and has
      // no endpoint (gateway_test.ts checks the endpoint with an address B takes).
      const loopback = gatewayIP.startsWith("127.");
      const slice = await eventually("the reflected EndpointSlice at the gateway pod", async () => {
        const s = await slices.get(ns, "web-gateway").catch(() => undefined);
        const endpoint = s?.endpoints?.[0]?.addresses[0];
        return s && (loopback ? (s.endpoints ?? []).length === 0 : endpoint === gatewayIP) && s;
      }, 30_000);
      assert.equal(slice.metadata?.labels?.["kubernetes.io/service-name"], "web");
      const gatewayPort = slice.ports![0].port!;
      assert.ok(gatewayPort >= 20000, `gateway port ${gatewayPort}`);
      assert.deepEqual(slice.ports, [{ name: "http", protocol: "TCP", port: gatewayPort }]);
      const reflected = await adminB.services.get(ns, "web");
      assert.equal(reflected.spec?.selector, undefined, "selectorless");
      assert.deepEqual(
        reflected.spec?.ports?.map((p) => [p.name, p.port, p.targetPort]),
        [["http", 80, gatewayPort]],
      );
      assert.ok(reflected.spec?.clusterIP && reflected.spec.clusterIP !== "None");
      await assert.rejects(adminB.services.get(ns, "peers"), isKubeNotFound, "headless reflected");
      assert.deepEqual(gateway.services, [{ namespace: ns, name: "web", port: 80, gatewayPort }]);

      // The Service's port changes in A: a new gateway port (the first is freed, not reused).
      await adminA.services.patch(ns, "web", {
        type: "merge",
        body: { spec: { ports: [{ name: "admin", port: 8080, targetPort: 8080 }] } },
      });
      const adminPort = gatewayPort + 1;
      await eventually("the changed port reflected", () => {
        return JSON.stringify(gateway.services) ===
          JSON.stringify([{ namespace: ns, name: "web", port: 8080, gatewayPort: adminPort }]);
      }, 30_000);

      // A restart: the credential kept (no roll), the same A-side IP, the same gateway port
      // (from B's EndpointSlice: a fresh count would start at 20000 again).
      gateway.services = [];
      await restart(true);
      assert.equal((await provider!.listPods(call())).length, 1);
      await eventually("the gateway told the first list", () => {
        return gateway.adoptedWith?.[0] === pod.metadata!.uid;
      }, 30_000);
      await provider!.updatePod(pod, call());
      assert.equal((await provider!.getPod(ns, "web-0", call()))?.status?.podIP, aSideIP);
      await eventually("the Services told again", () => gateway.services.length === 1, 30_000);
      assert.deepEqual(gateway.services, [{
        namespace: ns,
        name: "web",
        port: 8080,
        gatewayPort: adminPort,
      }]);
      assert.deepEqual(asked, [undefined, firstCredential]);
      const kept = await deployments.get(gwNs, `gateway-${nodeName}`);
      assert.equal(kept.metadata?.generation, deployment.metadata?.generation, "rolled");

      // A credential the node no longer accepts: a new one, which rolls the gateway pod.
      await restart(false);
      await eventually("the gateway asked for again", () => asked.length === 3, 30_000);
      await eventually("the new credential's hash on the template", async () => {
        const d = await deployments.get(gwNs, `gateway-${nodeName}`);
        return d.spec?.template?.metadata?.annotations?.["vkubelet.io/credential-sha256"] ===
          await sha256(gateway.agentCredential);
      }, 30_000);
      assert.notEqual(gateway.agentCredential, firstCredential);
      await provider!.updatePod(pod, call()); // as the core does after a restart
      const rolled = await adminB.secrets.get(gwNs, `gateway-${nodeName}`);
      assert.equal(atob(rolled.data!.credential), gateway.agentCredential);

      // Deleted in B: written again.
      const before = await deployments.get(gwNs, `gateway-${nodeName}`);
      await deployments.delete(gwNs, `gateway-${nodeName}`);
      await eventually("the gateway Deployment recreated", async () => {
        const d = await deployments.get(gwNs, `gateway-${nodeName}`).catch(() => undefined);
        return d !== undefined && d.metadata?.uid !== before.metadata?.uid;
      }, 30_000);

      // The pod goes: detached, its namespace's reflections removed.
      await provider!.deletePod(pod, call());
      await eventually("the pod detached", () => {
        return gateway.detached.includes(pod.metadata!.uid!);
      }, 60_000);
      await eventually("the reflected Service and EndpointSlice gone", async () => {
        const service = await adminB.services.get(ns, "web").catch(() => undefined);
        const s = await slices.get(ns, "web-gateway").catch(() => undefined);
        return !service && !s;
      }, 30_000);
      assert.deepEqual(gateway.services, []);
    } finally {
      stop.abort();
      await provider?.close();
      await adminB.namespaces.delete(gwNs).catch(() => {});
      await adminB.namespaces.delete(ns).catch(() => {});
      await adminA.namespaces.delete(ns).catch(() => {});
      adminA.close();
      adminB.close();
      await down.close();
    }
  },
});
