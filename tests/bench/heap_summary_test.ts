import assert from "node:assert/strict";
import {
  compareHeaps,
  type HeapSnapshot,
  summarizeFields,
  summarizeHeap,
} from "../../bench/tools/heap_summary.ts";

/**
 * A snapshot in V8's format: nodes `[type, name, id, self_size, edge_count]`, edges
 * `[type, name_or_index, to_node]` with `to_node` an index into `nodes`.
 */
function snapshot(
  nodes: [string, string, number][],
  edges: [number, number, "property" | "weak", string?][],
): HeapSnapshot {
  const types = ["hidden", "object", "closure", "string"];
  const edgeTypes = ["property", "weak"];
  const strings = [...new Set([...nodes.map((n) => n[1]), ...edges.map((e) => e[3] ?? "")])];
  const flatNodes = nodes.flatMap(([type, name, size], i) => [
    types.indexOf(type),
    strings.indexOf(name),
    i + 1,
    size,
    edges.filter(([from]) => from === i).length,
  ]);
  const flatEdges = nodes.flatMap((_, i) =>
    edges.filter(([from]) => from === i).flatMap(([, to, type, name]) => [
      edgeTypes.indexOf(type),
      strings.indexOf(name ?? ""),
      to * 5,
    ])
  );
  return {
    snapshot: {
      meta: {
        node_fields: ["type", "name", "id", "self_size", "edge_count"],
        node_types: [types],
        edge_fields: ["type", "name_or_index", "to_node"],
        edge_types: [edgeTypes],
      },
    },
    nodes: flatNodes,
    edges: flatEdges,
    strings,
  };
}

Deno.test("retained size counts what only an object keeps alive, once per group", () => {
  // root -> Map(10) -> Record(100) -> Record(100) -> string(1000)
  //      -> Shared(5) <- Map                 (Shared is kept by root and Map: not Map's alone)
  // Map -weak-> Cached(7)                   (weak edges keep nothing alive)
  const snap = snapshot(
    [
      ["hidden", "root", 0],
      ["object", "Map", 10],
      ["object", "Record", 100],
      ["object", "Record", 100],
      ["string", "s", 1000],
      ["object", "Shared", 5],
      ["object", "Cached", 7],
    ],
    [
      [0, 1, "property"],
      [0, 5, "property"],
      [0, 6, "property"],
      [1, 2, "property"],
      [2, 3, "property"],
      [3, 4, "property"],
      [1, 5, "property"],
      [1, 6, "weak"],
    ],
  );
  const groups = new Map(summarizeHeap(snap).map((g) => [g.name, g]));
  assert.deepEqual(groups.get("Map"), {
    name: "Map",
    count: 1,
    selfSize: 10,
    retainedSize: 1210,
  });
  // The inner Record is inside the outer one: counted once, not 1,200 + 1,100.
  assert.deepEqual(groups.get("Record"), {
    name: "Record",
    count: 2,
    selfSize: 200,
    retainedSize: 1200,
  });
  assert.equal(groups.get("Shared")?.retainedSize, 5);
  assert.equal(groups.get("Cached")?.retainedSize, 7);
  assert.equal(groups.get("(string)")?.count, 1);
});

Deno.test("the field summary names the field that holds the memory, over all its owners", () => {
  // Two providers each hold a table of records through `#pods`; both records point at one shared
  // string, which neither holds alone.
  const snap = snapshot(
    [
      ["hidden", "root", 0],
      ["object", "Provider", 10],
      ["object", "Provider", 10],
      ["object", "Table", 20],
      ["object", "Table", 20],
      ["object", "Record", 300],
      ["object", "Record", 400],
      ["string", "shared", 50],
    ],
    [
      [0, 1, "property", "a"],
      [0, 2, "property", "b"],
      [1, 3, "property", "#pods"],
      [2, 4, "property", "#pods"],
      [3, 5, "property", "x"],
      [4, 6, "property", "y"],
      [5, 7, "property", "name"],
      [6, 7, "property", "name"],
    ],
  );
  const fields = summarizeFields(snap);
  assert.deepEqual(fields[0], { name: "Provider.#pods", count: 2, retainedSize: 740 });
  assert.deepEqual(fields.find((f) => f.name === "Table.y"), {
    name: "Table.y",
    count: 1,
    retainedSize: 400,
  });
  assert.equal(fields.find((f) => f.name === "Record.name"), undefined);
});

Deno.test("a comparison lists the groups that grew most first", () => {
  const before = [
    { name: "A", count: 1, selfSize: 1, retainedSize: 100 },
    { name: "B", count: 5, selfSize: 5, retainedSize: 500 },
  ];
  const after = [
    { name: "A", count: 1, selfSize: 1, retainedSize: 100 },
    { name: "B", count: 50, selfSize: 50, retainedSize: 5000 },
    { name: "C", count: 2, selfSize: 2, retainedSize: 200 },
  ];
  const rows = compareHeaps(before, after, 2);
  assert.deepEqual(rows.map((r) => r.name), ["B", "C"]);
  assert.deepEqual(rows[0].count, [5, 50]);
  assert.deepEqual(rows[1].retainedSize, [0, 200]);
});
