import SwaggerParser from '@apidevtools/swagger-parser';
import { beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../../bin/openapi.js';
import { EVENT_TYPES } from '../../shared/domain/consent/events.js';

/**
 * The OpenAPI document of every service (what GET /openapi.json serves), checked by an
 * independent parser and for what a client generator needs: an operationId per operation,
 * named schemas for bodies, responses and events, a webhook per event type.
 */
type Op = {
  operationId?: string;
  requestBody?: { content: Record<string, { schema: { $ref?: string } }> };
  responses: Record<string, { content?: Record<string, { schema: { $ref?: string } }> }>;
};
let doc: {
  paths: Record<string, Record<string, Op>>;
  webhooks: Record<string, { post: Op }>;
  components: { schemas: Record<string, unknown> };
};
const ops = () =>
  Object.entries(doc.paths).flatMap(([path, byMethod]) =>
    Object.entries(byMethod).map(([method, op]) => ({
      key: `${method.toUpperCase()} ${path}`,
      op,
    })),
  );

beforeAll(async () => {
  doc = (await openApiDocument()) as typeof doc;
});

describe('the OpenAPI document', () => {
  it('validates with @apidevtools/swagger-parser (OAS 3.1, every $ref resolves)', async () => {
    // validate() dereferences in place: give it a copy.
    const api = await SwaggerParser.validate(structuredClone(doc) as never);
    expect(api.info.title).toBe('svc-consent');
  });

  it('names every operation, uniquely', () => {
    const ids = ops().map((o) => o.op.operationId);
    expect(ids.length).toBeGreaterThan(50);
    expect(ids.filter((id) => !id)).toEqual([]);
    expect(new Set(ids).size).toBe(ids.length);
    expect(doc.paths['/api/v1/consents']!.post!.operationId).toBe('postConsents');
  });

  it('refers to a named component for every body, response and problem', () => {
    const inline: string[] = [];
    for (const { key, op } of ops()) {
      for (const [type, c] of Object.entries(op.requestBody?.content ?? {}))
        if (!c.schema.$ref) inline.push(`${key} body ${type}`);
      for (const [status, r] of Object.entries(op.responses))
        for (const [type, c] of Object.entries(r.content ?? {}))
          if (!c.schema.$ref) inline.push(`${key} ${status} ${type}`);
    }
    expect(inline).toEqual([]);
    expect(doc.components.schemas).toHaveProperty('Problem');
    expect(doc.components.schemas).toHaveProperty('PostConsentsRequest');
  });

  it('has a webhook with a named payload for every event type, and their union', () => {
    expect(Object.keys(doc.webhooks).sort()).toEqual([...EVENT_TYPES].sort());
    const ref =
      doc.webhooks['consent.withdrawn']!.post.requestBody!.content['application/json']!.schema.$ref;
    expect(ref).toBe('#/components/schemas/ConsentWithdrawnEvent');
    expect(doc.components.schemas.ConsentWithdrawnEvent).toMatchObject({
      properties: {
        type: { const: 'consent.withdrawn' },
        data: { properties: { sequence: { type: 'integer' }, state: { type: 'object' } } },
      },
    });
    expect(doc.components.schemas.ConsentEvent).toMatchObject({
      discriminator: { propertyName: 'type' },
    });
  });

  it('documents the statuses answered outside the handlers', () => {
    const create = doc.paths['/api/v1/consents']!.post!;
    expect(Object.keys(create.responses)).toEqual(
      expect.arrayContaining(['201', '400', '413', '429', '503']),
    );
    expect(Object.keys(doc.paths['/api/v1/widget/capture']!.post!.responses)).toContain('429');
    expect(Object.keys(doc.paths['/api/v1/widget/config/{processId}']!.get!.responses)).toContain(
      '429',
    );
  });

  it('carries examples on the main operations', () => {
    const create = doc.paths['/api/v1/consents']!.post!;
    expect(create.requestBody!.content['application/json']).toHaveProperty('example');
    const postback = doc.paths['/api/v1/server/consent/action']!.post!;
    expect(postback.requestBody!.content['application/json']).toHaveProperty('example');
  });
});
