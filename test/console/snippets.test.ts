import { describe, expect, it } from 'vitest';
import type { App } from '../../shared/domain/types.js';
import { snippets } from '../../services/console/snippets.js';
import { typeErrors } from '../helpers/typecheck.js';

const app = { appId: 'APP_1', siteKey: 'site_key_1' } as App;

describe('the console snippets', () => {
  it('the SDK ones type-check against the SDK as written', () => {
    const sdk = snippets(app, 'http://localhost:8080/')
      .filter((s) => s.text.includes('@svc-consent/sdk'))
      .map((s) => ({ name: s.id, text: s.text }));
    expect(sdk.map((s) => s.name)).toEqual(['snippet-node', 'snippet-client']);
    // `apply` is the app's own side of each change (the node snippet's handler calls it).
    const prelude = 'declare function apply(...args: unknown[]): Promise<void>;\nexport {};\n';
    expect(typeErrors(sdk, prelude)).toEqual([]);
  }, 60_000);
});
