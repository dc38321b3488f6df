/**
 * An OTLP/HTTP receiver that accepts and drops what it is sent (200, spans counted), for
 * measuring the data plane with tracing on: start it on the load's core, then point the target
 * at it, e.g.
 *   taskset -c 0 node bench/otlp-sink.ts 4318 &
 *   node bench/run.ts --targets floor,sluice --target 'sluice-otel-100:18206:OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 node bin/sluice.ts run -f bench/bench.yaml --port 18206 --admin-port 18212 --no-access-log'
 * On SIGTERM it prints the spans received.
 */
import { createServer } from 'node:http';

const port = Number(process.argv[2] ?? 4318);
let requests = 0;
let bytes = 0;
createServer((req, res) => {
  req.on('data', (c: Buffer) => {
    bytes += c.length;
  });
  req.on('end', () => {
    requests++;
    res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': '0' });
    res.end();
  });
}).listen(port, '127.0.0.1');
process.on('SIGTERM', () => {
  process.stdout.write(`otlp-sink: ${requests} exports, ${bytes} bytes\n`);
  process.exit(0);
});
