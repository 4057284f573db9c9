// Runs the integration suites inside the real extension host (VS Code loads this module
// through `extensionTestsPath` and calls `run`), and the unit suites in plain Node
// (test/run.mjs calls `runSuites`). Results go to $SERI_TEST_RESULTS_DIR/NAME.json and
// a readable NAME.log beside it, because the extension host's console is not the
// terminal that started the tests.

import * as fs from 'fs';
import * as path from 'path';
import Mocha from 'mocha';

import { TestResult, recordResults } from './results';

export function run(): Promise<void> {
  return runSuites(path.join(__dirname, 'suite'), 'integration', 60_000);
}

export function runSuites(suiteDir: string, name: string, timeoutMs = 5_000): Promise<void> {
  const resultsDir = process.env.SERI_TEST_RESULTS_DIR ?? path.resolve(__dirname, '..', '..', '.test-work');
  fs.mkdirSync(resultsDir, { recursive: true });
  const logFile = path.join(resultsDir, `${name}.log`);
  fs.writeFileSync(logFile, '');
  const log = (line: string): void => fs.appendFileSync(logFile, `${line}\n`);

  const mocha = new Mocha({ ui: 'tdd', timeout: timeoutMs, reporter: 'dot', color: false });
  const grep = process.env.SERI_TEST_GREP;
  if (grep) {
    mocha.grep(grep);
  }
  for (const file of fs.readdirSync(suiteDir).sort()) {
    if (file.endsWith('.test.js')) {
      mocha.addFile(path.join(suiteDir, file));
    }
  }

  const results: TestResult[] = [];
  return new Promise((resolve, reject) => {
    const runner = mocha.run((failures) => {
      recordResults(path.join(resultsDir, `${name}.json`), results);
      log(`${results.filter((r) => r.state === 'passed').length} passed, ${failures} failed`);
      if (failures > 0) {
        reject(new Error(`${failures} ${name} tests failed`));
      } else {
        resolve();
      }
    });
    runner.on('pending', (test) => {
      results.push({ title: test.fullTitle(), state: 'skipped', durationMs: 0 });
      log(`SKIP ${test.fullTitle()}`);
    });
    runner.on('pass', (test) => {
      results.push({ title: test.fullTitle(), state: 'passed', durationMs: test.duration ?? 0 });
      log(`PASS ${test.fullTitle()} (${test.duration ?? 0} ms)`);
    });
    runner.on('fail', (test, error: Error) => {
      const message = error?.stack ?? String(error);
      results.push({ title: test.fullTitle(), state: 'failed', durationMs: test.duration ?? 0, error: message });
      log(`FAIL ${test.fullTitle()}\n${message}`);
    });
  });
}
