/** What an informer keeps of each object: the same from a list as from a watch, and nothing unread. */
import { expect, it } from 'vitest';
import { admit } from '../../controller/source/informers.ts';

it('names the kind and apiVersion of a list item from the list type (kube-apiserver leaves them out)', () => {
  const item = { metadata: { name: 's', namespace: 'ns' } };
  expect(admit(item, { kind: 'SecretList', apiVersion: 'v1' })).toMatchObject({
    kind: 'Secret',
    apiVersion: 'v1',
  });
  const slice = admit(
    { metadata: { name: 'e' } },
    { kind: 'EndpointSliceList', apiVersion: 'discovery.k8s.io/v1' },
  );
  expect(slice).toMatchObject({ kind: 'EndpointSlice', apiVersion: 'discovery.k8s.io/v1' });
  // A watch event's object keeps what it says.
  expect(admit({ kind: 'Service', apiVersion: 'v1', metadata: { name: 'x' } })).toMatchObject({
    kind: 'Service',
  });
});

it('drops managedFields and the last-applied-configuration annotation, keeps every other annotation', () => {
  const obj = {
    metadata: {
      name: 'r',
      managedFields: [{ manager: 'kubectl' }],
      annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{…}', team: 'shop' },
    },
  };
  expect(admit(obj, { kind: 'GatewayRouteList' }).metadata).toEqual({
    name: 'r',
    annotations: { team: 'shop' },
  });
  const only = {
    metadata: { name: 'r', annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}' } },
  };
  expect(admit(only).metadata).toEqual({ name: 'r' });
});
