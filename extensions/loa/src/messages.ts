// Reading OpenClaw's transcript messages, whose shape the SDK types as `unknown`: a message is
// `{ role, content }` with `content` a string or an array of parts (`{ type: 'text', text }`).

interface MessageLike {
  role?: unknown
  content?: unknown
}

export function messageText(message: unknown): string {
  const content = (message as MessageLike | null)?.content
  if (typeof content === 'string') return content
  if (Array.isArray(content)) {
    return content
      .map((part) => (part && typeof part === 'object' && (part as { type?: unknown }).type === 'text' ? (part as { text?: unknown }).text : undefined))
      .filter((text): text is string => typeof text === 'string')
      .join('\n')
  }
  return ''
}

/** The text of the last message with `role`, or undefined when there is none with text. */
export function lastText(messages: readonly unknown[], role: 'user' | 'assistant'): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    if ((messages[i] as MessageLike | null)?.role !== role) continue
    const text = messageText(messages[i]).trim()
    if (text) return text
  }
  return undefined
}
