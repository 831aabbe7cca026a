/**
 * `npm start` runs everything in one process, on the embedded Kafka and DynamoDB Local unless
 * KAFKA_BROKERS and AWS_REGION (or DYNAMODB_ENDPOINT) are set. `--role` splits it for several
 * copies sharing one Kafka and one DynamoDB (bin/roles.ts). Production runs `bin/serve.ts`.
 *
 * Loading the modules takes seconds under tsx: a signal meanwhile ends the process at once,
 * exit 0, nothing having started. From `main` on, its own handling stops what has started.
 */
const quit = () => process.exit(0);
process.on('SIGINT', quit).on('SIGTERM', quit);
const { main } = await import('./process.js');
const { role, roleModules } = await import('./roles.js');
process.off('SIGINT', quit).off('SIGTERM', quit);
await main(roleModules(role('npm start')));
