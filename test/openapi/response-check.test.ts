import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../../bin/openapi.js';
import { responseChecker, type OpenApiDoc } from '../helpers/openapi-check.js';

/**
 * The check the integration tests' HTTP helpers run on every answer (test/helpers/openapi-check.ts),
 * on answers made up here: it passes what the document says and fails what it does not.
 */
const check = responseChecker((await openApiDocument()) as unknown as OpenApiDoc);
const json = 'application/json; charset=utf-8';
const receipt = {
  userId: 'user-42',
  referenceId: 'SVC-REF-7K2M9Q4T',
  transactionId: '0193b3c4-1d2e-7f00-8000-000000000001',
  updatedAt: '2026-11-22T10:00:00.000Z',
};
const write = (body: unknown, status = 200, contentType = json) =>
  check({
    method: 'PUT',
    path: '/api/v1/consents/user-42',
    status,
    contentType,
    text: JSON.stringify(body),
  });

describe('the response check', () => {
  it('passes a documented answer', () => {
    expect(write(receipt)).toEqual([]);
    expect(
      write(
        { type: 'about:blank', title: 'Not found', status: 404, code: 'SVC_NOT_FOUND' },
        404,
        'application/problem+json',
      ),
    ).toEqual([]);
  });

  it('fails a body that does not match the schema', () => {
    const errors = write({ ...receipt, updatedAt: 12 });
    expect(errors.join('\n')).toMatch(/PUT \/api\/v1\/consents\/\{userId\} → 200: .*updatedAt/);
    expect(write({ userId: 'user-42' }).length).toBeGreaterThan(0);
  });

  it('fails a status the operation does not document', () => {
    expect(write(receipt, 418)).toEqual([
      'PUT /api/v1/consents/{userId} → 418: status not documented',
    ]);
  });

  it('fails a problem that is not a problem', () => {
    expect(write({ error: 'nope' }, 404, 'application/problem+json').length).toBeGreaterThan(0);
  });

  it('leaves paths outside the document alone', () => {
    expect(
      check({ method: 'GET', path: '/healthz', status: 200, contentType: json, text: '{}' }),
    ).toEqual([]);
  });

  it('passes the examples of the document', async () => {
    const doc = (await openApiDocument()) as unknown as OpenApiDoc;
    const postback = doc.paths['/api/v1/server/consent/action']!.post!.responses['202']!.content![
      'application/json'
    ] as { example: unknown };
    expect(
      check({
        method: 'POST',
        path: '/api/v1/server/consent/action',
        status: 202,
        contentType: json,
        text: JSON.stringify(postback.example),
      }),
    ).toEqual([]);
  });
});
