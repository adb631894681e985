/**
 * deploy/systemd/vkubelet.service: `systemd-analyze verify` accepts it, with and without the
 * unprivileged drop-in, its offline security exposure stays at or below the level reviewed, and
 * `Type=notify` holds: vkubelet sends `READY=1` to `$NOTIFY_SOCKET` once its node is Ready,
 * `WATCHDOG=1` while `$WATCHDOG_USEC` is set, and `STOPPING=1` on SIGTERM.
 */
import assert from "node:assert/strict";
import { useCluster } from "../../tools/cluster/harness.ts";
import { VKUBELET_PERMISSIONS } from "../../scripts/permissions.ts";
import { spawnVkubelet } from "./_helpers.ts";
import { eventually } from "../../tools/harness/wait.ts";

const root = new URL("../../", import.meta.url).pathname;
const unit = `${root}deploy/systemd/vkubelet.service`;
const dropIn = `${root}deploy/systemd/unprivileged.conf`;

async function which(command: string): Promise<string | undefined> {
  const out = await new Deno.Command("sh", { args: ["-c", `command -v ${command}`] }).output()
    .catch(() => undefined);
  const path = out?.success ? new TextDecoder().decode(out.stdout).trim() : "";
  return path || undefined;
}

const analyze = await which("systemd-analyze");
if (!analyze) {
  console.warn(
    "systemd_test: systemd-analyze is not installed (apt-get install systemd); " +
      "skipping the unit checks",
  );
}

/**
 * The unit with ExecStart pointed at a stand-in executable (verify checks that it exists), and
 * the unprivileged drop-in in its `.d` folder when `unprivileged`.
 */
async function unitCopy(unprivileged = false): Promise<{ dir: string; path: string }> {
  const dir = await Deno.makeTempDir({ prefix: "vk-unit-" });
  // Both the unit and the drop-in (its own ExecStart=) run the stand-in binary.
  const here = async (path: string) =>
    (await Deno.readTextFile(path)).replaceAll("/usr/local/bin/vkubelet", `${dir}/vkubelet`);
  if (unprivileged) {
    await Deno.mkdir(`${dir}/vkubelet.service.d`);
    await Deno.writeTextFile(`${dir}/vkubelet.service.d/unprivileged.conf`, await here(dropIn));
  }
  await Deno.writeTextFile(`${dir}/vkubelet`, "#!/bin/sh\n", { mode: 0o755 });
  const text = await here(unit);
  await Deno.writeTextFile(`${dir}/vkubelet.service`, text);
  return { dir, path: `${dir}/vkubelet.service` };
}

async function run(args: string[]) {
  const out = await new Deno.Command(analyze!, { args, stdout: "piped", stderr: "piped" })
    .output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  return { code: out.code, text };
}

Deno.test({
  name: "systemd-analyze verify accepts the unit",
  ignore: !analyze,
  async fn() {
    const { dir, path } = await unitCopy();
    try {
      const res = await run(["verify", path]);
      assert.equal(res.code, 0, res.text);
      assert.equal(res.text.trim(), "", "no warnings");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "the unprivileged drop-in verifies and runs vkubelet as a dynamic user reading credentials",
  ignore: !analyze,
  async fn() {
    const { dir, path } = await unitCopy(true);
    try {
      const verify = await run(["verify", path]);
      assert.equal(verify.code, 0, verify.text);
      assert.equal(verify.text.trim(), "", "no warnings");
      // systemd reads the drop-in: the unit no longer runs as root.
      const security = await run(["security", "--offline=yes", path]);
      assert.match(security.text, /✓ User=\/DynamicUser=/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
    // /etc/vkubelet is root's alone (docs/install.md): no group a pod could name reads it; the
    // dynamic user gets copies from systemd as credentials instead.
    const lines = (await Deno.readTextFile(dropIn)).split("\n");
    assert.ok(lines.includes("DynamicUser=yes"));
    assert.ok(!lines.some((l) => l.startsWith("SupplementaryGroups=")));
    assert.ok(lines.includes("LoadCredential=config.yaml:/etc/vkubelet/config.yaml"));
    assert.ok(
      lines.some((l) => l.startsWith("ExecStart=") && l.includes("--config=%d/config.yaml")),
    );
    const install = await Deno.readTextFile(`${root}docs/install.md`);
    assert.doesNotMatch(install, /groupadd --system vkubelet/);
    assert.match(install, /install -d -m 0700 \/etc\/vkubelet/);
    assert.match(install, /install -m 0600 deploy\/systemd\/config\.yaml/);
  },
});

Deno.test({
  name: "the unit's security exposure is at most 6.0 (systemd-analyze security --offline)",
  ignore: !analyze,
  async fn() {
    const { dir, path } = await unitCopy();
    try {
      const res = await run(["security", "--offline=yes", "--threshold=60", path]);
      assert.equal(res.code, 0, res.text);
      assert.match(res.text, /Overall exposure level for vkubelet\.service: [0-5]\.\d|6\.0/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("the unit is hardened and waits for readiness", async () => {
  const text = await Deno.readTextFile(unit);
  for (
    const line of [
      "Type=notify",
      "NoNewPrivileges=yes",
      "ProtectSystem=strict",
      "ProtectHome=yes",
      "PrivateTmp=yes",
      "StateDirectory=vkubelet",
      "Restart=on-failure",
      "RestartPreventExitStatus=2",
      "ExecStart=/usr/local/bin/vkubelet --config=/etc/vkubelet/config.yaml",
      "WatchdogSec=30s",
      "MemoryMax=512M",
    ]
  ) assert.ok(text.split("\n").includes(line), `${line} in vkubelet.service`);
});

Deno.test("vkubelet tells $NOTIFY_SOCKET READY=1 once its node is Ready, WATCHDOG=1 while asked, STOPPING=1 on SIGTERM", async () => {
  const cluster = await useCluster();
  const nodeName = `vk-notify-${crypto.randomUUID().slice(0, 6)}`;
  const dir = await Deno.makeTempDir({ prefix: "vk-notify-" });
  const socket = `${dir}/notify`;
  // The receiving end, as systemd would hold it (this test process runs without --unstable-net).
  const receiver = new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      "--unstable-net",
      `const s = Deno.listenDatagram({ transport: "unixpacket", path: ${JSON.stringify(socket)} });
       console.log("LISTENING");
       for await (const [data] of s) console.log(new TextDecoder().decode(data));`,
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  let received = "";
  const reading = (async () => {
    for await (const chunk of receiver.stdout.pipeThrough(new TextDecoderStream())) {
      received += chunk;
    }
  })();
  await eventually(
    "the notify socket",
    () => Promise.resolve(received.includes("LISTENING") || undefined),
  );
  const serving = await cluster.issueServingCert(nodeName, ["127.0.0.1"]);
  const vk = await spawnVkubelet(cluster, nodeName, Deno.execPath(), [
    "run",
    "--no-prompt",
    ...VKUBELET_PERMISSIONS,
    `${root}main.ts`,
    `--nodename=${nodeName}`,
    "--provider=mock",
    `--kubeconfig=${await cluster.nodeKubeconfig(nodeName)}`,
    "--node-ip=127.0.0.1",
    "--listen-address=127.0.0.1",
    "--port=0",
    `--tls-cert-file=${serving.certFile}`,
    `--tls-private-key-file=${serving.keyFile}`,
  ], { env: { NOTIFY_SOCKET: socket, WATCHDOG_USEC: "2000000" } });
  try {
    await eventually("READY=1", () => Promise.resolve(received.includes("READY=1") || undefined));
    // WatchdogSec=2s: fed every second, so more than once by the time we look again.
    const fed = () => received.split("\n").filter((line) => line === "WATCHDOG=1").length;
    const before = fed();
    await eventually("WATCHDOG=1 again", () => Promise.resolve(fed() > before || undefined));
    assert.ok(!received.includes("STOPPING=1"));
    assert.equal(await vk.stop(), 0, vk.output());
    await eventually(
      "STOPPING=1",
      () => Promise.resolve(received.includes("STOPPING=1") || undefined),
    );
  } finally {
    await vk.stop();
    receiver.kill();
    await reading;
    await receiver.status;
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
    await Deno.remove(dir, { recursive: true });
  }
});
