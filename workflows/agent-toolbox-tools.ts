import type { Toolbox } from './agent-toolbox';

/**
 * The tool-only toolbox (custom agents): the job's tool selections are the whole toolbox, so the loop
 * sends every action to them (a tool the run does not have is recorded as such) and nothing else acts.
 */
export function toolsOnlyToolbox(): Toolbox {
  return {
    conversation: true,
    observe: async () => null,
    act: async (_at, action) => {
      throw new Error(`a tool-only run acts through its tool selections only (got ${action.name})`);
    },
    handOver: () => null,
    close: async () => {},
  };
}
