/** The bench's fixed bodies: what the upstream answers and what POST sends, shared by every file here. */

/** `GET /api/items/<id>` answers this (about 200 bytes), whatever the id. */
export const ITEM_BODY = JSON.stringify({
  id: 'item_42',
  name: 'Stainless steel water bottle',
  sku: 'WB-750-SS',
  price: { amount: 2490, currency: 'EUR' },
  stock: 118,
  tags: ['outdoor', 'kitchen'],
  updatedAt: '2025-01-15T09:30:00Z',
  active: true,
});

/** `POST /charges` reads the body, drops it and answers this (about 135 bytes). */
export const CHARGE_BODY = JSON.stringify({
  id: 'ch_3Kq9s2LkdIwHu7ix0',
  object: 'charge',
  amount: 2490,
  currency: 'eur',
  status: 'succeeded',
  created: 1736933400,
  livemode: false,
});

/** The request body POST sends (about 110 bytes). */
export const CHARGE_REQUEST = JSON.stringify({
  amount: 2490,
  currency: 'eur',
  source: 'tok_visa',
  description: 'Order 1042',
  capture: true,
  customer: 'cus_9s6XKzkNRiz8i3',
});

export const GET_PATH = '/api/items/42';
export const POST_PATH = '/charges';

/** Fixed ports (bench/bench.yaml names the upstream's): checked free before anything starts. */
export const PORTS = {
  upstream: 18200,
  direct: 18201,
  floor: 18202,
  sluice: 18203,
  sluiceTransformer: 18204,
  sluiceCache: 18205,
  admin: 18211,
} as const;
