import Link from 'next/link';

// Rendered for each request: the widget's URL and site key come from the server's environment.
export const dynamic = 'force-dynamic';

export const metadata = { title: 'Shop: Next.js' };

export default function RootLayout({ children }) {
  const widgetUrl = (process.env.SVC_WIDGET_URL ?? 'http://localhost:8080').replace(/\/$/, '');
  return (
    <html lang="en">
      <head>
        <script
          async
          src={`${widgetUrl}/svc-consent.v1.js`}
          data-site-key={process.env.SVC_SITE_KEY}
        />
      </head>
      <body>
        <nav>
          <Link id="to-home" href="/">
            Home
          </Link>{' '}
          <Link id="to-checkout" href="/checkout">
            Checkout
          </Link>
        </nav>
        {children}
      </body>
    </html>
  );
}
