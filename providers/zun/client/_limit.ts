/**
 * `items` mapped through `fn`, at most `limit` calls at once, in order: zun-api runs one worker
 * by default, and a read per pod (a live status, stats) must not queue a hundred calls at once.
 * @module
 */

/** The results of `fn` over `items`, in their order, with at most `limit` calls in flight. */
export async function mapLimited<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
