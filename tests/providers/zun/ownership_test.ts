/**
 * The attacker's tests of the zun provider's boundary with the rest of its Zun project: another
 * member of the project (a keystone user of its own) can make capsules and containers with any
 * labels, among them the labels that say "pod P of node N". A vkubelet of node N must take none
 * of them as its own: not adopt them as pods, and never send a pod's exec or serve its logs from
 * them (exec input can carry secrets; logs shown as the pod's would lie). Against the real stack.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { capsuleCreateBody } from "../../../providers/zun/request/capsule.ts";
import { useZun, zunSkipReason, type ZunStack } from "../../../tools/harness/zun.ts";
import { withEnv } from "./_env.ts";
import { deleted, exec, logs, scriptPod, until, zunProvider } from "./_pods.ts";

const skip = await zunSkipReason();

/** A token of `user` (password "secret") in project `project`. */
async function tokenOf(zun: ZunStack, user: string, project: string): Promise<string> {
  const answer = await fetch(`${zun.authUrl}/auth/tokens`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({
      auth: {
        identity: {
          methods: ["password"],
          password: { user: { name: user, domain: { id: "default" }, password: "secret" } },
        },
        scope: { project: { name: project, domain: { id: "default" } } },
      },
    }),
  });
  await answer.body?.cancel();
  assert.equal(answer.status, 201, `no token for ${user}`);
  return answer.headers.get("X-Subject-Token")!;
}

/** Makes a user of its own, a member of project demo (as the demo user is); its token. */
async function anotherMember(zun: ZunStack): Promise<string> {
  const admin = await tokenOf(zun, "admin", "admin");
  const call = async (method: string, path: string, body?: unknown) => {
    const answer = await fetch(`${zun.authUrl}${path}`, {
      method,
      headers: { "Content-Type": "application/json", "X-Auth-Token": admin },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    assert.ok(answer.ok, `${method} ${path}: ${answer.status} ${await answer.clone().text()}`);
    return answer.status === 204 ? undefined : await answer.json();
  };
  const name = `mallory-${crypto.randomUUID().slice(0, 8)}`;
  const user = await call("POST", "/users", {
    user: { name, domain_id: "default", password: "secret" },
  });
  const [project] = (await call("GET", "/projects?name=demo")).projects;
  const [role] = (await call("GET", "/roles?name=member")).roles;
  await call("PUT", `/projects/${project.id}/users/${user.user.id}/roles/${role.id}`);
  return await tokenOf(zun, name, "demo");
}

/** A call to zun-api with `token`. */
async function zunCall(zun: ZunStack, token: string, method: string, path: string, body?: unknown) {
  const answer = await fetch(`${zun.endpoint}${path}`, {
    method,
    headers: {
      "X-Auth-Token": token,
      "OpenStack-API-Version": "container 1.40",
      "Content-Type": "application/json",
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await answer.text();
  assert.ok(answer.ok, `${method} ${path}: ${answer.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** Deletes what the other member made (stopping it first), and waits until it is gone. */
async function removeForged(zun: ZunStack, token: string, path: string): Promise<void> {
  for (let i = 0; i < 240; i++) {
    const answer = await fetch(`${zun.endpoint}${path}`, {
      headers: { "X-Auth-Token": token, "OpenStack-API-Version": "container 1.40" },
    });
    const status = answer.ok ? (await answer.json()).status : (await answer.body?.cancel(), "");
    if (answer.status === 404) return;
    if (!["Creating", "Created", "Deleting"].includes(status)) {
      const query = path.startsWith("/containers") ? "?stop=true" : "";
      await fetch(`${zun.endpoint}${path}${query}`, {
        method: "DELETE",
        headers: { "X-Auth-Token": token, "OpenStack-API-Version": "container 1.40" },
      }).then((a) => a.body?.cancel());
    }
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

Deno.test({
  name: "a capsule another project member labelled as this node's pod is not adopted",
  ignore: skip !== undefined,
  async fn() {
    const zun = await useZun();
    const restore = withEnv(zun.env);
    const nodeName = `vk-own-${crypto.randomUUID().slice(0, 6)}`;
    const mallory = await anotherMember(zun);
    const forged: Pod = {
      metadata: { namespace: "default", name: `forged-${Date.now()}`, uid: crypto.randomUUID() },
      spec: {
        containers: [
          { name: "a", image: "localhost/busybox:latest", command: ["sleep", "600"] },
          { name: "b", image: "localhost/busybox:latest", command: ["sleep", "600"] },
        ],
      },
    };
    const made = await zunCall(
      zun,
      mallory,
      "POST",
      "/capsules",
      capsuleCreateBody(forged, { nodeName, exposePorts: false }),
    );
    const { p, close } = zunProvider(nodeName);
    try {
      const listed = (await p.listPods({})).map((pod) => pod.metadata?.name);
      assert.ok(
        !listed.includes(forged.metadata!.name),
        `node ${nodeName} adopted the capsule another user labelled as its pod: ${listed}`,
      );
    } finally {
      await close();
      await removeForged(zun, mallory, `/capsules/${made.uuid}`);
      restore();
      await zun.stop();
    }
  },
});

Deno.test({
  name: "a pod's logs and exec never reach a container another member labelled as that pod",
  ignore: skip !== undefined,
  async fn() {
    const zun = await useZun();
    const restore = withEnv(zun.env);
    const nodeName = `vk-own-${crypto.randomUUID().slice(0, 6)}`;
    const mallory = await anotherMember(zun);
    let { p, close } = zunProvider(nodeName);
    const pod = scriptPod("mine", "echo mine; exec sleep 600");
    let forgedUuid: string | undefined;
    try {
      await p.createPod(pod, {});
      await until(p, pod, "running", (now) => now?.status?.phase === "Running");
      // The other member copies the pod's labels (a higher run, so it looks newer) onto a
      // container of its own, then vkubelet restarts and adopts what it finds.
      const theirs = await zunCall(zun, mallory, "POST", "/containers?run=true", {
        name: `default.${pod.metadata!.name}.9`,
        image: "localhost/busybox:latest",
        command: ["sh", "-c", "echo forged; exec sleep 601"],
        restart_policy: { Name: "no" },
        labels: {
          "vkubelet.io/node": nodeName,
          "vkubelet.io/namespace": "default",
          "vkubelet.io/name": pod.metadata!.name,
          "vkubelet.io/uid": pod.metadata!.uid,
          "vkubelet.io/run": "9",
          "vkubelet.io/container": "main",
          "vkubelet.io/restart-policy": "Never",
        },
      });
      forgedUuid = theirs.uuid;
      await new Promise((r) => setTimeout(r, 5_000)); // the forged container runs
      await close();
      ({ p, close } = zunProvider(nodeName));
      await p.createPod(pod, {});
      await until(p, pod, "running", (now) => now?.status?.phase === "Running");
      const id = (await p.getPod("default", pod.metadata!.name!, {}))?.status
        ?.containerStatuses?.[0]?.containerID;
      assert.notEqual(id, `zun://${forgedUuid}`, "the pod's status is the forged container's");
      assert.equal(await logs(p, pod), "mine\n", "the pod's log is its own container's");
      const ran = await exec(p, pod, ["cat", "/proc/1/cmdline"]);
      assert.equal(ran.out.replaceAll("\0", " ").trim(), "sleep 600", "exec ran in its own");
      await deleted(p, pod);
    } finally {
      await close();
      if (forgedUuid) await removeForged(zun, mallory, `/containers/${forgedUuid}`);
      restore();
      await zun.stop();
    }
  },
});
