/** pino JSON logs; credentials are redacted wherever they could appear in a logged object. */
import pino, { type Logger } from 'pino';

export const REDACT = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["proxy-authorization"]',
  'req.headers["idempotency-key"]',
  'req.headers["x-api-key"]',
  'headers.authorization',
  'headers.cookie',
  'token',
  'adminToken',
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'sluice' },
      redact: { paths: REDACT, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      // "level":"info", not pino's 30: log pipelines (Loki, Elasticsearch, Cloud Logging) and
      // people read the label; nothing of ours parses the number.
      formatters: { level: (label) => ({ level: label }) },
    },
    destination ?? pino.destination({ dest: 1, sync: false }),
  );
}
