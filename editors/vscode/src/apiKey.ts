// The provider's API key lives in VS Code's SecretStorage or in the environment, never in
// settings. The server gets it through the environment of its process, so it appears in
// no settings file and in no trace of the initialize request.

import * as vscode from 'vscode';

const SECRET = 'seri.provider.apiKey';
/** Variables the server reads a key from, in its order. */
export const KEY_VARIABLES = ['SERI_API_KEY', 'OPENROUTER_API_KEY'] as const;

export class ApiKeyStore {
  constructor(private readonly secrets: vscode.SecretStorage) {}

  /** The key saved with "Seri: Set API Key", if any. */
  async stored(): Promise<string | undefined> {
    const key = await this.secrets.get(SECRET);
    return key ? key : undefined;
  }

  async store(key: string): Promise<void> {
    await this.secrets.store(SECRET, key);
  }

  async remove(): Promise<void> {
    await this.secrets.delete(SECRET);
  }

  /** The server's environment: ours, with a stored key winning over an inherited one. */
  async serverEnvironment(base: NodeJS.ProcessEnv = process.env): Promise<NodeJS.ProcessEnv> {
    const key = await this.stored();
    return key ? { ...base, SERI_API_KEY: key } : { ...base };
  }

  /** Where the server will find a key: 'secret', 'environment' or undefined. */
  async source(env: NodeJS.ProcessEnv = process.env): Promise<'secret' | 'environment' | undefined> {
    if (await this.stored()) {
      return 'secret';
    }
    return KEY_VARIABLES.some((name) => env[name]) ? 'environment' : undefined;
  }
}
