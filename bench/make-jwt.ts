/**
 * For bench/chain.sh: an RS256 key pair (the public key as PEM in DIR/jwt-public.pem) and a
 * token signed with it, valid for two hours, printed on stdout.
 * Usage: node bench/make-jwt.ts DIR
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportSPKI, generateKeyPair, SignJWT } from 'jose';

const dir = process.argv[2];
if (!dir) throw new Error('usage: node bench/make-jwt.ts DIR');
const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
writeFileSync(join(dir, 'jwt-public.pem'), await exportSPKI(publicKey));
const now = Math.floor(Date.now() / 1000);
const token = await new SignJWT({
  iss: 'https://bench.idp/',
  aud: 'bench',
  sub: 'bench-client',
  exp: now + 7200,
})
  .setProtectedHeader({ alg: 'RS256' })
  .sign(privateKey);
process.stdout.write(token);
