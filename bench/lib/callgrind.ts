/**
 * Reading valgrind's callgrind dumps (bench/instructions.ts): a dump's instructions, split by
 * what ran.
 */
import fs from 'node:fs';

/** Callgrind's function names, sorted into what ran (first match wins; the rest is "other"). */
export const PARTS: [string, RegExp][] = [
  ['js', /^0x[0-9a-f]+ \[\?\?\?\]$/],
  ['builtins', /Builtins_/],
  [
    'gc',
    /Scaveng|Marking|Marker|Sweep|Evacuat|IteratePointers|SizeFromMap|RememberedSet|heap::|Heap::|GCTracer|Compactor/,
  ],
  [
    'compiler',
    /compiler::|turboshaft|maglev|baseline::|Zone::|Parser::|Scanner::|AstValueFactory|Bytecode|RelocInfo|FrameTranslation|SourcePosition|Assembler|Deoptimiz/,
  ],
  ['crypto', /libcrypto|sha\d+_|OPENSSL|EVP_|ossl_|CRYPTO_|RAND_|md5_|node::crypto/],
  ['node', /node::|uv_|uv__|llhttp/],
  ['libc', /libc\.so|libc-|ld-linux|libstdc\+\+|libm\./],
];

/**
 * Each function's own instructions in a dump (its self cost: what it ran, not what it called),
 * keyed by `name [object file]`, and the dump's total. Read from callgrind's format itself, not
 * callgrind_annotate: on a dump taken while functions are running, callgrind_annotate counts what
 * the functions on the stack called as their own. The format: `fn=(id) name` starts a function
 * (`fn=(id)` again later), `ob=` names its object file; a line of numbers is a cost (position, Ir)
 * of the current function, except the line after `calls=`, which is the cost of that call, the
 * callee's (counted under the callee).
 */
export function selfCosts(file: string): { total: number; functions: Map<string, number> } {
  const functions = new Map<string, number>();
  let total = 0;
  const names = new Map<string, string>();
  const named = (kind: string, v: string) => {
    const m = /^\((\d+)\)(?: (.*))?$/.exec(v);
    if (m === null) return v;
    if (m[2] !== undefined) names.set(kind + m[1], m[2]);
    return names.get(kind + m[1]) ?? v;
  };
  let object = '';
  let fn = '';
  let callCost = false;
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('fn=')) fn = `${named('fn', line.slice(3))} [${object}]`;
    else if (line.startsWith('ob=')) object = named('ob', line.slice(3));
    // A callee's name may be defined here first: ids are shared by fn= and cfn=, ob= and cob=.
    else if (line.startsWith('cob=')) named('ob', line.slice(4));
    else if (line.startsWith('cfn=')) named('fn', line.slice(4));
    else if (line.startsWith('calls=')) callCost = true;
    else if (line.startsWith('totals:')) total = Number(line.slice(7));
    else if (/^[+\-*\d]/.test(line)) {
      if (callCost) callCost = false;
      else functions.set(fn, (functions.get(fn) ?? 0) + Number(line.split(' ')[1] ?? 0));
    }
  }
  return { total, functions };
}

/** A dump's instructions: the total and the parts (PARTS), from the self cost of each function. */
export function parts(file: string): Record<string, number> {
  const { total, functions } = selfCosts(file);
  const sums: Record<string, number> = { total, other: 0 };
  for (const [name] of PARTS) sums[name] = 0;
  for (const [what, n] of functions) sums[PARTS.find(([, re]) => re.test(what))?.[0] ?? 'other'] += n;
  return sums;
}
