/**
 * The attributes of an item that carries a derived due entry (derived.ts), apart from the code
 * that reads and writes them, so the stored shapes of the domain can name them without
 * depending on the runtime.
 */
export interface DueAttributes {
  duepk: string;
  duesk: string;
  duekind: string;
}

/** ...and, while a sweeper holds it, its lease. */
export interface DueLease {
  dueLeaseUntil: number;
  dueLeaseToken: string;
}
