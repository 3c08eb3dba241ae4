// Package nn holds a trained Spider policy network, an MLP or a columns
// network (one encoder shared by the ten columns, moves scored from their
// source and destination columns): its specification (the game
// configuration, observation and action shapes and architecture it was
// trained for), its weights, a forward pass through gonum's blas32
// interface (pure Go, or OpenBLAS under the openblas build tag; see BLAS)
// that allocates nothing per call for a game at a time, and the msgpack
// checkpoint that stores it. It has no training code, so agents and
// servers can load a policy without linking the trainer.
package nn
