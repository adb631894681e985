import assert from "node:assert/strict";
import { loadConfig } from "../../app/config/config.ts";

function files(contents: Record<string, string>) {
  return (path: string) =>
    path in contents
      ? Promise.resolve(contents[path])
      : Promise.reject(new Deno.errors.NotFound(`No such file or directory: ${path}`));
}

async function load(args: string[], contents: Record<string, string> = {}) {
  return await loadConfig({ args, env: {}, readFile: files(contents) });
}

const SERVING = ["--tls-self-signed"];

Deno.test("--nodes takes names and gives each node its own loopback address by position", async () => {
  const result = await load(["--provider=mock", ...SERVING, "--nodes=vk-a,vk-b", "--nodes=vk-c"]);
  assert.ok(result.ok, JSON.stringify(result));
  assert.deepEqual(result.config.nodes.map((n) => [n.name, n.nodeIp]), [
    ["vk-a", "127.1.0.2"],
    ["vk-b", "127.1.0.3"],
    ["vk-c", "127.1.0.4"],
  ]);
});

Deno.test("a config file lists nodes with their own labels, address and provider config", async () => {
  const result = await load(["--config=vk.yaml"], {
    "vk.yaml": [
      "provider: mock",
      "tlsSelfSigned: true",
      "nodes:",
      "  - vk-a",
      "  - name: vk-b",
      "    nodeIp: 127.9.0.1",
      "    labels: { pool: gpu }",
      "    providerConfig: b.yaml",
    ].join("\n"),
  });
  assert.ok(result.ok, JSON.stringify(result));
  assert.deepEqual(result.config.nodes, [
    { name: "vk-a", labels: {}, nodeIp: "127.1.0.2" },
    { name: "vk-b", labels: { pool: "gpu" }, nodeIp: "127.9.0.1", providerConfig: "b.yaml" },
  ]);
});

Deno.test("without --nodes there is one node, as before", async () => {
  const result = await load(["--provider=mock"]);
  assert.ok(result.ok);
  assert.deepEqual(result.config.nodes, []);
});

Deno.test("a node name that is not a DNS subdomain is refused", async () => {
  const result = await load(["--provider=mock", ...SERVING, "--nodes=vk-a,Bad_Name"]);
  assert.ok(!result.ok);
  assert.match(result.errors.join("\n"), /"Bad_Name" is not a valid node name/);
});

Deno.test("the process provider refuses several nodes with a config error naming the fix", async () => {
  const result = await load(["--provider=process", ...SERVING, "--nodes=vk-a,vk-b"]);
  assert.ok(!result.ok);
  assert.equal(result.errors.length, 1, result.errors.join("\n"));
  assert.match(result.errors[0], /^--nodes: the process provider .* run one vkubelet per node$/);
});

Deno.test("several nodes: every problem at once (duplicates, shared address, listen address)", async () => {
  const result = await load(["--config=vk.yaml", "--listen-address=127.0.0.1"], {
    "vk.yaml": [
      "provider: mock",
      "nodes:",
      "  - vk-a",
      "  - vk-a",
      "  - { name: vk-c, nodeIp: 127.1.0.2 }",
    ].join("\n"),
  });
  assert.ok(!result.ok);
  const text = result.errors.join("\n");
  assert.match(text, /node vk-a is listed twice/);
  assert.match(text, /nodeIp 127\.1\.0\.2 is given to two nodes/);
  assert.match(text, /leave --listen-address unset \(now 127\.0\.0\.1\)/);
  assert.equal(result.errors.length, 3, text);
});

Deno.test("--nodes takes --leader-elect and kubelet-serving CSRs, as one node does", async () => {
  const result = await load([
    "--provider=mock",
    "--nodes=vk-a,vk-b",
    "--leader-elect",
    "--rotate-server-certificates",
  ]);
  assert.ok(result.ok, JSON.stringify(result));
  assert.equal(result.config.leaderElect, true);
  assert.equal(result.config.rotateServerCertificates, true);
});

Deno.test("--nodes refuses TLS bootstrap, saying a node identity acts for its own node only", async () => {
  const result = await load([
    "--provider=mock",
    ...SERVING,
    "--nodes=vk-a,vk-b",
    "--bootstrap-kubeconfig=bootstrap.conf",
  ]);
  assert.ok(!result.ok);
  assert.equal(result.errors.length, 1, result.errors.join("\n"));
  assert.match(result.errors[0], /^--bootstrap-kubeconfig: obtains one node's identity/);
  assert.match(result.errors[0], /run one vkubelet per node$/);
});
