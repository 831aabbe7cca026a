/**
 * The fields of a dispatch's creation entry, the first entry of its chain (`entryHash` is their
 * hash): what `creationOf` reads from an item (dispatches.ts, where the compiler checks each is
 * a field of `DispatchCreation`), and what a packed item's reader computes that hash from
 * (packed.ts).
 */
export const CREATION_FIELDS = [
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
] as const;
