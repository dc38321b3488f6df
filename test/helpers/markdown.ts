/** Markdown as GitHub renders it, for tests of links: heading anchors and relative links. */

/** The anchor GitHub gives a heading: lower case, punctuation but - and _ dropped, spaces to -. */
export const slug = (heading: string) =>
  heading
    .trim()
    .replace(/`/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\-_ ]/gu, '')
    .replace(/ /g, '-');

/** Every heading anchor of a page (outside code blocks), with -1, -2 for repeats as GitHub does. */
export function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of withoutCode(markdown).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** The link targets of a page (inline links and images), outside code blocks and code spans. */
export function linksOf(markdown: string): string[] {
  const text = withoutCode(markdown).replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]);
}

const withoutCode = (markdown: string) => markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1\s*$/gm, '');
