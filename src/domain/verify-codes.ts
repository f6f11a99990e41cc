/** The outcomes of keys.verifyKey, in the order its checks run (docs/key-verification.md); the first failure wins. */
export const VERIFY_CODES = [
  'VALID',
  'NOT_FOUND',
  'FORBIDDEN',
  'USAGE_EXCEEDED',
  'RATE_LIMITED',
  'DISABLED',
  'INSUFFICIENT_PERMISSIONS',
  'EXPIRED',
] as const;

export type VerifyCode = (typeof VERIFY_CODES)[number];
