// Package train trains neural Spider policies with gorgonia: a masked
// actor-critic learned by PPO on rollouts from the in-process env.Batch,
// with an optional behaviour-cloning warm start and DAgger rounds from the
// greedy, search or random agent.
// The network it trains is an nn.Net (package agents/nn), which the
// agents package plays; train imports it, never the other way round.
package train
