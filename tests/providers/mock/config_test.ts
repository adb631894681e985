import assert from "node:assert/strict";
import { type Cidr, IpPool, parseLoopbackCidr } from "../../../providers/mock/cidr.ts";
import { parseMockConfig } from "../../../providers/mock/config.ts";
import { quantityToNumber } from "../../../k8s/quantity.ts";

Deno.test("no config gives a large loopback node with steady usage", () => {
  const parsed = parseMockConfig(undefined, "vk-1");
  assert.ok(parsed.ok);
  assert.deepEqual(parsed.config.capacity, {
    cpu: "100",
    memory: "1Ti",
    pods: "10000",
    "ephemeral-storage": "1Ti",
  });
  assert.equal(parsed.config.podCIDR, "127.80.0.0/16");
  assert.deepEqual(parsed.config.usage, { cpu: "10m", memory: "16Mi" });
  assert.equal(parsed.config.followInterval, 1000);
});

Deno.test("extra resources and overrides join the default capacity", () => {
  const parsed = parseMockConfig({ capacity: { "nvidia.com/gpu": 4, cpu: "8" } }, "vk-1");
  assert.ok(parsed.ok);
  assert.equal(parsed.config.capacity["nvidia.com/gpu"], "4");
  assert.equal(parsed.config.capacity.cpu, "8");
  assert.equal(parsed.config.capacity.memory, "1Ti");
});

Deno.test("virtual-kubelet's mock config keyed by node name is accepted", () => {
  const parsed = parseMockConfig({
    "vk-1": {
      cpu: "2",
      memory: "32Gi",
      pods: "128",
      others: { "nvidia.com/gpu": "1" },
      providerID: "mock://vk-1",
    },
  }, "vk-1");
  assert.ok(parsed.ok);
  assert.deepEqual(
    [
      parsed.config.capacity.cpu,
      parsed.config.capacity.pods,
      parsed.config.capacity["nvidia.com/gpu"],
    ],
    ["2", "128", "1"],
  );
  assert.equal(parsed.config.providerID, "mock://vk-1");
});

Deno.test("every config problem names its field", () => {
  const parsed = parseMockConfig({
    capacity: { cpu: "10x" },
    podCIDR: "10.0.0.0/8",
    usage: { cpu: "0", memory: "1Mi" },
    taints: [{ key: "a", effect: "Sometimes" }],
    followInterval: "soon",
    colour: "blue",
  }, "vk-1");
  assert.ok(!parsed.ok);
  const fields = parsed.errors.map((e) => e.split(":")[0]).sort();
  assert.deepEqual(fields, [
    "(top level)",
    "capacity.cpu",
    "followInterval",
    "podCIDR",
    "taints.0.effect",
    "usage.cpu",
  ]);
  assert.ok(parsed.errors.some((e) => e.includes("colour")));
});

Deno.test("pod CIDRs outside 127.0.0.0/8 are refused", () => {
  assert.match(String(parseLoopbackCidr("192.168.0.0/16")), /not inside the loopback range/);
  assert.match(String(parseLoopbackCidr("127.0.0.0/7")), /not inside the loopback range/);
  assert.match(String(parseLoopbackCidr("127.1.2.3")), /not an IPv4 CIDR/);
  assert.deepEqual(parseLoopbackCidr("127.80.1.7/16"), {
    base: (127 * 256 + 80) * 65536,
    size: 65536,
    text: "127.80.1.7/16",
  });
});

Deno.test("pod IPs are handed out once and reused after release", () => {
  const cidr = parseLoopbackCidr("127.9.0.0/30");
  assert.ok(typeof cidr !== "string");
  const pool = new IpPool(cidr);
  const first = pool.allocate();
  const second = pool.allocate();
  assert.deepEqual([first, second], ["127.9.0.1", "127.9.0.2"]);
  assert.throws(() => pool.allocate(), RangeError);
  pool.release(first);
  assert.equal(pool.allocate(), "127.9.0.1");
  assert.equal(pool.inUse, 2);
});

Deno.test("quantities parse with decimal, binary and exponent suffixes", () => {
  assert.equal(quantityToNumber("250m"), 0.25);
  assert.equal(quantityToNumber("2"), 2);
  assert.equal(quantityToNumber("16Mi"), 16 * 2 ** 20);
  assert.equal(quantityToNumber("1.5Gi"), 1.5 * 2 ** 30);
  assert.equal(quantityToNumber("2k"), 2000);
  assert.equal(quantityToNumber("3e3"), 3000);
  assert.equal(quantityToNumber("1E"), 1e18);
  assert.equal(quantityToNumber("10x"), undefined);
  assert.equal(quantityToNumber(""), undefined);
});

Deno.test("pod IPs are derived from the UID, the previous address wins, collisions take the next", () => {
  const cidr = parseLoopbackCidr("127.9.0.0/29") as Cidr;
  const a = new IpPool(cidr).allocate({ uid: "uid-a" });
  assert.equal(new IpPool(cidr).allocate({ uid: "uid-a" }), a, "same UID, same address");
  const pool = new IpPool(cidr);
  assert.equal(pool.allocate({ uid: "uid-a" }), a);
  const collided = pool.allocate({ uid: "uid-a" });
  assert.notEqual(collided, a, "a taken address is not handed out twice");
  const fresh = new IpPool(cidr);
  assert.equal(fresh.allocate({ uid: "uid-a", previous: "127.9.0.5" }), "127.9.0.5");
  assert.notEqual(fresh.allocate({ uid: "uid-b", previous: "127.9.0.5" }), "127.9.0.5");
  assert.equal(fresh.allocate({ uid: "uid-a", previous: "10.0.0.1" }).startsWith("127.9.0."), true);
  for (let i = 0; i < 3; i++) fresh.allocate({ uid: `more-${i}` });
  assert.throws(() => fresh.allocate({ uid: "full" }), RangeError);
});
