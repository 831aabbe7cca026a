import { describe, expect, it } from 'vitest';
import { appRuleErrors, toApp } from './apps.js';

describe('appRuleErrors', () => {
  it.each([
    [{ environment: 'sandbox', webhookUrl: 'http://localhost:9000/h', slaTimeScale: 3600 }, []],
    [{ environment: 'live', webhookUrl: 'https://shop.example/h' }, []],
    [{ environment: 'live', webhookUrl: 'https://shop.example/h', slaTimeScale: 1 }, []],
    [{ environment: 'live', webhookUrl: 'http://shop.example/h' }, ['/webhookUrl']],
    [
      { environment: 'live', webhookUrl: 'https://shop.example/h', slaTimeScale: 60 },
      ['/slaTimeScale'],
    ],
  ] as const)('%j → %j', (settings, paths) => {
    expect(appRuleErrors(settings).map((e) => e.path)).toEqual(paths);
  });
});

describe('toApp', () => {
  it('drops storage keys and every encrypted attribute', () => {
    const app = toApp({
      pk: 'APP#a',
      sk: 'APP',
      gsi1pk: 'x',
      gsi1sk: 'x',
      gsi2pk: 'x',
      gsi2sk: 'x',
      secretKeyEnc: 'v1.xxx',
      otherEnc: 'v1.yyy',
      appId: 'a',
      name: 'n',
    });
    expect(app).toEqual({ appId: 'a', name: 'n' });
  });
});
