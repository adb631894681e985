/**
 * `gateway`: the forwarded pods' IPs in A ({@link PodAddresses}) against a fake gateway, above all
 * a pod that leaves B around a restart, before the gateway is ready or while it is reattached.
 * @module
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { getLogger } from "../../../base/log.ts";
import type { PodNetworkGateway } from "../../../provider/mod.ts";
import { PodAddresses } from "../../../providers/kubernetes/network/pod_addresses.ts";

function pod(name: string): Pod {
  return { metadata: { namespace: "ns", name, uid: `uid-${name}` } };
}

/** A gateway that kept the attachments of `kept` (uids) from before a restart. */
class FakeGateway implements PodNetworkGateway {
  agentCommand = ["agent"];
  agentCredential = "credential";
  readonly calls: string[] = [];
  readonly kept: Set<string>;
  /** Holds each reattach until resolved (when set). */
  hold?: PromiseWithResolvers<void>;
  /** Each reattach rejects with this (when set), as the tunnel host's does. */
  failReattach?: Error;
  #next = 1;

  constructor(kept: string[]) {
    this.kept = new Set(kept);
  }

  attach(p: Pod) {
    this.calls.push(`attach ${p.metadata?.uid}`);
    const ip = `127.0.10.${this.#next++}`;
    return Promise.resolve({ podIP: ip, podIPs: [ip] });
  }

  async reattach(p: Pod) {
    this.calls.push(`reattach ${p.metadata?.uid}`);
    // As the tunnel host: what was kept is read first, then the network restored.
    const kept = this.kept.has(p.metadata?.uid ?? "");
    await this.hold?.promise;
    if (this.failReattach && kept) throw this.failReattach;
    if (!kept) return undefined;
    const ip = `127.0.20.${this.#next++}`;
    return { podIP: ip, podIPs: [ip] };
  }

  detach(p: Pod) {
    this.calls.push(`detach ${p.metadata?.uid}`);
    this.kept.delete(p.metadata?.uid ?? "");
    return Promise.resolve();
  }

  adopted(pods: Pod[]) {
    this.calls.push(`adopted ${pods.map((p) => p.metadata?.uid).join(",")}`);
    const keep = new Set(pods.map((p) => p.metadata?.uid));
    for (const uid of this.kept) if (!keep.has(uid)) this.kept.delete(uid);
    return Promise.resolve();
  }

  setRemoteAddress(p: Pod, address: string | undefined) {
    this.calls.push(`remote ${p.metadata?.uid} ${address ?? "none"}`);
  }

  setServices() {}
}

function addressesWith(gateway: Promise<PodNetworkGateway>): PodAddresses {
  return new PodAddresses({ gateway, log: getLogger("test"), onAttached: () => {} });
}

Deno.test("a pod that leaves B before the gateway is ready is not reattached, and the gateway lets its kept IP go", async () => {
  const fake = new FakeGateway(["uid-a", "uid-b"]);
  const ready = Promise.withResolvers<PodNetworkGateway>();
  const addresses = addressesWith(ready.promise);
  // After a restart: the first list holds a and b, the gateway is still on its way into B.
  const adopting = addresses.adopt(new Map([["ns/a", pod("a")], ["ns/b", pod("b")]]));
  await addresses.detach("ns/a", pod("a"));
  ready.resolve(fake);
  await adopting;
  assert.equal(addresses.of("ns/a"), undefined, "a pod gone from B was given its IP in A again");
  assert.ok(addresses.of("ns/b"), "the pod still in B keeps its IP in A");
  assert.ok(!fake.calls.includes("reattach uid-a"), fake.calls.join("; "));
  assert.ok(fake.calls.includes("adopted uid-b"), fake.calls.join("; "));
  assert.deepEqual([...fake.kept], ["uid-b"]);
});

Deno.test("a pod that leaves B while its IP is being reattached is detached once reattached", async () => {
  const fake = new FakeGateway(["uid-a"]);
  fake.hold = Promise.withResolvers();
  const addresses = addressesWith(Promise.resolve(fake));
  const adopting = addresses.adopt(new Map([["ns/a", pod("a")]]));
  while (!fake.calls.includes("reattach uid-a")) await new Promise((r) => setTimeout(r, 1));
  await addresses.detach("ns/a", pod("a"));
  fake.hold.resolve();
  await adopting;
  assert.equal(addresses.of("ns/a"), undefined, "a pod gone from B kept its IP in A");
  assert.deepEqual(fake.calls, ["reattach uid-a", "detach uid-a", "adopted "]);
  assert.deepEqual([...fake.kept], []);
});

Deno.test("a pod attached by this run is detached when it leaves B, its address in B told gone first", async () => {
  const fake = new FakeGateway([]);
  const addresses = addressesWith(Promise.resolve(fake));
  await addresses.adopt(new Map());
  await addresses.attach("ns/a", pod("a"));
  addresses.setRemote("ns/a", "127.0.30.1");
  await addresses.detach("ns/a", pod("a"));
  assert.equal(addresses.of("ns/a"), undefined);
  assert.deepEqual(fake.calls, [
    "adopted ",
    "attach uid-a",
    "remote uid-a 127.0.30.1",
    "remote uid-a none",
    "detach uid-a",
  ]);
});

Deno.test("a pod created again under a name that left B before the first list is reattached", async () => {
  const fake = new FakeGateway(["uid-a"]);
  const ready = Promise.withResolvers<PodNetworkGateway>();
  const addresses = addressesWith(ready.promise);
  await addresses.detach("ns/a", pod("a"));
  // The same name, another pod (uid): not the one that left.
  const again: Pod = { metadata: { namespace: "ns", name: "a", uid: "uid-a2" } };
  fake.kept.add("uid-a2");
  const adopting = addresses.adopt(new Map([["ns/a", again]]));
  ready.resolve(fake);
  await adopting;
  assert.ok(addresses.of("ns/a"));
  assert.deepEqual(fake.calls, ["reattach uid-a2", "adopted uid-a2"]);
});

/** An error as the tunnel host's network throws it, by name. */
function named(name: string, message: string): Error {
  const err = new Error(message);
  err.name = name;
  return err;
}

Deno.test("a pod whose kept IP in A is lost gets a new one; a passing failure is tried again", async () => {
  for (const when of ["adopt", "ensure"] as const) {
    const fake = new FakeGateway(["uid-a"]);
    fake.failReattach = named("PodIPUnavailableError", "198.19.1.5 is taken");
    const addresses = addressesWith(Promise.resolve(fake));
    // The first list hands the pod over, or B's informer syncs it before that list is done.
    if (when === "adopt") await addresses.adopt(new Map([["ns/a", pod("a")]]));
    await addresses.ensure("ns/a", pod("a"));
    assert.equal(addresses.of("ns/a")?.podIP.startsWith("127.0.10."), true, when);
    assert.ok(fake.calls.includes("detach uid-a"), `${when}: ${fake.calls.join("; ")}`);
  }
  const fake = new FakeGateway(["uid-a"]);
  fake.failReattach = named("Error", "the relay did not listen within 5 s");
  const addresses = addressesWith(Promise.resolve(fake));
  await assert.rejects(addresses.ensure("ns/a", pod("a")), /did not listen/);
  assert.deepEqual([...fake.kept], ["uid-a"], "a passing failure let the kept IP go");
  fake.failReattach = undefined;
  await addresses.ensure("ns/a", pod("a"));
  assert.equal(addresses.of("ns/a")?.podIP.startsWith("127.0.20."), true, "not the kept IP");
});
