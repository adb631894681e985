import assert from "node:assert/strict";
import { clientCa } from "../../app/run/kubelet_api.ts";

/** A logger that keeps its warnings. */
function warnings() {
  const seen: string[] = [];
  return { seen, log: { warn: (message: string) => void seen.push(message) } as never };
}

const kube = (caCerts?: string[]) => ({
  config: { server: "https://127.0.0.1:6443", source: "kubeconfig k", namespace: "", caCerts },
});

Deno.test("without --client-ca-file the kubeconfig's CA is trusted for client certificates, with a warning", async () => {
  const { seen, log } = warnings();
  const ca = await clientCa({}, kube(["CA PEM"]), log);
  assert.equal(ca, "CA PEM");
  assert.equal(seen.length, 1);
  assert.match(seen[0], /no --client-ca-file: client certificates are verified against the CA/);
  assert.match(seen[0], /set --client-ca-file/);
});

Deno.test("with --client-ca-file nothing is said and the file is the CA", async () => {
  const { seen, log } = warnings();
  const file = await Deno.makeTempFile();
  try {
    await Deno.writeTextFile(file, "FILE CA");
    assert.equal(await clientCa({ clientCaFile: file }, kube(["CA PEM"]), log), "FILE CA");
    assert.deepEqual(seen, []);
  } finally {
    await Deno.remove(file);
  }
});
