/**
 * The conformance tally's counting (tally.ts): a listed test counts when every block named
 * exactly like it passed; failed, skipped, absent or differently named ones do not; the lines
 * name each profile with N of its M tests. Needs no API server.
 */
import { describe, expect, it } from 'vitest';
import { GATEWAY_GRPC_CORE, GATEWAY_HTTP_CORE, GATEWAY_HTTP_EXTENDED, PROFILES } from './profiles.ts';
import { tallyLines } from './tally.ts';

describe('tallyLines', () => {
  it('prints one line per profile, N of M, nothing run counting 0', () => {
    expect(tallyLines([])).toEqual([
      `GATEWAY-HTTP core: 0 of ${GATEWAY_HTTP_CORE.tests.length}`,
      `GATEWAY-GRPC core: 0 of ${GATEWAY_GRPC_CORE.tests.length}`,
      `GATEWAY-HTTP extended: 0 of ${GATEWAY_HTTP_EXTENDED.tests.length}`,
    ]);
  });

  it('counts a listed name that passed; a failed one, a twin that did not pass, or a near name do not count', () => {
    const lines = tallyLines([
      { name: 'HTTPRouteSimpleSameNamespace', passed: true },
      { name: 'HTTPRouteCrossNamespace', passed: false },
      { name: 'HTTPRouteWeight', passed: true },
      { name: 'HTTPRouteWeight', passed: false },
      { name: 'httproutematching', passed: true },
      { name: 'HTTPRouteMatching ', passed: true },
      { name: 'GRPCRouteWeight', passed: true },
      { name: 'HTTPRouteCORS', passed: true },
    ]);
    expect(lines).toEqual([
      `GATEWAY-HTTP core: 1 of ${GATEWAY_HTTP_CORE.tests.length}`,
      `GATEWAY-GRPC core: 1 of ${GATEWAY_GRPC_CORE.tests.length}`,
      `GATEWAY-HTTP extended: 1 of ${GATEWAY_HTTP_EXTENDED.tests.length}`,
    ]);
  });

  it("the profiles list issue 25's tests, each once", () => {
    expect(PROFILES.map((p) => p.tests.length)).toEqual([37, 4, 26]);
    const all = PROFILES.flatMap((p) => p.tests);
    expect(new Set(all).size).toBe(all.length);
  });
});
