/**
 * What the network lab builds and the control-plane option it needs: kube-proxy's module pins
 * every module at the control plane's version (so it runs at the cluster's version and reuses
 * its build cache), each binary is named by its version, and `cluster up --service-range`
 * refuses what is not a CIDR before it starts anything.
 * @module
 */
import assert from "node:assert/strict";
import { netlabBinaryPath, netlabVersions } from "../../tools/netlab/build.ts";

const root = new URL("../../", import.meta.url).pathname;

/** `module version` of every require and replace line of a go.mod. */
function pins(path: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const line of Deno.readTextFileSync(path).split("\n")) {
    const m = line.match(/^\s*(?:require\s+)?([a-z0-9.\-/]+) (v\d\S*)(?:\s|$)/i) ??
      line.match(/=> ([a-z0-9.\-/]+) (v\d\S*)/i);
    if (m) found.set(line.includes("=>") ? `${m[1]} (replaced)` : m[1], m[2]);
  }
  return found;
}

Deno.test("kube-proxy's go.mod pins every module the control plane's go.mod pins, at its version", () => {
  const cluster = pins(`${root}tools/cluster/go.mod`);
  const proxy = pins(`${root}tools/netlab/kube-proxy/go.mod`);
  assert.equal(proxy.get("k8s.io/kubernetes"), cluster.get("k8s.io/kubernetes"));
  const differ = [...proxy].filter(([mod, v]) => cluster.has(mod) && cluster.get(mod) !== v);
  assert.deepEqual(differ, [], "tidy tools/netlab/kube-proxy again from tools/cluster/go.mod");
  const staging = [...cluster.keys()].filter((m) => m.endsWith("(replaced)"));
  assert.ok(staging.length > 10, "the control plane replaces its staging modules");
  for (const mod of staging.filter((m) => proxy.has(m))) {
    assert.equal(proxy.get(mod), cluster.get(mod), mod);
  }
});

Deno.test("each lab binary is named by the version its go.mod pins", () => {
  const versions = netlabVersions();
  assert.match(versions["kube-proxy"], /^v1\.\d+\.\d+$/);
  for (const component of ["kube-proxy", "coredns", "flanneld"] as const) {
    assert.ok(
      netlabBinaryPath(component).endsWith(`/netlab/${component}-${versions[component]}`),
      netlabBinaryPath(component),
    );
  }
});

Deno.test("cluster up refuses a --service-range that is not a CIDR, naming the option", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      `${root}tools/cluster/cli.ts`,
      "--name=range-check",
      "up",
      "--service-range=198.18.96.0",
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 2);
  assert.match(
    new TextDecoder().decode(out.stderr),
    /--service-range=198\.18\.96\.0 is not a CIDR/,
  );
});
