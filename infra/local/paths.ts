import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

/**
 * The project root: the nearest folder above this file holding package.json (two levels up in
 * the sources, three in the production build's `dist/`).
 */
export const projectRoot = findRoot(path.dirname(fileURLToPath(import.meta.url)));

function findRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) return path.resolve(from, '..', '..');
  }
}

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
