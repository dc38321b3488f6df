/**
 * ip-restriction config: which client addresses may use the route, as CIDR ranges or single
 * addresses, IPv4 and IPv6 (config/cidr.ts). `deny` refuses its ranges; `allow`, when given,
 * refuses every address outside it; an address in both is refused (nginx's deny rules come
 * first, as ingress-nginx writes its denylist-source-range and whitelist-source-range). The
 * client address is the one the data plane reads for every request (the socket peer, or behind
 * --trusted-proxies the first untrusted X-Forwarded-For hop), as rate-limiting's limitBy ip.
 */
import { type Static, Type } from '@sinclair/typebox';
import { cidrProblem } from '../../config/cidr.ts';
import type { ConfigProblem } from '../../config/config-problem.ts';
import { pluginManifest } from '../../config/manifest.ts';

const NO_LIST = 'set allow or deny (with neither, every address may)';

const ranges = (description: string) =>
  Type.Optional(
    Type.Array(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: 'An IP address or CIDR range: "10.0.0.0/8", "192.0.2.7", "2001:db8::/32".',
      }),
      { minItems: 1, maxItems: 1024, description },
    ),
  );

export const IpRestrictionConfig = Type.Object(
  {
    allow: ranges('Only these addresses may use the route (absent: every address not denied).'),
    deny: ranges('These addresses are refused, even when allow holds them.'),
  },
  {
    additionalProperties: false,
    description: 'Client addresses allowed or refused; a refused request gets 403.',
    'x-kubernetes-validations': [{ rule: 'has(self.allow) || has(self.deny)', message: NO_LIST }],
  },
);
export type IpRestrictionConfig = Static<typeof IpRestrictionConfig>;

/** What the schema cannot say: each entry an address or range, named by its field. */
export function checkIpRestrictionConfig(c: IpRestrictionConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  if (c.allow === undefined && c.deny === undefined) problems.push({ field: '', message: NO_LIST });
  for (const list of ['allow', 'deny'] as const)
    c[list]?.forEach((entry, i) => {
      const problem = cidrProblem(entry);
      if (problem) problems.push({ field: `${list}[${i}]`, message: `${JSON.stringify(entry)} ${problem}` });
    });
  return problems;
}

export const manifest = pluginManifest({
  name: 'ip-restriction',
  phase: 'access',
  schema: IpRestrictionConfig,
  checks: checkIpRestrictionConfig,
});
