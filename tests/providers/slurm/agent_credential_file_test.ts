/**
 * The slurm provider's tunnel agent gets its credential from a file in the pod's directory, never
 * from the batch script (which slurmctld keeps and shows to SLURM's administrators, and
 * accounting may store: `sacct --batch-script`). The script as built; then a real single-node
 * SLURM (jobs as nobody) with a stand-in agent that reads only `--credential-file`: the job reads
 * the credential, the script slurmctld holds (`scontrol write batch_script`, as an administrator)
 * does not name it, and another unprivileged user of the node finds it nowhere: the file is
 * nobody's and 0600, and neither the shared directory, SLURM's spool, the processes' command
 * lines and environments nor slurmctld's copy of the script gives it away. Root only for SLURM.
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../../base/clock.ts";
import { getLogger } from "../../../base/log.ts";
import { createProvider } from "../../../providers/slurm/mod.ts";
import { withTunnelAgent } from "../../../providers/slurm/request/tunnel_agent.ts";
import type { PodNetworkAttachment, PodNetworkHandle } from "../../../provider/mod.ts";
import { NOBODY, startSlurm } from "../../../tools/harness/slurm.ts";
import { eventually } from "../../../tools/harness/wait.ts";

const CREDENTIAL = `vkt1.uid-1.${"s3cr3t".repeat(8)}`;
/** A user of the node who is neither the job's (nobody) nor root. */
const ATTACKER = { uid: 4242, gid: 4242 };

const network = (agentCommand: string[]): PodNetworkAttachment => ({
  podIP: "127.0.90.7",
  podIPs: ["127.0.90.7"],
  agentCommand,
  agentCredential: CREDENTIAL,
});

Deno.test("the batch script starts the agent with its credential file, not the credential", () => {
  const script = withTunnelAgent(
    "D=/shared/team_job_uid-1\nsidecars=()\nexec true\n",
    network(["/shared/bin/vkubelet", "agent", "--server=https://127.0.0.1:10250"]),
  );
  assert.ok(!script.includes(CREDENTIAL), `the script holds the credential:\n${script}`);
  assert.doesNotMatch(script, /VKUBELET_AGENT_CREDENTIAL/);
  assert.match(script, /'agent' .*--credential-file="\$D\/agent\.credential"/);
});

const skip = Deno.uid() !== 0 ? "needs root (SLURM, jobs as nobody, another user)" : undefined;
if (skip) console.warn(`slurm agent credential test skipped: ${skip}`);

/** Runs `args` as the attacker (no groups), `input` on its stdin; its exit code and output. */
async function asAttacker(args: string[], env: Record<string, string> = {}, input = "") {
  const child = new Deno.Command("setpriv", {
    args: [
      `--reuid=${ATTACKER.uid}`,
      `--regid=${ATTACKER.gid}`,
      "--clear-groups",
      "--",
      ...args,
    ],
    env,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(input));
  await writer.close();
  const out = await child.output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  return { code: out.code, text };
}

Deno.test({
  name:
    "a SLURM job's agent reads its credential from a file only the job's user can read, and the script slurmctld keeps does not hold it",
  ignore: skip !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const slurm = await startSlurm();
    Deno.env.set("SLURM_CONF", slurm.conf); // for the provider's sbatch and squeue
    const stop = new AbortController();
    let provider: Awaited<ReturnType<typeof createProvider>> | undefined;
    try {
      // The stand-in agent: reads only --credential-file, tells what it read, waits.
      const agent = join(slurm.dir, "fake-agent.sh");
      await Deno.writeTextFile(
        agent,
        [
          "#!/bin/sh",
          'for a; do case "$a" in --credential-file=*) f="${a#*=}";; ' +
          '--env-file=*) e="${a#*=}";; esac; done',
          'cat "$f" > "$(dirname "$e")/agent-read" 2>&1',
          ': > "$e"',
          "exec sleep 300",
        ].join("\n") + "\n",
      );
      await Deno.chmod(agent, 0o755);
      const podNetwork: PodNetworkHandle = {
        attach: () => Promise.resolve(network([agent, "agent"])),
        detach: () => Promise.resolve(),
      };
      provider = await createProvider({
        cli: {},
        sharedDir: slurm.sharedDir,
        stateDir: join(slurm.dir, "vk-state"),
        fileOwner: NOBODY,
        statusInterval: "300ms",
      }, {
        nodeName: "vk-credential",
        log: getLogger(["vkubelet", "provider", "test"]),
        clock: realClock,
        internalIp: "127.0.0.1",
        daemonPort: 10250,
        signal: stop.signal,
        podNetwork,
      });
      const uid = crypto.randomUUID();
      const pod: Pod = {
        metadata: { namespace: "team", name: "job", uid },
        spec: {
          restartPolicy: "Never",
          containers: [{ name: "main", image: "busybox", command: ["sleep", "300"] }],
        },
      };
      await provider.createPod(pod, {});
      const dir = `${slurm.sharedDir}/team_job_${uid}`;
      const read = await eventually(
        "the agent to read its credential",
        () => Deno.readTextFile(`${dir}/state/agent-read`).then((t) => t || false, () => false),
        60_000,
      );
      assert.equal(String(read).trim(), CREDENTIAL, "the job's agent read its credential file");

      const file = await Deno.lstat(`${dir}/agent.credential`);
      assert.equal(file.uid, NOBODY.uid, "the job's user's");
      assert.equal((file.mode ?? 0) & 0o777, 0o600);

      // What SLURM's administrators (and accounting's job_script) see of the job.
      const jobs = (await slurm.run("squeue", ["--noheader", "--format=%i"])).trim().split(/\s+/);
      assert.equal(jobs.length, 1, `jobs: ${jobs.join(",")}`);
      const script = await slurm.run("scontrol", ["write", "batch_script", jobs[0], "-"]);
      assert.match(script, /--credential-file=/, "not the job's script");
      assert.ok(!script.includes(CREDENTIAL), "the script slurmctld keeps holds the credential");

      // Another user of the node: not the file, nor anywhere else readable to them.
      const cat = await asAttacker(["cat", `${dir}/agent.credential`]);
      assert.notEqual(cat.code, 0, `the attacker read the credential: ${cat.text}`);
      assert.match(cat.text, /Permission denied/);
      // The credential on stdin: on grep's command line it would be found there.
      const grep = await asAttacker(
        [
          "sh",
          "-c",
          'grep -rlsF -D skip -f - "$1" "$2" /proc/[0-9]*/cmdline /proc/[0-9]*/environ; exit 0',
          "sh",
          slurm.sharedDir,
          slurm.dir,
        ],
        {},
        `${CREDENTIAL}\n`,
      );
      assert.equal(grep.text.trim(), "", "files the attacker can read that hold the credential");
      const theirs = await asAttacker(
        ["scontrol", "write", "batch_script", jobs[0], "-"],
        slurm.env,
      );
      assert.ok(!theirs.text.includes(CREDENTIAL), "slurmctld showed the attacker the credential");

      await provider.deletePod(pod, {});
      await eventually(
        "the pod to be gone",
        async () => !await provider!.getPod("team", "job", {}),
      );
      await assert.rejects(Deno.lstat(`${dir}/agent.credential`), Deno.errors.NotFound);
    } finally {
      stop.abort();
      await provider?.close?.();
      await slurm.stop();
    }
  },
});
