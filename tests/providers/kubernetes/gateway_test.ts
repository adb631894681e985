/**
 * `gateway` (issue #64 item 4), the parts that need no cluster: the config's rules, the gateway
 * ports, the objects reflected into B, and A's status reporting the pod's IP in A.
 * @module
 */
import assert from "node:assert/strict";
import type { Pod, Service } from "kubernetes-types/core/v1.d.ts";
import type { EndpointSlice } from "kubernetes-types/discovery/v1.d.ts";
import { KubeApiError } from "../../../k8s/mod.ts";
import { getLogger } from "../../../base/log.ts";
import type {
  GatewayService,
  PodNetworkHandle,
  ProviderKubeClient,
} from "../../../provider/mod.ts";
import { parseKubernetesConfig } from "../../../providers/kubernetes/config.ts";
import { createProvider } from "../../../providers/kubernetes/mod.ts";
import { markLabels, MARKS } from "../../../providers/kubernetes/names.ts";
import {
  FIRST_GATEWAY_PORT,
  GatewayPorts,
} from "../../../providers/kubernetes/network/gateway_ports.ts";
import {
  gatewaySlice,
  reflectedPorts,
  reflectedService,
  type ReflectionClients,
  ServiceReflection,
} from "../../../providers/kubernetes/network/service_reflection.ts";
import { StatusRelay } from "../../../providers/kubernetes/status/status_relay.ts";
import { FakeClock } from "../../fakes/clock.ts";

const base = { kubeconfig: "/b.kubeconfig", namespaces: "same" };

function errorsOf(input: Record<string, unknown>): string {
  const parsed = parseKubernetesConfig(input);
  return parsed.ok ? "" : parsed.errors.join("\n");
}

Deno.test("gateway needs namespaces: same, excludes syncServices and needs an image", () => {
  assert.equal(errorsOf({ ...base, gateway: { image: "vk:1" } }), "");
  const parsed = parseKubernetesConfig({ ...base, gateway: { image: "vk:1" } });
  assert.ok(parsed.ok);
  assert.equal(parsed.config.gateway?.namespace, "vkubelet-gateway");
  assert.match(
    errorsOf({ kubeconfig: "/b", namespace: "off", gateway: { image: "vk:1" } }),
    /gateway: needs namespaces: same \(a pod in B calls A's Services by the names/,
  );
  assert.match(
    errorsOf({ ...base, syncServices: true, gateway: { image: "vk:1" } }),
    /syncServices: cannot be used with gateway: both write A's Services into B/,
  );
  assert.match(errorsOf({ ...base, gateway: {} }), /gateway\.image: is required/);
  assert.match(
    errorsOf({ ...base, gateway: { image: "vk:1", namespace: "Not_A_Name" } }),
    /gateway\.namespace: "Not_A_Name" is not a namespace name/,
  );
});

Deno.test("gateway without the node's pod network is refused, naming --remote-pod-network", async () => {
  const deps = {
    nodeName: "vk-gw",
    log: getLogger(["vkubelet", "test"]),
    clock: new FakeClock(),
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal: new AbortController().signal,
    kube: {} as ProviderKubeClient,
  };
  const config = { ...base, gateway: { image: "vk:1" } };
  await assert.rejects(
    createProvider(config, deps),
    /gateway: needs the node's pod network for remote pods \(start vkubelet with --remote-pod-network=FILE/,
  );
  // A pod network without a gateway (an older tunnel host) is refused too.
  const podNetwork = { attach: () => Promise.reject(), detach: () => Promise.resolve() };
  await assert.rejects(
    createProvider(config, { ...deps, podNetwork: podNetwork as PodNetworkHandle }),
    /--remote-pod-network/,
  );
});

Deno.test("gateway ports start at 20000, stay with their Service port and come back from B", () => {
  const ports = new GatewayPorts();
  const web = ports.assign("shop", "web", ["http", "https"]);
  assert.deepEqual([...web.values()], [FIRST_GATEWAY_PORT, FIRST_GATEWAY_PORT + 1]);
  const db = ports.assign("shop", "db", [""]);
  assert.equal(db.get(""), FIRST_GATEWAY_PORT + 2);
  // The same Service again (an update): the same ports; a dropped port is freed, a new one added.
  const again = ports.assign("shop", "web", ["https", "admin"]);
  assert.equal(again.get("https"), FIRST_GATEWAY_PORT + 1);
  assert.equal(again.get("admin"), FIRST_GATEWAY_PORT + 3);
  assert.equal(again.has("http"), false);

  // After a restart: what B's EndpointSlices hold is kept, new ports avoid it.
  const restarted = new GatewayPorts();
  restarted.restore("shop", "web", [["https", 20001], ["admin", 20003]]);
  restarted.restore("shop", "db", [["", 20002], ["bogus", 80]]);
  assert.deepEqual(
    [...restarted.assign("shop", "web", ["https", "admin"])],
    [["https", 20001], ["admin", 20003]],
  );
  assert.deepEqual([...restarted.assign("shop", "db", [""])], [["", 20002]]);
  const fresh = restarted.assign("shop", "cache", ["redis"]).get("redis")!;
  assert.ok(fresh >= FIRST_GATEWAY_PORT && ![20001, 20002, 20003].includes(fresh), `${fresh}`);
});

Deno.test("a reflected Service is selectorless, TCP only, its ports at the gateway's; headless and ExternalName are not reflected", () => {
  const source = {
    metadata: { name: "db", namespace: "shop", labels: { tier: "data" } },
    spec: {
      type: "NodePort",
      clusterIP: "198.18.96.7",
      selector: { app: "db" },
      ports: [
        { name: "pg", port: 5432, targetPort: 5432, nodePort: 30007 },
        { name: "dns", port: 53, protocol: "UDP" },
      ],
    },
  };
  const service = reflectedService(source, "vk-1", new Map([["pg", 20004]]));
  assert.deepEqual(service.spec?.ports, [{
    name: "pg",
    protocol: "TCP",
    port: 5432,
    targetPort: 20004,
  }]);
  assert.equal(service.spec?.type, "ClusterIP");
  assert.equal(service.spec?.selector, null, "a merge patch must drop an older selector");
  assert.equal(service.spec?.clusterIP, undefined, "B gives the ClusterIP");
  assert.equal(service.metadata?.labels?.[MARKS.role], "gateway-service");

  const slice = gatewaySlice("shop", "db", "vk-1", new Map([["pg", 20004]]), "127.0.0.9");
  assert.equal(slice.metadata?.labels?.["kubernetes.io/service-name"], "db");
  assert.equal(
    slice.metadata?.labels?.["endpointslice.kubernetes.io/managed-by"],
    "gateway.vkubelet.io",
  );
  assert.deepEqual(slice.endpoints, [{ addresses: ["127.0.0.9"], conditions: { ready: true } }]);
  assert.deepEqual(slice.ports, [{ name: "pg", protocol: "TCP", port: 20004 }]);
  assert.deepEqual(gatewaySlice("shop", "db", "vk-1", new Map(), undefined).endpoints, []);

  assert.deepEqual(
    reflectedPorts({ spec: { clusterIP: "None", ports: [{ port: 80 }] } }),
    [],
    "headless",
  );
  assert.deepEqual(
    reflectedPorts({ spec: { type: "ExternalName", externalName: "x.example" } }),
    [],
  );
  assert.deepEqual(reflectedPorts({ spec: { ports: [{ port: 80 }] } }), [], "no ClusterIP yet");
});

Deno.test("with the gateway, A's status reports the pod's IP in A, not B's, and none before it has one", () => {
  const addresses = new Map<string, { podIP: string; podIPs: string[] }>();
  const relay = new StatusRelay({
    internalIp: "127.0.0.1",
    clock: new FakeClock(),
    log: getLogger(["vkubelet", "test"]),
    release: () => {},
    podAddress: (k) => addresses.get(k),
  });
  const downstream: Pod = {
    metadata: {
      name: "web",
      namespace: "shop",
      labels: markLabels("vk-1", "shop", "uid-1"),
      annotations: { [MARKS.name]: "web" },
    },
    status: { phase: "Running", podIP: "127.0.0.50", podIPs: [{ ip: "127.0.0.50" }] },
  };
  assert.equal(relay.toUpstream(downstream)?.status?.podIP, undefined);
  assert.equal(relay.toUpstream(downstream)?.status?.podIPs, undefined);
  addresses.set("shop/web", { podIP: "127.0.1.7", podIPs: ["127.0.1.7"] });
  const status = relay.toUpstream(downstream)?.status;
  assert.equal(status?.podIP, "127.0.1.7");
  assert.deepEqual(status?.podIPs, [{ ip: "127.0.1.7" }]);
});

/** B's Services and EndpointSlices in memory, refusing loopback endpoints as B does. */
function memoryApi<T extends { metadata?: { name?: string; labels?: Record<string, string> } }>(
  refuse: (object: T) => boolean = () => false,
) {
  const objects = new Map<string, T>();
  const fail = (code: number, reason?: string) =>
    new KubeApiError(code, { method: "TEST", path: "/", status: reason ? { reason } : undefined });
  return {
    objects,
    get: (ns: string, name: string) => {
      const o = objects.get(`${ns}/${name}`);
      return o ? Promise.resolve(structuredClone(o)) : Promise.reject(fail(404));
    },
    list: () => Promise.resolve({ metadata: {}, items: [...objects.values()] }),
    create: (ns: string, o: T) => {
      if (refuse(o)) return Promise.reject(fail(422));
      if (objects.has(`${ns}/${o.metadata!.name}`)) {
        return Promise.reject(fail(409, "AlreadyExists"));
      }
      objects.set(`${ns}/${o.metadata!.name}`, {
        ...o,
        metadata: { ...o.metadata, namespace: ns },
      });
      return Promise.resolve(o);
    },
    patch: (ns: string, name: string, options: { body: unknown }) => {
      const body = options.body as T;
      if (refuse(body)) return Promise.reject(fail(422));
      objects.set(`${ns}/${name}`, { ...objects.get(`${ns}/${name}`)!, ...body });
      return Promise.resolve(body);
    },
    delete: (ns: string, name: string) => {
      objects.delete(`${ns}/${name}`);
      return Promise.resolve({});
    },
  };
}

Deno.test("the reflected EndpointSlices follow the gateway pod's address; B's own Service of that name is left alone", async () => {
  const services = memoryApi<Service>();
  const slices = memoryApi<EndpointSlice>((s) =>
    (s.endpoints ?? []).some((e) => e.addresses[0].startsWith("127."))
  );
  const told: GatewayService[][] = [];
  const reflection = new ServiceReflection({
    downstream: { services, endpointSlices: slices } as unknown as ReflectionClients,
    nodeName: "vk-1",
    log: getLogger(["vkubelet", "test"]),
    onServices: (list) => told.push(list),
  });
  const signal = new AbortController().signal;
  const web: Service = {
    metadata: { name: "web", namespace: "shop" },
    spec: { clusterIP: "198.18.96.9", ports: [{ name: "http", port: 80 }] },
  };
  await reflection.write("shop", web, signal);
  assert.deepEqual(slices.objects.get("shop/web-gateway")?.endpoints, []);
  await reflection.setGatewayAddress("198.18.4.2", signal);
  assert.deepEqual(slices.objects.get("shop/web-gateway")?.endpoints, [{
    addresses: ["198.18.4.2"],
    conditions: { ready: true },
  }]);
  // A loopback address (these machines' test clusters) is refused: the slice keeps its ports.
  await reflection.setGatewayAddress("127.0.0.1", signal);
  assert.deepEqual(slices.objects.get("shop/web-gateway")?.endpoints, []);
  assert.deepEqual(slices.objects.get("shop/web-gateway")?.ports, [{
    name: "http",
    protocol: "TCP",
    port: FIRST_GATEWAY_PORT,
  }]);
  assert.deepEqual(told.at(-1), [{
    namespace: "shop",
    name: "web",
    port: 80,
    gatewayPort: FIRST_GATEWAY_PORT,
  }]);

  // B's own `kubernetes` Service in `default` is not taken over.
  services.objects.set("default/kubernetes", { metadata: { name: "kubernetes" } });
  await reflection.write("default", {
    metadata: { name: "kubernetes", namespace: "default" },
    spec: { clusterIP: "198.18.96.1", ports: [{ name: "https", port: 443 }] },
  }, signal);
  assert.deepEqual(services.objects.get("default/kubernetes"), {
    metadata: { name: "kubernetes" },
  });
  assert.equal(told.at(-1)?.length, 1);
  await reflection.remove("default", "kubernetes", signal);
  assert.ok(services.objects.has("default/kubernetes"), "B's own Service was deleted");

  await reflection.remove("shop", "web", signal);
  assert.equal(services.objects.size, 1);
  assert.equal(slices.objects.size, 0);
  assert.deepEqual(told.at(-1), []);
});

Deno.test("after a restart, a reflection of a Service A deleted meanwhile is removed once its namespace is synced", async () => {
  const services = memoryApi<Service>();
  const slices = memoryApi<EndpointSlice>();
  const options = {
    downstream: { services, endpointSlices: slices } as unknown as ReflectionClients,
    nodeName: "vk-1",
    log: getLogger(["vkubelet", "test"]),
    onServices: () => {},
  };
  const signal = new AbortController().signal;
  const before = new ServiceReflection(options);
  const service = (name: string): Service => ({
    metadata: { name, namespace: "shop" },
    spec: { clusterIP: "198.18.96.9", ports: [{ name: "http", port: 80 }] },
  });
  await before.write("shop", service("web"), signal);
  await before.write("shop", service("gone"), signal);
  await before.write(
    "other",
    { ...service("db"), metadata: { name: "db", namespace: "other" } },
    signal,
  );
  const after = new ServiceReflection(options);
  await after.restore(signal);
  await after.write("shop", service("web"), signal); // A still has web, not gone
  await after.sweep("shop", signal);
  assert.deepEqual([...services.objects.keys()].sort(), ["other/db", "shop/web"]);
  assert.deepEqual([...slices.objects.keys()].sort(), ["other/db-gateway", "shop/web-gateway"]);
});
