package server

import (
	"net"
	"testing"
)

// TestProcAddr checks the address format of /proc/net/tcp and tcp6.
func TestProcAddr(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:7878": "0100007F:1EC6",
		"[::1]:80":       "00000000000000000000000001000000:0050",
	} {
		a, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := procAddr(a); got != want {
			t.Errorf("procAddr(%s) = %s, want %s", addr, got, want)
		}
	}
}
