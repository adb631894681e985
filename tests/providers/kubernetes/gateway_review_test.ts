/**
 * `gateway` (issue #64 item 4), defects a review found, each against fakes: an ended pod's
 * address in B, reflections of two nodes in one namespace of B, a pod re-created under a name
 * still attached, and hostNetwork pods.
 * @module
 */
import assert from "node:assert/strict";
import type { Pod, Service } from "kubernetes-types/core/v1.d.ts";
import type { EndpointSlice } from "kubernetes-types/discovery/v1.d.ts";
import { getLogger } from "../../../base/log.ts";
import { KubeApiError } from "../../../k8s/mod.ts";
import type { GatewayService, PodNetworkGateway } from "../../../provider/mod.ts";
import { markLabels, MARKS } from "../../../providers/kubernetes/names.ts";
import { GatewayLink } from "../../../providers/kubernetes/network/gateway_link.ts";
import type { GatewayNetwork } from "../../../providers/kubernetes/network/gateway_network.ts";
import { PodAddresses } from "../../../providers/kubernetes/network/pod_addresses.ts";
import {
  type ReflectionClients,
  ServiceReflection,
} from "../../../providers/kubernetes/network/service_reflection.ts";
import { StatusRelay } from "../../../providers/kubernetes/status/status_relay.ts";
import { FakeClock } from "../../fakes/clock.ts";

const log = getLogger(["vkubelet", "test"]);

/** A gateway that records what it is told. */
class RecordingGateway implements PodNetworkGateway {
  agentCommand = ["agent"];
  agentCredential = "credential";
  readonly calls: string[] = [];
  #next = 1;

  attach(p: Pod) {
    this.calls.push(`attach ${p.metadata?.uid}`);
    const ip = `127.0.10.${this.#next++}`;
    return Promise.resolve({ podIP: ip, podIPs: [ip] });
  }
  reattach(p: Pod) {
    this.calls.push(`reattach ${p.metadata?.uid}`);
    return Promise.resolve(undefined);
  }
  detach(p: Pod) {
    this.calls.push(`detach ${p.metadata?.uid}`);
    return Promise.resolve();
  }
  adopted(pods: Pod[]) {
    this.calls.push(`adopted ${pods.map((p) => p.metadata?.uid).join(",")}`);
    return Promise.resolve();
  }
  setRemoteAddress(p: Pod, address: string | undefined) {
    this.calls.push(`remote ${p.metadata?.uid} ${address ?? "none"}`);
  }
  setServices() {}
}

function upstream(name: string, uid: string, hostNetwork = false): Pod {
  return {
    metadata: { namespace: "shop", name, uid },
    spec: { containers: [{ name: "c" }], ...(hostNetwork ? { hostNetwork } : {}) },
  };
}

/** The pod in B forwarded for `pod` by node vk-1, as B's status has it. */
function downstream(pod: Pod, phase: string, podIP: string): Pod {
  const { namespace, name, uid } = pod.metadata!;
  return {
    metadata: {
      namespace,
      name,
      labels: markLabels("vk-1", namespace!, uid),
      annotations: { [MARKS.name]: name! },
    },
    spec: pod.spec,
    status: { phase, podIP, podIPs: [{ ip: podIP }] },
  };
}

function linked(gateway: RecordingGateway): { link: GatewayLink; addresses: PodAddresses } {
  const addresses = new PodAddresses({
    gateway: Promise.resolve(gateway),
    log,
    onAttached: () => {},
  });
  const network = { addresses } as unknown as GatewayNetwork;
  return {
    link: new GatewayLink({ network, log, signal: new AbortController().signal }),
    addresses,
  };
}

Deno.test("a forwarded pod that ended in B (Succeeded, Failed, evicted) no longer owns its old address there", async () => {
  for (const phase of ["Succeeded", "Failed"]) {
    const gateway = new RecordingGateway();
    const { link } = linked(gateway);
    const pod = upstream("job", "uid-1");
    await link.attach("shop/job", pod);
    link.onDownstream(downstream(pod, "Running", "127.0.30.1"));
    // B keeps status.podIP of an ended pod, but has freed the IP for another pod.
    link.onDownstream(downstream(pod, phase, "127.0.30.1"));
    assert.deepEqual(gateway.calls, [
      "attach uid-1",
      "remote uid-1 127.0.30.1",
      "remote uid-1 none",
    ], `a ${phase} pod kept its address in B: a new pod there at that IP calls as it`);
  }
});

Deno.test("a pod created again under a name still attached gets its own IP, not the earlier pod's address in B", async () => {
  const gateway = new RecordingGateway();
  const { addresses } = linked(gateway);
  const first = upstream("db-0", "uid-1");
  const again = upstream("db-0", "uid-2"); // a StatefulSet pod after a force-delete
  await addresses.attach("shop/db-0", first);
  addresses.setRemote("shop/db-0", "127.0.30.1", "uid-1");
  await addresses.attach("shop/db-0", again);
  assert.ok(
    !gateway.calls.includes("remote uid-2 127.0.30.1"),
    `the new pod was given the earlier pod's address in B: ${gateway.calls.join("; ")}`,
  );
  assert.deepEqual(gateway.calls, [
    "attach uid-1",
    "remote uid-1 127.0.30.1",
    "remote uid-1 none",
    "detach uid-1",
    "attach uid-2",
  ]);
  // B's status of the earlier pod, late, is not the new pod's either.
  addresses.setRemote("shop/db-0", "127.0.30.1", "uid-1");
  addresses.setRemote("shop/db-0", "127.0.30.2", "uid-2");
  // The earlier pod's release (it left B) leaves the new pod attached.
  await addresses.detach("shop/db-0", first);
  assert.ok(addresses.of("shop/db-0"), "the earlier pod's detach took the new pod's IP in A");
  assert.deepEqual(gateway.calls.slice(5), ["remote uid-2 127.0.30.2", "detach uid-1"]);
});

Deno.test("a hostNetwork pod is not attached through the gateway, and A's status reports its address in B", async () => {
  const gateway = new RecordingGateway();
  const { link } = linked(gateway);
  const pod = upstream("agent", "uid-h", true);
  await link.attach("shop/agent", pod);
  await link.ensure("shop/agent", pod);
  link.adoptOnce([pod]);
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(gateway.calls, ["adopted "], "a hostNetwork pod was attached");

  const relay = new StatusRelay({
    internalIp: "127.0.0.1",
    clock: new FakeClock(),
    log,
    release: () => {},
    podAddress: link.podAddress,
  });
  const status = relay.toUpstream(downstream(pod, "Running", "127.0.40.1"))?.status;
  assert.equal(status?.podIP, "127.0.40.1");
  assert.deepEqual(status?.podIPs, [{ ip: "127.0.40.1" }]);
});

/** B's Services and EndpointSlices in memory. */
function memoryApi<T extends { metadata?: { name?: string; uid?: string } }>() {
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
      if (objects.has(`${ns}/${o.metadata!.name}`)) {
        return Promise.reject(fail(409, "AlreadyExists"));
      }
      objects.set(`${ns}/${o.metadata!.name}`, structuredClone(o));
      return Promise.resolve(o);
    },
    patch: (ns: string, name: string, options: { body: unknown }) => {
      const body = options.body as T;
      objects.set(`${ns}/${name}`, { ...objects.get(`${ns}/${name}`)!, ...structuredClone(body) });
      return Promise.resolve(body);
    },
    delete: (ns: string, name: string) => {
      objects.delete(`${ns}/${name}`);
      return Promise.resolve({});
    },
  };
}

Deno.test("two nodes' gateways in one namespace of B: the second leaves the first's reflection alone", async () => {
  const services = memoryApi<Service>();
  const slices = memoryApi<EndpointSlice>();
  const downstream = { services, endpointSlices: slices } as unknown as ReflectionClients;
  const told = new Map<string, GatewayService[]>();
  const reflectionOf = (nodeName: string) =>
    new ServiceReflection({
      downstream,
      nodeName,
      log,
      onServices: (list) => told.set(nodeName, list),
    });
  const first = reflectionOf("vk-1");
  const second = reflectionOf("vk-2");
  const signal = new AbortController().signal;
  const web = (port: number): Service => ({
    metadata: { name: "web", namespace: "shop" },
    spec: { clusterIP: "198.18.96.9", ports: [{ name: "http", port }, { name: "x", port: 81 }] },
  });
  await first.write("shop", web(80), signal);
  await first.setGatewayAddress("198.18.4.1", signal);
  const service = structuredClone(services.objects.get("shop/web"));
  const slice = structuredClone(slices.objects.get("shop/web-gateway"));

  // vk-2 (another A cluster's, say) has a Service of that name in that namespace too.
  await second.setGatewayAddress("198.18.4.2", signal);
  await second.write(
    "shop",
    { ...web(8080), spec: { ...web(8080).spec, ports: [{ port: 9 }] } },
    signal,
  );
  assert.deepEqual(services.objects.get("shop/web"), service, "vk-2 rewrote vk-1's Service");
  assert.deepEqual(slices.objects.get("shop/web-gateway"), slice, "vk-2 rewrote vk-1's slice");
  assert.deepEqual(told.get("vk-2") ?? [], [], "vk-2's gateway serves a Service it does not own");

  await second.remove("shop", "web", signal);
  await second.restore(signal);
  await second.sweep("shop", signal);
  assert.ok(services.objects.has("shop/web"), "vk-2 deleted vk-1's Service");
  assert.ok(slices.objects.has("shop/web-gateway"), "vk-2 deleted vk-1's slice");
  assert.equal(services.objects.get("shop/web")?.metadata?.labels?.[MARKS.node], "vk-1");

  await first.remove("shop", "web", signal);
  assert.equal(services.objects.size + slices.objects.size, 0, "vk-1's own reflection stayed");
});
