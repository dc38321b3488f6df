/** Which generation each pod runs → Programmed (controller/status/generation-ledger.ts). */
import { describe, expect, it } from 'vitest';
import { build } from '../../controller/build.ts';
import { resourceSetFrom } from '../../controller/source/resource-set.ts';
import { GenerationLedger } from '../../controller/status/generation-ledger.ts';
import { addHeaders, gatewayRoute } from '../helpers/fixtures.ts';

const KEY = 'GatewayRoute/default/web';
const web = (generation: number, path = '/web') =>
  gatewayRoute('web').url('http://api:80').route('all', [path]).generation(generation).build();
const pod = (name: string, hash: string | null) => ({ name, hash, rejected: null });
/** A build as the runner hands it to the ledger: hash and status (the table goes to the publisher). */
const built = (resources: ReturnType<typeof resourceSetFrom>) => {
  const r = build(resources);
  return { hash: r.snapshot.hash, status: r.status };
};
const programmed = (ledger: GenerationLedger, r: ReturnType<typeof built>, pods: ReturnType<typeof pod>[]) =>
  ledger.statuses(r, pods).find((s) => s.key === KEY)!.conditions[2];

describe('GenerationLedger', () => {
  it('Programmed is True once every pod runs a hash holding this generation', () => {
    const ledger = new GenerationLedger();
    const v1 = built(resourceSetFrom([web(1)]));
    const v2 = built(resourceSetFrom([web(2, '/web2')]));
    ledger.record(v1);
    ledger.record(v2);
    const h1 = v1.hash;
    const h2 = v2.hash;
    expect(programmed(ledger, v2, [pod('a', h2), pod('b', h2)])).toMatchObject({
      type: 'Programmed',
      status: 'True',
      observedGeneration: 2,
      message: 'Running on 2 of 2 pods.',
    });
    expect(programmed(ledger, v2, [pod('a', h2), pod('b', h1)])).toMatchObject({
      status: 'False',
      reason: 'Pending',
      message: 'Running on 1 of 2 pods.',
    });
    expect(programmed(ledger, v2, [pod('a', h2), pod('b', null)])).toMatchObject({ reason: 'Pending' });
  });

  it('a snapshot not pushed (too large): what the pods run stays True, what changed says why it waits', () => {
    const other = (g: number) =>
      gatewayRoute('other').url('http://api:80').route('all', ['/other']).generation(g).build();
    const ledger = new GenerationLedger();
    const v1 = built(resourceSetFrom([web(1), other(1)]));
    const v2 = built(resourceSetFrom([web(2, '/web2'), other(1)]));
    ledger.record(v1);
    ledger.record(v2);
    const why = 'the snapshot is 40.2 MiB, over the 32.0 MiB a data plane accepts';
    const pods = [pod('a', v1.hash), pod('b', v1.hash)];
    const statuses = ledger.statuses({ ...v2, withheld: why }, pods);
    const of = (key: string) => statuses.find((s) => s.key === key)!.conditions[2];
    expect(of(KEY)).toMatchObject({
      status: 'False',
      reason: 'SnapshotTooLarge',
      message: `Running on 0 of 2 pods; not pushed: ${why}.`,
    });
    expect(of('GatewayRoute/default/other')).toMatchObject({ status: 'True', reason: 'Programmed' });
  });

  it('a hash built from several object sets stands for each of their generations', () => {
    // A GatewayPlugin no route uses leaves the table, and so the hash, alone.
    const ledger = new GenerationLedger();
    const a = built(resourceSetFrom([web(1)]));
    const b = built(resourceSetFrom([web(1), addHeaders('unused', ['x-a:1'])]));
    expect(b.hash).toBe(a.hash);
    ledger.record(a);
    ledger.record(b);
    expect([...ledger.generations.get(a.hash)!.keys()].sort()).toEqual(['GatewayPlugin/default/unused', KEY]);
    const pl = ledger.statuses(b, [pod('a', a.hash)]).find((s) => s.key === 'GatewayPlugin/default/unused');
    expect(pl?.conditions[2]).toMatchObject({ status: 'True' });
  });

  it('records only objects whose conditions are all True', () => {
    const ledger = new GenerationLedger();
    const broken = gatewayRoute('bad').url('http://x').plugins('missing').route('r', ['/bad']).build();
    const r = built(resourceSetFrom([web(1), broken, addHeaders('p', ['x-p:1'])]));
    ledger.record(r);
    expect([...ledger.generations.get(r.hash)!.keys()].sort()).toEqual(['GatewayPlugin/default/p', KEY]);
    const bad = ledger.statuses(r, [pod('a', r.hash)]).find((s) => s.key === 'GatewayRoute/default/bad')!;
    expect(bad.conditions.map((c) => [c.type, c.status])).toEqual([
      ['Accepted', 'True'],
      ['ResolvedRefs', 'False'],
      ['Programmed', 'False'],
    ]);
  });

  it('keeps only the newest hashes', () => {
    const ledger = new GenerationLedger(2);
    const builds = [1, 2, 3].map((g) => built(resourceSetFrom([web(g, `/v${g}`)])));
    for (const b of builds) ledger.record(b);
    expect([...ledger.generations.keys()]).toEqual([builds[1].hash, builds[2].hash]);
    ledger.record(builds[1]); // recorded again: newest again
    ledger.record(built(resourceSetFrom([web(4, '/v4')])));
    expect(ledger.generations.has(builds[1].hash)).toBe(true);
    expect(ledger.generations.has(builds[2].hash)).toBe(false);
  });
});
