/**
 * `gateway`: revoking a leaked gateway credential by deleting its Secret in B, against a fake of
 * B and of the node's gateway.
 * @module
 */
import assert from "node:assert/strict";
import type { Deployment } from "kubernetes-types/apps/v1.d.ts";
import type { Pod, Secret } from "kubernetes-types/core/v1.d.ts";
import { getLogger } from "../../../base/log.ts";
import { KubeApiError, type KubeClient } from "../../../k8s/mod.ts";
import type { PodNetworkGateway } from "../../../provider/mod.ts";
import { parseKubernetesConfig } from "../../../providers/kubernetes/config.ts";
import {
  CREDENTIAL_HASH,
  CREDENTIAL_KEY,
  GatewayDeployment,
} from "../../../providers/kubernetes/network/gateway_deployment.ts";
import { eventually } from "../../../tools/harness/wait.ts";
import { FakeClock } from "../../fakes/clock.ts";

/** An informer whose events the test fires. */
class FakeInformer<T> {
  readonly handlers = new Map<string, ((o: T) => void)[]>();
  readonly store = { list: (): T[] => [] };
  on(event: string, handler: (o: T) => void) {
    this.handlers.set(event, [...this.handlers.get(event) ?? [], handler]);
  }
  fire(event: string, object: T) {
    for (const h of this.handlers.get(event) ?? []) h(object);
  }
  run(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => signal.addEventListener("abort", () => resolve()));
  }
}

const notFound = () => new KubeApiError(404, { method: "TEST", path: "/" });

/** B: the Secret and the Deployment in memory, everything else accepted. */
function fakeB() {
  const secrets = new Map<string, Secret>();
  const deployments = new Map<string, Deployment>();
  const secretInformer = new FakeInformer<Secret>();
  const downstream = {
    namespaces: { get: () => Promise.resolve({}) },
    serviceAccounts: { create: () => Promise.resolve({}) },
    pods: { informer: () => new FakeInformer<Pod>() },
    secrets: {
      get: (_ns: string, name: string) => {
        const s = secrets.get(name);
        return s ? Promise.resolve(structuredClone(s)) : Promise.reject(notFound());
      },
      create: (_ns: string, s: Secret) => {
        secrets.set(s.metadata!.name!, structuredClone(s));
        return Promise.resolve(s);
      },
      update: (s: Secret) => {
        secrets.set(s.metadata!.name!, structuredClone(s));
        return Promise.resolve(s);
      },
      informer: () => secretInformer,
    },
    /** The Deployments' API: get, create and merge patch; lists empty, watches idle. */
    request: (o: {
      method?: string;
      path: string;
      body?: unknown;
      stream?: boolean;
      signal?: AbortSignal;
    }) => {
      if (o.stream) {
        return Promise.resolve(
          new ReadableStream({
            start: (c) => o.signal?.addEventListener("abort", () => c.close()),
          }),
        );
      }
      const method = o.method ?? "GET";
      const body = (typeof o.body === "string" ? JSON.parse(o.body) : o.body) as Deployment;
      const name = o.path.match(/\/deployments\/([^/?]+)/)?.[1] ?? body?.metadata?.name;
      if (!name) return Promise.resolve({ metadata: { resourceVersion: "1" }, items: [] });
      const current = deployments.get(name);
      if (method === "GET") {
        return current ? Promise.resolve(structuredClone(current)) : Promise.reject(notFound());
      }
      deployments.set(name, method === "PATCH" ? { ...current, ...body } : body);
      return Promise.resolve(body);
    },
  };
  return { downstream: downstream as unknown as KubeClient, secrets, deployments, secretInformer };
}

/** The node's gateway: one accepted credential at a time, as the tunnel host's. */
function fakeGateways() {
  let issued = 0;
  const state = { accepted: "" };
  const gateway = ({ credential }: { credential?: string }) => {
    if (!credential || credential !== state.accepted) state.accepted = `vkg1.gateway.${++issued}`;
    return Promise.resolve(
      { agentCredential: state.accepted, agentCommand: ["agent"] } as PodNetworkGateway,
    );
  };
  return { state, podNetwork: { gateway } };
}

Deno.test("deleting the gateway's Secret in B revokes its credential: a new one is issued, written and rolls the gateway pod", async () => {
  const parsed = parseKubernetesConfig({
    kubeconfig: "/b.kubeconfig",
    namespaces: "same",
    gateway: { image: "vkubelet:test" },
  });
  assert.ok(parsed.ok, parsed.ok ? "" : parsed.errors.join("; "));
  const b = fakeB();
  const gateways = fakeGateways();
  const deployment = new GatewayDeployment({
    config: parsed.config.gateway!,
    placement: parsed.config,
    downstream: b.downstream,
    podNetwork: gateways.podNetwork,
    nodeName: "vk-1",
    clock: new FakeClock(),
    log: getLogger(["vkubelet", "test"]),
    onAddress: () => {},
  });
  const stop = new AbortController();
  const running = deployment.run(stop.signal).catch(() => {});
  try {
    await deployment.gateway;
    const credentialIn = () => {
      const data = b.secrets.get(deployment.name)?.data?.[CREDENTIAL_KEY];
      return data ? atob(data) : undefined;
    };
    const hashIn = () =>
      b.deployments.get(deployment.name)?.spec?.template?.metadata?.annotations?.[CREDENTIAL_HASH];
    const leaked = credentialIn();
    const leakedHash = hashIn();
    assert.equal(leaked, "vkg1.gateway.1");
    assert.ok(leakedHash);

    const secret = b.secrets.get(deployment.name)!;
    b.secrets.delete(deployment.name);
    b.secretInformer.fire("delete", secret);
    // Fails (times out) when no new credential is written after the Secret was deleted.
    await eventually(
      "a new credential in the gateway's Secret",
      () => credentialIn() === "vkg1.gateway.2",
      2000,
      10,
    );
    assert.equal(gateways.state.accepted, "vkg1.gateway.2", "the leaked credential still works");
    assert.notEqual(hashIn(), leakedHash, "the gateway pod was not rolled onto the new credential");
  } finally {
    stop.abort();
    await running;
  }
});
