/**
 * The one weighted choice of the proxy: a route's weighted backends and a canary's split both
 * pick with it, once per request (the request's tries and retries then stay on the upstream
 * picked).
 *
 * How: the golden-ratio sequence u(k) = frac(start + k·φ), each pick the option whose share of
 * [0, 1) holds u(k). Its points spread over [0, 1) as evenly as any sequence can (the three-gap
 * theorem): after n picks each option has its weighted share within a few requests, not within
 * the ±√n of a random draw, so a split is exact enough to test with few requests, like nginx's
 * smooth weighted round robin. Unlike that one, its state is a single number started at random:
 * every snapshot binds its routes afresh and every worker runs its own copy, and a round robin
 * restarted at the same place each time would give the first backends of its cycle more than
 * their share (a rarely picked backend none at all if snapshots came faster than its turn),
 * while a random start leaves each pick, taken alone, exactly weighted. A weight of 0 owns an
 * empty share: never picked.
 */

/** φ − 1: adding it mod 1 spreads points most evenly. */
const STEP = (Math.sqrt(5) - 1) / 2;

/**
 * A chooser among options of these weights (integers ≥ 0, at least one above 0): each call
 * returns the index of one. `start` in [0, 1): where the sequence begins (tests fix it).
 */
export function weightedChooser(weights: readonly number[], start = Math.random()): () => number {
  let total = 0;
  for (const w of weights) total += w;
  // The end of each option's share of [0, 1); the last positive one ends exactly at 1 (w/w).
  const ends = new Float64Array(weights.length);
  let sum = 0;
  for (let i = 0; i < weights.length; i++) {
    sum += weights[i];
    ends[i] = sum / total;
  }
  let u = start;
  return () => {
    u += STEP;
    if (u >= 1) u -= 1;
    let i = 0;
    while (u >= ends[i]) i++;
    return i;
  };
}
