package peercred

import (
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"
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

// TestTCPPeerUID finds the owner of a loopback client's socket both ways,
// by netlink (what the server uses) and from /proc/net/tcp (its fallback),
// and no owner once the client has closed it: its end then has uid 0,
// which is not the client's user.
func TestTCPPeerUID(t *testing.T) {
	for _, network := range []string{"tcp4", "tcp6"} {
		t.Run(network, func(t *testing.T) {
			host := "127.0.0.1:0"
			if network == "tcp6" {
				host = "[::1]:0"
			}
			client, c := loopbackPair(t, network, host)
			remote, local := c.RemoteAddr().(*net.TCPAddr), c.LocalAddr().(*net.TCPAddr)
			// The fallback first, which a machine without netlink uses.
			if uid, ok := procUID(remote, local); !ok || uid != os.Getuid() {
				t.Errorf("procUID = %d, %v; want %d, true", uid, ok, os.Getuid())
			}
			fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_DGRAM, syscall.NETLINK_INET_DIAG)
			if err != nil {
				client.Close()
				gone(t, remote, local, procUID)
				t.Skipf("no netlink sock_diag here (%v): the server reads /proc/net/tcp instead", err)
			}
			syscall.Close(fd)
			for name, find := range map[string]func(remote, local *net.TCPAddr) (int, bool){
				"diagUID":    func(r, l *net.TCPAddr) (int, bool) { return diagUID(r, l) },
				"procUID":    procUID,
				"tcpPeerUID": tcpPeerUID,
				"TCPPeerUID": func(*net.TCPAddr, *net.TCPAddr) (int, bool) { return TCPPeerUID(c) },
			} {
				if uid, ok := find(remote, local); !ok || uid != os.Getuid() {
					t.Errorf("%s = %d, %v; want %d, true", name, uid, ok, os.Getuid())
				}
			}
			if !diagWorks {
				t.Error("tcpPeerUID did not find netlink working")
			}
			// The socket found is the client's own: its inode, which also
			// pins where the reply's uid lies (just before it).
			var st syscall.Stat_t
			raw, err := client.(*net.TCPConn).SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			raw.Control(func(fd uintptr) { err = syscall.Fstat(int(fd), &st) })
			if err != nil {
				t.Fatal(err)
			}
			if _, inode, _ := diagSocket(remote, local); uint64(inode) != st.Ino {
				t.Errorf("diagSocket found inode %d, the client's socket is %d", inode, st.Ino)
			}
			// The server's end: the client's address as the remote one.
			if _, ok := diagUID(remote, &net.TCPAddr{IP: local.IP, Port: local.Port + 1}); ok {
				t.Error("diagUID found a socket for a pair no connection has")
			}
			client.Close()
			gone(t, remote, local, procUID)
			gone(t, remote, local, diagUID)
		})
	}
}

// TestTCPListenerUID finds the owner of the socket a loopback client
// dialled, by netlink and from /proc/net/tcp, whether the listener is bound
// to the loopback address or to every address (dual-stack for "tcp"),
// before the server has accepted the connection (when the server's end of
// it names no user yet), and no owner once nothing listens at the port.
func TestTCPListenerUID(t *testing.T) {
	for _, tc := range []struct{ network, listen, dial string }{
		{"tcp4", "127.0.0.1:0", "127.0.0.1"},
		{"tcp6", "[::1]:0", "::1"},
		{"tcp", ":0", "127.0.0.1"}, // dual-stack: an IPv6 socket takes the IPv4 connection
		{"tcp", ":0", "::1"},
		{"tcp4", "0.0.0.0:0", "127.0.0.1"},
	} {
		t.Run(tc.network+" "+tc.listen+" from "+tc.dial, func(t *testing.T) {
			ln, err := net.Listen(tc.network, tc.listen)
			if err != nil {
				t.Skipf("no %s listener at %s here: %v", tc.network, tc.listen, err)
			}
			defer ln.Close()
			port := ln.Addr().(*net.TCPAddr).Port
			client, err := net.Dial("tcp", net.JoinHostPort(tc.dial, strconv.Itoa(port)))
			if err != nil {
				t.Skipf("cannot dial %s here: %v", tc.dial, err)
			}
			defer client.Close()
			remote := client.RemoteAddr().(*net.TCPAddr)
			if uid, ok := procListenerUID(remote); !ok || uid != os.Getuid() {
				t.Errorf("procListenerUID = %d, %v; want %d, true", uid, ok, os.Getuid())
			}
			if uid, ok := TCPListenerUID(client); !ok || uid != os.Getuid() {
				t.Errorf("TCPListenerUID = %d, %v; want %d, true", uid, ok, os.Getuid())
			}
			if diagWorks {
				if uid, ok := diagListenerUID(remote); !ok || uid != os.Getuid() {
					t.Errorf("diagListenerUID = %d, %v; want %d, true", uid, ok, os.Getuid())
				}
			}
			ln.Close()
			for name, find := range map[string]func(*net.TCPAddr) (int, bool){
				"procListenerUID": procListenerUID, "diagListenerUID": diagListenerUID,
			} {
				if uid, ok := find(remote); ok {
					t.Errorf("%s found user %d at a port nothing listens at", name, uid)
				}
			}
		})
	}
}

// TestConnectionsOfOtherKinds: UnixUID does not answer for a TCP
// connection, nor either TCP lookup for a pipe or for a TCP connection that
// is not over loopback.
func TestConnectionsOfOtherKinds(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	// Linux answers SO_PEERCRED on a TCP socket too, with uid 4294967295.
	client, server := loopbackPair(t, "tcp4", "127.0.0.1:0")
	for _, c := range []net.Conn{client, server} {
		if uid, ok := UnixUID(c); ok {
			t.Errorf("UnixUID of a TCP connection = %d", uid)
		}
	}
	for name, find := range map[string]func(net.Conn) (int, bool){"TCPPeerUID": TCPPeerUID, "TCPListenerUID": TCPListenerUID} {
		if uid, ok := find(a); ok {
			t.Errorf("%s of a pipe = %d", name, uid)
		}
		if uid, ok := find(fakeConn{remote: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 80}, local: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 2), Port: 4000}}); ok {
			t.Errorf("%s of a connection to another machine = %d", name, uid)
		}
	}
}

// fakeConn is a connection with only addresses.
type fakeConn struct {
	net.Conn
	remote, local net.Addr
}

func (f fakeConn) RemoteAddr() net.Addr { return f.remote }
func (f fakeConn) LocalAddr() net.Addr  { return f.local }

// gone waits up to 5 s for find to name no owner of the closed client's
// end from remote to local.
func gone(t *testing.T, remote, local *net.TCPAddr, find func(remote, local *net.TCPAddr) (int, bool)) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		uid, ok := find(remote, local)
		if !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a closed client's end still names an owner, uid %d", uid)
		}
	}
}

// loopbackPair returns both ends of a TCP connection over network's
// loopback at host, or skips the test where there is none; both are
// closed when the test ends.
func loopbackPair(t *testing.T, network, host string) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen(network, host)
	if err != nil {
		t.Skipf("no %s loopback here: %v", network, err)
	}
	defer ln.Close()
	client, err = net.Dial(network, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}
