package server

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"

	"github.com/spiderenv/spider/env"
)

// A connection on a Unix socket may ask make for its batch's buffers in
// shared memory ("shm": true): the server then builds the batch inside a
// memfd it maps, passes the descriptor to the client with the make reply
// (SCM_RIGHTS), and a step carries no arrays either way. Two memfds: the
// buffers, which the client can map read-only and nothing else (sealed:
// the batch reads its masks back to check actions, so a client that wrote
// them could have an illegal move played; nor may it shrink the file under
// the server's mapping, which would crash the server with SIGBUS), and
// the actions, n little-endian uint16 the client writes and the server
// copies out before it checks them as it checks a step's actions bin. A
// memfd has no name in any file system: once both processes have let go
// of it (closed, unmapped, exited, killed) the kernel frees it, so a crash
// on either side leaves nothing behind.

// segment is a connection's shared memory: the batch's buffers and the
// actions, each a sealed memfd mapped into the server.
type segment struct {
	layout  env.Layout
	buffers []byte // the batch's buffers, mapped read-write here
	actions []byte // n uint16, written by the client
	fds     [2]int // buffers, actions; -1 once sent and closed
}

// actionsAt copies the n actions the client wrote into dst.
func (sg *segment) actionsAt(dst []env.Action) {
	for i := range dst {
		dst[i] = env.Action(binary.LittleEndian.Uint16(sg.actions[2*i:]))
	}
}

// shmBytes is what a segment adds to a batch's memory beyond the buffers
// BatchBytes counts: the layout's padding (a cache line a field at most),
// the rest of the buffers' last page (the kernel maps whole pages), and
// the actions' 2 bytes a game rounded up to whole pages, one at least.
func shmBytes(n int) int64 {
	page := int64(os.Getpagesize())
	return 20*env.LayoutAlign + page + max((int64(2*n)+page-1)/page*page, page)
}

// unixConn returns c as a Unix socket connection, which can carry
// descriptors, or nil.
func unixConn(c net.Conn) *net.UnixConn {
	uc, _ := c.(*net.UnixConn)
	return uc
}

// errNoShm says why shared memory cannot be had here.
func errNoShm(why string) error { return fmt.Errorf("shared memory is not available: %s", why) }
