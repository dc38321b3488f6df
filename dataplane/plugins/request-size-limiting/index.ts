/**
 * request-size-limiting: no hook of its own. It lowers the route's body limit (bind's
 * maxBodyBytes), which the data plane enforces as it does its own --max-body-bytes: at the door
 * on Content-Length, on the body as it is read or streamed (server/handle.ts, pipeline/run-chain.ts,
 * the proxy), so a request over it is answered 413 SLC_ERR_BODY_TOO_LARGE by the one code that does.
 */
import { definePlugin } from '../types.ts';
import { manifest } from './manifest.ts';

export default definePlugin(manifest, {
  create(config) {
    const bound = { maxBodyBytes: config.maxBytes };
    return { bind: () => bound };
  },
});
