/**
 * Every remote provider's ping, against a loopback port nothing listens on, fails with a
 * `BackendUnreachableError` whose message names what it could not reach and why, and whose reason
 * is the provider's own: what the node's `ProviderReachable` condition and event then say.
 */
import assert from "node:assert/strict";
import { getLogger } from "../../base/log.ts";
import { realClock } from "../../base/clock.ts";
import { KubeClient } from "../../k8s/client.ts";
import { isBackendUnreachable, type Provider, type ProviderDeps } from "../../provider/mod.ts";
import { createProvider as aci } from "../../providers/aci/mod.ts";
import { createProvider as eci } from "../../providers/eci/mod.ts";
import { createProvider as fargate } from "../../providers/fargate/mod.ts";
import { createProvider as interlink } from "../../providers/interlink/mod.ts";
import { createProvider as slurm } from "../../providers/slurm/mod.ts";
import { DownstreamNode } from "../../providers/kubernetes/node/downstream_node.ts";
import { parseKubernetesConfig } from "../../providers/kubernetes/config.ts";
import { ECI_TEST_ENV } from "../../tools/harness/eci/emulator.ts";
import { MOTO_ENV } from "./fargate/_moto.ts";

/** A loopback URL with nothing listening. */
function refusedUrl(): string {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return `http://127.0.0.1:${port}`;
}

function deps(signal: AbortSignal): ProviderDeps {
  return {
    nodeName: `vk-ping-${crypto.randomUUID().slice(0, 6)}`,
    log: getLogger(["vkubelet", "provider"]),
    clock: realClock,
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal,
  };
}

async function pingFails(
  provider: Pick<Provider, "ping">,
  reason: string,
  names: RegExp,
): Promise<void> {
  const err = await provider.ping!({ signal: AbortSignal.timeout(60_000) }).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(isBackendUnreachable(err), `not a BackendUnreachableError: ${err}`);
  assert.equal(err.reason, reason);
  assert.match(err.message, names);
}

async function withProvider(
  make: (deps: ProviderDeps) => Provider,
  check: (provider: Provider) => Promise<void>,
): Promise<void> {
  const stop = new AbortController();
  const provider = make(deps(stop.signal));
  try {
    await check(provider);
  } finally {
    stop.abort();
    await provider.close?.();
  }
}

Deno.test("interlink: the ping names the endpoint, the error and what to check", async () => {
  const url = refusedUrl();
  await withProvider(
    (d) => interlink({ target: "interlink", url, pingTimeout: "2s" }, d),
    (p) =>
      pingFails(
        p,
        "InterlinkUnreachable",
        new RegExp(
          `${url} does not answer POST /pinglink \\(ping\\): .*refused.*check that interLink`,
          "i",
        ),
      ),
  );
});

Deno.test("slurm (slurmrestd): the ping names slurmrestd's URL and the error", async () => {
  const url = refusedUrl();
  const tokenFile = await Deno.makeTempFile();
  await Deno.writeTextFile(tokenFile, "jwt-secret-token\n");
  try {
    await withProvider(
      (d) =>
        slurm({
          rest: { url, user: "vk", tokenFile },
          sharedDir: "/tmp",
          statusInterval: "60s",
        }, d),
      (p) =>
        pingFails(
          p,
          "SlurmUnreachable",
          new RegExp(`^cannot reach slurmrestd at ${url}: .*refused.*check that slurmrestd`, "i"),
        ),
    );
  } finally {
    await Deno.remove(tokenFile);
  }
});

Deno.test("aci: the ping names the ARM endpoint and resource group", async () => {
  const url = refusedUrl();
  await withProvider(
    (d) =>
      aci({
        subscriptionId: "00000000-0000-0000-0000-000000000000",
        resourceGroup: "vk-pods",
        location: "westeurope",
        endpoint: url,
        statusInterval: "60s",
      }, d),
    (p) =>
      pingFails(
        p,
        "AciUnreachable",
        new RegExp(
          `^cannot reach Azure Container Instances \\(${url}, resource group vk-pods\\): ` +
            `listing the container groups of vk-pods: no answer`,
        ),
      ),
  );
});

Deno.test("eci: the ping names the region and endpoint", async () => {
  const url = refusedUrl();
  for (const [k, v] of Object.entries(ECI_TEST_ENV)) Deno.env.set(k, v);
  try {
    await withProvider(
      (d) =>
        eci({
          regionId: "cn-hangzhou",
          endpoint: url,
          vSwitchId: "vsw-test1",
          securityGroupId: "sg-test1",
          statusInterval: "60s",
        }, d),
      (p) =>
        pingFails(
          p,
          "EciUnreachable",
          new RegExp(
            `^cannot reach the ECI API in cn-hangzhou \\(${url}\\): .*DescribeContainerGroups`,
          ),
        ),
    );
  } finally {
    for (const k of Object.keys(ECI_TEST_ENV)) Deno.env.delete(k);
  }
});

Deno.test("fargate: the ping names the cluster, region and endpoint", async () => {
  const url = refusedUrl();
  for (const [k, v] of Object.entries(MOTO_ENV)) Deno.env.set(k, v);
  try {
    await withProvider(
      (d) =>
        fargate({
          region: "eu-west-1",
          endpoint: url,
          cluster: "vkubelet",
          subnets: ["subnet-1"],
          securityGroups: ["sg-1"],
          executionRoleArn: "arn:aws:iam::123456789012:role/exec",
          statusInterval: "60s",
        }, d),
      (p) =>
        pingFails(
          p,
          "EcsUnreachable",
          new RegExp(
            `^cannot reach ECS cluster vkubelet in eu-west-1 \\(${url}\\): ECS DescribeClusters`,
          ),
        ),
    );
  } finally {
    for (const k of Object.keys(MOTO_ENV)) Deno.env.delete(k);
  }
});

Deno.test("kubernetes: the ping names the downstream apiserver, credentials left out", async () => {
  const url = refusedUrl().replace("http://", "https://admin:hunter2@");
  const parsed = parseKubernetesConfig({
    kubeconfig: "/dev/null",
    namespace: "b",
    pingTimeout: "2s",
  });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  using downstream = new KubeClient({ server: url, namespace: "default", source: "test" });
  const node = new DownstreamNode({
    config: parsed.config,
    downstream,
    nodeName: "vk-ping",
    internalIp: "127.0.0.1",
    daemonPort: 10250,
  });
  try {
    await pingFails(
      node,
      "DownstreamClusterUnreachable",
      /^cannot reach the downstream cluster's apiserver at https:\/\/<redacted>@127\.0\.0\.1:\d+: /,
    );
  } finally {
    node.close();
  }
});
