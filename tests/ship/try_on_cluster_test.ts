/**
 * The operator's path of the README ("Using it against a cluster you already have"): the two
 * documented commands, `scripts/try_on_cluster.sh up` and `down`, run as written against the
 * local control plane with its admin kubeconfig, on loopback (NODE_IP and PORT set, as the README
 * says to where the API server reaches this host another way). Its refusals run against a fake
 * kubectl (no cluster): a NODE that already exists, and a kubelet-serving CSR that asks for more
 * names than the node's.
 */
import assert from "node:assert/strict";
import { useCluster } from "../../tools/cluster/harness.ts";
import { freePort } from "../../tools/cluster/ports.ts";

const root = new URL("../../", import.meta.url).pathname;

Deno.test({
  name: "try_on_cluster.sh joins a node as itself, serves logs and exec, and removes it all",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const c = await useCluster();
    const node = `vk-try-${crypto.randomUUID().slice(0, 6)}`;
    const work = await Deno.makeTempDir({ prefix: "vk-try-" });
    // The operator's kubectl: the local control plane's, by that name on PATH.
    await Deno.writeTextFile(`${work}/kubectl`, `#!/bin/sh\nexec '${c.binary}' kubectl "$@"\n`);
    await Deno.chmod(`${work}/kubectl`, 0o755);
    const env = {
      KUBECONFIG: c.kubeconfigPath,
      PATH: `${work}:${Deno.env.get("PATH")}`,
      DENO: Deno.execPath(),
      NODE: node,
      NODE_IP: "127.0.0.1",
      PORT: String(freePort()),
      DIR: `${work}/state`,
    };
    const run = async (step: "up" | "down") => {
      const out = await new Deno.Command("bash", {
        args: ["scripts/try_on_cluster.sh", step],
        cwd: root,
        env,
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(300_000),
      }).output();
      const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
      return { code: out.code, text };
    };
    try {
      const up = await run("up");
      const log = await Deno.readTextFile(`${work}/state/vkubelet.log`).catch(() => "(no log)");
      assert.equal(up.code, 0, `${up.text}\n--- vkubelet.log ---\n${log}`);
      assert.match(up.text, new RegExp(`certificatesigningrequest.* approved`));
      assert.match(up.text, new RegExp(`exec works on ${node}`));
      // The node runs as itself, with the certificate its bootstrap CSR got, not as the admin.
      const client = await Deno.readTextFile(`${work}/state/${node}-client-current.pem`);
      assert.match(client, /BEGIN CERTIFICATE/);
      const whoami = await new Deno.Command(c.binary, {
        args: ["kubectl", `--kubeconfig=${work}/state/${node}.kubeconfig`, "auth", "whoami"],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.match(new TextDecoder().decode(whoami.stdout), new RegExp(`system:node:${node}`));
      const ready = await c.kubectl([
        "get",
        "node",
        node,
        "-o",
        "jsonpath={.status.conditions[?(@.type=='Ready')].status}",
      ]);
      assert.equal(ready.stdout.trim(), "True");

      const down = await run("down");
      assert.equal(down.code, 0, down.text);
      const gone = await c.kubectl(["get", "node", node]);
      assert.notEqual(gone.code, 0, "the node is deleted");
      const csrs = await c.kubectl(["get", "csr", "-o", "name"]);
      assert.ok(!csrs.stdout.includes(`csr-${node}-`), `its CSRs are deleted:\n${csrs.stdout}`);
      assert.equal(await Deno.stat(`${work}/state`).catch(() => undefined), undefined);
    } finally {
      await run("down").catch(() => {});
      await Deno.remove(work, { recursive: true }).catch(() => {});
    }
  },
});

/** A kubectl that answers what `up` asks with canned replies, and records approvals. */
const FAKE_KUBECTL = `#!/bin/bash
case "$*" in
  version) exit 0 ;;
  "get node $NODE -o name") [ "$FAKE_NODE_EXISTS" = 1 ] && echo "node/$NODE" && exit 0; exit 1 ;;
  "get csr -o jsonpath="*) printf 'csr-fake kubernetes.io/kubelet-serving system:node:%s \\n' "$NODE" ;;
  "get csr csr-fake -o jsonpath={.spec.request}") cat "$FAKE_DIR/request.b64" ;;
  "certificate approve csr-fake") echo csr-fake >>"$FAKE_DIR/approved"; echo "csr-fake approved" ;;
  *) exit 0 ;;
esac
`;

/** Runs `up` against the fake kubectl with a serving CSR for `sans`; its outcome. */
async function upAgainstFake(options: { nodeExists: boolean; sans: string }) {
  const dir = await Deno.makeTempDir({ prefix: "vk-try-fake-" });
  try {
    await Deno.writeTextFile(`${dir}/kubectl`, FAKE_KUBECTL, { mode: 0o755 });
    const csr = await new Deno.Command("openssl", {
      args: [
        "req",
        "-new",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        "/dev/null",
        "-subj",
        "/O=system:nodes/CN=system:node:vk-fake",
        "-addext",
        `subjectAltName=${options.sans}`,
      ],
      stdout: "piped",
      stderr: "null",
    }).output();
    await Deno.writeTextFile(`${dir}/request.b64`, btoa(new TextDecoder().decode(csr.stdout)));
    const out = await new Deno.Command("bash", {
      args: ["scripts/try_on_cluster.sh", "up"],
      cwd: root,
      env: {
        KUBECONFIG: `${dir}/admin.kubeconfig`,
        KUBECTL: `${dir}/kubectl`,
        DENO: "true", // vkubelet is not started: the fake answers for it
        NODE: "vk-fake",
        NODE_IP: "127.0.0.1",
        DIR: `${dir}/state`,
        FAKE_DIR: dir,
        FAKE_NODE_EXISTS: options.nodeExists ? "1" : "0",
      },
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(60_000),
    }).output();
    const approved = await Deno.readTextFile(`${dir}/approved`).catch(() => "");
    const started = await Deno.stat(`${dir}/state/pid`).then(() => true, () => false);
    const decoder = new TextDecoder();
    return {
      code: out.code,
      text: decoder.decode(out.stdout) + decoder.decode(out.stderr),
      approved,
      started,
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("try_on_cluster.sh up refuses a NODE that already exists, before starting anything", async () => {
  const run = await upAgainstFake({ nodeExists: true, sans: "DNS:vk-fake,IP:127.0.0.1" });
  assert.notEqual(run.code, 0, run.text);
  assert.match(run.text, /error: node vk-fake already exists in this cluster.*NODE=/);
  assert.equal(run.started, false, "vkubelet was not started");
});

Deno.test("try_on_cluster.sh approves a serving CSR only for exactly the node's names", async () => {
  const extra = await upAgainstFake({
    nodeExists: false,
    sans: "DNS:vk-fake,IP:127.0.0.1,DNS:kubernetes.default.svc",
  });
  assert.notEqual(extra.code, 0, extra.text);
  assert.match(
    extra.text,
    /CSR csr-fake from system:node:vk-fake asks for \[DNS:kubernetes.default.svc DNS:vk-fake IP Address:127.0.0.1\], not exactly \[DNS:vk-fake IP Address:127.0.0.1\]: not approving it/,
  );
  assert.equal(extra.approved, "", "the CSR was not approved");
  const otherIp = await upAgainstFake({ nodeExists: false, sans: "DNS:vk-fake,IP:127.0.0.9" });
  assert.notEqual(otherIp.code, 0, otherIp.text);
  assert.equal(otherIp.approved, "");
  const exact = await upAgainstFake({ nodeExists: false, sans: "IP:127.0.0.1,DNS:vk-fake" });
  assert.equal(exact.code, 0, exact.text);
  assert.equal(exact.approved, "csr-fake\n");
});
