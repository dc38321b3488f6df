/**
 * The conformance tally printed at the end of a run that included test/gateway-api/: one line per
 * profile, "GATEWAY-HTTP core: N of M", N the profile's tests that passed, M how many it lists.
 * A conformance test passed when the run has a test or describe block in test/gateway-api/ named
 * exactly like it and every one so named passed (a describe block: all its tests, at least one);
 * one failed, skipped, todo or absent counts as not passed. A reporter added beside vitest's
 * default one (vitest.k8s.config.ts), so the default output stays as it is.
 */
import type { Reporter, TestCase, TestCollection, TestModule, TestSuite, Vitest } from 'vitest/node';
import { PROFILES, type Profile } from './profiles.ts';

/** A named block of the run and how it ended. */
export interface Outcome {
  name: string;
  passed: boolean;
}

export function tallyLines(outcomes: readonly Outcome[], profiles: readonly Profile[] = PROFILES): string[] {
  const byName = new Map<string, boolean>();
  for (const o of outcomes) byName.set(o.name, (byName.get(o.name) ?? true) && o.passed);
  return profiles.map((p) => {
    const passed = p.tests.filter((t) => byName.get(t) === true).length;
    return `${p.label}: ${passed} of ${p.tests.length}`;
  });
}

function suitePassed(s: TestSuite): boolean {
  const states = [...s.children.allTests()].map((t) => t.result().state);
  return s.state() !== 'failed' && states.length > 0 && states.every((st) => st === 'passed');
}

/** Every test and describe block under `c`, with whether it passed. */
export function outcomesOf(c: TestCollection): Outcome[] {
  return [...c].flatMap((t: TestCase | TestSuite) =>
    t.type === 'test'
      ? [{ name: t.name, passed: t.result().state === 'passed' }]
      : [{ name: t.name, passed: suitePassed(t) }, ...outcomesOf(t.children)],
  );
}

export class GatewayApiTally implements Reporter {
  #vitest?: Vitest;

  onInit(vitest: Vitest): void {
    this.#vitest = vitest;
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const ours = modules.filter((m) => m.relativeModuleId.startsWith('test/gateway-api/'));
    if (ours.length === 0) return;
    const log = (line: string) => (this.#vitest ? this.#vitest.logger.log(line) : console.log(line));
    for (const line of tallyLines(ours.flatMap((m) => outcomesOf(m.children)))) log(line);
  }
}
