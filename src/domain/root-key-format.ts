/** What a root key looks like: `kh_root_` and base58 (generated keys: src/crypto/keys.ts generateRootKey). */
export const ROOT_KEY_PREFIX = 'kh_root_';
const ROOT_KEY_RE = /^kh_root_[1-9A-HJ-NP-Za-km-z]{22,64}$/;

/** Whether `key` has a root key's shape (KEYHOLD_BOOTSTRAP_ROOT_KEY, a given root key, an Authorization header). */
export const isWellFormedRootKey = (key: string): boolean => ROOT_KEY_RE.test(key);
