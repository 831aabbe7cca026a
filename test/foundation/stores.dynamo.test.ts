import { afterAll, beforeAll, describe } from 'vitest';
import type { Runtime } from '../../shared/runtime.js';
import { testRuntime } from '../helpers/stack.js';
import { storeConformance } from './stores.conformance.js';

/** The domain's store ports against their DynamoDB adapters, on DynamoDB Local. */
let rt: Runtime;

beforeAll(async () => {
  rt = await testRuntime('stores');
});

afterAll(async () => {
  await rt?.close();
});

describe('DynamoDB adapters', () => {
  storeConformance(() => rt);
});
