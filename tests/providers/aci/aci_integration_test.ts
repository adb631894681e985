/**
 * The aci provider through kubectl against the local control plane, with the ACI emulator
 * behind Prism (every request and reply checked against Azure's 2023-05-01 specification): a
 * Deployment becomes container groups with the right containers, resources, secure env, volumes,
 * registry credentials and tags, its pods Running with the groups' IPs; logs and exec; a pod ACI
 * cannot run fails naming the field; a group deleted behind vkubelet's back is made again under
 * restartPolicy Always and ends the pod under Never; a restarted vkubelet adopts its groups and
 * makes none twice; scale to 0 deletes them. Group IPs are data only: nothing dials them.
 */
import assert from "node:assert/strict";
import { type Json, startAciEnv } from "./_setup.ts";
import { eventually } from "../../../tools/harness/wait.ts";

Deno.test("aci provider: pods run as ACI container groups and follow the API", async (t) => {
  const env = await startAciEnv("aci");
  const { kubectl, placement, backend } = env;
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
          imagePullSecrets: [{ name: "registry" }],
          initContainers: [{
            name: "setup",
            image: "busybox",
            command: ["sh", "-c", "echo ready"],
          }],
          containers: [{
            name: "main",
            image: "registry.example/app:1",
            command: ["sh", "-c"],
            args: ["echo hello; echo world; sleep 3600"],
            env: [
              { name: "GREETING", value: "hi" },
              { name: "TOKEN", valueFrom: { secretKeyRef: { name: "app", key: "token" } } },
            ],
            ports: [{ containerPort: 8080 }],
            resources: { requests: { cpu: "300m", memory: "600Mi" } },
            volumeMounts: [{ name: "conf", mountPath: "/etc/app" }],
          }],
          volumes: [{ name: "conf", configMap: { name: "app" } }],
        },
      },
    },
  });
  const bare = (name: string, spec: Record<string, unknown>) =>
    JSON.stringify({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, labels: { app: name } },
      spec: { ...placement, ...spec },
    });
  try {
    await kubectl(["create", "secret", "generic", "app", "--from-literal=token=s3cret"]);
    await kubectl(["create", "configmap", "app", "--from-literal=app.conf=port=8080"]);
    await kubectl([
      "create",
      "secret",
      "docker-registry",
      "registry",
      "--docker-server=registry.example",
      "--docker-username=puller",
      "--docker-password=pw",
    ]);
    await kubectl(["apply", "-f", "-"], JSON.stringify(web(3)));

    await t.step("3 replicas → 3 container groups with the pod's containers and tags", async () => {
      await kubectl(["rollout", "status", "deployment/web", "--timeout=90s"]);
      const running = await env.pods("app=web");
      assert.equal(running.length, 3);
      const groups = env.groupsOf("web-");
      assert.equal(groups.length, 3);
      for (const pod of running) {
        const group = groups.find((g) => g.body.tags["vkubelet-uid"] === pod.metadata?.uid);
        assert.ok(group, `no group for pod ${pod.metadata?.name}`);
        const { tags, properties: p } = group.body;
        assert.equal(tags["vkubelet-namespace"], env.ns);
        assert.equal(tags["vkubelet-pod"], pod.metadata?.name);
        assert.equal(tags.team, "platform");
        assert.equal(p.restartPolicy, "Always");
        const c = p.containers[0].properties;
        assert.deepEqual(c.command, ["sh", "-c", "echo hello; echo world; sleep 3600"]);
        // 300m and 600Mi (629,145,600 bytes) in ACI's units, rounded up.
        assert.deepEqual(c.resources.requests, { cpu: 0.3, memoryInGB: 0.7 });
        assert.deepEqual(c.ports, [{ port: 8080, protocol: "TCP" }]);
        assert.ok(
          c.environmentVariables.some((e: Json) => e.name === "GREETING" && e.value === "hi"),
        );
        const token = c.environmentVariables.find((e: Json) => e.name === "TOKEN");
        assert.deepEqual(
          token,
          { name: "TOKEN", secureValue: "s3cret" },
          "a Secret's value is secure",
        );
        assert.equal(p.initContainers[0].name, "setup");
        const conf = p.volumes.find((v: Json) => v.name === "conf");
        assert.equal(atob(conf.secret["app.conf"]), "port=8080");
        // The service-account token volume every pod gets, as a secret volume with a token.
        const sa = p.volumes.find((v: Json) => v.name.startsWith("kube-api-access"));
        assert.ok(atob(sa.secret.token).split(".").length === 3, "a JWT in the token file");
        assert.equal(atob(sa.secret.namespace), env.ns);
        assert.deepEqual(p.imageRegistryCredentials, [
          { server: "registry.example", username: "puller", password: "pw" },
        ]);
        assert.equal(pod.status?.phase, "Running");
        assert.equal(pod.status?.podIP, backend.emu.groups.get(group.name)?.ip);
        assert.equal(
          pod.status?.initContainerStatuses?.[0]?.state?.terminated?.reason,
          "Completed",
        );
      }
      const events = await kubectl([
        "get",
        "events",
        "--field-selector=reason=Pulled",
        "-o",
        "name",
      ]);
      assert.ok(events.trim().length > 0, "ACI's events are copied as Kubernetes events");
    });

    await t.step("kubectl logs (tail) and exec go through ACI's log and exec APIs", async () => {
      const [pod] = await env.pods("app=web");
      const name = pod.metadata!.name!;
      assert.equal(await kubectl(["logs", name, "-c", "main"]), "hello\nworld\n");
      assert.equal(await kubectl(["logs", name, "-c", "main", "--tail=1"]), "world\n");
      const out = await kubectl(["exec", name, "-c", "main", "--", "echo", "from-exec"]);
      assert.match(out, /from-exec/);
    });

    await t.step("a pod ACI cannot run fails with ProviderFailed naming the field", async () => {
      await kubectl(
        ["apply", "-f", "-"],
        bare("huge", {
          containers: [{
            name: "main",
            image: "busybox",
            resources: { requests: { cpu: "6" }, limits: { cpu: "6" } },
          }],
        }),
      );
      const failed = await eventually("pod huge to fail", async () => {
        const [p] = await env.pods("app=huge");
        return p?.status?.reason === "ProviderFailed" && p;
      });
      assert.match(
        failed.status?.message ?? "",
        /spec\.containers\[\*\]\.resources\.requests\.cpu/,
      );
      assert.match(failed.status?.message ?? "", /at most 4/);
      assert.equal(env.groupsOf("huge").length, 0);
    });

    await t.step(
      "a group deleted behind our back is made again (restartPolicy Always)",
      async () => {
        const [pod] = await env.pods("app=web");
        const [group] = env.groupsOf(pod.metadata!.name!);
        backend.emu.remove(group.name);
        const after = await eventually("the pod's group made again", async () => {
          const [p] = (await env.pods("app=web")).filter((x) =>
            x.metadata?.uid === pod.metadata?.uid
          );
          const c = p?.status?.containerStatuses?.[0];
          return c && c.restartCount! >= 1 && c.state?.running && p;
        });
        const c = after.status!.containerStatuses![0];
        assert.equal(c.lastState?.terminated?.reason, "ContainerStatusUnknown");
        assert.equal(env.groupsOf(pod.metadata!.name!).length, 1);
      },
    );

    await t.step("restartPolicy Never: a group deleted behind our back ends the pod", async () => {
      await kubectl(
        ["apply", "-f", "-"],
        bare("once", {
          restartPolicy: "Never",
          containers: [{ name: "main", image: "busybox", command: ["sleep", "3600"] }],
        }),
      );
      await eventually("pod once Running", async () => {
        const [p] = await env.pods("app=once");
        return p?.status?.phase === "Running" && p;
      });
      backend.emu.remove(env.groupsOf("once")[0].name);
      const done = await eventually("pod once Failed", async () => {
        const [p] = await env.pods("app=once");
        return p?.status?.phase === "Failed" && p;
      });
      assert.equal(done.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 137);
      assert.equal(env.groupsOf("once").length, 0, "no new group for a pod that ended");
    });

    await t.step("a restarted vkubelet adopts its groups and makes none twice", async () => {
      const puts = () => backend.emu.requests.filter((r) => r.startsWith("PUT ")).length;
      const before = puts();
      const names = env.groupsOf("web-").map((g) => g.name).sort();
      await env.restart();
      await new Promise((r) => setTimeout(r, 4000));
      assert.equal(puts(), before, "no container group was PUT again");
      assert.deepEqual(env.groupsOf("web-").map((g) => g.name).sort(), names);
      const running = await env.pods("app=web");
      assert.equal(running.length, 3);
      assert.ok(running.every((p) => p.status?.phase === "Running"));
    });

    await t.step("scale to 0 deletes the container groups", async () => {
      await kubectl(["scale", "deployment/web", "--replicas=0"]);
      await eventually("no web pods left", async () => (await env.pods("app=web")).length === 0);
      await eventually("no web groups left", () => env.groupsOf("web-").length === 0);
    });
    assert.deepEqual(backend.violations(), [], "Prism saw no violation of the specification");
  } finally {
    await env.close();
  }
});
