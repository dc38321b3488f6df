/** apache-md5 ships no types: its one function, MD5-crypt of a password with the salt of a "$apr1$…" or "$1$…" hash. */
declare module 'apache-md5' {
  export default function md5crypt(password: string, salt?: string): string;
}
