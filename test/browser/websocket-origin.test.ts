/**
 * Cross-site WebSocket hijacking in a real browser: headless Chromium (as test/browser/cors.test.ts)
 * loads one page server under two origins, http://127.0.0.1:<port> (the route's cors origin) and
 * http://localhost:<port> (a foreign site), and each page opens a WebSocket to the gateway with
 * the gateway's cookie. The browser's own Origin header is what the gateway judges: the app's
 * page talks through the socket, the foreign page's socket fails and the upstream never sees it.
 *
 * Without /usr/bin/chromium the file is skipped with a printed reason, except under CI, where
 * it fails (.ci/run installs the package).
 */
import { existsSync } from 'node:fs';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane } from '../helpers/servers.ts';
import { pluginInstance, route, snapshot, upstream } from '../helpers/tables.ts';
import { startWsUpstream } from '../helpers/ws-upstream.ts';

const CHROMIUM = '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
if (!available)
  console.warn(
    `test/browser/websocket-origin.test.ts: ${CHROMIUM} is missing (apt-get install chromium); ` +
      (process.env.CI ? 'CI is set, so the tests run and fail' : 'skipped'),
  );

describe.skipIf(!available && !process.env.CI)('WebSocket origins in Chromium', () => {
  let browser: Browser;
  let pageServer: Server;
  let ws: Awaited<ReturnType<typeof startWsUpstream>>;
  let dp: DataPlane;
  let port = 0;

  beforeAll(async () => {
    pageServer = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!doctype html><title>page</title><p>page</p>');
    });
    pageServer.listen(0, '127.0.0.1');
    await once(pageServer, 'listening');
    port = (pageServer.address() as AddressInfo).port;
    ws = await startWsUpstream();
    dp = await startTestDataPlane({
      initialSnapshot: snapshot(
        [
          route('live', 'ws', '/live', {
            plugins: [
              pluginInstance('c', 'cors', { origins: [`http://127.0.0.1:${port}`], credentials: true }),
            ],
          }),
          route('listed', 'ws', '/listed', { websocket: { allowedOrigins: [`http://127.0.0.1:${port}`] } }),
        ],
        [upstream('ws', ws.url)],
      ),
    });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    await dp?.close();
    await ws?.close();
    pageServer?.close();
  });

  /** A page of `origin` opens a WebSocket to the gateway's `path` (with its cookie) and says what happened. */
  async function openFrom(origin: string, path: string): Promise<string> {
    const context = await browser.newContext();
    await context.addCookies([{ name: 'session', value: 's1', url: dp.proxyUrl }]);
    const page: Page = await context.newPage();
    await page.goto(`${origin}/`);
    const url = `${dp.proxyUrl.replace('http', 'ws')}${path}`;
    try {
      return await page.evaluate(
        (u) =>
          new Promise<string>((resolve) => {
            const s = new WebSocket(u);
            s.onopen = () => s.send('hi');
            s.onmessage = (e) => {
              resolve(`message ${e.data}`);
              s.close();
            };
            s.onerror = () => resolve('error');
          }),
        url,
      );
    } finally {
      await context.close();
    }
  }

  for (const path of ['/live', '/listed']) {
    it(`${path}: the allowed origin's page talks through the socket, with the cookie`, async () => {
      expect(await openFrom(`http://127.0.0.1:${port}`, path)).toBe('message echo:hi');
      const last = ws.upgrades[ws.upgrades.length - 1];
      expect(last.headers.origin).toBe(`http://127.0.0.1:${port}`);
      expect(last.headers.cookie).toBe('session=s1');
    });

    it(`${path}: a foreign site's page cannot open one, and the upstream never sees it`, async () => {
      const before = ws.upgrades.length;
      expect(await openFrom(`http://localhost:${port}`, path)).toBe('error');
      expect(ws.upgrades.length).toBe(before);
    });
  }
});
