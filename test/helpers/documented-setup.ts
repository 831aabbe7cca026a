import { documentedFetch } from './openapi-check.js';

// Every answer a test gets from a process it started is checked against that process's
// /openapi.json (test/helpers/openapi-check.ts), whatever made the request: the tests' own
// clients, plain fetch, or the SDK.
globalThis.fetch = documentedFetch as typeof fetch;
