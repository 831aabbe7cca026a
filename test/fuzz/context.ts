import { BASE62, REF_ALPHABET, ULID_ALPHABET, type Rng } from './rng.js';
import type { Route } from './routes.js';
import type { Principal, TenantApp, World } from './world.js';

/** What one fuzz request is being built from, and the world's ids it draws on. */

export interface Ctx {
  rng: Rng;
  world: World;
  route: Route;
  /** The tenant the request acts for, and the other one. */
  X: TenantApp;
  Y: TenantApp;
  P: Principal | undefined;
  notes: string[];
  /** A request left whole: own ids and values only. */
  clean: boolean;
}

export const pickOr = <T>(rng: Rng, items: readonly T[], fallback: T): T =>
  items.length > 0 ? rng.pick(items) : fallback;
/** A principal of `t`, mostly one with a live token. */
export function principalOf(rng: Rng, t: TenantApp): Principal | undefined {
  const live = t.principals.filter((p) => p.token !== undefined);
  if (live.length > 0 && rng.chance(0.85)) return rng.pick(live);
  return t.principals.length > 0 ? rng.pick(t.principals) : undefined;
}
export const liveToken = (p: Principal | undefined) => p?.token;

export function unknownId(name: string, rng: Rng): string {
  switch (name) {
    case 'appId':
      return `app_${rng.chars(BASE62, 20)}`;
    case 'dispatchId':
      return `dsp_${rng.chars(ULID_ALPHABET, 26)}`;
    case 'noticeId':
      return `ntc_${rng.chars(ULID_ALPHABET, 26)}`;
    case 'id':
      return `ak_${rng.chars(ULID_ALPHABET, 26)}`;
    case 'referenceId':
      return `SVC-REF-${rng.chars(REF_ALPHABET, 8)}`;
    case 'processId':
      return `key_${rng.hex(6)}`;
    case 'userId':
      return `fz-new-${rng.hex(8)}`;
    default: {
      const h = rng.hex(32);
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-7${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20)}`;
    }
  }
}

/** A world id of `t` (principal `p` first) for a parameter named `name`. */
export function idOf(
  name: string,
  t: TenantApp,
  p: Principal | undefined,
  rng: Rng,
): string | undefined {
  const ofAll = (f: (q: Principal) => string[]) => t.principals.flatMap(f);
  switch (name) {
    case 'appId':
      return t.appId;
    case 'id':
      return t.keys.length > 0 ? rng.pick(t.keys).id : undefined;
    case 'noticeId':
      return t.noticeIds[0];
    case 'dispatchId':
      return t.dispatches.length > 0 ? rng.pick(t.dispatches).dispatchId : undefined;
    case 'userId':
      return p?.userId ?? ofAll((q) => (q.userId ? [q.userId] : [])).at(0);
    case 'transactionId':
      return p && p.transactionIds.length > 0
        ? rng.pick(p.transactionIds)
        : ofAll((q) => q.transactionIds).at(0);
    case 'recordId':
      return p && p.recordIds.length > 0 ? rng.pick(p.recordIds) : ofAll((q) => q.recordIds).at(0);
    case 'referenceId':
      return p?.referenceId;
    case 'processId':
      return t.triggerKeys[0];
    default:
      return undefined;
  }
}
