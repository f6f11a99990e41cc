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
