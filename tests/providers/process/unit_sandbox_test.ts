/**
 * The process provider under the shipped systemd unit's own restrictions
 * (deploy/systemd/vkubelet.service). systemd is not PID 1 here, so tools/unit_sandbox applies
 * them the way systemd's service manager does (the same seccomp rules, no_new_privs, dropped
 * capabilities, umask; see its source for which settings it reproduces) and runs the provider
 * inside (tools/unit_sandbox/pods_report.ts). Two pods of one uid: a victim with a secret in its
 * environment, and one that scans /proc for it.
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { UnitReport } from "../../../tools/unit_sandbox/pods_report.ts";
import { VKUBELET_PERMISSIONS } from "../../../scripts/permissions.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const UNIT = join(ROOT, "deploy/systemd/vkubelet.service");
const SOURCE = join(ROOT, "tools/unit_sandbox/unit_sandbox.c");
const BINARY = join(ROOT, ".cache/unit-sandbox/unit_sandbox");
const DRIVER = join(ROOT, "tools/unit_sandbox/pods_report.ts");

const isRoot = Deno.uid() === 0;
const hasGcc = await new Deno.Command("gcc", { args: ["--version"], stdout: "null" }).output()
  .then((o) => o.success, () => false);
const skip = !isRoot || !hasGcc || Deno.build.os !== "linux";

/** Builds the sandbox from its source unless the binary is newer. */
async function sandbox(): Promise<string> {
  const built = await Deno.stat(BINARY).catch(() => undefined);
  if (built && built.mtime! >= (await Deno.stat(SOURCE)).mtime!) return BINARY;
  await Deno.mkdir(join(ROOT, ".cache/unit-sandbox"), { recursive: true });
  const out = await new Deno.Command("gcc", {
    args: ["-O2", "-Wall", "-o", BINARY, SOURCE],
    stderr: "piped",
  }).output();
  assert.ok(out.success, `gcc failed: ${new TextDecoder().decode(out.stderr)}`);
  return BINARY;
}

/** Runs `command` under the unit, with `set` replacing some of its lines. */
async function underUnit(set: string[], command: string[]) {
  const args = [UNIT, ...set.flatMap((s) => ["--set", s]), "--", ...command];
  const out = await new Deno.Command(await sandbox(), { args, cwd: ROOT, stderr: "piped" })
    .output();
  const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { success: out.success, stdout: text(out.stdout), stderr: text(out.stderr) };
}

/**
 * The provider's report on the two pods, run under the unit with the permissions vkubelet ships
 * with (scripts/permissions.ts), not `-A`: what the binary may not do, the test may not either.
 */
async function podsUnderUnit(set: string[], config = {}): Promise<UnitReport> {
  const out = await underUnit(set, [
    Deno.execPath(),
    "run",
    ...VKUBELET_PERMISSIONS,
    "--quiet",
    DRIVER,
    JSON.stringify(config),
  ]);
  assert.ok(out.success, `the provider failed under the unit: ${out.stderr}`);
  return JSON.parse(out.stdout.trim().split("\n").pop()!);
}

function isolation(report: UnitReport) {
  return report.nodeConditions?.find((c) => c.type === "vkubelet.io/ContainerIsolation");
}

Deno.test({
  name: "the sandbox enforces the unit's RestrictNamespaces= as systemd does",
  ignore: skip,
  fn: async () => {
    const unshare = ["unshare", "-m", "--propagation", "private", "--pid", "--fork", "true"];
    const shipped = await underUnit([], unshare);
    assert.ok(shipped.success, `the shipped unit forbids a view: ${shipped.stderr}`);
    const old = await underUnit(["RestrictNamespaces=mnt"], unshare);
    assert.equal(old.success, false);
    assert.match(old.stderr, /Operation not permitted/);
    // A network namespace per pod (CNI) is allowed; every other kind stays forbidden.
    const net = await underUnit([], ["unshare", "--net", "true"]);
    assert.ok(net.success, `the shipped unit forbids a pod network namespace: ${net.stderr}`);
    const ipc = await underUnit([], ["unshare", "--ipc", "true"]);
    assert.equal(ipc.success, false);
    assert.match(ipc.stderr, /Operation not permitted/);
  },
});

Deno.test({
  name: "under the shipped unit, pods start in their own view and PID namespace",
  ignore: skip,
  fn: async () => {
    const report = await podsUnderUnit([]);
    assert.doesNotMatch(report.prying.log, /environ of/, "a pod read another pod's environment");
    assert.ok(report.prying.running, JSON.stringify(report.prying));
    assert.ok(report.victim.running, JSON.stringify(report.victim));
    // Its own runner (PID 1), shell and scan: a handful, not the host's processes.
    const count = Number(/scanned (\d+) processes/.exec(report.prying.log)?.[1]);
    assert.ok(count > 0 && count < 10, report.prying.log);
    // exec (nsenter: setns into both namespaces) is allowed too: PID 1 is the container's runner.
    assert.equal(report.exec?.code, 0, report.exec?.out ?? "no exec report");
    assert.match(report.exec!.out, /vkubelet-runner/);
    assert.ok(Number(report.exec!.out.trim().split("\n").pop()) < 10, report.exec!.out);
    assert.equal(isolation(report)?.status, "True");
  },
});

Deno.test({
  name: "where no PID namespace can be made, auto refuses pods and the node says why",
  ignore: skip,
  fn: async () => {
    const report = await podsUnderUnit(["RestrictNamespaces=mnt"]);
    assert.doesNotMatch(report.prying.log, /environ of/, "a pod read another pod's environment");
    assert.equal(report.prying.running, false, "a pod ran without its view");
    for (const pod of [report.victim, report.prying]) {
      assert.equal(pod.waiting?.reason, "CreateContainerError", JSON.stringify(pod));
      assert.match(pod.waiting?.message ?? "", /a PID namespace cannot be created/);
      assert.match(pod.waiting?.message ?? "", /RestrictNamespaces=mnt pid/);
      assert.match(pod.waiting?.message ?? "", /mountNamespace: off/);
    }
    const condition = isolation(report);
    assert.equal(condition?.status, "False");
    assert.equal(condition?.reason, "NoContainerView");
    assert.match(condition?.message ?? "", /pods are refused.*a PID namespace cannot be created/);
  },
});

Deno.test({
  name: "only mountNamespace: off runs pods without a view, and the node says isolation is off",
  ignore: skip,
  fn: async () => {
    const report = await podsUnderUnit(["RestrictNamespaces=mnt"], { mountNamespace: "off" });
    assert.ok(report.prying.running, JSON.stringify(report.prying));
    const condition = isolation(report);
    assert.equal(condition?.status, "False");
    assert.equal(condition?.reason, "IsolationOff");
    // What the opt-in gives up: same-uid pods see each other.
    assert.match(report.prying.log, /environ of/);
  },
});

Deno.test("vkubelet's config directory is root's alone in the unit, its drop-in and the install guide", async () => {
  const unit = await Deno.readTextFile(UNIT);
  const mode = /^ConfigurationDirectoryMode=(\d+)$/m.exec(unit)?.[1];
  assert.ok(mode, "the unit sets ConfigurationDirectoryMode");
  assert.equal(parseInt(mode, 8) & 0o077, 0, `ConfigurationDirectoryMode=${mode} lets a group in`);
  const dropIn = await Deno.readTextFile(join(ROOT, "deploy/systemd/unprivileged.conf"));
  assert.doesNotMatch(dropIn, /^SupplementaryGroups=/m, "the drop-in reads the config by group");
  const guide = await Deno.readTextFile(join(ROOT, "docs/install.md"));
  // Every `install` into /etc/vkubelet: its mode gives no group or other any access, no group set.
  const installs = guide.replaceAll("\\\n", " ").split("\n")
    .filter((line) => /^install\b/.test(line) && line.includes("/etc/vkubelet"));
  assert.ok(installs.length > 0, "the guide installs into /etc/vkubelet");
  for (const line of installs) {
    const m = /-m (\d+)/.exec(line)?.[1];
    assert.ok(m && (parseInt(m, 8) & 0o077) === 0, `group or others may read: ${line}`);
    assert.doesNotMatch(line, /\s-g\s/, `a group owns it: ${line}`);
  }
});
