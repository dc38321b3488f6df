/**
 * respond: the route answers by itself with a fixed status and no upstream call: empty, or one
 * of the gateway's problems (RFC 9457). Gateway API rules whose backends are all invalid or
 * absent compile to it (the spec's 500), as SLC_ERR_BACKEND_INVALID.
 */
import { type Static, Type } from '@sinclair/typebox';
import { handlerManifest } from '../../config/manifest.ts';

/**
 * The problems a route may answer with, and their statuses. Their titles and rendering are the
 * gateway's errors' (errors/codes.ts); the contract names them, with the status, so the
 * controller can write them and the door can check an entry without loading the runtime.
 * respond/index.ts does not type-check when a code here is not in ERRORS or its status differs.
 */
export const RESPOND_PROBLEMS = { SLC_ERR_BACKEND_INVALID: { status: 500 } } as const;
export type RespondProblem = keyof typeof RESPOND_PROBLEMS;
const PROBLEM_CODES = Object.keys(RESPOND_PROBLEMS) as RespondProblem[];

export const RespondHandler = Type.Object(
  {
    type: Type.Literal('respond'),
    /** The answer's status; with a problem, that problem's own. */
    status: Type.Integer({ minimum: 200, maximum: 599 }),
    /** The body: this problem as application/problem+json; absent: an empty body. */
    problem: Type.Optional(Type.Union(PROBLEM_CODES.map((c) => Type.Literal(c)))),
  },
  { additionalProperties: false },
);
export type RespondHandler = Static<typeof RespondHandler>;

export const manifest = handlerManifest({
  kind: 'respond',
  schema: RespondHandler,
  upstreams: () => [],
  checks: (h) => {
    if (h.problem === undefined) return [];
    const status = RESPOND_PROBLEMS[h.problem].status;
    return h.status === status
      ? []
      : [{ field: 'status', message: `must be ${status}, the status of ${h.problem}` }];
  },
});
