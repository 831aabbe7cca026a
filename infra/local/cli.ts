import { ensureDynamoLauncher } from './dynamodb.js';
import { StackError } from './errors.js';
import { ensureJars } from './fetch.js';
import { stackPaths } from './paths.js';
import { downStack, statusStack, upStack } from './stack.js';

const log = (m: string) => process.stdout.write(`${m}\n`);
const envPort = (name: string) => (process.env[name] ? Number(process.env[name]) : undefined);

async function run(cmd: string | undefined): Promise<void> {
  switch (cmd) {
    case 'fetch': {
      const p = stackPaths();
      ensureJars('kafka', p.jars.kafka, log);
      ensureJars('dynamodb', p.jars.dynamodb, log);
      ensureDynamoLauncher(p.jars.dynamodb);
      log(`jars ready in ${p.root}/jars`);
      return;
    }
    case 'up': {
      const kafkaPort = envPort('SVC_KAFKA_PORT');
      const kafkaControllerPort = envPort('SVC_KAFKA_CONTROLLER_PORT');
      const dynamoPort = envPort('SVC_DYNAMODB_PORT');
      // The stack runs on in the background after this command ends.
      const s = await upStack({
        mode: 'persistent',
        outlive: true,
        log,
        ...(kafkaPort ? { kafkaPort } : {}),
        ...(kafkaControllerPort ? { kafkaControllerPort } : {}),
        ...(dynamoPort ? { dynamoPort } : {}),
      });
      log(`KAFKA_BROKERS=${s.kafkaBrokers}`);
      log(`DYNAMODB_ENDPOINT=${s.dynamoEndpoint}`);
      log('stack is running in the background; `npm run infra:down` stops it');
      return;
    }
    case 'down':
      await downStack(stackPaths(), log);
      return;
    case 'status': {
      const s = await statusStack();
      log(`kafka:    ${s.kafka}`);
      log(`dynamodb: ${s.dynamodb}`);
      return;
    }
    default:
      throw new StackError('usage: tsx infra/local/cli.ts up|down|status|fetch');
  }
}

try {
  await run(process.argv[2]);
  process.exit(0);
} catch (err) {
  process.stderr.write(
    `error: ${err instanceof StackError ? err.message : (err as Error).message}\n`,
  );
  process.exit(1);
}
