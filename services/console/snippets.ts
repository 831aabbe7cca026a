import type { App } from '../../shared/domain/types.js';

/**
 * The copy-paste snippets of an app's page: the widget's script tag, the dashboard's element
 * and webhook verification with the Standard Webhooks libraries (docs/api.md, The browser
 * widget and dashboard; docs/webhooks.md, Verifying a webhook in your server). The secret key
 * is never in them: each reads it from SVC_SECRET_KEY, used as a raw key.
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
      label: 'Verify a webhook in Node (npm standardwebhooks)',
      text: `import express from 'express';
import { Webhook } from 'standardwebhooks';

const wh = new Webhook(Buffer.from(process.env.SVC_SECRET_KEY), { format: 'raw' });
const app = express();
app.post('/webhooks', express.raw({ type: 'application/json' }), (req, res) => {
  const event = wh.verify(req.body, req.headers); // throws on a bad signature or an old timestamp
  res.json({ received: true }); // answer 2xx within 10 s, then do the work
  queue(event, req.get('x-svc-dispatch-id')); // keep the dispatch id for the postback
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
