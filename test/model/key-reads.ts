import type fc from 'fast-check';
import { assertAttributes, assertStatus, hasKeys, picked, type Seen, type Version } from './key-commands.ts';
import type { Model } from './key-model.ts';
import { send, type ModelWorld } from './model-world.ts';

// keys.getKey of both versions, compared with the model: the key's attributes, or 404 once it is deleted.

type Cmd = fc.AsyncCommand<Model, ModelWorld>;

interface KeyV1 extends Seen {
  remaining?: number;
}
interface KeyV2 {
  data: Omit<Seen, 'remaining' | 'externalId'> & { credits?: { remaining: number | null }; identity?: { externalId: string } };
}

export class Get implements Cmd {
  readonly spec: { version: Version; pick: number };
  constructor(spec: Get['spec']) {
    this.spec = spec;
  }
  check = hasKeys;
  async run(m: Model, r: ModelWorld): Promise<void> {
    const { version, pick } = this.spec;
    const k = picked(m, pick);
    const res =
      version === 1
        ? await send<KeyV1 & { id: string }>(r, 'GET', '/v1/keys.getKey', { keyId: k.keyId })
        : await send<KeyV2>(r, 'POST', '/v2/keys.getKey', { keyId: k.keyId });
    assertStatus(res, k.deleted ? 404 : 200, this.toString());
    if (k.deleted) return;
    const seen = version === 1 ? v1Key(res.json as KeyV1 & { id: string }) : v2Key(res.json as KeyV2);
    assertAttributes(k, seen, this.toString());
  }
  toString = (): string => `get v${this.spec.version} ${JSON.stringify(this.spec)}`;
}

const v1Key = (j: KeyV1 & { id: string }): Seen => ({
  keyId: j.id,
  enabled: j.enabled,
  remaining: j.remaining,
  permissions: j.permissions,
  roles: j.roles,
  externalId: j.externalId,
});
const v2Key = ({ data: d }: KeyV2): Seen => ({
  keyId: d.keyId,
  enabled: d.enabled,
  remaining: d.credits?.remaining,
  permissions: d.permissions,
  roles: d.roles,
  externalId: d.identity?.externalId,
});
