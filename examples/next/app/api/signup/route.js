// The app's backend for the signup form: prints the fields as one JSON line and answers them.
export async function POST(request) {
  const fields = Object.fromEntries(await request.formData());
  console.log(JSON.stringify({ signup: fields }));
  return Response.json(fields);
}
