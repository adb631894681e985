/**
 * A `runtime: none` container of a pod on the tunnel resolves the Services by name: its launcher
 * binds the agent's hosts file over /etc/hosts in a mount namespace of its own, unprivileged
 * (run here as nobody), keeping the job's uid; where the node allows no user namespace it runs
 * on the node's /etc/hosts and says so in its log. The launcher as the provider writes it, run
 * with sh; no SLURM. Root only (to run it as another user).
 * @module
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { parseSlurmConfig } from "../../../providers/slurm/config.ts";
import { launcherScript } from "../../../providers/slurm/request/script.ts";

const NAME = "web.team.svc.cluster.local";
const skip = Deno.uid() !== 0 ? "needs root (to run the launcher as nobody)" : undefined;
if (skip) console.warn(`slurm tunnel hosts test skipped: ${skip}`);

/** A pod directory (readable by nobody) with the agent's hosts file and the launcher. */
async function podDir(): Promise<{ dir: string; launcher: string }> {
  const dir = await Deno.makeTempDir({ prefix: "vk-slurm-hosts-" });
  await Deno.chmod(dir, 0o755);
  for (const sub of ["state", "home", "c"]) await Deno.mkdir(`${dir}/${sub}`, { mode: 0o777 });
  await Deno.chmod(`${dir}/home`, 0o777);
  await Deno.writeTextFile(
    `${dir}/state/tunnel.hosts`,
    `127.0.0.1\tlocalhost\n127.64.0.5\t${NAME} web.team web\n`,
  );
  const parsed = parseSlurmConfig({ rest: { socket: "/run/rest.sock" }, sharedDir: "/shared" });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  const pod: Pod = {
    metadata: { namespace: "team", name: "job", uid: "uid-1" },
    spec: {
      containers: [{
        name: "main",
        image: "x",
        command: ["sh", "-c", `getent hosts ${NAME} || echo unresolved; echo "uid=$(id -u)"`],
      }],
    },
  };
  const launcher = `${dir}/c/main.sh`;
  await Deno.writeTextFile(
    launcher,
    launcherScript(pod, pod.spec!.containers[0], dir, parsed.config),
  );
  await Deno.chmod(launcher, 0o755);
  return { dir, launcher };
}

/** Runs the launcher as nobody with `path`; its output. */
async function runAsNobody(launcher: string, path: string): Promise<string> {
  const out = await new Deno.Command("setpriv", {
    args: ["--reuid=65534", "--regid=65534", "--clear-groups", "--", launcher],
    clearEnv: true,
    env: { PATH: path },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert.ok(out.success, text);
  return text;
}

const PATH = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";

Deno.test({
  name:
    "a runtime none container resolves Services by name through the agent's hosts file, as its own user",
  ignore: skip !== undefined,
  async fn() {
    const { dir, launcher } = await podDir();
    try {
      const out = await runAsNobody(launcher, PATH);
      assert.match(
        out,
        new RegExp(`^127\\.64\\.0\\.5\\s+${NAME.replaceAll(".", "\\.")}`, "m"),
        out,
      );
      assert.match(out, /^uid=65534$/m, "the container does not run as the job's own user");
      // The node's /etc/hosts is untouched outside the container.
      assert.ok(!(await Deno.readTextFile("/etc/hosts")).includes("127.64.0.5"));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "where no user namespace can be made, a runtime none container runs on and its log says names do not resolve",
  ignore: skip !== undefined,
  async fn() {
    const { dir, launcher } = await podDir();
    const bin = await Deno.makeTempDir({ prefix: "vk-no-userns-" });
    try {
      await Deno.chmod(bin, 0o755);
      // An unshare that fails as it does where user namespaces are off.
      await Deno.writeTextFile(
        `${bin}/unshare`,
        "#!/bin/sh\necho 'unshare: unshare failed: Operation not permitted' >&2\nexit 1\n",
      );
      await Deno.chmod(`${bin}/unshare`, 0o755);
      const out = await runAsNobody(launcher, `${bin}:${PATH}`);
      assert.match(out, /^unresolved$/m, out);
      assert.match(out, /^uid=65534$/m, out);
      assert.match(out, /Service names do not resolve in this container; their env vars name them/);
    } finally {
      await Deno.remove(dir, { recursive: true });
      await Deno.remove(bin, { recursive: true });
    }
  },
});
