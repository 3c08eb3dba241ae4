// Package server serves batches of Spider games over a socket in the
// msgpack protocol of PROTOCOL.md. Each connection owns one env.Batch with
// its own configuration; connections are served concurrently, and a
// malformed or hostile message gets an error reply (or, if the stream can
// no longer be read, a closed connection) without disturbing the others.
package server
