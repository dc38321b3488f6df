/** The process-level bits every long-running command shares: stopping on signals, the admin token. */
import type { Logger } from 'pino';
import type { AdminTokens } from '../../dataplane/config/admin-auth.ts';
import { RotatingFile } from './rotating-file.ts';
import { type Flags, failIn } from './command.ts';

/**
 * On SIGTERM or SIGINT (once): log `message`, run `close` (drain, release the lease), exit 0,
 * or 1 when closing failed.
 */
export function stopOnSignals(log: Logger, message: string, close: () => Promise<void>): void {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, message);
    close().then(
      () => process.exit(0),
      (err) => {
        log.error({ err }, 'error while stopping');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

export const ADMIN_TOKEN_FLAGS = {
  'admin-token': {
    type: 'string',
    arg: 'TOKEN',
    help: 'bearer token of the admin API (or env SLUICE_ADMIN_TOKEN, or --admin-token-file)',
  },
  'admin-token-file': {
    type: 'string',
    arg: 'FILE',
    help: 'read the admin token from FILE (a mounted Secret)',
  },
} as const satisfies Flags;

/**
 * The admin token: --admin-token-file (trimmed; re-read when the file changes, the old token
 * valid for a grace period: rotating-file.ts), else --admin-token, else SLUICE_ADMIN_TOKEN, else ''.
 */
export function adminToken(
  cmd: string,
  values: { 'admin-token'?: string; 'admin-token-file'?: string },
): AdminTokens {
  const file = values['admin-token-file'];
  if (!file) return values['admin-token'] ?? process.env.SLUICE_ADMIN_TOKEN ?? '';
  try {
    return new RotatingFile(file).values;
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    failIn(cmd, `--admin-token-file ${file} cannot be read (${why})`, 1);
  }
}

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

export const LOG_LEVEL_FLAG = {
  'log-level': { type: 'string', arg: 'LEVEL', help: `${LOG_LEVELS.join(', ')} (default info)` },
} as const satisfies Flags;

export function logLevel(cmd: string, values: { 'log-level'?: string }): string {
  const level = values['log-level'] ?? 'info';
  if (!LOG_LEVELS.includes(level)) failIn(cmd, `--log-level: unknown level ${level}`);
  return level;
}
