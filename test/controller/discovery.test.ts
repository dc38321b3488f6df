/** Data-plane pods from EndpointSlices (controller/publish/discovery.ts). */
import { describe, expect, it } from 'vitest';
import { type EndpointSlice, endpointSlicesPath, podEndpoints } from '../../controller/publish/discovery.ts';

const slice = (ports: EndpointSlice['ports'], endpoints: EndpointSlice['endpoints']): EndpointSlice => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name: 'sluice-admin-x', namespace: 'gw' },
  ports,
  endpoints,
});

describe('podEndpoints', () => {
  it('lists every address on the admin port, not-ready pods included, terminating ones not', () => {
    const pods = podEndpoints([
      slice(
        [
          { name: 'proxy', port: 8080 },
          { name: 'admin', port: 9901 },
        ],
        [
          { addresses: ['10.0.0.1'], conditions: { ready: true }, targetRef: { name: 'sluice-a' } },
          { addresses: ['10.0.0.2'], conditions: { ready: false }, targetRef: { name: 'sluice-b' } },
          { addresses: ['10.0.0.3'], conditions: { ready: false, terminating: true } },
        ],
      ),
    ]);
    expect(pods).toEqual([
      { key: '10.0.0.1:9901', name: 'sluice-a', url: 'http://10.0.0.1:9901' },
      { key: '10.0.0.2:9901', name: 'sluice-b', url: 'http://10.0.0.2:9901' },
    ]);
  });

  it('takes the named port, else the first; a slice without ports gives nothing', () => {
    const endpoints = [{ addresses: ['10.0.0.1'] }];
    expect(podEndpoints([slice([{ name: 'x', port: 1 }], endpoints)])[0].url).toBe('http://10.0.0.1:1');
    expect(
      podEndpoints(
        [
          slice(
            [
              { name: 'x', port: 1 },
              { name: 'mgmt', port: 2 },
            ],
            endpoints,
          ),
        ],
        {
          portName: 'mgmt',
        },
      )[0].url,
    ).toBe('http://10.0.0.1:2');
    expect(podEndpoints([slice(null, endpoints), slice([], endpoints)])).toEqual([]);
  });

  it('a malformed slice adds nothing; a pod in two slices is listed once', () => {
    const endpoints = [{ addresses: ['10.0.0.1'] }];
    expect(
      podEndpoints([
        slice([{ name: 'admin', port: 0 }], endpoints),
        slice([{ name: 'admin', port: 70_000 }], endpoints),
        slice([{ name: 'admin', port: 9.5 }], endpoints),
        slice([{ name: 'admin' }], endpoints),
        slice([{ name: 'admin', port: 9901 }], null as unknown as EndpointSlice['endpoints']),
        slice([{ name: 'admin', port: 9901 }], [{ addresses: null as unknown as string[] }]),
      ]),
    ).toEqual([]);
    const twice = slice(
      [{ name: 'admin', port: 9901 }],
      [{ addresses: ['10.0.0.1'], targetRef: { name: 'a' } }],
    );
    expect(podEndpoints([twice, { ...twice, metadata: { name: 'other' } }])).toHaveLength(1);
  });

  it('brackets IPv6 addresses, names a pod without targetRef by its address, and uses the scheme', () => {
    const pods = podEndpoints(
      [slice([{ name: 'admin', port: 9901 }], [{ addresses: ['fd00::1'] }, { addresses: [] }])],
      { scheme: 'https' },
    );
    expect(pods).toEqual([{ key: '[fd00::1]:9901', name: '[fd00::1]:9901', url: 'https://[fd00::1]:9901' }]);
  });

  it('merges several slices of the Service', () => {
    const port = [{ name: 'admin', port: 9901 }];
    const pods = podEndpoints([
      slice(port, [{ addresses: ['10.0.0.1'] }]),
      slice(port, [{ addresses: ['10.0.0.2'] }]),
    ]);
    expect(pods.map((p) => p.key)).toEqual(['10.0.0.1:9901', '10.0.0.2:9901']);
  });
});

describe('endpointSlicesPath', () => {
  it('selects the slices of the Service by label', () => {
    expect(endpointSlicesPath('gw', 'sluice-admin')).toBe(
      '/apis/discovery.k8s.io/v1/namespaces/gw/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dsluice-admin',
    );
  });
});
