/** A problem in a plugin config that its schema cannot express (a rule across fields). */
export interface ConfigProblem {
  /** Path inside the config, e.g. "keyLength.min"; '' for the config as a whole. */
  field: string;
  message: string;
}

/** A problem in a route table: of an entry (its id) or of the table, at a field. */
export interface TableError {
  /** route/… or upstream/… id, when the error belongs to one. */
  id?: string;
  /** JSON path inside the entry (or the table when id is absent), e.g. plugins[0].config.add.headers[1]. */
  field: string;
  message: string;
}
