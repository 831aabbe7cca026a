import { defineEventHandler, readRawBody } from 'h3';

// The app's backend for the signup form: prints the fields as one JSON line and answers them.
export default defineEventHandler(async (event) => {
  const fields = Object.fromEntries(new URLSearchParams((await readRawBody(event)) ?? ''));
  console.log(JSON.stringify({ signup: fields }));
  return fields;
});
