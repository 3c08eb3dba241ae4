//go:build !(linux && (amd64 || arm64))

package server

import "github.com/spiderenv/spider/env"

// shmSupported reports whether this build can share memory at all: memfd
// is Linux's.
const shmSupported = false

func newSegment(env.Layout, int) (*segment, error) {
	return nil, errNoShm("the server does not run on Linux")
}

func (sg *segment) closeFDs() {}
func (sg *segment) close()    {}
