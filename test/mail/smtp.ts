import type { AddressInfo } from 'node:net';
import { simpleParser, type AddressObject, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

/** A real SMTP server for one test file: it checks credentials and keeps what it receives. */
export async function startSmtp(o: {
  user: string;
  pass: string;
  /** An SMTP reply code to refuse a recipient with (e.g. 550, 451). */
  refuse?: (rcpt: string) => number | undefined;
}) {
  const received: ParsedMail[] = [];
  /** When each message began to arrive (its DATA command), by message. */
  const receivedAt = new WeakMap<ParsedMail, number>();
  const server = new SMTPServer({
    hideSTARTTLS: true,
    allowInsecureAuth: true,
    authMethods: ['PLAIN', 'LOGIN'],
    logger: false,
    onAuth(auth, _session, cb) {
      if (auth.username === o.user && auth.password === o.pass) cb(null, { user: o.user });
      else cb(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
    onRcptTo(address, _session, cb) {
      const code = o.refuse?.(address.address);
      if (code) cb(Object.assign(new Error(`refused ${address.address}`), { responseCode: code }));
      else cb();
    },
    onData(stream, _session, cb) {
      const at = Date.now();
      simpleParser(stream).then(
        (m) => {
          receivedAt.set(m, at);
          received.push(m);
          cb();
        },
        (err: Error) => cb(err),
      );
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.server.address() as AddressInfo).port;
  return {
    port,
    url: `smtp://${encodeURIComponent(o.user)}:${encodeURIComponent(o.pass)}@127.0.0.1:${port}`,
    received,
    receivedAt: (m: ParsedMail) => receivedAt.get(m),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export function addresses(a: AddressObject | AddressObject[] | undefined): string[] {
  const list = Array.isArray(a) ? a : a ? [a] : [];
  return list.flatMap((x) => x.value.map((v) => v.address ?? ''));
}

/** The 'Manage consent' link of a message, from its HTML, checked against the text part. */
export function manageLink(m: ParsedMail): string {
  const html = typeof m.html === 'string' ? m.html : '';
  const fromHtml = /<a href="([^"]+)">Manage consent<\/a>/.exec(html)?.[1]?.replace(/&amp;/g, '&');
  const fromText = /Manage consent: (\S+)/.exec(m.text ?? '')?.[1];
  if (!fromHtml || fromHtml !== fromText) throw new Error(`no consistent Manage consent link`);
  return fromHtml;
}
