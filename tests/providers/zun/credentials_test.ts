/**
 * The zun provider reads OpenStack credentials as OpenStack's tools do (clouds.yaml, secure.yaml,
 * `OS_*` over them), builds keystone v3 token requests for a password and an application
 * credential, finds Zun in the catalog, and picks the container API microversion both sides
 * speak.
 */
import assert from "node:assert/strict";
import { type CredentialSources, loadCredentials } from "../../../providers/zun/credentials.ts";
import {
  endpointOf,
  identityBase,
  tokenRequestBody,
} from "../../../providers/zun/client/keystone.ts";
import { chooseVersion } from "../../../providers/zun/client/zun_api.ts";

function sources(
  env: Record<string, string>,
  files: Record<string, string> = {},
): CredentialSources {
  return { env: (n) => env[n], readFile: (p) => files[p], cwd: "/work", home: "/home/u" };
}

const CLOUDS = `
clouds:
  prod:
    region_name: RegionTwo
    interface: internal
    auth:
      auth_url: https://keystone.example:5000
      username: alice
      project_name: team
      user_domain_name: Users
      project_domain_name: Projects
`;

Deno.test("a cloud from clouds.yaml, its password from secure.yaml, OS_* over both", () => {
  const c = loadCredentials(
    undefined,
    sources({ OS_CLOUD: "prod", OS_REGION_NAME: "RegionThree" }, {
      "/home/u/.config/openstack/clouds.yaml": CLOUDS,
      "/home/u/.config/openstack/secure.yaml":
        "clouds:\n  prod:\n    auth:\n      password: s3cret\n",
    }),
  );
  assert.equal(c.authUrl, "https://keystone.example:5000");
  assert.equal(c.password, "s3cret");
  assert.equal(c.regionName, "RegionThree", "OS_REGION_NAME wins over region_name");
  assert.equal(c.interface, "internal");
  assert.deepEqual(tokenRequestBody(c), {
    auth: {
      identity: {
        methods: ["password"],
        password: { user: { name: "alice", domain: { name: "Users" }, password: "s3cret" } },
      },
      scope: { project: { name: "team", domain: { name: "Projects" } } },
    },
  });
  assert.equal(identityBase(c.authUrl), "https://keystone.example:5000/v3");
});

Deno.test("an application credential from OS_* is sent without a scope", () => {
  const c = loadCredentials(
    undefined,
    sources({
      OS_AUTH_URL: "http://127.0.0.1:5000/v3",
      OS_AUTH_TYPE: "v3applicationcredential",
      OS_APPLICATION_CREDENTIAL_ID: "ac-1",
      OS_APPLICATION_CREDENTIAL_SECRET: "shh",
    }),
  );
  assert.deepEqual(tokenRequestBody(c), {
    auth: {
      identity: {
        methods: ["application_credential"],
        application_credential: { id: "ac-1", secret: "shh" },
      },
    },
  });
});

Deno.test("missing credentials and an unknown cloud say what to set", () => {
  assert.throws(
    () => loadCredentials(undefined, sources({ OS_AUTH_URL: "http://k" })),
    /lack OS_USERNAME or OS_USER_ID, OS_PASSWORD, OS_PROJECT_NAME or OS_PROJECT_ID/,
  );
  assert.throws(
    () => loadCredentials("nope", sources({})),
    /cloud "nope" is in no clouds.yaml \(looked in \/work\/clouds.yaml, /,
  );
});

Deno.test("Zun's endpoint is found by type, interface and region, or the error lists them", () => {
  const catalog = [{
    type: "container",
    endpoints: [
      { interface: "public", region_id: "One", url: "https://zun-one/v1/" },
      { interface: "public", region_id: "Two", url: "https://zun-two/v1" },
    ],
  }];
  assert.equal(
    endpointOf(catalog, "container", { interface: "public", regionName: "Two" }),
    "https://zun-two/v1",
  );
  assert.throws(
    () => endpointOf(catalog, "container", { interface: "internal", regionName: "One" }),
    /no internal endpoint in region One .*\(public\/One, public\/Two\)/,
  );
  assert.throws(() => endpointOf([], "container", { interface: "public" }), /no container service/);
});

Deno.test("the microversion is the newest both sides speak, or an error naming both ranges", () => {
  assert.equal(chooseVersion({ min: "1.1", max: "1.40" }), "1.40");
  assert.equal(chooseVersion({ min: "1.1", max: "1.36" }), "1.36");
  assert.equal(chooseVersion({ min: "1.1", max: "1.45" }), "1.40");
  assert.equal(chooseVersion({ min: "1.1", max: "1.40" }, "1.33"), "1.33");
  assert.throws(
    () => chooseVersion({ min: "1.1", max: "1.20" }),
    /speaks container API 1\.1–1\.20/,
  );
});
