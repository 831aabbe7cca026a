import type { DispatchCreation } from './dispatches.js';

/**
 * The fields of a dispatch's creation entry, the first entry of its chain (`entryHash` is their
 * hash): what `creationOf` reads from an item, and what a packed item's reader needs to compute
 * that hash (packed.ts).
 */
export const CREATION_FIELDS: readonly (keyof DispatchCreation)[] = [
  'type',
  'dispatchId',
  'eventId',
  'event',
  'appId',
  'environment',
  'referenceId',
  'createdAt',
  'dispatchedAt',
  'postbackRequired',
  'postbackDueAt',
  'bodySha256',
  'prevHash',
];
