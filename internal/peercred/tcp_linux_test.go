package peercred

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/spiderenv/spider/internal/otheruser"
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
			if diagState.Load() != diagYes {
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

// TestTCPServerUID finds the owner of the server's side of a loopback
// connection, by netlink and from /proc/net/tcp, whether the listener is
// bound to the loopback address or to every address (dual-stack for
// "tcp"): the listener before the server has accepted the connection
// (when the server's end names no user yet), the server's end once it has,
// even after the listener is closed (a server that closed it to hide was
// let through), and no owner once both are gone.
func TestTCPServerUID(t *testing.T) {
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
			remote, local := client.RemoteAddr().(*net.TCPAddr), client.LocalAddr().(*net.TCPAddr)
			want := func(name string, uid int, ok bool) { t.Helper(); wantUID(t, name, uid, ok, os.Getuid()) }
			wantListener(t, client, os.Getuid())
			server, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			ln.Close()
			for name, find := range map[string]func(*net.TCPAddr) (int, bool){
				"procListenerUID": procListenerUID, "diagListenerUID": diagListenerUID,
			} {
				if uid, ok := find(remote); ok {
					t.Errorf("%s found user %d at a port nothing listens at", name, uid)
				}
			}
			uid, ok := TCPServerUID(client)
			want("TCPServerUID after the accept, the listener closed", uid, ok)
			uid, ok = procUID(remote, local)
			want("procUID of the server's end", uid, ok)
			server.Close()
			gone(t, remote, local, procUID)
			if uid, ok := TCPServerUID(client); ok {
				t.Errorf("TCPServerUID = %d with the server's end and listener closed", uid)
			}
		})
	}
}

// TestTCPServerUIDOfAnotherUser names another user's server however it
// listens: on a socket bound to the loopback device (SO_BINDTODEVICE,
// which any user may set, and which a lookup on no interface missed), and
// after it accepted and closed its listener. And where another user
// listens at 0.0.0.0:P, this user's [::1]:P is named for a connection to
// [::1]:P (the IPv4 listener, read first, was named). Needs root, to run
// python3 as user 65534.
func TestTCPServerUIDOfAnotherUser(t *testing.T) {
	in, out := otheruser.Python(t, `import socket, sys
s = socket.socket(socket.AF_INET)
try:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, b"lo")
except PermissionError:
    print("unprivileged", flush=True); sys.exit()  # before Linux 5.7 it needs CAP_NET_RAW
s.bind(("127.0.0.1", 0)); s.listen(1)
print(s.getsockname()[1], flush=True)
sys.stdin.readline()
c, _ = s.accept(); s.close()
print("accepted", flush=True)
sys.stdin.readline()`)
	port := otheruser.ReadLine(t, out)
	if port == "unprivileged" {
		t.Skip("SO_BINDTODEVICE needs CAP_NET_RAW on this kernel (before 5.7): no user could bind so")
	}
	client, err := net.Dial("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	remote, local := client.RemoteAddr().(*net.TCPAddr), client.LocalAddr().(*net.TCPAddr)
	want := func(name string, uid int, ok bool) { t.Helper(); wantUID(t, name, uid, ok, otheruser.UID) }
	wantListener(t, client, otheruser.UID) // bound to lo
	fmt.Fprintln(in, "accept")
	if line := otheruser.ReadLine(t, out); line != "accepted" {
		t.Fatalf("the other user's server: %q", line)
	}
	uid, ok := TCPServerUID(client)
	want("TCPServerUID once it accepted and closed its listener", uid, ok)
	uid, ok = procUID(remote, local)
	want("procUID of its end", uid, ok)

	// An IPv4 wildcard of another user's beside this user's [::1] on one port.
	_, out4 := otheruser.Python(t, `import socket, sys
s = socket.socket(socket.AF_INET); s.bind(("0.0.0.0", 0)); s.listen(1)
print(s.getsockname()[1], flush=True); sys.stdin.readline()`)
	port = otheruser.ReadLine(t, out4)
	ln, err := net.Listen("tcp6", "[::1]:"+port)
	if err != nil {
		t.Skip("no [::1] here:", err)
	}
	defer ln.Close()
	c6, err := net.Dial("tcp6", "[::1]:"+port)
	if err != nil {
		t.Fatal(err)
	}
	defer c6.Close()
	if uid, ok := procListenerUID(c6.RemoteAddr().(*net.TCPAddr)); !ok || uid != os.Getuid() {
		t.Errorf("procListenerUID of [::1]:%s = %d, %v; want this user's %d", port, uid, ok, os.Getuid())
	}
	if uid, ok := TCPServerUID(c6); !ok || uid != os.Getuid() {
		t.Errorf("TCPServerUID of [::1]:%s = %d, %v; want this user's %d", port, uid, ok, os.Getuid())
	}
}

// wantListener fails the test unless every lookup names want as the
// owner of the server's side of client before the server accepts it: the
// listener, read from /proc and (where it works) by netlink.
func wantListener(t *testing.T, client net.Conn, want int) {
	t.Helper()
	remote := client.RemoteAddr().(*net.TCPAddr)
	uid, ok := TCPServerUID(client)
	wantUID(t, "TCPServerUID before the accept", uid, ok, want)
	uid, ok = procListenerUID(remote)
	wantUID(t, "procListenerUID", uid, ok, want)
	if diagState.Load() == diagYes {
		uid, ok = diagListenerUID(remote)
		wantUID(t, "diagListenerUID", uid, ok, want)
	}
}

// wantUID fails the test unless a lookup found want.
func wantUID(t *testing.T, name string, uid int, ok bool, want int) {
	t.Helper()
	if !ok || uid != want {
		t.Errorf("%s = %d, %v; want %d, true", name, uid, ok, want)
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
	for name, find := range map[string]func(net.Conn) (int, bool){"TCPPeerUID": TCPPeerUID, "TCPServerUID": TCPServerUID} {
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

// TestAGoneConnectionDoesNotTurnNetlinkOff: a first lookup for a
// connection already closed (a client that connects and resets at once,
// which any user can make a server's first) leaves the choice of netlink
// open, where it turned netlink off for the process and every later
// lookup read /proc; a live connection then decides it.
func TestAGoneConnectionDoesNotTurnNetlinkOff(t *testing.T) {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_DGRAM, syscall.NETLINK_INET_DIAG)
	if err != nil {
		t.Skipf("no netlink sock_diag here (%v)", err)
	}
	syscall.Close(fd)
	defer diagState.Store(diagState.Load())
	diagState.Store(diagUnknown)
	client, server := loopbackPair(t, "tcp4", "127.0.0.1:0")
	remote, local := server.RemoteAddr().(*net.TCPAddr), server.LocalAddr().(*net.TCPAddr)
	client.Close()
	server.Close()
	gone(t, remote, local, procUID)
	if uid, ok := tcpPeerUID(remote, local); ok {
		t.Fatalf("a closed connection's peer: user %d", uid)
	}
	if got := diagState.Load(); got != diagUnknown {
		t.Fatalf("after a gone connection, netlink state %d; want %d (undecided)", got, diagUnknown)
	}
	live, c := loopbackPair(t, "tcp4", "127.0.0.1:0")
	if uid, ok := TCPPeerUID(c); !ok || uid != os.Getuid() {
		t.Fatalf("TCPPeerUID of a live connection = %d, %v", uid, ok)
	}
	if got := diagState.Load(); got != diagYes {
		t.Fatalf("after a live connection, netlink state %d; want %d (works)", got, diagYes)
	}
	live.Close()
}

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
