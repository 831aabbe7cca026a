import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const root = path.resolve(import.meta.dirname, '../..');

/**
 * The type errors of code shown to users (README blocks, console snippets), each checked as a
 * module of its own inside the project with its tsconfig, so `@svc-consent/sdk` resolves as in
 * the examples. `prelude` declares what the code expects the app to supply.
 */
export function typeErrors(
  sources: { name: string; text: string }[],
  prelude = 'export {};\n',
): string[] {
  mkdirSync(path.join(root, 'test-results'), { recursive: true });
  const dir = mkdtempSync(path.join(root, 'test-results', 'typecheck-'));
  try {
    const files = sources.map((s) => {
      const file = path.join(dir, `${s.name}.ts`);
      writeFileSync(file, `${s.text}\n${prelude}`);
      return file;
    });
    const config = ts.getParsedCommandLineOfConfigFile(
      path.join(root, 'tsconfig.json'),
      {},
      { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
    )!;
    const program = ts.createProgram(files, config.options);
    return ts.getPreEmitDiagnostics(program).map((d) => {
      const where = d.file ? `${path.basename(d.file.fileName)}: ` : '';
      return where + ts.flattenDiagnosticMessageText(d.messageText, '\n');
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
