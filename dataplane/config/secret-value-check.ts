/**
 * Whether a Secret's value (base64, as the controller resolves it) reads as a plugin needs it:
 * a key's PEM, a CA bundle, a CRL. Manifest checks call it at the controller and at the data
 * plane's door, and the door checks each route's copy of a plugin's config: 5,000 routes sharing
 * one jwt plugin would parse its PEM 5,000 times per push (~1.5 s for an RSA key). So the
 * verdict is remembered by the reading and the value (bounded: forgotten all at once when full).
 */
const MAX_REMEMBERED = 1024;
const remembered = new Map<string, string | null>();

/** null when `read` takes the value; else its error's message. */
export function secretValueProblem(
  reading: string,
  value: string,
  read: (bytes: Buffer) => void,
): string | null {
  const key = `${reading}\n${value}`;
  const known = remembered.get(key);
  if (known !== undefined) return known;
  let problem: string | null = null;
  try {
    read(Buffer.from(value, 'base64'));
  } catch (err) {
    problem = (err as Error).message;
  }
  if (remembered.size >= MAX_REMEMBERED) remembered.clear();
  remembered.set(key, problem);
  return problem;
}
