// The result file every suite writes, read by test/run.mjs and the pytest module.

import * as fs from 'fs';

export interface TestResult {
  title: string;
  state: 'passed' | 'failed' | 'skipped';
  durationMs: number;
  error?: string;
}

export function recordResults(file: string, results: TestResult[]): void {
  fs.writeFileSync(file, JSON.stringify({ tests: results }, null, 2));
}
