/**
 * Per-request state a plugin owns: a plugin makes a `Slot<T>` once, in its own folder, and reads
 * and writes it on the request's context; the core (context, chain runner, access log) knows
 * slots, never the plugins that made them.
 *
 * Optimization: a slot is an index into one array per request, made on the first write (a
 * request no slotted plugin touches allocates nothing; a Map per request, or a field per
 * plugin on the context, cost more or named plugins in the core). The array is plain: reading
 * an index is as cheap as reading a field.
 */

/** What holds a request's slots (the RequestContext). */
export interface SlotHolder {
  slots: unknown[] | null;
}

/** Slots whose value the access log shows, in the order they were made. */
const logged: Slot<unknown>[] = [];
let made = 0;

export class Slot<T> {
  readonly index: number;
  /** For messages and debugging. */
  readonly name: string;
  /** The access-log field that shows the value; null: not logged. */
  readonly log: string | null;

  constructor(name: string, o: { log?: string } = {}) {
    this.index = made++;
    this.name = name;
    this.log = o.log ?? null;
    if (this.log !== null) logged.push(this as Slot<unknown>);
  }

  /** The value set on this request; undefined when none was. */
  get(h: SlotHolder): T | undefined {
    const slots = h.slots;
    return slots === null ? undefined : (slots[this.index] as T | undefined);
  }

  set(h: SlotHolder, value: T): void {
    let slots = h.slots;
    if (slots === null) {
      slots = new Array(made);
      h.slots = slots;
    }
    slots[this.index] = value;
  }
}

/** A new slot; `log`: the access-log field that shows its value (docs/observability.md, "Access logs"). */
export const slot = <T>(name: string, o: { log?: string } = {}): Slot<T> => new Slot<T>(name, o);

/** The slots the access log shows. */
export const loggedSlots = (): readonly Slot<unknown>[] => logged;
