import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { AppError, type FieldError } from '../errors.js';
import type { Runtime } from '../runtime.js';
import { cancellationReasons } from '../storage/dynamo.js';
import { queryAll } from '../storage/query.js';
import { cached, invalidateCache } from './cache.js';
import { sha256hex } from './crypto.js';
import { newNoticeId, patterns } from './ids.js';
import { LANGUAGES, type NoticeVersion } from './types.js';

/**
 * Notices in the `entities` table, all under pk `APP#{appId}`:
 * - `NOTICE#{noticeId}`: the head, a copy of the latest version (listing reads only heads);
 * - `NOTICEV#{noticeId}#{version:06}`: every version, immutable;
 * - `TRIGGER#{triggerKey}` → noticeId: makes trigger keys unique per app.
 * A change writes the new version and the head in one transaction, conditional on the head's
 * version, so concurrent changes never lose a version.
 */
export type NoticeInput = Omit<
  NoticeVersion,
  'appId' | 'noticeId' | 'version' | 'textHash' | 'createdAt'
>;

const NOTICE_ID = /^ntc_[0-9A-HJKMNP-TV-Z]{26}$/;
const languageSet = new Set<string>(LANGUAGES);

const pk = (appId: string) => `APP#${appId}`;
const headSk = (noticeId: string) => `NOTICE#${noticeId}`;
const versionSk = (noticeId: string, v: number) =>
  `NOTICEV#${noticeId}#${String(v).padStart(6, '0')}`;
const triggerSk = (triggerKey: string) => `TRIGGER#${triggerKey}`;

/** JSON with object keys sorted at every level: equal content, equal text. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonicalJson(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/** Proof of the text shown: SHA-256 of the canonical JSON of purposes and translations. */
export function noticeTextHash(n: Pick<NoticeVersion, 'purposes' | 'translations'>): string {
  return sha256hex(canonicalJson({ purposes: n.purposes, translations: n.translations }));
}

/** Rules across fields of a notice body (each field alone is checked by its schema). */
export function noticeRuleErrors(n: NoticeInput): FieldError[] {
  const errors: FieldError[] = [];
  const names = new Set<string>();
  n.purposes.forEach((p, i) => {
    if (names.has(p.name))
      errors.push({ path: `/purposes/${i}/name`, message: `duplicate purpose "${p.name}"` });
    names.add(p.name);
  });
  for (const lang of Object.keys(n.translations)) {
    if (!languageSet.has(lang))
      errors.push({ path: `/translations/${lang}`, message: 'is not a supported language' });
  }
  for (const lang of new Set(['en', n.defaultLanguage])) {
    if (!Object.hasOwn(n.translations, lang))
      errors.push({ path: `/translations/${lang}`, message: 'is required' });
  }
  for (const [lang, t] of Object.entries(n.translations)) {
    for (const name of names) {
      if (!Object.hasOwn(t.purposes, name))
        errors.push({
          path: `/translations/${lang}/purposes/${name}`,
          message: 'label and description are required for every purpose',
        });
    }
    for (const name of Object.keys(t.purposes)) {
      if (!names.has(name))
        errors.push({
          path: `/translations/${lang}/purposes/${name}`,
          message: 'is not a purpose of this notice',
        });
    }
  }
  if (n.reminderDaysBefore >= n.validityDays)
    errors.push({ path: '/reminderDaysBefore', message: 'must be less than validityDays' });
  return errors;
}

function toNotice(item: Record<string, unknown>): NoticeVersion {
  const { pk: _pk, sk: _sk, ...n } = item;
  return n as unknown as NoticeVersion;
}

/** The reasons a cancelled transaction's conditions failed, by operation index. */
function failedConditions(err: unknown): Set<number> | undefined {
  const failed = cancellationReasons(err)?.failed;
  return failed?.size ? failed : undefined;
}

const triggerTaken = (key: string) =>
  new AppError(
    'SVC_CONFLICT',
    `Trigger key "${key}" is already used by another notice of this app`,
    {
      errors: [{ path: '/triggerKey', message: 'already in use' }],
    },
  );

export async function createNotice(
  rt: Runtime,
  appId: string,
  input: NoticeInput,
): Promise<NoticeVersion> {
  const notice: NoticeVersion = {
    appId,
    noticeId: newNoticeId(),
    version: 1,
    ...input,
    textHash: noticeTextHash(input),
    createdAt: new Date().toISOString(),
  };
  const TableName = rt.tables.entities;
  try {
    await rt.dynamo.doc.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            ConditionCheck: {
              TableName,
              Key: { pk: pk(appId), sk: 'APP' },
              ConditionExpression: 'attribute_exists(pk)',
            },
          },
          {
            Put: {
              TableName,
              Item: { pk: pk(appId), sk: triggerSk(input.triggerKey), noticeId: notice.noticeId },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          {
            Put: {
              TableName,
              Item: { ...notice, pk: pk(appId), sk: headSk(notice.noticeId) },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          {
            Put: {
              TableName,
              Item: { ...notice, pk: pk(appId), sk: versionSk(notice.noticeId, 1) },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
        ],
      }),
    );
  } catch (err) {
    const failed = failedConditions(err);
    if (failed?.has(0)) throw new AppError('SVC_NOT_FOUND', 'Unknown app');
    if (failed?.has(1)) throw triggerTaken(input.triggerKey);
    throw err;
  } finally {
    invalidateCache();
  }
  return notice;
}

/** Content equality, ignoring the fields the service sets. */
const sameContent = (a: NoticeInput, b: NoticeInput) =>
  canonicalJson(contentOf(a)) === canonicalJson(contentOf(b));
function contentOf(n: NoticeInput): NoticeInput {
  const {
    kind,
    triggerKey,
    defaultLanguage,
    purposes,
    translations,
    validityDays,
    reminderDaysBefore,
  } = n;
  return {
    kind,
    triggerKey,
    defaultLanguage,
    purposes,
    translations,
    validityDays,
    reminderDaysBefore,
  };
}

/**
 * Replaces a notice's content with a new version. A body equal to the latest version changes
 * nothing and returns it (PUT is idempotent). A trigger key change moves the trigger item in
 * the same transaction. A concurrent change is retried on the new head (the body is complete).
 */
export async function updateNotice(
  rt: Runtime,
  appId: string,
  noticeId: string,
  input: NoticeInput,
): Promise<NoticeVersion> {
  const TableName = rt.tables.entities;
  for (let attempt = 0; ; attempt++) {
    const head = await getNotice(rt, appId, noticeId);
    if (!head) throw new AppError('SVC_NOT_FOUND', 'Unknown notice');
    if (sameContent(head, input)) return head;
    const next: NoticeVersion = {
      appId,
      noticeId,
      version: head.version + 1,
      ...contentOf(input),
      textHash: noticeTextHash(input),
      createdAt: new Date().toISOString(),
    };
    const moves = head.triggerKey !== input.triggerKey;
    try {
      await rt.dynamo.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Put: {
                TableName,
                Item: { ...next, pk: pk(appId), sk: headSk(noticeId) },
                ConditionExpression: 'version = :prev',
                ExpressionAttributeValues: { ':prev': head.version },
              },
            },
            {
              Put: {
                TableName,
                Item: { ...next, pk: pk(appId), sk: versionSk(noticeId, next.version) },
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            },
            ...(moves
              ? [
                  {
                    Put: {
                      TableName,
                      Item: { pk: pk(appId), sk: triggerSk(input.triggerKey), noticeId },
                      ConditionExpression: 'attribute_not_exists(pk)',
                    },
                  },
                  {
                    Delete: {
                      TableName,
                      Key: { pk: pk(appId), sk: triggerSk(head.triggerKey) },
                      ConditionExpression: 'noticeId = :id',
                      ExpressionAttributeValues: { ':id': noticeId },
                    },
                  },
                ]
              : []),
          ],
        }),
      );
      return next;
    } catch (err) {
      const failed = failedConditions(err);
      if (failed?.has(2)) throw triggerTaken(input.triggerKey);
      if (!failed || attempt >= 2) {
        if (failed)
          throw new AppError('SVC_CONFLICT', 'The notice is being changed concurrently; retry');
        throw err;
      }
    } finally {
      invalidateCache();
    }
  }
}

/** The latest version, or version `version`. */
export async function getNotice(
  rt: Runtime,
  appId: string,
  noticeId: string,
  version?: number,
): Promise<NoticeVersion | undefined> {
  if (!patterns.appId.test(appId) || !NOTICE_ID.test(noticeId)) return undefined;
  const r = await rt.dynamo.doc.send(
    new GetCommand({
      TableName: rt.tables.entities,
      Key: {
        pk: pk(appId),
        sk: version === undefined ? headSk(noticeId) : versionSk(noticeId, version),
      },
      ConsistentRead: true,
    }),
  );
  return r.Item && toNotice(r.Item);
}

/** The latest version of each of the app's notices, oldest notice first. */
export async function listNotices(rt: Runtime, appId: string): Promise<NoticeVersion[]> {
  const items = await queryAll(rt.dynamo.doc, {
    TableName: rt.tables.entities,
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': pk(appId), ':prefix': 'NOTICE#' },
    ConsistentRead: true,
  });
  return items.map(toNotice);
}

/** The latest version of the notice with this trigger key (cached; treat it as read-only). */
export function getNoticeByTriggerKey(
  rt: Runtime,
  appId: string,
  triggerKey: string,
): Promise<NoticeVersion | undefined> {
  if (
    !patterns.appId.test(appId) ||
    !patterns.triggerKey.test(triggerKey) ||
    triggerKey.length > 200
  )
    return Promise.resolve(undefined);
  return cached(rt, `trigger:${appId}:${triggerKey}`, async () => {
    const r = await rt.dynamo.doc.send(
      new GetCommand({
        TableName: rt.tables.entities,
        Key: { pk: pk(appId), sk: triggerSk(triggerKey) },
        ConsistentRead: true,
      }),
    );
    const noticeId = r.Item?.noticeId as string | undefined;
    return noticeId === undefined ? undefined : getNotice(rt, appId, noticeId);
  });
}

/**
 * The union of the purposes of the app's notices (latest versions); undefined when the app has
 * no notice, in which case any well-formed purpose name is allowed. Cached; a fresh Set each call.
 */
export async function declaredPurposes(
  rt: Runtime,
  appId: string,
): Promise<Set<string> | undefined> {
  const names = await cached(rt, `purposes:${appId}`, async () => {
    if (!patterns.appId.test(appId)) return undefined;
    const notices = await listNotices(rt, appId);
    return notices.length ? notices.flatMap((n) => n.purposes.map((p) => p.name)) : undefined;
  });
  return names && new Set(names);
}
