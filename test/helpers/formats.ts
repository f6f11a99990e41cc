/** One base58 character (Bitcoin alphabet: no 0, O, I, l), as a regular-expression class. */
export const B58 = '[1-9A-HJ-NP-Za-km-z]';

/** A request id as answers carry it in X-Request-Id and meta.requestId. */
export const REQUEST_ID = new RegExp(`^req_${B58}+$`);
