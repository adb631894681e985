/**
 * The node's allowlist of uids and gids (config `allowedIds`), on a made-up host database: ids
 * outside its ranges, and ids the host names unless listed by themselves, are refused with the
 * field named; vkubelet's own identity is never refused.
 * @module
 */
import assert from "node:assert/strict";
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import { containerIdentity } from "../../../providers/process/launch/identity.ts";
import {
  checkAllowedIds,
  type HostIds,
  parseIdRange,
  readHostIds,
} from "../../../providers/process/launch/id_allowlist.ts";
import { parseProcessConfig } from "../../../providers/process/config.ts";
import { makePod } from "./_helpers.ts";

const hostIds: HostIds = {
  users: new Map([
    [1, { name: "daemon", gid: 1 }],
    [1000, { name: "alice", gid: 1000 }],
    [65534, { name: "nobody", gid: 65534 }],
  ]),
  groups: new Map([[42, "shadow"], [1000, "alice"], [1500, "docker"], [65534, "nogroup"]]),
};
const root = { uid: 0, gid: 0 };
const defaults = { uids: ["1000-65535"], gids: ["1000-65535"] };

/** Why `pod`'s container `c` may not run under `allowed`, or undefined. */
function refusal(
  spec: Partial<Pod["spec"]>,
  container: Partial<Container> = {},
  allowed = defaults,
): string | undefined {
  const pod = makePod([], spec);
  const c = { name: "c", ...container };
  const sc = { ...spec?.securityContext, ...c.securityContext };
  const uid = sc.runAsUser ?? root.uid;
  const derivedGid = sc.runAsGroup === undefined && sc.runAsUser !== undefined;
  const gid = sc.runAsGroup ??
    (sc.runAsUser === undefined ? root.gid : hostIds.users.get(uid)?.gid ?? uid);
  return checkAllowedIds(pod, c, { uid, gid, derivedGid }, { host: root, allowed, hostIds });
}

Deno.test("ids inside the ranges that the host does not name are allowed", () => {
  const sc = { runAsUser: 2000, runAsGroup: 3000, supplementalGroups: [4000], fsGroup: 5000 };
  assert.equal(refusal({ securityContext: sc }), undefined);
  assert.equal(refusal({ securityContext: { runAsUser: 2000 } }), undefined, "gid 2000 derived");
});

Deno.test("a pod that names no user, or vkubelet's own, is not checked", () => {
  assert.equal(refusal({}), undefined);
  assert.equal(refusal({ securityContext: { runAsUser: 0, runAsGroup: 0 } }), undefined);
  assert.equal(refusal({}, { securityContext: { runAsUser: 0 } }), undefined);
});

Deno.test("a system group is refused in every field that names it, the field named", () => {
  const cases: [Partial<Pod["spec"]>, Partial<Container>, string][] = [
    [
      { securityContext: { supplementalGroups: [4000, 42] } },
      {},
      "spec.securityContext.supplementalGroups",
    ],
    [{ securityContext: { fsGroup: 42 } }, {}, "spec.securityContext.fsGroup"],
    [
      { securityContext: { runAsUser: 2000, runAsGroup: 42 } },
      {},
      "spec.securityContext.runAsGroup",
    ],
    [{}, { securityContext: { runAsUser: 2000, runAsGroup: 42 } }, "securityContext.runAsGroup"],
  ];
  for (const [spec, container, field] of cases) {
    assert.equal(
      refusal(spec, container),
      `container c: ${field}: gid 42 is the host's group shadow, which pods may use only if the node's config lists 42 by itself in allowedIds.gids (now: 1000-65535); use an id the host does not name`,
    );
  }
  // gid 0 with a non-root user: the host's root group, even though vkubelet's own gid is 0.
  assert.match(
    refusal({ securityContext: { runAsUser: 2000, runAsGroup: 0 } })!,
    /spec\.securityContext\.runAsGroup: gid 0 is not allowed on this node \(allowedIds\.gids: 1000-65535\)/,
  );
});

Deno.test("a uid or gid the host names is refused inside a range, allowed when listed alone", () => {
  assert.match(
    refusal({}, { securityContext: { runAsUser: 1, runAsGroup: 2000 } })!,
    /^container c: securityContext\.runAsUser: uid 1 is the host's user daemon/,
  );
  assert.match(
    refusal({ securityContext: { runAsUser: 1000, runAsGroup: 2000 } })!,
    /spec\.securityContext\.runAsUser: uid 1000 is the host's user alice/,
  );
  assert.match(
    refusal({ securityContext: { supplementalGroups: [1500] } })!,
    /gid 1500 is the host's group docker/,
  );
  // alice listed alone: her uid, then her group from passwd, which must be listed too.
  const alice = { uids: ["1000-65535", "1000"], gids: ["1000-65535"] };
  assert.match(
    refusal({ securityContext: { runAsUser: 1000 } }, {}, alice)!,
    /spec\.securityContext\.runAsUser without runAsGroup \(the user's group\): gid 1000 is the host's group alice/,
  );
  alice.gids.push("1000");
  assert.equal(refusal({ securityContext: { runAsUser: 1000 } }, {}, alice), undefined);
  const shadow = { uids: defaults.uids, gids: ["1000-65535", "42"] };
  assert.equal(refusal({ securityContext: { supplementalGroups: [42] } }, {}, shadow), undefined);
});

Deno.test("containerIdentity applies the allowlist only when given one", () => {
  const pod = makePod([], { securityContext: { runAsUser: 2000, supplementalGroups: [0] } });
  const identity = containerIdentity(pod, { name: "c" }, root, defaults);
  assert.ok(!identity.ok);
  assert.match(identity.message, /spec\.securityContext\.supplementalGroups: gid 0 is the host's/);
  assert.ok(containerIdentity(pod, { name: "c" }, root).ok, "exec sessions of a started instance");
});

Deno.test("allowedIds: ranges parsed, bad ones named, the default 1000-65535", () => {
  assert.deepEqual(parseIdRange("1000-65535"), { from: 1000, to: 65535 });
  assert.deepEqual(parseIdRange("42"), { from: 42, to: 42 });
  assert.equal(parseIdRange("65535-1000"), undefined);
  assert.equal(parseIdRange("4294967295"), undefined);
  const parsed = parseProcessConfig({});
  assert.ok(parsed.ok);
  assert.deepEqual(parsed.config.allowedIds, defaults);
  const numbers = parseProcessConfig({ allowedIds: { gids: [42, "1000-2000"] } });
  assert.ok(numbers.ok);
  assert.deepEqual(numbers.config.allowedIds.gids, ["42", "1000-2000"]);
  const bad = parseProcessConfig({ allowedIds: { uids: ["1000-", "x"] } });
  assert.ok(!bad.ok);
  assert.match(bad.errors.join("\n"), /allowedIds\.uids\.0: "1000-" is not an id or a range/);
  assert.match(bad.errors.join("\n"), /allowedIds\.uids\.1: "x" is not an id or a range/);
});

Deno.test("the host's passwd and group files are read, a user's primary gid included", async () => {
  const etc = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${etc}/passwd`, "svc:x:1200:1300::/:/usr/sbin/nologin\nbad:x:y:z\n");
    await Deno.writeTextFile(`${etc}/group`, "shadow:x:42:\n");
    const ids = readHostIds(etc);
    assert.deepEqual([...ids.users], [[1200, { name: "svc", gid: 1300 }]]);
    assert.deepEqual([...ids.groups], [[42, "shadow"]]);
    const pod = makePod([], { securityContext: { supplementalGroups: [1300] } });
    const why = checkAllowedIds(pod, { name: "c" }, { uid: 0, gid: 0, derivedGid: false }, {
      host: root,
      allowed: defaults,
      hostIds: ids,
    });
    assert.match(why!, /gid 1300 is the host's primary group of user svc/);
  } finally {
    await Deno.remove(etc, { recursive: true });
  }
});
