/** A problem in a plugin config that its schema cannot express (a rule across fields). */
export interface ConfigProblem {
  /** Path inside the config, e.g. "keyLength.min"; '' for the config as a whole. */
  field: string;
  message: string;
}
