import { fileURLToPath } from 'node:url';
import path from 'node:path';

/** The project root (two levels above this file). */
export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface StackPaths {
  root: string;
  jars: { kafka: string; dynamodb: string };
  data: { kafka: string; dynamodb: string };
  run: string;
  logs: string;
}

/** Layout of the git-ignored working folder (default `.svc/` in the project root). */
export function stackPaths(
  root = process.env.SVC_HOME ?? path.join(projectRoot, '.svc'),
): StackPaths {
  return {
    root,
    jars: {
      kafka: path.join(root, 'jars', 'kafka'),
      dynamodb: path.join(root, 'jars', 'dynamodb'),
    },
    data: {
      kafka: path.join(root, 'data', 'kafka'),
      dynamodb: path.join(root, 'data', 'dynamodb'),
    },
    run: path.join(root, 'run'),
    logs: path.join(root, 'logs'),
  };
}
