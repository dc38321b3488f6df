/**
 * respond: answers with the entry's status, empty or as the entry's problem, calling nothing. A
 * problem is the gateway's error like any other (the one renderer, the access log's code, the
 * taps told the call failed); an empty answer goes through the route's sink like an upstream's.
 */
import type { ERRORS } from '../../errors/codes.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import type { ResponseSink } from '../../upstream/call.ts';
import { ClientSink } from '../client-sink.ts';
import { deliver } from '../deliver.ts';
import { defineHandler } from '../types.ts';
import { manifest, RESPOND_PROBLEMS, type RespondProblem } from './manifest.ts';

// The contract's problems are errors of ERRORS with the same statuses: this fails to type-check otherwise.
RESPOND_PROBLEMS satisfies {
  readonly [C in RespondProblem]: { readonly status: (typeof ERRORS)[C]['status'] };
};

const EMPTY = Buffer.alloc(0);

export default defineHandler(manifest, {
  create() {
    return {
      bind(_route, entry) {
        const { status, problem } = entry;
        const call = (ctx: RequestContext, sink: ResponseSink) => {
          if (ctx.hasBody && ctx.body === null) ctx.req.resume(); // nothing sends it: read and dropped
          if (problem !== undefined) return sink.end({ code: problem, sent: false });
          deliver(sink, status, {}, EMPTY);
        };
        return { handle: (ctx) => call(ctx, new ClientSink(ctx)), call };
      },
    };
  },
});
