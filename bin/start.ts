import { main } from './process.js';
import { role, roleModules } from './roles.js';

/**
 * `npm start` runs everything in one process, on the embedded Kafka and DynamoDB Local unless
 * KAFKA_BROKERS and AWS_REGION (or DYNAMODB_ENDPOINT) are set. `--role` splits it for several
 * copies sharing one Kafka and one DynamoDB (bin/roles.ts). Production runs `bin/serve.ts`.
 */
await main(roleModules(role('npm start')));
