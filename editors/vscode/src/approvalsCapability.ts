// The client capability that moves the server's questions into the chat.

import { ClientCapabilities, FeatureState, StaticFeature } from 'vscode-languageclient/node';

/**
 * Announces `experimental.seri.approvals`: the server then asks its questions (a write,
 * a memory line, running the checks) with `seri/approve`, which the chat shows as cards
 * with the change to review, rather than with `window/showMessageRequest` (a toast).
 */
export class ChatApprovals implements StaticFeature {
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    const experimental = (capabilities.experimental ?? {}) as Record<string, unknown>;
    capabilities.experimental = { ...experimental, seri: { approvals: true } };
  }

  initialize(): void {}

  getState(): FeatureState {
    return { kind: 'static' };
  }

  clear(): void {}
}
