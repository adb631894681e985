/**
 * `runtime: apptainer` (issue 55 item 1): the launcher runs a fake `apptainer` that records its
 * arguments and env, so each command line is checked as the compute node's shell runs it.
 */
import assert from "node:assert/strict";
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import { apptainerExecShell, imageRef } from "../../../providers/slurm/request/apptainer.ts";
import { parseSlurmConfig, type SlurmConfig } from "../../../providers/slurm/config.ts";
import { launcherScript } from "../../../providers/slurm/request/script.ts";

/** A fake apptainer: one line per call, its arguments then FOO as it sees it. */
const FAKE = `#!/bin/sh
{ printf '%s|' "$@"; echo "FOO=$FOO APPTAINERENV_FOO=$APPTAINERENV_FOO"; } >> "$CALLS"
`;

async function launch(pod: Pod, container: Container, extra: Record<string, unknown> = {}) {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/apptainer`, FAKE, { mode: 0o755 });
    const parsed = parseSlurmConfig({
      cli: {},
      sharedDir: "/shared",
      runtime: "apptainer",
      apptainerBin: `${dir}/apptainer`,
      hostPaths: ["/scratch"],
      ...extra,
    });
    if (!parsed.ok) throw new Error(parsed.errors.join("; "));
    const config: SlurmConfig = parsed.config;
    await Deno.writeTextFile(`${dir}/c.sh`, launcherScript(pod, container, "/shared/pd", config));
    const out = await new Deno.Command("sh", {
      args: [`${dir}/c.sh`, `${dir}/step`],
      env: { CALLS: `${dir}/calls`, SLURM_JOB_ID: "7", SLURM_STEP_ID: "0", PATH: "/usr/bin:/bin" },
      clearEnv: true,
    }).output();
    const calls = (await Deno.readTextFile(`${dir}/calls`)).trim().split("\n");
    return {
      code: out.code,
      calls: calls.map((c) => c.split("|")),
      step: await Deno.readTextFile(`${dir}/step`),
      config,
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function pod(container: Container, volumes: Pod["spec"] = { containers: [] }): Pod {
  return {
    metadata: { namespace: "ns", name: "p", uid: "u" },
    spec: { ...volumes, containers: [container] },
  };
}

Deno.test("a pod with a command runs `exec` in its instance, env given, the instance stopped", async () => {
  const c: Container = {
    name: "main",
    image: "busybox:1.36",
    command: ["sh", "-c"],
    args: ["echo $(FOO)"],
    env: [{ name: "FOO", value: "it's here" }],
    workingDir: "/work",
  };
  const { code, calls, step } = await launch(pod(c), c);
  assert.equal(code, 0);
  assert.equal(step, "0\n", "the launcher wrote the step ID");
  const [start, list, exec, stop] = calls;
  assert.deepEqual(list.slice(0, 4), ["instance", "list", "--json", "vk-7-main-0"]);
  assert.deepEqual(start.slice(0, 5), ["-q", "instance", "start", "--home", "/shared/pd/home"]);
  assert.deepEqual(start.slice(5, 7), ["docker://busybox:1.36", "vk-7-main-0"]);
  assert.deepEqual(exec.slice(0, 7), [
    "exec",
    "--pwd",
    "/work",
    "instance://vk-7-main-0",
    "sh",
    "-c",
    "echo it's here",
  ]);
  assert.ok(!calls.flat().includes("--cleanenv"), "no --cleanenv: the env reaches the container");
  assert.equal(exec.at(-1), "FOO=it's here APPTAINERENV_FOO=it's here");
  assert.deepEqual(stop.slice(0, 4), ["-q", "instance", "stop", "vk-7-main-0"]);
});

Deno.test("without a command the image's runscript runs (`run`) with the pod's args", async () => {
  const c: Container = {
    name: "web",
    image: "oras://registry.example/app:1",
    args: ["--port", "80"],
  };
  const { calls } = await launch(pod(c), c);
  assert.equal(calls[0][5], "oras://registry.example/app:1");
  assert.deepEqual(calls[2].slice(0, 4), ["run", "instance://vk-7-web-0", "--port", "80"]);
  // imageCommands names a command: exec it.
  const mapped = await launch(pod(c), c, {
    imageCommands: { "oras://registry.example/app": ["serve"] },
  });
  assert.deepEqual(mapped.calls[2].slice(0, 5), [
    "exec",
    "instance://vk-7-web-0",
    "serve",
    "--port",
    "80",
  ]);
});

Deno.test("GPUs add --nv, volumes become binds, a hostPath binds at its mountPath", async () => {
  const c: Container = {
    name: "train",
    image: "/images/torch.sif",
    command: ["python"],
    resources: { limits: { "nvidia.com/gpu": "1" } },
    volumeMounts: [
      { name: "cfg", mountPath: "/etc/cfg", readOnly: true },
      { name: "data", mountPath: "/data" },
    ],
  };
  const p = pod(c, {
    containers: [],
    volumes: [{ name: "cfg", configMap: { name: "cfg" } }, {
      name: "data",
      hostPath: { path: "/scratch/team/data" },
    }],
  });
  const { calls } = await launch(p, c);
  const start = calls[0];
  assert.ok(start.includes("--nv"));
  assert.deepEqual(
    start.filter((_, i) => start[i - 1] === "--bind"),
    ["/shared/pd/volumes/cfg:/etc/cfg:ro", "/scratch/team/data:/data"],
  );
  assert.ok(start.includes("/images/torch.sif"), "a local .sif path as given");
});

Deno.test("image references: a scheme or a path as given, else behind the prefix", () => {
  assert.equal(imageRef("busybox", "docker://"), "docker://busybox");
  assert.equal(imageRef("docker://busybox", "oras://r/"), "docker://busybox");
  assert.equal(imageRef("/sif/a.sif", "docker://"), "/sif/a.sif");
  assert.equal(
    imageRef("team/app:2", "oras://registry.example/"),
    "oras://registry.example/team/app:2",
  );
});

Deno.test("kubectl exec runs in the container's instance on the job", async () => {
  const parsed = parseSlurmConfig({ cli: {}, sharedDir: "/s", runtime: "apptainer" });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  const shell = apptainerExecShell(parsed.config, "main");
  const out = await new Deno.Command("sh", {
    args: [
      "-c",
      `apptainer() { printf '%s|' "$@"; }; ${shell.replace("exec 'apptainer'", "apptainer")}`,
      "sh",
      "ls",
      "-l",
    ],
    env: { SLURM_JOB_ID: "42" },
  }).output();
  assert.equal(new TextDecoder().decode(out.stdout), "-q|exec|instance://vk-42-main-0|ls|-l|");
});
