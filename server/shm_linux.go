//go:build linux && (amd64 || arm64 || 386)

package server

import (
	"net"
	"syscall"
	"unsafe"

	"github.com/spiderenv/spider/env"
)

// memfd_create's flags and fcntl's sealing commands (linux/memfd.h,
// linux/fcntl.h), which package syscall does not name.
const (
	mfdCloexec       = 0x1
	mfdAllowSealing  = 0x2
	fAddSeals        = 1033
	fSealSeal        = 0x1
	fSealShrink      = 0x2
	fSealGrow        = 0x4
	fSealFutureWrite = 0x10
)

// shmSupported reports whether this build can share memory at all.
const shmSupported = true

// noShmWhy is unused where memory can be shared.
const noShmWhy = ""

// newSegment creates and maps the memfds of a batch of n games laid out by
// l, sealed as segment says. Nothing is left open after an error.
func newSegment(l env.Layout, n int) (_ *segment, err error) {
	sg := &segment{layout: l, fds: [2]int{-1, -1}}
	defer func() {
		if err != nil {
			sg.close()
		}
	}()
	if sg.fds[0], sg.buffers, err = memfd("spider-batch", l.Size, fSealShrink|fSealGrow|fSealFutureWrite|fSealSeal); err != nil {
		return nil, err
	}
	if sg.fds[1], sg.actions, err = memfd("spider-actions", 2*n, fSealShrink|fSealGrow|fSealSeal); err != nil {
		return nil, err
	}
	return sg, nil
}

// memfd creates a memfd of size bytes, maps it shared and read-write, and
// seals it with seals. The mapping is made before the seals, since
// F_SEAL_FUTURE_WRITE refuses writable mappings made after it.
func memfd(name string, size int, seals int) (fd int, mem []byte, err error) {
	cname, err := syscall.BytePtrFromString(name)
	if err != nil {
		return -1, nil, err
	}
	r, _, errno := syscall.Syscall(sysMemfdCreate, uintptr(unsafe.Pointer(cname)), mfdCloexec|mfdAllowSealing, 0)
	if errno != 0 {
		return -1, nil, errNoShm("memfd_create: " + errno.Error())
	}
	fd = int(r)
	fail := func(what string, e error) (int, []byte, error) {
		if mem != nil {
			syscall.Munmap(mem)
		}
		syscall.Close(fd)
		return -1, nil, errNoShm(what + ": " + e.Error())
	}
	if err := syscall.Ftruncate(fd, int64(size)); err != nil {
		return fail("ftruncate", err)
	}
	if mem, err = syscall.Mmap(fd, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED); err != nil {
		return fail("mmap", err)
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), fAddSeals, uintptr(seals)); errno != 0 {
		return fail("sealing the memfd", errno) // F_SEAL_FUTURE_WRITE needs Linux 5.1
	}
	return fd, mem, nil
}

// closeFDs closes the descriptors still open: after they were sent, or
// when they never will be.
func (sg *segment) closeFDs() {
	for i, fd := range sg.fds {
		if fd >= 0 {
			syscall.Close(fd)
			sg.fds[i] = -1
		}
	}
}

// close unmaps the segment and closes what is still open. The batch built
// in it must be closed first.
func (sg *segment) close() {
	sg.closeFDs()
	if sg.buffers != nil {
		syscall.Munmap(sg.buffers)
		sg.buffers = nil
	}
	if sg.actions != nil {
		syscall.Munmap(sg.actions)
		sg.actions = nil
	}
}

// sendWithFDs writes frame with fds attached to its first bytes, then the
// rest of the frame if the kernel took only part of it.
func sendWithFDs(uc *net.UnixConn, frame []byte, fds []int) error {
	n, _, err := uc.WriteMsgUnix(frame, syscall.UnixRights(fds...), nil)
	if err != nil {
		return err
	}
	if n < len(frame) {
		_, err = uc.Write(frame[n:])
	}
	return err
}
