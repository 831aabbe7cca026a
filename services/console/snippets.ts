import type { App } from '../../shared/domain/types.js';

/**
 * The copy-paste snippets of an app's page: the widget's script tag, the dashboard's element,
 * the SDK's receiver and client in Node, and webhook verification with the Standard Webhooks
 * libraries in Python and Go (docs/widget.md; docs/webhooks.md,
 * Verifying a webhook in your server). No credential is in them: each reads it from the
 * environment (SVC_SECRET_KEY, used as a raw key; SVC_API_KEY).
 */

export interface Snippet {
  id: string;
  label: string;
  text: string;
}

export function snippets(app: App, baseUrl: string): Snippet[] {
  const base = baseUrl.replace(/\/+$/, '');
  return [
    {
      id: 'snippet-script',
      label: 'Widget script tag (in the page’s <head>)',
      text: `<script async src="${base}/svc-consent.v1.js" data-site-key="${app.siteKey}"></script>`,
    },
    {
      id: 'snippet-dashboard',
      label: 'Consent dashboard (data-token: a principal token your server minted)',
      text: `<div id="consent-detail-root" data-reference-id="SVC-REF-…" data-token="svc_pt_…"></div>`,
    },
    {
      id: 'snippet-node',
      label: 'Receive webhooks in Node with the SDK (clients/typescript, @svc-consent/sdk)',
      text: `import express from 'express';
import { expressWebhooks } from '@svc-consent/sdk';

const app = express();
// Verifies the signature on the raw body, drops an event older than the last one handled for
// its consent, calls your handler, and posts the postback from what it returns.
app.post('/webhooks', expressWebhooks({
  secretKey: process.env.SVC_SECRET_KEY!,
  handler: async (event) => {
    await apply(event.type, event.data.referenceId, event.data.state); // your app's side
    return { status: 'processed' }; // or { status: 'failed', remark: '…' }
  },
}));`,
    },
    {
      id: 'snippet-client',
      label: 'Record a consent in Node with the SDK (an API key with consents:write)',
      text: `import { createClient } from '@svc-consent/sdk';

const svc = createClient({ baseUrl: '${base}', apiKey: process.env.SVC_API_KEY! });
// Retried on network errors, 429 and 5xx with one Idempotency-Key, so it is applied once.
const record = await svc.post('/api/v1/consents', {
  body: { userId: 'user-42', email: 'asha@example.com', consents: { marketing: true } },
});`,
    },
    {
      id: 'snippet-python',
      label: 'Verify a webhook in Python (pip standardwebhooks)',
      text: `import os
from flask import Flask, request
from standardwebhooks.webhooks import Webhook

wh = Webhook(os.environ["SVC_SECRET_KEY"].encode())  # bytes: the raw key
app = Flask(__name__)

@app.post("/webhooks")
def webhooks():
    event = wh.verify(request.get_data(), dict(request.headers))  # raises on a bad signature
    queue(event, request.headers["x-svc-dispatch-id"])  # keep the dispatch id for the postback
    return {"received": True}`,
    },
    {
      id: 'snippet-go',
      label: 'Verify a webhook in Go (github.com/standard-webhooks/standard-webhooks/libraries/go)',
      text: `import (
	"io"
	"net/http"
	"os"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

var wh, _ = standardwebhooks.NewWebhookRaw([]byte(os.Getenv("SVC_SECRET_KEY")))

func webhooks(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil || wh.Verify(body, r.Header) != nil {
		http.Error(w, "bad signature", http.StatusBadRequest)
		return
	}
	queue(body, r.Header.Get("X-SVC-Dispatch-ID")) // keep the dispatch id for the postback
	w.WriteHeader(http.StatusOK)
}`,
    },
  ];
}
