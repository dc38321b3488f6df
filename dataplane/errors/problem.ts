/** The one RFC 9457 renderer: every gateway-generated error goes through here. */
import type { ServerResponse } from 'node:http';
import { ERRORS, type ErrorCode } from './codes.ts';

export const PROBLEM_TYPE_BASE = 'https://sluice.dev/problems/';

export interface Problem {
  type: string;
  title: string;
  status: number;
  code: ErrorCode;
  detail?: string;
  instance?: string;
  requestId?: string;
  [extension: string]: unknown;
}

export function problem(code: ErrorCode, detail?: string, extra?: Record<string, unknown>): Problem {
  const { status, title } = ERRORS[code];
  return {
    type: PROBLEM_TYPE_BASE + code.toLowerCase(),
    title,
    status,
    code,
    ...(detail ? { detail } : {}),
    ...extra,
  };
}

/** Writes a problem to a response that has not started; a started one can only be cut. */
export function sendProblem(
  res: ServerResponse,
  code: ErrorCode,
  opts: {
    detail?: string;
    requestId?: string;
    /** The request's trace id (tracing on): the body carries it so a report leads to the trace. */
    traceId?: string | null;
    headers?: Record<string, string>;
    close?: boolean;
  } = {},
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const extra: Record<string, unknown> | undefined = opts.requestId
    ? { requestId: opts.requestId }
    : undefined;
  if (extra !== undefined && opts.traceId) extra.traceId = opts.traceId;
  const body = JSON.stringify(problem(code, opts.detail, extra));
  const headers: Record<string, string | number> = {
    'content-type': 'application/problem+json',
    'content-length': Buffer.byteLength(body),
    ...opts.headers,
  };
  if (opts.requestId) headers['x-request-id'] = opts.requestId;
  // h2 has no Connection header (node:http2 throws on one): the stream ends, the session stays.
  if (opts.close && (res.req?.httpVersionMajor ?? 1) === 1) headers.connection = 'close';
  res.writeHead(ERRORS[code].status, headers);
  res.end(body);
}
