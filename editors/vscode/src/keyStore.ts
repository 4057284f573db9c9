// Where this editor keeps the API key, as the server is told in the initialization option
// `apiKeyStore` (docs/protocol.md): its messages about a missing or refused key then name
// VS Code's secret storage and **Seri: Set API Key**, not a variable the user never set.
// No `vscode` import.

/** `apiKeyStore`: the store, the palette command that writes it, and whether the key in
 * the server's `SERI_API_KEY` is the stored one. */
export interface KeyStoreOption {
  name: string;
  command: string;
  inUse: boolean;
}

/** The option for a server whose `SERI_API_KEY` holds the stored key (`inUse`) or not. */
export function keyStoreOption(inUse: boolean): KeyStoreOption {
  return { name: "VS Code's secret storage", command: 'Seri: Set API Key', inUse };
}
