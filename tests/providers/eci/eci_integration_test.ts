/**
 * The eci provider end to end through kubectl, against the local control plane and the ECI
 * emulator (verified against Alibaba's published API metadata, not against ECI): a Deployment of
 * 3 becomes 3 container groups with the right size, tags and network config, its pods Running
 * with the groups' IPs (data only: nothing dials them); `kubectl logs` and `kubectl exec` go
 * through DescribeContainerLog and ExecContainerCommand; a group deleted behind vkubelet's back
 * is made again; a pod ECI cannot run fails naming the field; a restarted vkubelet adopts its
 * groups and makes none twice; scale to 0 deletes the groups. Every request matched the metadata.
 */
import assert from "node:assert/strict";
import { startEciEnv } from "./_setup.ts";
import { eventually } from "../../../tools/harness/wait.ts";

Deno.test("eci provider: pods run as ECI container groups and follow the API", async (t) => {
  const env = await startEciEnv("eci");
  const { kubectl, emu, placement } = env;
  const web = (replicas: number) => ({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web" },
    spec: {
      replicas,
      selector: { matchLabels: { app: "web" } },
      template: {
        metadata: { labels: { app: "web" } },
        spec: {
          ...placement,
          terminationGracePeriodSeconds: 5,
          containers: [{
            name: "main",
            image: "busybox:1.36",
            command: ["sh", "-c"],
            args: ["echo hello from eci; sleep 3600"],
            env: [{ name: "GREETING", value: "hi" }],
            ports: [{ containerPort: 8080 }],
            resources: { requests: { cpu: "300m", memory: "600Mi" } },
          }],
        },
      },
    },
  });
  try {
    await kubectl(["apply", "-f", "-"], JSON.stringify(web(3)));

    await t.step(
      "3 replicas → 3 ECI groups with size, tags and network; pods Running",
      async () => {
        await kubectl(["rollout", "status", "deployment/web", "--timeout=90s"]);
        const pods = await env.pods("app=web");
        assert.equal(pods.length, 3);
        for (const pod of pods) {
          const [group, ...more] = env.groupsOf(pod);
          assert.ok(group && !more.length, `one group for ${pod.metadata?.name}`);
          const tag = (k: string) => group.tags.find((x) => x.Key === k)?.Value;
          assert.equal(tag("vkubelet.io/namespace"), env.ns);
          assert.equal(tag("vkubelet.io/pod"), pod.metadata?.name);
          assert.equal(tag("vkubelet.io/node"), env.nodeName);
          assert.equal(tag("team"), "platform");
          // 0.3 vCPU and 600 MiB round up to ECI's 0.5 vCPU / 1 GiB.
          assert.deepEqual([group.params.get("Cpu"), group.params.get("Memory")], ["0.5", "1"]);
          assert.equal(group.params.get("VSwitchId"), "vsw-test1");
          assert.equal(group.params.get("Container.1.EnvironmentVar.1.Value"), "hi");
          assert.equal(pod.status?.phase, "Running");
          assert.equal(pod.status?.podIP, group.ip, "the pod IP is the group's");
        }
      },
    );

    await t.step("kubectl logs and exec go through ECI's log and exec calls", async () => {
      const [pod] = await env.pods("app=web");
      const logs = await kubectl(["logs", pod.metadata!.name!]);
      assert.equal(logs, "hello from eci\n");
      const out = await kubectl(["exec", pod.metadata!.name!, "--", "sh", "-c", "echo exec ok"]);
      assert.equal(out, "exec ok\n");
    });

    await t.step(
      "a group deleted behind vkubelet's back is made again (restart count 1)",
      async () => {
        const [pod] = await env.pods("app=web");
        const [group] = env.groupsOf(pod);
        emu.groups.delete(group.id);
        const again = await eventually("the pod running in a new group", async () => {
          const p = (await env.pods("app=web")).find((x) => x.metadata?.uid === pod.metadata?.uid);
          const status = p?.status?.containerStatuses?.[0];
          return status?.restartCount === 1 && status.state?.running && p;
        });
        const [fresh] = env.groupsOf(again);
        assert.notEqual(fresh.id, group.id);
        assert.equal(again.status?.podIP, fresh.ip);
      },
    );

    await t.step("a pod ECI cannot run fails with ProviderFailed naming the field", async () => {
      await kubectl(
        ["apply", "-f", "-"],
        JSON.stringify({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "huge", labels: { app: "huge" } },
          spec: {
            ...placement,
            containers: [{
              name: "main",
              image: "busybox",
              resources: { requests: { cpu: "70" } },
            }],
          },
        }),
      );
      const failed = await eventually("pod huge to fail", async () => {
        const [p] = await env.pods("app=huge");
        return p?.status?.reason === "ProviderFailed" && p;
      });
      assert.match(failed.status?.message ?? "", /resources\.requests\.cpu/);
    });

    await t.step("a restarted vkubelet adopts its groups and makes none twice", async () => {
      const before = [...emu.groups.keys()].sort();
      assert.equal(before.length, 3);
      await env.restart();
      await new Promise((r) => setTimeout(r, 3000)); // several status rounds and a resync
      assert.deepEqual([...emu.groups.keys()].sort(), before);
      const pods = await env.pods("app=web");
      assert.ok(pods.length === 3 && pods.every((p) => p.status?.phase === "Running"));
    });

    await t.step("scale to 0 deletes every group", async () => {
      await kubectl(["scale", "deployment/web", "--replicas=0"]);
      await eventually("no web pods left", async () => (await env.pods("app=web")).length === 0);
      await eventually("no groups left", () => emu.groups.size === 0);
      assert.deepEqual(emu.strays, [], "every request matched the ECI metadata");
    });
  } finally {
    await env.close();
  }
});
