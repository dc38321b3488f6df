/**
 * Bounds on a configuration document, declared once: a config file of standalone mode
 * (controller/source/file.ts) and a snapshot pushed to PUT /config (the admin server's body
 * limit; validateSnapshot's depth check). Parsers, validators and the canonical JSON of the
 * hash walk a document recursively: without a bound, a deep enough one ends in "Maximum call
 * stack size exceeded" somewhere else each time.
 */

/**
 * The largest config file or pushed snapshot body: 32 MiB. A 10,000-route snapshot is 7.6 MB of
 * JSON (bench/compile.ts) and its YAML source less; a data plane near 40,000 routes would
 * outgrow its memory limit before this. A 256 MiB body (the bound before) parses into more
 * than a 256Mi pod holds.
 */
export const CONFIG_MAX_BYTES = 32 * 1024 * 1024;

/**
 * The deepest nesting of mappings/sequences (objects/arrays) in a config document: 64 levels.
 * A snapshot nests 9 deep, a GatewayRoute's YAML about 8; the recursive walks downstream need
 * a few frames a level, far under Node's ~10,000-frame stack at 64.
 */
export const CONFIG_MAX_DEPTH = 64;

/**
 * yaml's own bound on alias expansion (its maxAliasCount, the "billion laughs" guard): 100, the
 * library's default, named here so it is a decision. It bounds the depth aliases add too: a
 * chain of anchors each holding the one before is refused as it expands.
 */
export const YAML_MAX_ALIAS_COUNT = 100;

/**
 * The path to a value nested deeper than `max` levels of objects/arrays in a parsed JSON value
 * (each part a key or an index), or null. Iterative: the value may be as deep as JSON.parse
 * (itself not recursive) allows. ~4 ms for a 10,000-route snapshot (validateSnapshot: ~57): the walk that says
 * whether is plain stacks; only a value found too deep is walked again to name the path.
 */
export function deeperThan(value: unknown, max: number): string[] | null {
  const values: unknown[] = [value];
  const depths: number[] = [0];
  while (values.length) {
    const v = values.pop();
    const depth = (depths.pop() as number) + 1;
    if (v === null || typeof v !== 'object') continue;
    if (depth > max) return pathBeyond(value, max);
    if (Array.isArray(v))
      for (const child of v) {
        values.push(child);
        depths.push(depth);
      }
    else
      for (const key in v) {
        values.push((v as Record<string, unknown>)[key]);
        depths.push(depth);
      }
  }
  return null;
}

/** The same walk keeping each value's parent and key, for the path to the first level beyond `max`. */
function pathBeyond(value: unknown, max: number): string[] {
  type Frame = { value: unknown; depth: number; parent: Frame | null; key: string };
  const stack: Frame[] = [{ value, depth: 1, parent: null, key: '' }];
  for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
    if (frame.value === null || typeof frame.value !== 'object') continue;
    if (frame.depth > max) {
      const path: string[] = [];
      for (let f: Frame | null = frame; f?.parent; f = f.parent) path.unshift(f.key);
      return path;
    }
    for (const [key, child] of Object.entries(frame.value))
      stack.push({ value: child, depth: frame.depth + 1, parent: frame, key });
  }
  return [];
}
