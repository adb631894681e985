/**
 * The eci provider against the emulator, without a control plane: the create request a pod
 * becomes, refusals that name the field, throttling retried, a retried create making one group,
 * a group deleted behind vkubelet's back handled by restart policy, and config errors at once.
 * Every test also asserts that each request matched Alibaba's published metadata.
 */
import assert from "node:assert/strict";
import type { ConfigMap, Secret } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../../base/clock.ts";
import { isInvalidInput, type ProviderKubeClient } from "../../../provider/mod.ts";
import { EciApi } from "../../../providers/eci/client/api.ts";
import { parseEciConfig } from "../../../providers/eci/config.ts";
import { eciPod, startProviderOnEmulator } from "../../../tools/harness/eci/env.ts";

const b64 = (text: string) => btoa(text);

/** A client that has one ConfigMap, one pull Secret and issues tokens. */
const kube = {
  configMaps: {
    get: (_ns: string, name: string) =>
      Promise.resolve({ metadata: { name }, data: { "app.conf": "port=80\n" } } as ConfigMap),
  },
  secrets: {
    get: (_ns: string, name: string) =>
      Promise.resolve({
        metadata: { name },
        type: "kubernetes.io/dockerconfigjson",
        data: {
          ".dockerconfigjson": b64(
            JSON.stringify({ auths: { "registry.example": { auth: b64("robot:s3cret") } } }),
          ),
        },
      } as Secret),
  },
  serviceAccounts: {
    createToken: () =>
      Promise.resolve({ spec: {}, status: { token: "tok", expirationTimestamp: "" } }),
  },
} as unknown as ProviderKubeClient;

Deno.test("a pod becomes one ECI group with its size, containers, volumes, credentials and tags", async () => {
  const env = await startProviderOnEmulator({ tags: { team: "platform" } }, kube);
  try {
    const pod = eciPod("web", {
      restartPolicy: "OnFailure",
      imagePullSecrets: [{ name: "pull" }],
      dnsConfig: { nameservers: ["127.0.0.53"], searches: ["svc.local"] },
      volumes: [
        { name: "cache", emptyDir: {} },
        { name: "conf", configMap: { name: "app" } },
        {
          name: "token",
          projected: { sources: [{ serviceAccountToken: { path: "token" } }] },
        },
      ],
      initContainers: [{ name: "setup", image: "busybox", command: ["true"] }],
      containers: [{
        name: "main",
        image: "registry.example/app:1",
        args: ["serve"],
        env: [{ name: "GREETING", value: "hi" }, {
          name: "MY_IP",
          valueFrom: { fieldRef: { fieldPath: "status.podIP" } },
        }],
        ports: [{ containerPort: 8080, protocol: "UDP" }],
        resources: { requests: { cpu: "1500m", memory: "3Gi" } },
        volumeMounts: [{ name: "conf", mountPath: "/etc/app" }, { name: "cache", mountPath: "/c" }],
      }],
    });
    await env.provider.createPod(pod, {});
    const [group, ...more] = [...env.emu.groups.values()];
    assert.equal(more.length, 0);
    const p = group.params;
    // 1.5 vCPU and 3 GiB round up to ECI's 2 vCPU / 4 GiB specification.
    assert.deepEqual([p.get("Cpu"), p.get("Memory")], ["2", "4"]);
    assert.equal(p.get("RestartPolicy"), "OnFailure");
    assert.equal(p.get("ClientToken"), `${pod.metadata!.uid}-0`);
    assert.equal(p.get("Container.1.Arg.1"), "serve");
    assert.equal(p.get("Container.1.EnvironmentVar.1.Value"), "hi");
    assert.equal(p.get("Container.1.EnvironmentVar.2.FieldRef.FieldPath"), "status.podIP");
    assert.equal(p.get("Container.1.Port.1.Protocol"), "UDP");
    assert.equal(p.get("InitContainer.1.Name"), "setup");
    assert.equal(p.get("Volume.1.Type"), "EmptyDirVolume");
    assert.equal(p.get("Volume.2.Type"), "ConfigFileVolume");
    assert.equal(p.get("Volume.2.ConfigFileVolume.ConfigFileToPath.1.Path"), "app.conf");
    assert.equal(atob(p.get("Volume.2.ConfigFileVolume.ConfigFileToPath.1.Content")!), "port=80\n");
    assert.equal(atob(p.get("Volume.3.ConfigFileVolume.ConfigFileToPath.1.Content")!), "tok");
    assert.equal(p.get("ImageRegistryCredential.1.Server"), "registry.example");
    assert.equal(p.get("ImageRegistryCredential.1.UserName"), "robot");
    assert.equal(p.get("ImageRegistryCredential.1.Password"), "s3cret");
    assert.equal(p.get("DnsConfig.NameServer.1"), "127.0.0.53");
    assert.equal(p.get("VSwitchId"), "vsw-test1");
    assert.equal(p.get("SecurityGroupId"), "sg-test1");
    const tags = Object.fromEntries(group.tags.map((t) => [t.Key, t.Value]));
    assert.equal(tags["team"], "platform");
    assert.equal(tags["vkubelet.io/node"], env.nodeName);
    assert.equal(tags["vkubelet.io/uid"], pod.metadata!.uid);
    const running = await env.eventually("Running", async () => {
      const got = await env.provider.getPod("team-a", "web", {});
      return got?.status?.phase === "Running" && got;
    });
    assert.equal(running.status?.podIP, group.ip);
    assert.deepEqual(env.emu.strays, []);
  } finally {
    await env.close();
  }
});

Deno.test("a pod larger than ECI's largest specification is refused naming the field", async () => {
  const env = await startProviderOnEmulator();
  try {
    const pod = eciPod("huge", {
      containers: [{ name: "main", image: "busybox", resources: { requests: { cpu: "80" } } }],
    });
    await assert.rejects(
      () => env.provider.createPod(pod, {}),
      (err: Error) => isInvalidInput(err) && /resources\.requests\.cpu.*64 vCPU/.test(err.message),
    );
    const host = eciPod("host", { hostNetwork: true });
    await assert.rejects(
      () => env.provider.createPod(host, {}),
      (err: Error) => isInvalidInput(err) && err.message.startsWith("spec.hostNetwork"),
    );
    assert.equal(env.emu.groups.size, 0, "nothing was created");
  } finally {
    await env.close();
  }
});

Deno.test("throttling is retried with back-off and a retried create makes one group", async () => {
  const env = await startProviderOnEmulator();
  try {
    env.emu.throttle(3);
    await env.provider.createPod(eciPod("calm"), {});
    assert.equal(env.emu.groups.size, 1);
    const parsed = parseEciConfig(env.config);
    assert.ok(parsed.ok);
    const api = new EciApi(parsed.config, realClock);
    const request = {
      containerGroupName: "twice",
      clientToken: "uid-1-0",
      container: [{ name: "m", image: "busybox" }] as never[],
    };
    const first = await api.create(request);
    const second = await api.create(request);
    assert.equal(first, second, "the same ClientToken gives the same group");
    assert.equal(env.emu.groups.size, 2);
    assert.deepEqual(env.emu.strays, []);
  } finally {
    await env.close();
  }
});

Deno.test("a group deleted behind vkubelet's back is made again (Always) or fails the pod (Never)", async () => {
  const env = await startProviderOnEmulator();
  try {
    const always = eciPod("always");
    const never = eciPod("never", { restartPolicy: "Never" });
    await env.provider.createPod(always, {});
    await env.provider.createPod(never, {});
    for (const g of [...env.emu.groups.values()]) env.emu.groups.delete(g.id);
    const again = await env.eventually("the Always pod's new group", async () => {
      const pod = await env.provider.getPod("team-a", "always", {});
      const status = pod?.status?.containerStatuses?.[0];
      return pod?.status?.phase === "Running" && status?.restartCount === 1 &&
        status.state?.running && pod;
    });
    assert.equal(again.status?.containerStatuses?.[0].lastState?.terminated?.exitCode, 137);
    const group = [...env.emu.groups.values()].find((g) =>
      g.tags.some((t) => t.Value === always.metadata!.uid)
    );
    assert.equal(group?.params.get("ClientToken"), `${always.metadata!.uid}-1`);
    const failed = await env.eventually("the Never pod Failed", async () => {
      const pod = await env.provider.getPod("team-a", "never", {});
      return pod?.status?.phase === "Failed" && pod;
    });
    assert.ok(failed.status?.containerStatuses?.[0].state?.terminated);
    assert.equal(env.emu.groups.size, 1, "the Never pod got no new group");
    assert.deepEqual(env.emu.strays, []);
  } finally {
    await env.close();
  }
});

Deno.test("every config problem is reported at once, each naming its field", () => {
  const parsed = parseEciConfig({
    regionId: "Hangzhou",
    vSwitchId: "subnet-1",
    statusInterval: "1ms",
  });
  assert.ok(!parsed.ok);
  const text = parsed.errors.join("\n");
  for (const field of ["regionId", "vSwitchId", "securityGroupId", "statusInterval"]) {
    assert.match(text, new RegExp(field), `${field} is named`);
  }
});
