/** A request value that does not fit the message; `field` is its JSON path ("item.tags[2]"). */
export class JsonMismatch extends Error {
  readonly field: string;
  constructor(field: string, message: string) {
    super(`${field || 'the body'}: ${message}`);
    this.field = field;
  }
}
