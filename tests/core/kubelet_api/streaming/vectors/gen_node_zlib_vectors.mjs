// Regenerates node_zlib_header_blocks.json with Node's real zlib (which, unlike Deno's node:zlib,
// honours `dictionary` when deflating): `node gen_node_zlib_vectors.mjs > node_zlib_header_blocks.json`.
// The dictionary is read from our TypeScript module's output, passed in as hex on stdin-free argv.
import zlib from "node:zlib";
import { execFileSync } from "node:child_process";

const dictHex = execFileSync("deno", [
  "eval",
  "import { SPDY3_DICTIONARY as d } from './../../../../lib/kubelet_api/streaming/_spdy_dictionary.ts';" +
  "console.log(Array.from(d, (b) => b.toString(16).padStart(2, '0')).join(''))",
], { cwd: new URL(".", import.meta.url).pathname, encoding: "utf8" }).trim();
const dictionary = Buffer.from(dictHex, "hex");

function block(headers) {
  const parts = [];
  const u32 = (n) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    return b;
  };
  const entries = Object.entries(headers);
  parts.push(u32(entries.length));
  for (const [name, values] of entries) {
    const n = Buffer.from(name), v = Buffer.from(values.join("\0"));
    parts.push(u32(n.length), n, u32(v.length), v);
  }
  return Buffer.concat(parts);
}

const blocks = [
  { streamtype: ["error"] },
  { streamtype: ["stdin"] },
  { streamtype: ["stdout"] },
  { streamtype: ["data"], port: ["8080"], requestid: ["0"] },
  {},
  { "x-many": ["a", "b", "c"], "content-type": ["text/plain"], status: ["200 OK"] },
];

const deflate = zlib.createDeflate({ dictionary, level: 9 });
const out = [];
for (const headers of blocks) {
  const chunks = [];
  const onData = (c) => chunks.push(c);
  deflate.on("data", onData);
  deflate.write(block(headers));
  await new Promise((resolve) => deflate.flush(zlib.constants.Z_SYNC_FLUSH, resolve));
  deflate.off("data", onData);
  out.push({ headers, compressedHex: Buffer.concat(chunks).toString("hex") });
}
console.log(
  JSON.stringify(
    { generator: `node ${process.version} zlib ${process.versions.zlib}`, blocks: out },
    null,
    2,
  ),
);
