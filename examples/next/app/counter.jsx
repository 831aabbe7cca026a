'use client';

import { useState } from 'react';

/** A gated button whose click handler (run only once the visitor has consented) counts. */
export default function Counter({ id, trigger, label, done }) {
  const [count, setCount] = useState(0);
  return (
    <>
      <button id={id} type="button" svc-trigger={trigger} onClick={() => setCount(count + 1)}>
        {label}
      </button>
      <p id={done.toLowerCase()}>{`${done}: ${count}`}</p>
    </>
  );
}
