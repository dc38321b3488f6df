/**
 * What a REST → SOAP translation costs the gateway: CPU time of the data plane per
 * POST /api/orders (a JSON body made into a SOAP 1.1 envelope, the XML answer parsed and turned
 * into JSON) next to a plain proxied POST /ws/orders of the same envelope (what a client that
 * speaks SOAP itself sends), measured in one run. The data plane is `sluice run` on
 * bench/bench-soap.yaml, alone on the target core; the sample SOAP service
 * (examples/soap-service.ts, the `soap` package) and the client (undici, a fixed concurrency)
 * run in this process on the load core. Rounds alternate the two workloads; the figure is the
 * median CPU µs per request, and the ratio between them. Timings are printed, never asserted.
 *
 * Usage: node bench/soap.ts [--requests N] [--concurrency C] [--rounds R]
 * Needs 18290-18292 free.
 */
import { CREATE_ACTION, ORDERS_NS, startSoapService } from '../examples/soap-service.ts';
import { alternate, alternatingArgs, startBenchGateway } from './lib/alternating.ts';

const OPTS = alternatingArgs();
const { n: N, concurrency: C, rounds: ROUNDS } = OPTS;
const PORT = 18290;

const service = await startSoapService(PORT + 2);
const gw = await startBenchGateway('bench/bench-soap.yaml', PORT, 'soap', C);

async function post(path: string, type: Record<string, string>, body: string): Promise<void> {
  const r = await gw.pool.request({ path, method: 'POST', headers: type, body });
  await r.body.dump();
  if (r.statusCode !== 200) throw new Error(`POST ${path}: ${r.statusCode}`);
}

const order = (i: number) => ({
  customer: `c-${i}`,
  item: { sku: `S-${i % 100}`, qty: 1 + (i % 5) },
  note: 'bench',
});
const JSON_TYPE = { 'content-type': 'application/json' };
const SOAP_TYPE = { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${CREATE_ACTION}"` };
/** The envelope the translated route builds, written by the client instead. */
const envelope = (i: number) => {
  const o = order(i);
  return (
    '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/">' +
    `<soap:Body><CreateOrder xmlns="${ORDERS_NS}"><customer>${o.customer}</customer><item><sku>${o.item.sku}</sku>` +
    `<qty>${o.item.qty}</qty></item><note>${o.note}</note></CreateOrder></soap:Body></soap:Envelope>`
  );
};

const WORK = {
  translated: (i: number) => post('/api/orders', JSON_TYPE, JSON.stringify(order(i))),
  proxied: (i: number) => post('/ws/orders', SOAP_TYPE, envelope(i)),
} as const;

try {
  const { translated, proxied } = await alternate(gw.gateway, WORK, OPTS);
  console.log(`\nCPU of the data plane, µs (median of ${ROUNDS} rounds of ${N}, concurrency ${C}):`);
  console.log(`  JSON → SOAP → JSON (translated)        ${translated.toFixed(0)}`);
  console.log(`  the same SOAP POST, proxied            ${proxied.toFixed(0)}`);
  console.log(`  ratio translated / proxied             ${(translated / proxied).toFixed(2)}`);
} finally {
  await gw.close();
  await service.close();
}
