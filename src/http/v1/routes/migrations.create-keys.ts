import { Type } from '@sinclair/typebox';
import { createKeysByMigration } from '../../../services/migrations/import-keys.ts';
import { importProblems, MAX_IMPORT_ITEMS } from '../../../services/migrations/import-item.ts';
import type { App, Deps } from '../../types.ts';
import { requires, responses } from '../../schemas/common.ts';
import { ImportItem } from '../../schemas/migrations.ts';

export default function migrationsCreateKeys(app: App, deps: Deps) {
  app.post(
    '/v1/migrations.createKeys',
    {
      config: { bodyRules: (body) => (Array.isArray(body) ? importProblems(body) : []) },
      schema: {
        ...requires(
          'Import keys from existing key material (hashes or plaintexts), all or nothing',
          'for every distinct apiId `api.<apiId>.create_key`; plus `api.<apiId>.encrypt_key` when an item for it has `plaintext`',
        ),
        body: Type.Array(ImportItem, { minItems: 1, maxItems: MAX_IMPORT_ITEMS }),
        response: responses(Type.Object({ keyIds: Type.Array(Type.String(), { description: 'The new key ids, in request order.' }) })),
      },
    },
    (req) => createKeysByMigration(deps.store.db, req.caller, req.body, deps.vault),
  );
}
