/**
 * Comments in the shipped files that quote a measured figure quote the latest report's: the
 * peak RSS of one node with 10,000 pods in bench/reports/RESULTS.md (what `deno task bench`
 * writes), and the systemd unit's MemoryMax= stays above it.
 */
import assert from "node:assert/strict";

const root = new URL("../../", import.meta.url).pathname;

/** vkubelet's peak RSS (MiB) at N = 10,000 in the committed report. */
async function reportedPeakMiB(): Promise<number> {
  const report = await Deno.readTextFile(`${root}bench/reports/RESULTS.md`);
  const section = report.split(/^### /m).find((part) => part.startsWith("N = 10,000"));
  assert.ok(section, "RESULTS.md has a section for N = 10,000");
  const row = section.split("\n").find((line) => line.includes("peak RSS over the run (MiB)"));
  assert.ok(row, "RESULTS.md's N = 10,000 section has a peak RSS row");
  const vkubelet = Number(row.split("|")[2].trim());
  assert.ok(vkubelet > 0, row);
  return vkubelet;
}

Deno.test("the systemd unit's MemoryMax= is above the reported peak RSS, and its comment quotes it", async () => {
  const peak = await reportedPeakMiB();
  const unit = await Deno.readTextFile(`${root}deploy/systemd/vkubelet.service`);
  const max = unit.match(/^MemoryMax=(\d+)M$/m);
  assert.ok(max, "MemoryMax= in MiB");
  assert.ok(Number(max[1]) > peak, `MemoryMax=${max[1]}M against a peak of ${peak} MiB`);
  const quoted = [...unit.matchAll(/peak RSS in the latest benchmark report was (\d+) MiB/g)];
  assert.deepEqual(quoted.map((m) => Number(m[1])), [peak]);
});

Deno.test("the chart's memory limit comment quotes the reported peak RSS at 10,000 pods", async () => {
  const peak = await reportedPeakMiB();
  // deploy/kubernetes/ is rendered from the chart; the figure is next to the limit it explains.
  const deployment = await Deno.readTextFile(`${root}deploy/helm/vkubelet/values.yaml`);
  const quoted = [...deployment.matchAll(/Peak RSS measured at 10,000 pods .*?: (\d+) MiB/g)];
  assert.deepEqual(quoted.map((m) => Number(m[1])), [peak]);
});
