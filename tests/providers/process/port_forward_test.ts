/**
 * Port-forward reaches only the pod's ports: those its containers declare and those its own
 * processes listen on (the latter is covered by logs_exec_test.ts); any other loopback port,
 * such as one of vkubelet's, is refused with the runtime's "connection refused" text.
 * @module
 */
import assert from "node:assert/strict";
import { cleanup, collector, makePod, startProvider, waitFor } from "./_helpers.ts";

/** A loopback listener of this process (standing for vkubelet's own), counting connections. */
function hostListener() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let accepted = 0;
  const serving = (async () => {
    for await (const conn of listener) {
      accepted++;
      await conn.write(new TextEncoder().encode("host secret"));
      conn.close();
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    accepted: () => accepted,
    async close() {
      listener.close();
      await serving;
    },
  };
}

Deno.test("port-forward to a loopback port that is not the pod's is refused", async () => {
  const t = await startProvider();
  const host = hostListener();
  const pod = makePod([{ name: "c", image: "x", command: ["sleep", "30"] }]);
  const name = pod.metadata!.name!;
  try {
    await t.provider.createPod(pod, {});
    await waitFor("running", () => t.provider.runnerOf("default", name)?.live("c"));
    const out = collector();
    await assert.rejects(
      t.provider.portForward({ namespace: "default", name }, {
        port: host.port,
        stream: { readable: new Blob(["hello"]).stream(), writable: out.writable },
      }),
      (err: Error) => {
        assert.equal(
          err.message,
          `failed to execute portforward in network namespace "host": IPv4: dial tcp4 127.0.0.1:${host.port}: connect: connection refused (port ${host.port} is not a containerPort of pod default/${name} and none of its processes listens on it)`,
        );
        return true;
      },
    );
    assert.equal(host.accepted(), 0);
    assert.equal(out.text(), "");
  } finally {
    await host.close();
    await cleanup(t.provider, pod);
    await t.close();
  }
});

Deno.test("port-forward to a port the pod declares is carried", async () => {
  const t = await startProvider();
  const host = hostListener();
  const pod = makePod([{
    name: "c",
    image: "x",
    command: ["sleep", "30"],
    ports: [{ containerPort: host.port }],
  }]);
  const name = pod.metadata!.name!;
  try {
    await t.provider.createPod(pod, {});
    await waitFor("running", () => t.provider.runnerOf("default", name)?.live("c"));
    const out = collector();
    await t.provider.portForward({ namespace: "default", name }, {
      port: host.port,
      stream: { readable: new Blob([]).stream(), writable: out.writable },
    });
    assert.equal(out.text(), "host secret");
  } finally {
    await host.close();
    await cleanup(t.provider, pod);
    await t.close();
  }
});
