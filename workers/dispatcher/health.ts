import type { App } from '../../shared/domain/types.js';
import type { Runtime } from '../../shared/runtime.js';
import {
  disableEndpoint,
  getEndpointState,
  isDisabled,
  markFailure,
  markSuccess,
  type DisableReason,
  type EndpointState,
} from '../../shared/storage/webhooks/endpoints.js';
import { failingTooLong } from '../../shared/webhooks/schedule.js';
import type { DispatcherMetrics } from './metrics.js';

/** How long a read endpoint state is trusted; its own writes refresh it at once. */
const STATE_TTL_MS = 2_000;
/** A healthy endpoint's lastSuccessAt is refreshed at most this often (one hot item otherwise). */
const SUCCESS_REFRESH_MS = 60_000;

/**
 * Endpoint health with a short in-process cache, writing to DynamoDB only when the state
 * changes (a failing streak starts or ends, a disable) or a minute passed since the last
 * recorded success, so a busy healthy endpoint costs no extra write per delivery.
 */
export class EndpointHealth {
  private readonly cache = new Map<
    string,
    { state: Promise<EndpointState | undefined>; at: number; refreshing?: boolean }
  >();

  constructor(
    private readonly rt: Runtime,
    private readonly m: DispatcherMetrics,
  ) {}

  /** The endpoint's state; one read less than 2 s old, or refreshed behind one less than 4 s old. */
  state(appId: string): Promise<EndpointState | undefined> {
    const hit = this.cache.get(appId);
    const age = hit ? Date.now() - hit.at : Infinity;
    if (hit && age < STATE_TTL_MS) return hit.state;
    if (hit && age < 2 * STATE_TTL_MS) {
      if (!hit.refreshing) {
        hit.refreshing = true;
        const next = getEndpointState(this.rt, appId);
        next.then(
          () => {
            if (this.cache.get(appId) === hit) this.remember(appId, next);
          },
          () => (hit.refreshing = false),
        );
      }
      return hit.state;
    }
    const state = getEndpointState(this.rt, appId);
    this.remember(appId, state);
    return state;
  }

  private remember(appId: string, state: Promise<EndpointState | undefined>) {
    this.cache.set(appId, { state, at: Date.now() });
    state.catch(() => this.cache.delete(appId));
    if (this.cache.size > 10_000) this.cache.delete(this.cache.keys().next().value!);
  }

  async disabled(app: App): Promise<boolean> {
    return isDisabled(await this.state(app.appId), app.webhookUrl);
  }

  async success(app: App, at: Date): Promise<void> {
    const s = await this.state(app.appId);
    const fresh =
      s?.url === app.webhookUrl &&
      s.failingSince === undefined &&
      s.disabledAt === undefined &&
      s.lastSuccessAt !== undefined &&
      at.getTime() - Date.parse(s.lastSuccessAt) < SUCCESS_REFRESH_MS;
    if (fresh) return;
    this.remember(app.appId, markSuccess(this.rt, app.appId, app.webhookUrl, at.toISOString()));
  }

  /** Records a failure; disables the endpoint when it is gone (410) or failing for too long. */
  async failure(app: App, at: Date, gone: boolean): Promise<void> {
    let s = await this.state(app.appId);
    if (s?.url !== app.webhookUrl || s.failingSince === undefined) {
      const written = markFailure(this.rt, app.appId, app.webhookUrl, at.toISOString());
      this.remember(app.appId, written);
      s = await written;
    }
    if (isDisabled(s, app.webhookUrl)) return;
    if (gone) return this.disable(app, 'gone', at);
    const since = s.failingSince === undefined ? undefined : Date.parse(s.failingSince);
    if (failingTooLong(since, at.getTime(), this.rt.config.WEBHOOK_DISABLE_AFTER_MS))
      return this.disable(app, 'failing', at, s.failingSince);
  }

  private async disable(app: App, reason: DisableReason, at: Date, since?: string): Promise<void> {
    if (await disableEndpoint(this.rt, app, reason, at.toISOString(), since)) {
      this.m.disabled.inc({ reason });
      this.rt.log.warn({ appId: app.appId, reason }, 'webhook endpoint disabled');
    }
    this.cache.delete(app.appId);
  }
}
