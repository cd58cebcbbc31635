import type { ContentBlock } from '@agentclientprotocol/sdk';

/**
 * An ACP prompt (content blocks) as the one message Parley's back ends take. Text is kept as is;
 * a resource the editor embedded (a file's text) is inlined in a fenced block under its URI; a
 * link is kept as a Markdown link. Images and audio are refused (the agent does not advertise
 * them), with a message that says so rather than silently dropping them.
 */
export class PromptContentError extends Error {}

export function promptText(blocks: readonly ContentBlock[]): string {
  const parts: string[] = [];
  for (const block of blocks) {
    switch (block.type) {
      case 'text':
        parts.push(block.text);
        break;
      case 'resource_link':
        parts.push(`[@${block.name}](${block.uri})`);
        break;
      case 'resource': {
        const resource = block.resource;
        if ('text' in resource) parts.push(`\n<resource uri="${resource.uri}">\n${resource.text}\n</resource>\n`);
        else
          throw new PromptContentError(
            `The resource ${resource.uri} is binary; Parley takes text resources only. Attach it as text or as a link.`,
          );
        break;
      }
      case 'image':
      case 'audio':
        throw new PromptContentError(
          `Parley's agents take text only; this prompt holds ${block.type === 'image' ? 'an image' : 'audio'}. Remove it and try again.`,
        );
    }
  }
  const text = parts.join('');
  if (text.trim() === '') throw new PromptContentError('The prompt is empty: send at least one text block.');
  return text;
}
