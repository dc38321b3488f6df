/** The pure parts of status: Programmed from what pods run, and when a status needs writing. */
import { describe, expect, it } from 'vitest';
import type { ObjectStatus } from '../../controller/build.ts';
import { referencedSecrets } from '../../controller/source/relevance.ts';
import { ownerOf, programmed, type PodView } from '../../controller/status/conditions.ts';
import { eventType, transitions } from '../../controller/status/events.ts';
import { StatusWriter } from '../../controller/status/status-writer.ts';
import type { GatewayPlugin } from '../../controller/api/index.ts';

const KEY = 'GatewayRoute/default/charges';
const ok = (generation = 2): ObjectStatus => ({
  observedGeneration: generation,
  conditions: [
    {
      type: 'Accepted',
      status: 'True',
      observedGeneration: generation,
      reason: 'Accepted',
      message: 'The object is valid.',
    },
    {
      type: 'ResolvedRefs',
      status: 'True',
      observedGeneration: generation,
      reason: 'ResolvedRefs',
      message: 'All references resolved.',
    },
  ],
});
const gens = new Map([
  ['old', new Map([[KEY, 1]])],
  ['new', new Map([[KEY, 2]])],
]);
const pod = (name: string, hash: string | null, rejected: PodView['rejected'] = null): PodView => ({
  name,
  hash,
  rejected,
});

describe('programmed', () => {
  it('is True only when every pod runs a snapshot with this generation', () => {
    const pods = [pod('a', 'new'), pod('b', 'new'), pod('c', 'new')];
    expect(programmed(KEY, ok(), 'new', pods, gens)).toMatchObject({
      status: 'True',
      message: 'Running on 3 of 3 pods.',
    });
  });
  it('counts pods still on an older generation, or unknown, as pending', () => {
    const pods = [pod('a', 'new'), pod('b', 'old'), pod('c', null)];
    expect(programmed(KEY, ok(), 'new', pods, gens)).toMatchObject({
      status: 'False',
      reason: 'Pending',
      message: 'Running on 1 of 3 pods.',
    });
  });
  it('a pod that refused the snapshot names the fields of this object', () => {
    const errors = [
      { id: 'route/default/charges/create/0', field: 'plugins[0].config.ttl', message: 'bad' },
      { id: 'route/default/other/x/0', field: 'match', message: 'not mine' },
    ];
    const c = programmed(KEY, ok(), 'new', [pod('a', 'old', { hash: 'new', errors }), pod('b', 'new')], gens);
    expect(c).toMatchObject({ status: 'False', reason: 'Rejected' });
    expect(c.message).toContain('plugins[0].config.ttl');
    expect(c.message).not.toContain('not mine');
  });
  it('is False when the object is not valid, or when there is no data plane', () => {
    const bad: ObjectStatus = {
      ...ok(),
      conditions: [ok().conditions[0], { ...ok().conditions[1], status: 'False', reason: 'PluginNotFound' }],
    };
    expect(programmed(KEY, bad, 'new', [pod('a', 'new')], gens)).toMatchObject({
      status: 'False',
      reason: 'Invalid',
    });
    expect(programmed(KEY, ok(), 'new', [], gens)).toMatchObject({ status: 'False', reason: 'NoDataPlane' });
  });
  it('names the pods that fail to answer and why; a pod failing for long makes it a fault (PodFailing)', () => {
    const down = { ...pod('10.0.0.5', 'old'), error: 'connection refused' };
    expect(programmed(KEY, ok(), 'new', [pod('a', 'new'), down], gens)).toMatchObject({
      status: 'False',
      reason: 'Pending',
      message: 'Running on 1 of 2 pods; 10.0.0.5: connection refused.',
    });
    expect(
      programmed(KEY, ok(), 'new', [pod('a', 'new'), { ...down, failingLong: true }], gens),
    ).toMatchObject({ status: 'False', reason: 'PodFailing' });
  });
  it('a failing pod that acknowledged this generation still counts: unchanged objects are not rewritten', () => {
    const down = { ...pod('10.0.0.5', 'new'), error: 'connection refused' };
    expect(programmed(KEY, ok(), 'new', [pod('a', 'new'), down], gens)).toMatchObject({
      status: 'True',
      message: 'Running on 2 of 2 pods.',
    });
  });
  it('a new leader adopts a written Programmed=True for this generation while it cannot reach a pod', () => {
    const written = { status: 'True', observedGeneration: 2, message: 'Running on 2 of 2 pods.' };
    const unreachable = { ...pod('b', null), error: 'connection refused' };
    expect(programmed(KEY, ok(), 'new', [pod('a', 'new'), unreachable], gens, written)).toMatchObject({
      status: 'True',
      reason: 'Programmed',
      message: 'Running on 2 of 2 pods.',
    });
    // Not for another generation, nor when a known pod runs an older one.
    expect(programmed(KEY, ok(3), 'new', [pod('a', 'new'), unreachable], gens, written).status).toBe('False');
    expect(programmed(KEY, ok(), 'new', [pod('a', 'old'), unreachable], gens, written).status).toBe('False');
    expect(programmed(KEY, ok(), 'new', [pod('a', 'new'), unreachable], gens).status).toBe('False');
  });
  it('maps table ids to their objects', () => {
    expect(ownerOf('route/ns/name/r/0')).toBe('GatewayRoute/ns/name');
    expect(ownerOf('plugin/ns/p')).toBe('GatewayPlugin/ns/p');
    expect(ownerOf('upstream/ns/svc/abcde')).toBeNull();
  });
});

describe('StatusWriter.next', () => {
  const now = new Date('2026-01-02T03:04:05Z');
  const wanted = { key: KEY, observedGeneration: 2, conditions: ok().conditions };
  it('writes a status never written, stamping each condition', () => {
    const s = StatusWriter.next({}, wanted, now);
    expect(s?.conditions?.map((c) => c.lastTransitionTime)).toEqual([now.toISOString(), now.toISOString()]);
  });
  it('writes nothing when the object already shows it', () => {
    const current = StatusWriter.next({}, wanted, new Date(0))!;
    expect(StatusWriter.next({ status: current }, wanted, now)).toBeNull();
  });
  it('keeps lastTransitionTime while a condition keeps its status; moves it when the status flips', () => {
    const first = StatusWriter.next({}, wanted, new Date(0))!;
    const msg = {
      ...wanted,
      conditions: [{ ...wanted.conditions[0], message: 'other words' }, wanted.conditions[1]],
    };
    const second = StatusWriter.next({ status: first }, msg, now)!;
    expect(second.conditions?.[0].lastTransitionTime).toBe(new Date(0).toISOString());
    const flip = {
      ...wanted,
      conditions: [{ ...wanted.conditions[0], status: 'False' as const }, wanted.conditions[1]],
    };
    expect(StatusWriter.next({ status: first }, flip, now)?.conditions?.[0].lastTransitionTime).toBe(
      now.toISOString(),
    );
  });
  it('writes when only observedGeneration moved', () => {
    const first = StatusWriter.next({}, wanted, new Date(0))!;
    expect(StatusWriter.next({ status: first }, { ...wanted, observedGeneration: 3 }, now)).not.toBeNull();
  });
});

describe('referencedSecrets', () => {
  it('finds every secretKeyRef in plugin configs, in the plugin namespace', () => {
    const p = (ns: string, config: unknown, field = 'keyAuth') =>
      ({
        apiVersion: 'sluice.dev/v1alpha1',
        kind: 'GatewayPlugin',
        metadata: { name: 'p', namespace: ns },
        spec: { plugin: 'key-auth', [field]: config },
      }) as unknown as GatewayPlugin;
    const refs = referencedSecrets([
      p('a', {
        keys: [{ secretKeyRef: { name: 's1', key: 'k' } }],
        nested: { deep: { secretKeyRef: { name: 's2', key: 'k' } } },
      }),
      p('b', { secretKeyRef: { name: 's1', key: 'k' } }),
      p('c', { add: { headers: ['X:1'] } }),
      p('d', { secretKeyRef: { name: 's3', key: 'k' } }, 'config'), // the deprecated untyped field
    ]);
    expect([...refs].sort()).toEqual(['a/s1', 'a/s2', 'b/s1', 'd/s3']);
  });
});

describe('transitions (Kubernetes Events)', () => {
  const c = (type: string, status: 'True' | 'False') => ({
    type,
    status,
    reason: `${type}${status}`,
    message: 'm',
    lastTransitionTime: 'x',
  });
  it('reports a condition that changes status, or first appears False', () => {
    expect(
      transitions(undefined, [c('Accepted', 'True'), c('ResolvedRefs', 'False')]).map((t) => t.type),
    ).toEqual(['ResolvedRefs']);
    expect(
      transitions(
        [c('Accepted', 'True'), c('Programmed', 'False')],
        [c('Accepted', 'True'), c('Programmed', 'True')],
      ),
    ).toEqual([{ type: 'Programmed', status: 'True', reason: 'ProgrammedTrue', message: 'm' }]);
    expect(transitions([c('Accepted', 'True')], [c('Accepted', 'True')])).toEqual([]);
  });
  it('reports a change of reason under the same status (Pending → PodFailing)', () => {
    const p = (reason: string) => ({ ...c('Programmed', 'False'), reason });
    expect(transitions([p('Pending')], [p('PodFailing')]).map((t) => t.reason)).toEqual(['PodFailing']);
    expect(transitions([p('Pending')], [p('Pending')])).toEqual([]);
  });
  it('Warning only for faults: waiting on pods (Pending) and True are Normal', () => {
    const t = (type: string, status: string, reason: string) => ({ type, status, reason, message: '' });
    expect(eventType(t('Programmed', 'False', 'Pending'))).toBe('Normal');
    expect(eventType(t('Programmed', 'True', 'Programmed'))).toBe('Normal');
    expect(eventType(t('Programmed', 'False', 'PodFailing'))).toBe('Warning');
    expect(eventType(t('Programmed', 'False', 'Rejected'))).toBe('Warning');
    expect(eventType(t('ResolvedRefs', 'False', 'SecretNotFound'))).toBe('Warning');
    expect(eventType(t('Accepted', 'False', 'Invalid'))).toBe('Warning');
  });
  it('Conflicted has the opposite polarity: True is the fault, False (NoConflicts) is no Event', () => {
    const t = (status: 'True' | 'False', reason: string) => ({
      type: 'Conflicted',
      status,
      reason,
      message: '',
    });
    expect(transitions(undefined, [{ ...t('False', 'NoConflicts'), lastTransitionTime: 'x' }])).toEqual([]);
    expect(
      transitions(undefined, [{ ...t('True', 'HostnameConflict'), lastTransitionTime: 'x' }], 'listener a'),
    ).toEqual([{ type: 'Conflicted', status: 'True', reason: 'HostnameConflict', message: 'listener a: ' }]);
    expect(eventType(t('True', 'HostnameConflict'))).toBe('Warning');
    expect(eventType(t('False', 'NoConflicts'))).toBe('Normal');
  });
});
