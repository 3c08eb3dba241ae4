//go:build !(linux && (amd64 || arm64 || 386))

package server

import (
	"net"

	"github.com/spiderenv/spider/env"
)

// shmSupported reports whether this build can share memory at all: memfd
// is Linux's, and its system call number is known here for amd64, arm64
// and 386 only.
const shmSupported = false

// noShmWhy is why a make that asks for shared memory is served over the
// socket.
const noShmWhy = "this server has no shared memory: it needs Linux on amd64, arm64 or 386"

func newSegment(env.Layout, int) (*segment, error) {
	return nil, errNoShm(noShmWhy)
}

func (sg *segment) closeFDs() {}
func (sg *segment) close()    {}

// sendWithFDs is never called where no segment can be made.
func sendWithFDs(*net.UnixConn, []byte, []int) error { return errNoShm(noShmWhy) }
