/**
 * Prism (`@stoplight/prism-cli` from npm, run by Node) as a validating proxy in front of the ACI
 * emulator: every request the SDK sends and every reply the emulator gives is checked against
 * Azure's specification in `./spec/` (`--errors`: a request that breaks it is answered 422, a
 * reply that breaks it 500 with Prism's violation). Installed into the cache on first use, as
 * `.ci/run` does; the spec is copied to a temporary folder with the three examples it names but
 * upstream lacks added as `{}`, which Prism needs to start.
 * @module
 */
import { freePort } from "../../cluster/ports.ts";

const root = new URL("../../../", import.meta.url).pathname;
/** The Prism release the tests are written against (later ones need a newer Node). */
export const PRISM_VERSION = "5.14.2";
const prefix = `${root}.cache/prism-${PRISM_VERSION}`;
const bin = `${prefix}/node_modules/.bin/prism`;
const MISSING = ["ContainerGroupsGetPriority", "ContainerGroupsRestart", "ContainerGroupsUpdate"];

/** A running Prism. */
export interface Prism {
  url: string;
  /** Prism's output so far (its violations are logged there). */
  output(): string;
  stop(): Promise<void>;
}

/** Installs Prism into the cache (idempotent). */
export async function installPrism(): Promise<void> {
  try {
    await Deno.stat(bin);
    return;
  } catch {
    // Not there yet.
  }
  await Deno.mkdir(prefix, { recursive: true });
  await Deno.writeTextFile(`${prefix}/package.json`, '{ "private": true }\n');
  const out = await new Deno.Command("npm", {
    args: [
      "install",
      "--no-audit",
      "--no-fund",
      "--silent",
      `@stoplight/prism-cli@${PRISM_VERSION}`,
    ],
    cwd: prefix,
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(
      `npm install @stoplight/prism-cli failed: ${new TextDecoder().decode(out.stderr)}`,
    );
  }
}

async function specCopy(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "aci-spec-" });
  const from = new URL("./spec/2023-05-01/", import.meta.url).pathname;
  await Deno.mkdir(`${dir}/examples`);
  await Deno.copyFile(`${from}containerInstance.json`, `${dir}/containerInstance.json`);
  for await (const e of Deno.readDir(`${from}examples`)) {
    await Deno.copyFile(`${from}examples/${e.name}`, `${dir}/examples/${e.name}`);
  }
  for (const name of MISSING) await Deno.writeTextFile(`${dir}/examples/${name}.json`, "{}");
  return dir;
}

/** Starts Prism on a free loopback port, proxying to `upstream`. */
export async function startPrism(upstream: string): Promise<Prism> {
  await installPrism();
  const dir = await specCopy();
  const port = freePort();
  const child = new Deno.Command(bin, {
    args: [
      "proxy",
      `${dir}/containerInstance.json`,
      upstream,
      "--errors",
      "-h",
      "127.0.0.1",
      "-p",
      String(port),
    ],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let text = "";
  const decoder = new TextDecoder();
  const drain = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) text += decoder.decode(chunk, { stream: true });
  };
  const drained = Promise.all([drain(child.stdout), drain(child.stderr)]);
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    try {
      child.kill("SIGTERM");
    } catch {
      // Already gone.
    }
    await child.status;
    await drained;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    const up = await Deno.connect({ hostname: "127.0.0.1", port }).then((c) => {
      c.close();
      return true;
    }, () => false);
    if (up) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`Prism did not listen within 60 s: ${text}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return { url, output: () => text, stop };
}
