/** What the core's and the plugins' latency metrics share: buckets and units. */

export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
export const NS_PER_S = 1e9;
const STATUS_CLASS = ['0xx', '1xx', '2xx', '3xx', '4xx', '5xx'];

/** A status's label: 1xx … 5xx, or `error` outside 100–599. */
export const statusClass = (status: number): string =>
  status >= 100 && status < 600 ? STATUS_CLASS[(status / 100) | 0] : 'error';
