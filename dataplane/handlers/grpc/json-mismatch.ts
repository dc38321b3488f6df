/**
 * A request value that does not fit the message; `field` is its JSON path ("item.tags[2]").
 * Answered 400 with `code`: SLC_ERR_BAD_REQUEST, or SLC_ERR_JSON_DUPLICATE_KEY for a key given twice.
 */
export class JsonMismatch extends Error {
  readonly field: string;
  readonly code: 'SLC_ERR_BAD_REQUEST' | 'SLC_ERR_JSON_DUPLICATE_KEY';
  constructor(field: string, message: string, code: JsonMismatch['code'] = 'SLC_ERR_BAD_REQUEST') {
    super(`${field || 'the body'}: ${message}`);
    this.field = field;
    this.code = code;
  }
}
