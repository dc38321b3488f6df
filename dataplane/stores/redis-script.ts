/**
 * A Lua script run as EVALSHA, and as EVAL (which also caches it on the server) only when the
 * server answers NOSCRIPT: after a restart, a failover or a SCRIPT FLUSH. NOSCRIPT means the
 * script did not run, so sending it again never runs it twice.
 *
 * Optimization: ioredis's defineCommand does the same through its Script class, which per call
 * copies the arguments twice and builds a Command subclass instance whose toWritable wraps the
 * command's reject in a new closure and looks its socket up in a WeakSet. Here a call is
 * ioredis's plain evalsha command (one Command, string arguments, no Buffer mode unless an
 * argument is a Buffer) and one catch for NOSCRIPT, as the Script's own. Measured on the
 * idempotency plugin's first execution (two scripts per request): see bench/README.md.
 */
import { createHash } from 'node:crypto';
import { Command } from 'ioredis';
import type { RedisClient } from './redis-connection.ts';

export type ScriptArg = string | number | Buffer;

export class RedisScript {
  readonly #lua: string;
  readonly #sha: string;
  readonly #numberOfKeys: number;

  constructor(lua: string, numberOfKeys: number) {
    this.#lua = lua;
    this.#numberOfKeys = numberOfKeys;
    this.#sha = createHash('sha1').update(lua).digest('hex');
  }

  /**
   * Runs the script with its keys first, then its arguments; `buffers`: bulk replies as Buffers
   * (else strings). The Command is made here, as ioredis's evalsha/evalshaBuffer methods make it
   * (their wrapper copies the arguments once more and checks for auto-pipelining, which is off).
   * `numberOfKeys`: for a script whose calls carry a varying number of keys.
   */
  run<T>(
    client: RedisClient,
    args: ScriptArg[],
    buffers = false,
    numberOfKeys = this.#numberOfKeys,
  ): Promise<T> {
    const send = (name: string, first: string) =>
      client.sendCommand(
        new Command(name, [first, numberOfKeys, ...args], {
          replyEncoding: buffers ? null : 'utf8',
          keyPrefix: client.options.keyPrefix,
        }),
      ) as Promise<T>;
    return send('evalsha', this.#sha).catch((err: Error) => {
      if (!isNoScript(err)) throw err;
      return send('eval', this.#lua);
    });
  }
}

const isNoScript = (err: Error) => typeof err?.message === 'string' && err.message.startsWith('NOSCRIPT');
