// What the verifier's decision path can be counted by: promises created per `authorize()` call,
// cached and new tokens, in-process over fixed keys and tokens. Counted with an async hook, they do
// not move with load, the JIT or the garbage collector, and each is an allocation and a microtask
// hop on the request path. Instructions and allocated bytes are not counted: V8's tiering and GC
// timing move both from run to run (see docs/performance.md, "The counted budget").
import { createHash } from 'node:crypto';
import { createHook } from 'node:async_hooks';
import { createService, minter } from '../bench/runtime-rows.js';

export const VERIFIER_COUNT_ROWS = {
  cached: 'authorize(), a cached bearer token',
  miss: 'authorize(), a new RS256 token each',
} as const;

/** Promises per call of each row, over `calls` calls after as many of warm-up. */
export async function countVerifierPromises(calls = 50): Promise<Record<string, number>> {
  const service = await createService('rsaA');
  const mint = minter('rsaA', 'RS256');
  const tokens = Array.from({ length: 3 * calls }, (_, i) => mint(i));
  let promises = 0;
  const hook = createHook({
    init(_id, type) {
      if (type === 'PROMISE') promises++;
    },
  });
  const perCall = async (tokenAt: (i: number) => string): Promise<number> => {
    promises = 0;
    hook.enable();
    try {
      for (let i = 0; i < calls; i++) {
        const decision = await service.authorize(tokenAt(i));
        if (decision.outcome !== 'allow') throw new Error(`denied: ${decision.reason}`);
      }
    } finally {
      hook.disable();
    }
    // Rounded: the hook's own enabling adds one promise to a whole round.
    return Math.round(promises / calls);
  };
  try {
    // Warm-up: the key set loaded, the first tokens cached.
    for (let i = 0; i < calls; i++) await service.allow(tokens[i]!);
    return {
      [VERIFIER_COUNT_ROWS.miss]: await perCall((i) => tokens[calls + i]!),
      [VERIFIER_COUNT_ROWS.cached]: await perCall((i) => tokens[i]!),
    };
  } finally {
    await service.close();
  }
}

/** The verifier's baseline: promises per call of each row. */
export interface VerifierBudget {
  readonly rows: Readonly<Record<string, { readonly promises: number }>>;
}

export const VERIFIER_BUDGET_FILE = 'perf/budget/verifier-counts.json';

/** Its digest for the record in docs/performance.md, as for NGINX's (count-budget.ts). */
export function verifierBudgetDigest(budget: VerifierBudget): string {
  const rows = Object.keys(budget.rows)
    .sort()
    .map((name) => [name, budget.rows[name]!.promises]);
  return createHash('sha256').update(JSON.stringify(rows)).digest('hex').slice(0, 12);
}
