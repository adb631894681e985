/**
 * `--leader-elect` and its timings: defaults, client-go's rules between them, and the refusal of
 * a provider that cannot run as several replicas (exit 2, nothing written).
 * @module
 */
import assert from "node:assert/strict";
import { loadConfig } from "../../app/config/config.ts";

const load = (args: string[]) =>
  loadConfig({ args: ["--provider=mock", ...args], env: {}, readFile: () => Promise.reject() });

Deno.test("leader election is off by default; its timings default to 8s, 6s and 1s", async () => {
  const result = await load([]);
  assert.ok(result.ok);
  assert.equal(result.config.leaderElect, false);
  assert.equal(result.config.leaderElectLeaseDuration, 8_000);
  assert.equal(result.config.leaderElectRenewDeadline, 6_000);
  assert.equal(result.config.leaderElectRetryPeriod, 1_000);
  assert.equal(result.config.leaderElectNamespace, "kube-node-lease");
  const on = await load(["--leader-elect", "--leader-elect-lease-duration=15s"]);
  assert.ok(on.ok && on.config.leaderElect && on.config.leaderElectLeaseDuration === 15_000);
});

Deno.test("a renew deadline not shorter than the lease, or a retry period too long, is refused", async () => {
  const result = await load([
    "--leader-elect-lease-duration=5s",
    "--leader-elect-renew-deadline=5s",
    "--leader-elect-retry-period=5s",
  ]);
  assert.ok(!result.ok);
  const text = result.errors.join("\n");
  assert.match(text, /--leader-elect-renew-deadline: 5s must be shorter than the lease duration/);
  assert.match(
    text,
    /--leader-elect-retry-period: 5s must be above 0 and below the renew deadline/,
  );
  const fractional = await load(["--leader-elect-lease-duration=7500ms"]);
  assert.ok(!fractional.ok);
  assert.match(fractional.errors.join("\n"), /lease-duration: must be whole seconds/);
});

Deno.test("--leader-elect with --remote-pod-network is refused: a failover would move pods' IPs", async () => {
  const result = await load([
    "--provider=kubernetes",
    "--leader-elect",
    "--remote-pod-network=/etc/vkubelet/remote-pods.yaml",
  ]);
  assert.ok(!result.ok);
  assert.match(
    result.errors.join("\n"),
    /--leader-elect: cannot be combined with --remote-pod-network: .* a failover would change running pods' IPs/,
  );
  assert.ok((await load(["--provider=kubernetes", "--leader-elect"])).ok);
});

Deno.test("the process provider refuses --leader-elect with exit 2", async () => {
  const dir = await Deno.makeTempDir({ prefix: "vk-ha-config-" });
  try {
    await Deno.writeTextFile(`${dir}/process.yaml`, `stateDir: ${dir}/state\ncgroups: "off"\n`);
    await Deno.writeTextFile(
      `${dir}/kubeconfig`,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "c", cluster: { server: "https://127.0.0.1:1" } }],
        users: [{ name: "u", user: { token: "t" } }],
        contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
        "current-context": "c",
      }),
    );
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        new URL("../../main.ts", import.meta.url).pathname,
        "--provider=process",
        `--provider-config=${dir}/process.yaml`,
        `--kubeconfig=${dir}/kubeconfig`,
        "--leader-elect",
      ],
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 2, stderr);
    assert.match(stderr, /--leader-elect: provider process cannot run as several replicas/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
