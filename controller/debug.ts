/**
 * GET /debug/config on the controller's metrics port: the snapshot this replica built last (a
 * standby builds too, so any replica answers), Secrets redacted exactly as a data plane's admin
 * port redacts them (dataplane/config/debug-config.ts), and the hash of the real snapshot:
 * compare it with each pod's GET /config to see who runs what. The port's /metrics is open, so
 * this needs a bearer token; the controller already holds one, the data planes' admin token
 * (--admin-token, --admin-token-file or SLUICE_ADMIN_TOKEN), and an operator who may push
 * configuration may read it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type AdminTokens, authorizedBy } from '../dataplane/config/admin-auth.ts';
import { debugConfigText } from '../dataplane/config/debug-config.ts';
import type { Snapshot } from '../dataplane/config/route-table.ts';

export function serveDebugConfig(
  req: IncomingMessage,
  res: ServerResponse,
  token: AdminTokens,
  snapshot: Snapshot | null,
): void {
  if (!authorizedBy(req.headers.authorization, token)) {
    res.writeHead(401, {
      'www-authenticate': 'Bearer realm="sluice-controller"',
      'content-type': 'text/plain',
    });
    res.end('GET /debug/config needs the admin bearer token\n');
  } else if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' });
    res.end();
  } else if (snapshot === null) {
    res.writeHead(503, { 'content-type': 'text/plain' });
    res.end('no snapshot built yet\n');
  } else {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(req.method === 'HEAD' ? undefined : debugConfigText(snapshot));
  }
}
