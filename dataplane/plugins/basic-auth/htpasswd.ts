/**
 * htpasswd entries, read and verified as Apache's htpasswd writes them and nginx's auth_basic
 * reads them: bcrypt ($2a$, $2b$, $2y$; bcryptjs), MD5-crypt ($apr1$, $1$; apache-md5) and SHA-1
 * ({SHA}, base64). Other formats (crypt(3) DES, {SSHA}, plain text) are not verified: such a line
 * is reported by `read` and its user never authenticated. Pure but for the hashing.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import md5crypt from 'apache-md5';
import bcrypt from 'bcryptjs';

export type HashKind = 'bcrypt' | 'md5' | 'sha1';

export function hashKind(hash: string): HashKind | undefined {
  if (/^\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}$/.test(hash)) return 'bcrypt';
  if (/^\$(apr1|1)\$[^$]{0,8}\$[./A-Za-z0-9]{22}$/.test(hash)) return 'md5';
  if (/^\{SHA\}[A-Za-z0-9+/]{27}=$/.test(hash)) return 'sha1';
  return undefined;
}

/** An htpasswd file's users and hashes (the first line of a user wins, as nginx reads it), and the lines not read. */
export function readHtpasswd(text: string): { users: Map<string, string>; problems: string[] } {
  const users = new Map<string, string>();
  const problems: string[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const colon = line.indexOf(':');
    const user = colon > 0 ? line.slice(0, colon) : '';
    // Apache's htpasswd may add ":comment" after the hash.
    const hash = colon > 0 ? line.slice(colon + 1).split(':')[0] : '';
    if (user === '' || hashKind(hash) === undefined) {
      problems.push(
        `line ${i + 1}: ${user === '' ? 'not user:hash' : `the hash of ${user} is not bcrypt, apr1/MD5 or {SHA}`}`,
      );
      return;
    }
    if (!users.has(user)) users.set(user, hash);
  });
  return { users, problems };
}

/** Whether the password is the hash's; false for a hash of a kind not verified. */
export async function verifyPassword(password: string, hash: string): Promise<boolean> {
  switch (hashKind(hash)) {
    case 'bcrypt':
      return bcrypt.compare(password, hash);
    case 'md5':
      return sameText(md5crypt(password, hash), hash);
    case 'sha1':
      return sameText(`{SHA}${createHash('sha1').update(password, 'utf8').digest('base64')}`, hash);
    default:
      return false;
  }
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
