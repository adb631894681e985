/**
 * moto (PyPI `moto[server]`), a third-party emulator of the AWS APIs, for the fargate provider's
 * integration tests and the bench: installed into the cache's virtualenv on first use (the
 * command `.ci/run` runs), started on 127.0.0.1 on a free port and stopped afterwards, plus a
 * VPC, subnet, security group and ECS cluster made in it with boto3 (which moto brings along).
 * @module
 */
import { ECSClient } from "@aws-sdk/client-ecs";
import { CloudWatchLogsClient } from "@aws-sdk/client-cloudwatch-logs";
import { CloudWatchClient, PutMetricDataCommand } from "@aws-sdk/client-cloudwatch";
import { freePort } from "../cluster/ports.ts";

const root = new URL("../../", import.meta.url).pathname;
const venv = `${root}.cache/moto`;
/** The moto release the tests are written against. */
export const MOTO_VERSION = "5.2.5";

/** Dummy credentials; moto accepts any. */
export const MOTO_ENV: Record<string, string> = {
  AWS_ACCESS_KEY_ID: "testing",
  AWS_SECRET_ACCESS_KEY: "testing",
  AWS_REGION: "us-east-1",
  // Never fall through the credential chain to an instance metadata address.
  AWS_EC2_METADATA_DISABLED: "true",
};

/** A running moto with a network and a cluster for tasks. */
export interface Moto {
  endpoint: string;
  region: string;
  cluster: string;
  subnet: string;
  securityGroup: string;
  ecs: ECSClient;
  logs: CloudWatchLogsClient;
  cloudwatch: CloudWatchClient;
  /**
   * Puts a task's Container Insights usage (CPU units, MiB) for a task definition family into
   * moto's CloudWatch, stamped now, as Container Insights would.
   */
  putTaskUsage(family: string, cpuUnits: number, memoryMiB: number): Promise<void>;
  /**
   * Every request moto got since it started (started with `record`): its headers (the
   * operation in `x-amz-target`) and body as text.
   */
  recorded(): Promise<{ target: string; body: string }[]>;
  stop(): Promise<void>;
}

async function run(cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")} failed: ${new TextDecoder().decode(out.stderr)}`);
  }
  return text;
}

/**
 * Installs moto into the cache (idempotent). A venv copied from another checkout has scripts
 * whose `#!` names that checkout's python: it is made again.
 */
export async function installMoto(): Promise<void> {
  try {
    const script = await Deno.readTextFile(`${venv}/bin/moto_server`);
    if (script.startsWith(`#!${venv}/bin/python`)) return;
    await Deno.remove(venv, { recursive: true });
  } catch {
    // Not there yet.
  }
  await run("python3", ["-m", "venv", venv]);
  await run(`${venv}/bin/pip`, ["install", "-q", `moto[server]==${MOTO_VERSION}`]);
}

const SETUP = `
import boto3, json, sys
kw = dict(region_name="us-east-1", endpoint_url=sys.argv[1],
          aws_access_key_id="testing", aws_secret_access_key="testing")
ec2 = boto3.client("ec2", **kw)
vpc = ec2.create_vpc(CidrBlock="10.20.0.0/16")["Vpc"]["VpcId"]
# Without DNS hostnames moto fails RunTask on the network interface's DNS name.
ec2.modify_vpc_attribute(VpcId=vpc, EnableDnsHostnames={"Value": True})
subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.20.1.0/24")["Subnet"]["SubnetId"]
sg = ec2.create_security_group(GroupName="vk", Description="vk", VpcId=vpc)["GroupId"]
boto3.client("ecs", **kw).create_cluster(clusterName="vk-test")
print(json.dumps({"subnet": subnet, "securityGroup": sg, "cluster": "vk-test"}))
`;

/** Installs (if needed) and starts moto, and prepares a network and an ECS cluster. */
export async function startMoto(options: { record?: boolean } = {}): Promise<Moto> {
  await installMoto();
  // A port taken between freePort and moto's bind makes moto exit at once: another port then.
  for (let attempt = 1;; attempt++) {
    try {
      return await startMotoOnce(options);
    } catch (err) {
      if (!(err instanceof MotoExited) || attempt === 3) throw err;
    }
  }
}

/** moto's server ended before it answered. */
class MotoExited extends Error {}

async function startMotoOnce(options: { record?: boolean }): Promise<Moto> {
  const port = freePort();
  const recording = options.record ? await Deno.makeTempFile({ prefix: "moto-recording-" }) : "";
  const child = new Deno.Command(`${venv}/bin/moto_server`, {
    args: ["-H", "127.0.0.1", "-p", String(port)],
    env: options.record ? { MOTO_ENABLE_RECORDING: "True", MOTO_RECORDER_FILEPATH: recording } : {},
    stdout: "null",
    stderr: "piped",
  }).spawn();
  // Its request log is read all along (a full pipe would stall it); the last lines say why it
  // ended, if it does.
  let said = "";
  const drained = child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({ write: (text) => void (said = (said + text).slice(-2000)) }),
  ).catch(() => {});
  let exited: Deno.CommandStatus | undefined;
  void child.status.then((status) => exited = status);
  const endpoint = `http://127.0.0.1:${port}`;
  const stop = async () => {
    try {
      child.kill("SIGTERM");
    } catch {
      // Already gone.
    }
    await child.status;
    await drained;
    if (recording) await Deno.remove(recording).catch(() => {});
  };
  try {
    // A busy host (the whole suite on two cores) can take long to import moto.
    const deadline = Date.now() + 90_000;
    for (;;) {
      const ok = await fetch(`${endpoint}/moto-api/`).then(async (r) => {
        await r.body?.cancel();
        return true;
      }, () => false);
      if (ok) break;
      if (exited) {
        throw new MotoExited(`moto exited (code ${exited.code}) before answering: ${said.trim()}`);
      }
      if (Date.now() > deadline) {
        throw new Error(`moto did not answer within 90 s; it said: ${said.trim()}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    // moto moves a task from RUNNING towards STOPPED on each DescribeTasks by default, as if
    // every task exited at once; these tests want tasks that run until stopped.
    const set = await fetch(`${endpoint}/moto-api/state-manager/set-transition`, {
      method: "POST",
      body: JSON.stringify({
        model_name: "ecs::task",
        transition: { progression: "manual", times: 1_000_000_000 },
      }),
    });
    await set.body?.cancel();
    if (!set.ok) throw new Error(`moto refused the task transition setting: ${set.status}`);
    if (options.record) {
      const start = await fetch(`${endpoint}/moto-api/recorder/start-recording`, {
        method: "POST",
      });
      await start.body?.cancel();
      if (!start.ok) throw new Error(`moto did not start recording: ${start.status}`);
    }
    const made = JSON.parse(await run(`${venv}/bin/python`, ["-c", SETUP, endpoint]));
    const clientConfig = {
      region: "us-east-1",
      endpoint,
      credentials: { accessKeyId: "testing", secretAccessKey: "testing" },
      defaultUserAgentProvider: () => Promise.resolve([["vkubelet-test"]] as [string][]),
    };
    const ecs = new ECSClient(clientConfig);
    const logs = new CloudWatchLogsClient(clientConfig);
    const cloudwatch = new CloudWatchClient(clientConfig);
    return {
      endpoint,
      region: "us-east-1",
      ...made,
      ecs,
      logs,
      cloudwatch,
      async putTaskUsage(family, cpuUnits, memoryMiB) {
        const Dimensions = [
          { Name: "ClusterName", Value: made.cluster },
          { Name: "TaskDefinitionFamily", Value: family },
        ];
        const Timestamp = new Date();
        await cloudwatch.send(
          new PutMetricDataCommand({
            Namespace: "ECS/ContainerInsights",
            MetricData: [
              { MetricName: "CpuUtilized", Dimensions, Value: cpuUnits, Timestamp },
              { MetricName: "MemoryUtilized", Dimensions, Value: memoryMiB, Timestamp },
            ],
          }),
        );
      },
      async recorded() {
        const res = await fetch(`${endpoint}/moto-api/recorder/download-recording`);
        const text = await res.text();
        return text.split("\n").filter((l) => l.trim()).map((line) => {
          const entry = JSON.parse(line);
          const body = entry.body_encoded
            ? new TextDecoder().decode(Uint8Array.from(atob(entry.body), (c) => c.charCodeAt(0)))
            : entry.body ?? "";
          const headers: Record<string, string> = entry.headers ?? {};
          const target = Object.entries(headers).find(([k]) => k.toLowerCase() === "x-amz-target")
            ?.[1] ?? "";
          return { target, body };
        });
      },
      async stop() {
        ecs.destroy();
        logs.destroy();
        cloudwatch.destroy();
        await stop();
      },
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
