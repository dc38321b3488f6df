/**
 * The documentation's own links: every relative link of README.md, CHANGELOG.md and docs/*.md
 * names a file of the repository, and a #anchor a heading of that page (as GitHub renders it).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anchorsOf, linksOf, slug } from '../helpers/markdown.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const PAGES = [
  'README.md',
  'CHANGELOG.md',
  ...readdirSync(join(ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md'))
    .map((f) => join('docs', f)),
];
const read = (file: string) => readFileSync(file, 'utf8');

/** The broken links of one page: relative ones whose file or heading does not exist. */
function broken(page: string): string[] {
  const from = join(ROOT, page);
  return linksOf(read(from)).flatMap((link) => {
    if (/^[a-z][a-z0-9+.-]*:/i.test(link)) return []; // https:, mailto:: not ours to check here
    const [path, anchor] = link.split('#', 2);
    const target = path ? join(dirname(from), decodeURIComponent(path)) : from;
    if (!existsSync(target)) return [`${page}: ${link} (no ${relative(ROOT, target)})`];
    if (anchor === undefined || statSync(target).isDirectory() || !target.endsWith('.md')) return [];
    return anchorsOf(read(target)).has(anchor) ? [] : [`${page}: ${link} (no heading #${anchor})`];
  });
}

describe('documentation links', () => {
  it('reads the pages: README, CHANGELOG and docs/', () => {
    expect(PAGES).toEqual(expect.arrayContaining(['README.md', 'CHANGELOG.md', 'docs/upgrading.md']));
  });

  it.each(PAGES)('%s: every relative link and anchor resolves', (page) => {
    expect(broken(page)).toEqual([]);
  });

  it('the check finds a missing file, a missing heading, and reads anchors as GitHub does', () => {
    expect(slug('The `sluice crds` command (v2)')).toBe('the-sluice-crds-command-v2');
    expect(anchorsOf('# A\n## A\n```\n# not a heading\n```\n')).toEqual(new Set(['a', 'a-1']));
    expect(linksOf('[x](a.md#b) `[y](c.md)` [z](https://e.com)')).toEqual(['a.md#b', 'https://e.com']);
    const page = join('docs', 'upgrading.md');
    const text = read(join(ROOT, page));
    expect(text).toContain('(../CHANGELOG.md)');
    expect(anchorsOf(read(join(ROOT, 'README.md'))).has('in-a-cluster')).toBe(true);
    expect(anchorsOf(read(join(ROOT, 'README.md'))).has('not-a-heading')).toBe(false);
  });
});
