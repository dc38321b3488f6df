/**
 * A private HAProxy (Debian's /usr/sbin/haproxy, or HAPROXY=path) in front of gateways, as a
 * load balancer in front of pods: one frontend on a free loopback port, one backend `gw` of
 * `slots` servers health-checked on their admin `GET /readyz` (every 200 ms, one failure marks
 * a server down, one success up), and the runtime API on a stats socket to move a slot to a new
 * gateway's ports (a new pod's address) and to take it out of rotation or put it back.
 *
 * The config is what an operator writes for rollouts: keep-alive both sides, `retries 3` with
 * `option redispatch` (a refused connection is retried on another server) and `retry-on
 * conn-failure empty-response`: a request sent on a kept-alive connection just as the server
 * closed it gets no answer at all, a race HTTP/1.1 cannot avoid (RFC 9112 §9.3.1, the client
 * retries); without it HAProxy hands that close to its client, which undici does not retry. A
 * request that got any answer is never retried. A slot starts in maintenance until `put` gives
 * it ports.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './redis.ts';

export const HAPROXY = process.env.HAPROXY ?? '/usr/sbin/haproxy';

export interface ServerStat {
  /** UP, DOWN, MAINT, DRAIN … as `show stat` says. */
  status: string;
  /** Sessions open now. */
  scur: number;
}

export interface TestHaproxy {
  url: string;
  port: number;
  process: ChildProcess;
  /** One runtime API command; its answer. */
  cmd(line: string): Promise<string>;
  /** Points slot `i` at a gateway's proxy and admin ports and puts it in rotation (state ready). */
  put(i: number, proxyPort: number, adminPort: number): Promise<void>;
  /** `set server gw/sI state maint|drain|ready`. */
  state(i: number, state: 'maint' | 'drain' | 'ready'): Promise<void>;
  stat(i: number): Promise<ServerStat>;
  /** Waits (bounded) until slot i's status starts with `status`; the ms it took. */
  waitStatus(i: number, status: string, timeoutMs?: number): Promise<number>;
  stop(): Promise<void>;
}

export async function startHaproxy(slots: number): Promise<TestHaproxy> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-haproxy-'));
  const sock = join(dir, 'admin.sock');
  const port = await freePort();
  const cfg = join(dir, 'haproxy.cfg');
  writeFileSync(
    cfg,
    [
      'global',
      `  stats socket ${sock} mode 600 level admin`,
      '  maxconn 4096',
      'defaults',
      '  mode http',
      '  timeout connect 2s',
      '  timeout client 30s',
      '  timeout server 30s',
      '  timeout check 1s',
      '  retries 3',
      '  option redispatch 1',
      '  retry-on conn-failure empty-response',
      'frontend fe',
      `  bind 127.0.0.1:${port}`,
      '  default_backend gw',
      'backend gw',
      '  balance roundrobin',
      '  option httpchk GET /readyz',
      '  http-check expect status 200',
      '  default-server check inter 200ms fall 1 rise 1',
      ...Array.from({ length: slots }, (_, i) => `  server s${i} 127.0.0.1:1 port 1 disabled`),
      '',
    ].join('\n'),
  );
  const child = spawn(HAPROXY, ['-f', cfg, '-db'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    err = (err + d).slice(-8_000);
  });
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const cmd = (line: string) =>
    new Promise<string>((resolve, reject) => {
      const s = connect(sock);
      let out = '';
      s.setEncoding('utf8');
      s.on('data', (d: string) => {
        out += d;
      });
      s.on('end', () => resolve(out));
      s.on('error', reject);
      s.end(`${line}\n`);
    });
  const stat = async (i: number): Promise<ServerStat> => {
    const [header, ...rows] = (await cmd('show stat')).split('\n');
    const cols = header.replace(/^# /, '').split(',');
    for (const row of rows) {
      const f = row.split(',');
      if (f[0] === 'gw' && f[1] === `s${i}`)
        return { status: f[cols.indexOf('status')], scur: Number(f[cols.indexOf('scur')]) };
    }
    throw new Error(`haproxy: no server s${i}`);
  };
  const expectEmpty = async (line: string) => {
    const out = (await cmd(line)).trim();
    // `set server … addr` answers what it changed; the others answer nothing when they succeed.
    if (out !== '' && !/changed from|no need to change/.test(out))
      throw new Error(`haproxy: ${line}: ${out}`);
  };
  const stop = async () => {
    process.off('exit', killOnExit);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
    rmSync(dir, { recursive: true, force: true });
  };

  for (let i = 0; ; i++) {
    try {
      await cmd('show info');
      break;
    } catch {
      if (i > 100 || child.exitCode !== null) {
        await stop();
        throw new Error(`haproxy did not start:\n${err}`);
      }
      await sleep(50);
    }
  }
  const hp: TestHaproxy = {
    url: `http://127.0.0.1:${port}`,
    port,
    process: child,
    cmd,
    stat,
    async put(i, proxyPort, adminPort) {
      await expectEmpty(`set server gw/s${i} addr 127.0.0.1 port ${proxyPort}`);
      await expectEmpty(`set server gw/s${i} check-port ${adminPort}`);
      await expectEmpty(`set server gw/s${i} state ready`);
    },
    state: (i, state) => expectEmpty(`set server gw/s${i} state ${state}`),
    async waitStatus(i, status, timeoutMs = 10_000) {
      const t0 = performance.now();
      for (;;) {
        const s = await stat(i);
        if (s.status.startsWith(status)) return performance.now() - t0;
        if (performance.now() - t0 > timeoutMs)
          throw new Error(`haproxy: s${i} is ${s.status}, not ${status}, after ${timeoutMs} ms`);
        await sleep(20);
      }
    },
    stop,
  };
  return hp;
}
