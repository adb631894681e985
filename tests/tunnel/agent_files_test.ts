/**
 * The agent's files for the pod: a whole hosts file (the kubelet's localhost lines, then the
 * Services), and the Services' address-carrying env vars for its own namespace and `kubernetes`
 * only, as the kubelet names them.
 * @module
 */
import assert from "node:assert/strict";
import { ServiceListeners } from "../../app/agent/services.ts";

Deno.test("the agent writes a whole hosts file and the env vars of the pod's own Services", async () => {
  const dir = await Deno.makeTempDir();
  const listeners = new ServiceListeners({
    dial: (_s, _p, conn) => conn.close(),
    hostsFile: `${dir}/hosts`,
    envFile: `${dir}/env`,
    prefix: "127.91",
    log: () => {},
  });
  try {
    await listeners.update({
      namespace: "team",
      clusterDomain: "cluster.local",
      services: [
        { namespace: "team", name: "web-api", ports: [{ port: 18080, protocol: "TCP" }] },
        { namespace: "default", name: "kubernetes", ports: [{ port: 18443, protocol: "TCP" }] },
      ],
    });
    const hosts = await Deno.readTextFile(`${dir}/hosts`);
    assert.match(
      hosts,
      /^127\.0\.0\.1\tlocalhost$/m,
      "no localhost line: a bound /etc/hosts loses it",
    );
    assert.match(hosts, /^127\.91\.0\.1\tweb-api\.team\.svc\.cluster\.local .* web-api$/m);
    const env = await Deno.readTextFile(`${dir}/env`);
    assert.deepEqual(env.trim().split("\n"), [
      "WEB_API_SERVICE_HOST=127.91.0.1",
      "WEB_API_PORT=tcp://127.91.0.1:18080",
      "WEB_API_PORT_18080_TCP=tcp://127.91.0.1:18080",
      "WEB_API_PORT_18080_TCP_ADDR=127.91.0.1",
      "KUBERNETES_SERVICE_HOST=127.91.0.2",
      "KUBERNETES_PORT=tcp://127.91.0.2:18443",
      "KUBERNETES_PORT_18443_TCP=tcp://127.91.0.2:18443",
      "KUBERNETES_PORT_18443_TCP_ADDR=127.91.0.2",
    ]);
  } finally {
    listeners.close();
    await Deno.remove(dir, { recursive: true });
  }
});
