/**
 * The HTTP grammar the gateway checks names and values against, written once. Each rule comes as
 * a regex-source string (for typebox/JSON Schema `pattern`, and to compose larger patterns) and
 * as a RegExp (for code). Shared by the controller's CRD shapes, plugin configs and the data plane.
 */

/** One or more tchar (RFC 9110 §5.6.2 token: field names, methods), unanchored, for composing patterns. */
export const TOKEN_CHARS = "[A-Za-z0-9!#$%&'*+.^_`|~-]+";
/** A whole RFC 9110 token, as a JSON Schema pattern. */
export const TOKEN_PATTERN = `^${TOKEN_CHARS}$`;
export const TOKEN = new RegExp(TOKEN_PATTERN);

/**
 * A header name the gateway writes (a plugin's config names it): a token without "_", since
 * servers that read "_" as "-" would see an alias of another header (ARCHITECTURE §6.1 rule 3).
 */
export const HEADER_NAME_CHARS = "[A-Za-z0-9!#$%&'*+.^`|~-]+";
export const HEADER_NAME_PATTERN = `^${HEADER_NAME_CHARS}$`;

/**
 * Zero or more characters a header value may hold (RFC 9110 §5.5 field-value: HTAB, visible
 * ASCII, SP, obs-text), unanchored. Never CR, LF or NUL (ARCHITECTURE §6.1 rule 4).
 */
export const HEADER_VALUE_CHARS = '[\\t\\x20-\\x7e\\x80-\\xff]*';
/** A whole header value that is safe to send, as a JSON Schema pattern. */
export const HEADER_VALUE_PATTERN = `^${HEADER_VALUE_CHARS}$`;
export const HEADER_VALUE = new RegExp(HEADER_VALUE_PATTERN);

/**
 * A host name: RFC 1123 labels, lower case (Gateway API's PreciseHostname), unanchored, for
 * composing patterns (a listener's hostname may have "*." before it).
 */
export const HOST_NAME_CHARS = '[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*';
export const HOST_NAME = new RegExp(`^${HOST_NAME_CHARS}$`);

/** A client-supplied X-Request-Id we keep: 1 to 200 visible ASCII characters (no space, no control). */
export const REQUEST_ID_PATTERN = '^[\\x21-\\x7e]{1,200}$';
export const REQUEST_ID = new RegExp(REQUEST_ID_PATTERN);
