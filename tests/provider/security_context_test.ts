import assert from "node:assert/strict";
import { effectiveSecurityContext } from "../../provider/mod.ts";

Deno.test("a container inherits the pod's user, group, non-root rule and profiles unless it sets its own", () => {
  const pod = {
    runAsUser: 1000,
    runAsGroup: 2000,
    runAsNonRoot: true,
    fsGroup: 3000,
    supplementalGroups: [4000],
    seccompProfile: { type: "Localhost", localhostProfile: "p.json" },
    seLinuxOptions: { level: "s0:c1" },
    appArmorProfile: { type: "RuntimeDefault" },
  };
  const merged = effectiveSecurityContext(pod, {
    securityContext: { runAsUser: 0, capabilities: { drop: ["ALL"] } },
  });
  assert.deepEqual(merged, {
    runAsUser: 0,
    runAsGroup: 2000,
    runAsNonRoot: true,
    capabilities: { drop: ["ALL"] },
    seccompProfile: { type: "Localhost", localhostProfile: "p.json" },
    seLinuxOptions: { level: "s0:c1" },
    appArmorProfile: { type: "RuntimeDefault" },
  });
  // fsGroup and supplementalGroups stay pod-level; the pod's objects are not shared.
  merged.seccompProfile!.type = "Unconfined";
  assert.equal(pod.seccompProfile.type, "Localhost");
});

Deno.test("with neither context the container runs with an empty one", () => {
  assert.deepEqual(effectiveSecurityContext(undefined, {}), {});
});
