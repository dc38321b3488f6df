/**
 * A store a plugin needs, declared in the plugin's folder (its records, counters, cache): how to
 * make it in memory (standalone, or no --redis) and on the data plane's Redis connection, and
 * what it does on purge and close. The data plane makes one of each declared kind when it starts
 * (open-stores.ts), keeps it across snapshots, and hands it to the plugin (Stores.of).
 */
import type { RedisCaller, RedisClient } from './redis-connection.ts';

/** The data plane's Redis: one connection for every store, and the key prefix (--redis-prefix). */
export interface RedisSide {
  client: RedisClient;
  caller: RedisCaller<unknown>;
  prefix: string;
}

/** What a kind may ask of the other stores (e.g. its memory form shares another kind's). */
export interface StoreLookup {
  of<S>(kind: StoreKind<S>): S;
  /** A memory store dropped `count` live entries to stay within its bound: counted and logged. */
  evicted(store: string, count: number): void;
}

export interface StoreKind<S> {
  /** For messages. */
  readonly name: string;
  memory(stores: StoreLookup): S;
  /** On the shared Redis: define its scripts on the client, prefix its keys. */
  redis(redis: RedisSide, stores: StoreLookup): S;
  /** Removes the entries whose key starts with `prefix` (the admin API's purge); how many. */
  purge?(store: S, prefix: string): Promise<number>;
  /** Stops its timers when the data plane closes (the Redis connection is closed after). */
  close?(store: S): Promise<void>;
}

/** Typed identity: a store kind's declaration. */
export const storeKind = <S>(kind: StoreKind<S>): StoreKind<S> => kind;
