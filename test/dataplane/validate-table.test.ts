/** The data plane's check at the door: rules across a plugin config's fields name the route and the field. */
import { describe, expect, it } from 'vitest';
import { validateRouteTable } from '../../dataplane/config/validate.ts';
import { idempotencyPlugin, rateLimitPlugin, route, snapshot, upstream } from '../helpers/tables.ts';

describe('validateRouteTable, plugin rules', () => {
  it('names the route id and the field of each broken rule', () => {
    const table = snapshot(
      [
        route('a', 'u', '/a', { plugins: [rateLimitPlugin('rl', { policy: 'local' })] }),
        route('b', 'u', '/b', { plugins: [idempotencyPlugin('idem', { keyLength: { min: 50, max: 40 } })] }),
      ],
      [upstream('u', 'http://127.0.0.1:9')],
    ).table;
    expect(validateRouteTable(table)).toEqual([
      {
        id: 'route/test/a/a/0',
        field: 'plugins[0].config',
        message: 'rate-limiting: set at least one of second, minute, hour, day',
      },
      {
        id: 'route/test/b/b/0',
        field: 'plugins[0].config.keyLength.min',
        message: 'idempotency: (50) is above keyLength.max (40)',
      },
    ]);
  });
});
