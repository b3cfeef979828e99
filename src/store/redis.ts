/**
 * The Redis store: one hash per key ({ v: version, d: JSON }), read and compare-and-set by Lua scripts,
 * which Redis runs atomically, so two processes can never both write over the same version. Every answer
 * carries Redis's own clock (TIME), which all processes share whatever their machines' clocks say; every
 * write refreshes the key's expiry, so the keys of policies no longer in use go away.
 *
 * Redis is reached through a client the application already has (ioredis or node-redis, optional peer
 * dependencies) or an ioredis client this store makes from a URL and closes in `close()`. The store itself
 * imports no Node.js module (the scripts' SHA-1 comes from Web Crypto), so it runs wherever the client does.
 * The `robustly/redis` entry point.
 */
import { OptionError } from "../core/errors.js";
import { warn } from "../core/events.js";
import { loadOptional, MissingPackageError } from "../core/optional.js";
import { knownKeys } from "../core/validate.js";
import { EXCERPT, excerpt, type Store, type StoreEntry, type StoreWrite } from "./store.js";

/** The longest value a key may hold, in bytes: a policy's state takes well under 1 KB; anything longer is junk. */
const MAX_VALUE = 65_536;

/** The part of an ioredis client this store uses. */
export interface RedisClientLike {
  evalsha(sha: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  /** ioredis's connection status; when present, commands fail at once unless it is "ready" or connecting. */
  readonly status?: string;
  quit?(): Promise<unknown>;
  disconnect?(): void;
  on?(event: "error", listener: (error: unknown) => void): unknown;
}

/** The part of a node-redis client (`redis` or `@redis/client`, v4 and later) this store uses. */
export interface NodeRedisClientLike {
  evalSha(sha: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  readonly isReady?: boolean;
}

export interface RedisStoreOptions {
  /** A connected client, ioredis or node-redis, which stays the caller's to close. */
  client?: RedisClientLike | NodeRedisClientLike;
  /** Or where to connect (ioredis is then loaded and the connection closed by `close()`). Default redis://127.0.0.1:6379. */
  url?: string;
  /** Put before every key. Default "robustly:". */
  prefix?: string;
}

// Redis's clock in ms, from TIME (seconds, microseconds). A new key's first version is that time in µs
// (16 digits, written as a string: Lua would print the number in exponent form), so a key that expired and
// was made again does not reuse the versions a slow process may still hold.
//
// What the key holds, as this store wrote it: version, data, and '' — or, when it holds anything else (a
// key of another type, a version that is not a whole number below 2^53, a version without data, data
// longer than MAX_VALUE), version '0' (or the version, when only the data is wrong), the start of what was
// found, and what is wrong. A write at that version replaces it, so junk never makes a run of conflicts.
const NOW = `local t = redis.call('TIME') local now = t[1] * 1000 + math.floor(t[2] / 1000) local micros = t[1] .. string.format('%06d', tonumber(t[2]))
local function current()
  local kind = redis.call('TYPE', KEYS[1])
  if type(kind) == 'table' then kind = kind.ok end
  if kind == 'none' then return '0', '', '' end
  if kind ~= 'hash' then
    local found = ''
    if kind == 'string' then found = redis.call('GETRANGE', KEYS[1], 0, ${EXCERPT - 1}) end
    return '0', found, 'a Redis ' .. kind .. ' where a hash belongs'
  end
  local fields = redis.call('HMGET', KEYS[1], 'v', 'd')
  local v, d = fields[1], fields[2]
  if not v then return '0', string.sub(d or '', 1, ${EXCERPT}), 'no version' end
  if not string.match(v, '^[1-9]%d*$') or #v > 16 or tonumber(v) > 9007199254740991 then
    return '0', string.sub(d or '', 1, ${EXCERPT}), 'the version ' .. string.sub(v, 1, 40) .. ' is not one'
  end
  if not d then return v, '', 'a version without a value' end
  if #d > ${MAX_VALUE} then return v, string.sub(d, 1, ${EXCERPT}), 'a value of ' .. #d .. ' bytes' end
  return v, d, ''
end`;

const READ = `${NOW}
local version, data, wrong = current()
return { version, data, tostring(now), wrong }`;

const WRITE = `${NOW}
local version, data, wrong = current()
if version ~= ARGV[1] then return { 0, version, data, tostring(now), wrong } end
local next
if version == '0' then
  if wrong ~= '' then redis.call('DEL', KEYS[1]) end
  next = micros redis.call('HSET', KEYS[1], 'v', micros)
else redis.call('HINCRBY', KEYS[1], 'v', 1) next = redis.call('HGET', KEYS[1], 'v') end
redis.call('HSET', KEYS[1], 'd', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return { 1, next, '', tostring(now), '' }`;

/** A Lua script, called by its SHA-1 (computed on first use: Web Crypto's digest is asynchronous). */
class Script {
  readonly source: string;
  #sha: Promise<string> | undefined;

  constructor(source: string) {
    this.source = source;
  }

  sha(): Promise<string> {
    this.#sha ??= sha1(this.source);
    return this.#sha;
  }
}

async function sha1(text: string): Promise<string> {
  const digest = await globalThis.crypto.subtle.digest("SHA-1", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

const scripts = { read: new Script(READ), write: new Script(WRITE) };

class RedisStore implements Store {
  readonly name = "redis";
  readonly #prefix: string;
  readonly #connect: () => Promise<RedisClientLike>;
  readonly #owned: boolean;
  #client: Promise<RedisClientLike> | undefined;
  #closed = false;

  constructor(prefix: string, connect: () => Promise<RedisClientLike>, owned: boolean) {
    this.#prefix = prefix;
    this.#connect = connect;
    this.#owned = owned;
  }

  async #run(which: Script, key: string, args: (string | number)[]): Promise<unknown[]> {
    if (this.#closed) throw new Error("the redis store is closed");
    this.#client ??= this.#connect();
    const client = await this.#client;
    const status = client.status;
    // While ioredis reconnects it would queue commands and send them later, long after the policy gave up
    // on them: fail at once instead, and let the policy try again on its own schedule.
    if (status !== undefined && !["ready", "connecting", "connect", "wait"].includes(status)) {
      throw new Error(`redis is not connected (${status})`);
    }
    const fullKey = this.#prefix + key;
    let reply: unknown;
    try {
      reply = await client.evalsha(await which.sha(), 1, fullKey, ...args);
    } catch (error) {
      if (!String((error as Error)?.message ?? error).startsWith("NOSCRIPT")) throw error;
      reply = await client.eval(which.source, 1, fullKey, ...args);
    }
    if (!Array.isArray(reply)) throw new Error(`unexpected reply from redis: ${String(reply)}`);
    return reply;
  }

  async read(key: string): Promise<StoreEntry> {
    const [version, data, time, wrong] = await this.#run(scripts.read, key, []);
    return entry(version, data, time, wrong);
  }

  async write(key: string, version: number, value: unknown, expire: number): Promise<StoreWrite> {
    const json = JSON.stringify(value);
    const [written, next, data, time, wrong] = await this.#run(scripts.write, key, [
      String(version),
      json,
      String(Math.max(1, Math.ceil(expire))),
    ]);
    if (Number(written) === 1)
      return { written: true, entry: { value: JSON.parse(json), version: Number(next), time: Number(time) } };
    return { written: false, entry: entry(next, data, time, wrong) };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (!this.#owned || this.#client === undefined) return;
    const client = await this.#client.catch(() => undefined);
    if (client === undefined) return;
    try {
      if (client.status === "ready") await client.quit?.();
      else client.disconnect?.();
    } catch {
      client.disconnect?.();
    }
  }
}

/** An entry from a script's answer: what was found is corrupt when the script says so, or is not JSON. */
function entry(version: unknown, data: unknown, time: unknown, wrong: unknown): StoreEntry {
  const text = data === null || data === undefined ? "" : String(data);
  const reason = wrong === null || wrong === undefined ? "" : String(wrong);
  const at = { version: Number(version), time: Number(time) };
  if (reason !== "") return { ...at, value: undefined, corrupt: { found: excerpt(text), reason } };
  if (text === "") return { ...at, value: undefined };
  try {
    return { ...at, value: JSON.parse(text) };
  } catch {
    return { ...at, value: undefined, corrupt: { found: excerpt(text), reason: "a value that is not JSON" } };
  }
}

/**
 * A store on Redis, shared by every process that names the same server, prefix and key.
 *
 * @example
 * import Redis from "ioredis";
 * const store = redisStore({ client: new Redis(process.env.REDIS_URL) });
 * const breaker = circuitBreaker({ failureRatio: 0.5, store, key: "payments-api" });
 */
export function redisStore(options: RedisStoreOptions = {}): Store {
  knownKeys("redisStore", options, ["client", "url", "prefix"]);
  const prefix = options.prefix ?? "robustly:";
  if (typeof prefix !== "string") throw new OptionError("redisStore: prefix", prefix, "a string");
  if (options.client !== undefined) {
    const given = options.client as Partial<RedisClientLike & NodeRedisClientLike> | null;
    let client: RedisClientLike;
    if (typeof given?.evalsha === "function" && typeof given.eval === "function")
      client = given as RedisClientLike;
    else if (typeof given?.evalSha === "function" && typeof given.eval === "function") {
      client = fromNodeRedis(given as NodeRedisClientLike);
    } else {
      throw new OptionError(
        "redisStore: client",
        given,
        "a connected ioredis or node-redis client (with eval and evalsha or evalSha)",
      );
    }
    if (options.url !== undefined)
      throw new OptionError("redisStore: url", options.url, "left out when a client is given");
    return new RedisStore(prefix, () => Promise.resolve(client), false);
  }
  const url = options.url ?? "redis://127.0.0.1:6379";
  if (typeof url !== "string" || !/^rediss?:\/\//.test(url)) {
    throw new OptionError("redisStore: url", url, 'a "redis://" or "rediss://" URL');
  }
  // ioredis is loaded now, not at the first exchange: when it is missing, one warning line says so at once,
  // where a store that failed only later would look like a store that is down.
  const loaded = loadIoredis();
  return new RedisStore(prefix, () => connect(url, loaded), true);
}

/** Whether the missing ioredis was already reported: it is said once per process, however many stores. */
let toldMissing = false;

/** ioredis's module; when it is not installed, one warning line and a rejection naming the package. */
function loadIoredis(): Promise<IoredisModule> {
  const loaded = loadOptional(
    ["ioredis"],
    "redisStore({ url })",
    () => import(/* @vite-ignore */ "ioredis" as string) as Promise<IoredisModule>,
  );
  loaded.catch((error: unknown) => {
    if (!(error instanceof MissingPackageError) || toldMissing) return;
    toldMissing = true;
    warn(error.message, "RobustlyMissingPackageWarning");
  });
  return loaded;
}

/** node-redis's calls in ioredis's shape. */
function fromNodeRedis(client: NodeRedisClientLike): RedisClientLike {
  const split = (numKeys: number, args: (string | number)[]) => ({
    keys: args.slice(0, numKeys).map(String),
    arguments: args.slice(numKeys).map(String),
  });
  return {
    evalsha: (sha, numKeys, ...args) => client.evalSha(sha, split(numKeys, args)),
    eval: (script, numKeys, ...args) => client.eval(script, split(numKeys, args)),
    // node-redis is connected by its owner before use; not ready then means it is reconnecting.
    get status() {
      return client.isReady === false ? "reconnecting" : "ready";
    },
  };
}

type IoredisModule = { default: new (url: string, options: object) => RedisClientLike };

async function connect(url: string, loaded: Promise<IoredisModule>): Promise<RedisClientLike> {
  const module = await loaded;
  const client = new module.default(url, {
    // One try per command: the policy has its own timeout and tries again on its own schedule.
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    // Reconnect forever, at most every 2 s.
    retryStrategy: (times: number) => Math.min(times * 100, 2000),
  });
  // Connection errors surface to the policies as failed exchanges; without a listener ioredis would print them.
  client.on?.("error", () => {});
  return client;
}
