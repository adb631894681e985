/**
 * Reads a V8 heap snapshot (`.heapsnapshot`, the JSON the inspector streams) into a table per
 * constructor: object count, self size and retained size, as Chrome DevTools' Summary view
 * groups them (objects by constructor name, closures by function name, the rest by node type),
 * and compares two tables. Retained sizes come from the dominator tree (Cooper, Harvey and
 * Kennedy's iterative algorithm over strong edges); a group's retained size counts each object
 * whose dominators hold no other object of the same group, so nested members are not counted
 * twice.
 * @module
 */

/** One group of a heap snapshot. */
export interface HeapGroup {
  name: string;
  count: number;
  selfSize: number;
  retainedSize: number;
}

/** The parts of a heap snapshot this reads. */
export interface HeapSnapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[], ...unknown[]];
      edge_fields: string[];
      edge_types: [string[], ...unknown[]];
    };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** The group a node belongs to: `Foo` for objects, `Foo()` for closures, `(type)` else. */
function groupName(type: string, name: string): string {
  // V8 names some internal objects by their address ("system / Context / scope @4521"), which
  // differs between snapshots; the group is the same.
  if (type === "object" || type === "native") return name.replace(/ @\d+$/, "");
  if (type === "closure") return `${name || "(anonymous)"}()`;
  return `(${type})`;
}

/** The dominator tree of a snapshot's strong edges, with each node's retained size. */
interface Dominators {
  /** Node count; node `v`'s fields start at `v * nfc` in `snap.nodes`. */
  n: number;
  nfc: number;
  efc: number;
  /** Node `v`'s edges are `edges[firstEdge[v] .. firstEdge[v + 1])`, `efc` numbers each. */
  firstEdge: Uint32Array;
  /** Reachable nodes in depth-first post order (the root, node 0, last). */
  order: number[];
  /** Immediate dominator of each reachable node (-1 if unreachable). */
  idom: Int32Array;
  retained: Float64Array;
  field: (name: string) => number;
}

function dominators(snap: HeapSnapshot): Dominators {
  const { meta } = snap.snapshot;
  const nfc = meta.node_fields.length;
  const efc = meta.edge_fields.length;
  const [selfOf, edgeCountOf] = ["self_size", "edge_count"].map((f) => meta.node_fields.indexOf(f));
  const [edgeTypeOf, toOf] = ["type", "to_node"].map((f) => meta.edge_fields.indexOf(f));
  const weak = meta.edge_types[0].indexOf("weak");
  const { nodes, edges } = snap;
  const n = nodes.length / nfc;
  const firstEdge = new Uint32Array(n + 1);
  for (let i = 0; i < n; i++) firstEdge[i + 1] = firstEdge[i] + nodes[i * nfc + edgeCountOf] * efc;
  const strong = (e: number) => edges[e + edgeTypeOf] !== weak;

  // Depth-first post order from the root (node 0) over strong edges.
  const post = new Int32Array(n).fill(-1);
  const order: number[] = [];
  const cursor = new Uint32Array(n);
  const seen = new Uint8Array(n);
  const stack = [0];
  seen[0] = 1;
  cursor[0] = firstEdge[0];
  while (stack.length) {
    const v = stack[stack.length - 1];
    if (cursor[v] < firstEdge[v + 1]) {
      const e = cursor[v];
      cursor[v] += efc;
      const w = edges[e + toOf] / nfc;
      if (strong(e) && !seen[w]) {
        seen[w] = 1;
        cursor[w] = firstEdge[w];
        stack.push(w);
      }
    } else {
      post[v] = order.length;
      order.push(v);
      stack.pop();
    }
  }

  // Predecessors of reachable nodes, as compressed rows.
  const predCount = new Uint32Array(n + 1);
  for (let v = 0; v < n; v++) {
    if (post[v] < 0) continue;
    for (let e = firstEdge[v]; e < firstEdge[v + 1]; e += efc) {
      if (strong(e)) predCount[edges[e + toOf] / nfc + 1]++;
    }
  }
  for (let v = 0; v < n; v++) predCount[v + 1] += predCount[v];
  const preds = new Uint32Array(predCount[n]);
  const fill = predCount.slice(0, n);
  for (let v = 0; v < n; v++) {
    if (post[v] < 0) continue;
    for (let e = firstEdge[v]; e < firstEdge[v + 1]; e += efc) {
      if (strong(e)) preds[fill[edges[e + toOf] / nfc]++] = v;
    }
  }

  // Immediate dominators, by post-order index.
  const idom = new Int32Array(n).fill(-1);
  idom[0] = 0;
  const intersect = (a: number, b: number) => {
    while (a !== b) {
      while (post[a] < post[b]) a = idom[a];
      while (post[b] < post[a]) b = idom[b];
    }
    return a;
  };
  for (let changed = true; changed;) {
    changed = false;
    for (let i = order.length - 2; i >= 0; i--) {
      const v = order[i];
      let best = -1;
      for (let p = predCount[v]; p < predCount[v + 1]; p++) {
        const u = preds[p];
        if (idom[u] < 0) continue;
        best = best < 0 ? u : intersect(u, best);
      }
      if (best >= 0 && idom[v] !== best) {
        idom[v] = best;
        changed = true;
      }
    }
  }

  // Retained sizes: children finish before their dominator in post order.
  const retained = new Float64Array(n);
  for (const v of order) retained[v] += nodes[v * nfc + selfOf];
  for (const v of order) if (v !== 0) retained[idom[v]] += retained[v];
  return {
    n,
    nfc,
    efc,
    firstEdge,
    order,
    idom,
    retained,
    field: (f) => meta.node_fields.indexOf(f),
  };
}

/** Summarizes a snapshot per group, largest retained size first. */
export function summarizeHeap(snap: HeapSnapshot): HeapGroup[] {
  const { n, nfc, order, idom, retained, field } = dominators(snap);
  const { nodes, strings } = snap;
  const [typeOf, nameOf, selfOf] = ["type", "name", "self_size"].map(field);
  const meta = snap.snapshot.meta;
  const groupIds = new Map<string, number>();
  const groups: HeapGroup[] = [];
  const groupOf = new Int32Array(n);
  for (const v of order) {
    const name = groupName(
      meta.node_types[0][nodes[v * nfc + typeOf]],
      strings[nodes[v * nfc + nameOf]],
    );
    let id = groupIds.get(name);
    if (id === undefined) {
      id = groups.length;
      groupIds.set(name, id);
      groups.push({ name, count: 0, selfSize: 0, retainedSize: 0 });
    }
    groupOf[v] = id;
    groups[id].count++;
    groups[id].selfSize += nodes[v * nfc + selfOf];
  }

  // Walk the dominator tree, counting each group's outermost members only.
  const childCount = new Uint32Array(n + 1);
  for (const v of order) if (v !== 0) childCount[idom[v] + 1]++;
  for (let v = 0; v < n; v++) childCount[v + 1] += childCount[v];
  const children = new Uint32Array(childCount[n]);
  const at = childCount.slice(0, n);
  for (const v of order) if (v !== 0) children[at[idom[v]]++] = v;
  const depth = new Uint32Array(groups.length);
  const walk: number[] = [0];
  const next = childCount.slice(0, n);
  if (depth[groupOf[0]]++ === 0) groups[groupOf[0]].retainedSize += retained[0];
  while (walk.length) {
    const v = walk[walk.length - 1];
    if (next[v] < childCount[v + 1]) {
      const c = children[next[v]++];
      if (depth[groupOf[c]]++ === 0) groups[groupOf[c]].retainedSize += retained[c];
      walk.push(c);
    } else {
      depth[groupOf[v]]--;
      walk.pop();
    }
  }
  return groups.sort((a, b) => b.retainedSize - a.retainedSize);
}

/** What one field of one kind of object holds alone, over all objects of that kind. */
export interface HeapField {
  /** `Owner.field`: the owner's group and the edge's name (`MockProvider.#pods`). */
  name: string;
  /** Owners holding something through that field alone. */
  count: number;
  /** The retained size of what they hold: dominated by the owner through that field. */
  retainedSize: number;
}

/**
 * Which fields hold the memory: for each object and each named edge to something it alone holds
 * (the object is that thing's immediate dominator), adds the thing's retained size to
 * `Owner.edge`. A `Map` held in a private field reports as `Owner.#field`; what two owners share
 * is counted at neither. Largest first.
 */
export function summarizeFields(snap: HeapSnapshot, top = 40): HeapField[] {
  const { nfc, efc, firstEdge, order, idom, retained, field } = dominators(snap);
  const { nodes, edges, strings } = snap;
  const meta = snap.snapshot.meta;
  const [typeOf, nameOf] = ["type", "name"].map(field);
  const [edgeTypeOf, nameOrIndexOf, toOf] = ["type", "name_or_index", "to_node"]
    .map((f) => meta.edge_fields.indexOf(f));
  const edgeTypes = meta.edge_types[0];
  const named = new Set(
    ["property", "internal", "context", "shortcut"].map((t) => edgeTypes.indexOf(t)),
  );
  const byName = new Map<string, HeapField>();
  for (const v of order) {
    const owner = groupName(
      meta.node_types[0][nodes[v * nfc + typeOf]],
      strings[nodes[v * nfc + nameOf]],
    );
    for (let e = firstEdge[v]; e < firstEdge[v + 1]; e += efc) {
      if (!named.has(edges[e + edgeTypeOf])) continue;
      const w = edges[e + toOf] / nfc;
      if (idom[w] !== v || w === v) continue;
      const name = `${owner}.${strings[edges[e + nameOrIndexOf]]}`;
      let row = byName.get(name);
      if (!row) byName.set(name, row = { name, count: 0, retainedSize: 0 });
      row.count++;
      row.retainedSize += retained[w];
    }
  }
  return [...byName.values()].sort((a, b) => b.retainedSize - a.retainedSize).slice(0, top);
}

/** One group's change between two snapshots. */
export interface HeapDelta {
  name: string;
  count: [number, number];
  retainedSize: [number, number];
}

/** The groups whose count or retained size changed most from `before` to `after`. */
export function compareHeaps(before: HeapGroup[], after: HeapGroup[], top = 25): HeapDelta[] {
  const byName = new Map(before.map((g) => [g.name, g]));
  const names = new Set([...before, ...after].map((g) => g.name));
  const afterByName = new Map(after.map((g) => [g.name, g]));
  const rows = [...names].map((name) => {
    const a = byName.get(name);
    const b = afterByName.get(name);
    return {
      name,
      count: [a?.count ?? 0, b?.count ?? 0] as [number, number],
      retainedSize: [a?.retainedSize ?? 0, b?.retainedSize ?? 0] as [number, number],
    };
  });
  const growth = (d: HeapDelta) => Math.abs(d.retainedSize[1] - d.retainedSize[0]);
  return rows.sort((x, y) => growth(y) - growth(x)).slice(0, top);
}
