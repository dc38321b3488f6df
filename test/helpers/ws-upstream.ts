/** A WebSocket echo upstream (ws) that also reports the upgrade request's path and headers, and the close codes it got. */
import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';

export async function startWsUpstream() {
  const server = createServer((_req, res) => res.end('plain'));
  const wss = new WebSocketServer({ server });
  const upgrades: IncomingMessage[] = [];
  const closes: number[] = [];
  wss.on('connection', (socket, req) => {
    upgrades.push(req);
    socket.on('close', (code) => closes.push(code));
    socket.on('message', (data, isBinary) => socket.send(isBinary ? data : `echo:${data}`));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    upgrades,
    closes,
    /** Drops every connection without a Close frame (an upstream crash). */
    terminateAll: () => {
      for (const c of wss.clients) c.terminate();
    },
    close: async () => {
      for (const c of wss.clients) c.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
