import assert from "node:assert/strict";

const mainPath = new URL("../../main.ts", import.meta.url).pathname;

async function vkubelet(args: string[], env: Record<string, string> = {}) {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-env", "--allow-sys", "--allow-net", mainPath, ...args],
    env: { NO_COLOR: "1", ...env },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
}

Deno.test("--help prints every option and exits 0", async () => {
  const { code, stdout } = await vkubelet(["--help"]);
  assert.equal(code, 0);
  assert.match(stdout, /^vkubelet \d+\.\d+\.\d+: a virtual kubelet/);
  for (const flag of ["--nodename", "--provider-config", "--pod-sync-workers", "--log-format"]) {
    assert.ok(stdout.includes(flag), flag);
  }
  assert.ok(stdout.includes("KUBELET_PORT"));
});

Deno.test("--version prints the version from deno.json and exits 0", async () => {
  const { code, stdout } = await vkubelet(["--version"]);
  const denoJson = JSON.parse(await Deno.readTextFile(new URL("../../deno.json", import.meta.url)));
  assert.equal(code, 0);
  assert.equal(stdout, `vkubelet ${denoJson.version}\n`);
});

Deno.test("bad config exits 2 naming every problem on stderr", async () => {
  const { code, stdout, stderr } = await vkubelet(
    ["--provider", "nope", "--nodename=Bad_Name", "--pod-sync-workers=0", "--bogus"],
    { KUBELET_PORT: "port" },
  );
  assert.equal(code, 2);
  assert.equal(stdout, "");
  assert.match(stderr, /^vkubelet: invalid configuration:\n/);
  assert.ok(stderr.includes("  - unknown flag --bogus"));
  for (
    const field of ["--provider", "--nodename", "--pod-sync-workers", "KUBELET_PORT"]
  ) {
    assert.match(stderr, new RegExp(`  - ${field}`), field);
  }
  assert.match(stderr, /Run vkubelet --help/);
});

Deno.test("virtual-kubelet's flags warn instead of failing, also next to real errors", async () => {
  const { code, stderr } = await vkubelet(["--provider=nope", "--namespace", "x", "-v=4"]);
  assert.equal(code, 2);
  assert.match(stderr, /^ {2}- warning: --namespace ignored: /m);
  assert.match(stderr, /^ {2}- warning: -v=4 .*--log-level=debug/m);
  assert.doesNotMatch(stderr, /unknown flag/);
});

Deno.test("a provider config the provider rejects exits 2 before anything starts", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/mock.yaml`, "podCIDR: 192.168.0.0/16\n");
    const { code, stderr } = await vkubelet([
      "--provider=mock",
      `--provider-config=${dir}/mock.yaml`,
    ]);
    assert.equal(code, 2);
    assert.match(stderr, /podCIDR: 192\.168\.0\.0\/16 is not inside the loopback range/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
