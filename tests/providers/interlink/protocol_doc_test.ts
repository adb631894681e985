/**
 * The examples of docs/interlink-protocol.md are what went over the wire: the provider
 * (`target: plugin`) drives the reference plugin through a recording proxy for one small pod (a
 * ConfigMap and a Secret volume, one container): /create, /status, /getLogs, the ping, /delete,
 * and /pinglink from a `target: interlink` provider. The recorded bodies, with times and process
 * ids made stable and JSON indented, must equal the document's examples between its
 * `<!-- recorded: ... -->` markers. `VKUBELET_UPDATE_DOCS=1` rewrites them instead.
 */
import assert from "node:assert/strict";
import type { ConfigMap, Pod, Secret } from "kubernetes-types/core/v1.d.ts";
import { FakeClock } from "../../../base/fake_clock.ts";
import { getLogger } from "../../../base/log.ts";
import type { ProviderDeps, ProviderKubeClient } from "../../../provider/mod.ts";
import { createProvider } from "../../../providers/interlink/mod.ts";
import { until } from "./_logs.ts";
import { startPlugin } from "./_plugin.ts";
import { type Exchange, startRecorder } from "./_recorder.ts";

const DOC = new URL("../../../docs/interlink-protocol.md", import.meta.url);
const TOKEN = "example-bearer-token-never-shown";
const UID = "6f1c0a55-0000-4000-8000-000000000001";

const configMap: ConfigMap = {
  metadata: { name: "web-config", namespace: "default" },
  data: { "greeting.txt": "hello" },
};
// A placeholder, not a credential: base64 of "<placeholder>".
const secret: Secret = {
  metadata: { name: "web-secret", namespace: "default" },
  type: "Opaque",
  data: { password: btoa("<placeholder>") },
};

const pod: Pod = {
  metadata: { name: "web-0", namespace: "default", uid: UID },
  spec: {
    nodeName: "vk-1",
    restartPolicy: "Always",
    containers: [{
      name: "main",
      image: "busybox",
      command: ["/bin/sh", "-c", 'echo "hello from $POD_NAME"; exec sleep 3600'],
      env: [{ name: "POD_NAME", value: "web-0" }],
      volumeMounts: [
        { name: "config", mountPath: "/etc/web" },
        { name: "secret", mountPath: "/etc/web-secret", readOnly: true },
      ],
    }],
    volumes: [
      { name: "config", configMap: { name: "web-config" } },
      { name: "secret", secret: { secretName: "web-secret" } },
    ],
  },
};

/** The ConfigMap and Secret above, by name; nothing else. */
const kube = {
  configMaps: { get: () => Promise.resolve(structuredClone(configMap)) },
  secrets: { get: () => Promise.resolve(structuredClone(secret)) },
} as unknown as ProviderKubeClient;

/** Times and process ids vary from run to run; everything else is as sent. */
function stable(text: string): string {
  return text
    .replace(
      /\b(?!0001-)\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g,
      (_, frac?: string) => `2026-01-01T10:00:00${frac ? "." + "0".repeat(frac.length - 1) : ""}Z`,
    )
    .replace(/proc:\/\/\d+/g, "proc://4242");
}

/** A body as the document shows it: JSON indented by two, other text as it is. */
function shown(body: string, contentType: string): { lang: string; text: string } {
  const text = stable(body);
  if (!contentType.includes("json") && !/^[[{]/.test(text.trim())) {
    return { lang: "text", text: text.replace(/\n$/, "") };
  }
  return { lang: "json", text: JSON.stringify(JSON.parse(text), null, 2) };
}

/** The document's examples, by marker name, from the recorded exchanges. */
function examples(exchanges: Exchange[]): Map<string, { lang: string; text: string }> {
  const find = (name: string, match: (e: Exchange) => boolean) => {
    const found = exchanges.find(match);
    assert.ok(found, `no ${name} call was recorded`);
    return found;
  };
  const create = find("/create", (e) => e.path === "/create");
  const status = find("/status", (e) => e.path === "/status" && e.reply.includes('"running"'));
  const logs = find("/getLogs", (e) => e.path === "/getLogs");
  const remove = find("/delete", (e) => e.path === "/delete");
  const ping = find("ping", (e) => e.path === "/status" && e.request === "[]" && e.reply !== "[]");
  const pinglink = find("/pinglink", (e) => e.path === "/pinglink");
  const out = new Map<string, { lang: string; text: string }>();
  for (
    const [name, e] of Object.entries({ create, status, logs, delete: remove, ping, pinglink })
  ) {
    out.set(`${name} request`, shown(e.request || "(no body)", "text"));
    out.set(`${name} reply`, shown(e.reply, e.contentType));
  }
  return out;
}

/** The document with every recorded block replaced; throws for a marker it has no example for. */
function rewrite(doc: string, blocks: Map<string, { lang: string; text: string }>): string {
  const seen = new Set<string>();
  const next = doc.replace(
    /(<!-- recorded: ([a-z ]+) -->\n)```\w*\n[\s\S]*?\n```\n/g,
    (_, marker: string, name: string) => {
      const block = blocks.get(name);
      assert.ok(block, `docs/interlink-protocol.md has a marker "${name}" no call records`);
      seen.add(name);
      return `${marker}\`\`\`${block.lang}\n${block.text}\n\`\`\`\n`;
    },
  );
  const missing = [...blocks.keys()].filter((k) => !seen.has(k));
  assert.deepEqual(missing, [], "every recorded exchange has its marker in the document");
  return next;
}

function deps(clock: FakeClock, signal: AbortSignal): ProviderDeps {
  return {
    nodeName: "vk-1",
    log: getLogger(["test"]),
    clock,
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal,
    kube,
  };
}

async function record(): Promise<Exchange[]> {
  const plugin = await startPlugin();
  const recorder = await startRecorder(plugin.url!);
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/token`, TOKEN);
  const stop = new AbortController();
  const clock = new FakeClock();
  const config = { url: recorder.url, tokenFile: `${dir}/token`, statusInterval: "5s" };
  const provider = createProvider({ target: "plugin", ...config }, deps(clock, stop.signal));
  const interlink = createProvider({ target: "interlink", ...config }, deps(clock, stop.signal));
  try {
    await provider.createPod(structuredClone(pod), {});
    await until("the container's first line", async () => {
      const log = await Deno.readTextFile(`${plugin.state}/pods/${UID}/main.log`).catch(() => "");
      return log.includes("hello");
    });
    await until("a status poll that sees the pod run", async () => {
      await clock.advance(5_000);
      return recorder.exchanges.some((e) => e.path === "/status" && e.reply.includes("running"));
    });
    const ref = { namespace: "default", pod: "web-0", container: "main" };
    const stream = await provider.getContainerLogs(ref, { tailLines: 10, timestamps: true });
    assert.match(await new Response(stream).text(), /hello from web-0/);
    await provider.ping!({});
    await provider.deletePod(structuredClone(pod), {});
    await interlink.ping!({});
    return recorder.exchanges;
  } finally {
    stop.abort();
    await provider.close();
    await interlink.close();
    await recorder.close();
    await plugin.stop();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("the protocol document's examples are the bytes the provider and the reference plugin exchange", async () => {
  const exchanges = await record();
  for (const e of exchanges) {
    assert.equal(e.headers["authorization"], `Bearer ${TOKEN}`, `${e.path} carries the token`);
    assert.ok(!e.request.includes(TOKEN) && !e.reply.includes(TOKEN), "no body holds the token");
  }
  const doc = await Deno.readTextFile(DOC);
  const next = rewrite(doc, examples(exchanges));
  assert.ok(!next.includes(TOKEN), "the document never shows the bearer token");
  if (Deno.env.get("VKUBELET_UPDATE_DOCS") === "1") {
    if (next !== doc) await Deno.writeTextFile(DOC, next);
    return;
  }
  assert.equal(
    next,
    doc,
    "docs/interlink-protocol.md's examples differ from what went over the wire; if the change " +
      "is meant, run VKUBELET_UPDATE_DOCS=1 deno test -A tests/providers/interlink/protocol_doc_test.ts",
  );
});
