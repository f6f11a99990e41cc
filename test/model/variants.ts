import { clusterCommands, clusterSettled, type ClusterModel } from './cluster-commands.ts';
import { keyCommands } from './key-arbitraries.ts';
import { newModel, type Model } from './key-model.ts';
import type { Variant } from './sequences.ts';

/** One node: every answer compared with the model. */
export const keysVariant: Variant<Model> = {
  name: 'keys',
  commands: keyCommands,
  model: newModel,
  maxCommands: 25,
};

/** Two nodes sharing one store: what must hold across nodes (test/model/cluster-commands.ts). */
export const clusterVariant: Variant<ClusterModel> = {
  name: 'cluster',
  commands: clusterCommands,
  model: () => ({ keys: [] }),
  after: clusterSettled,
  maxCommands: 15,
};
