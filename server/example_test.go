package server_test

import (
	"context"
	"fmt"
	"net"

	"github.com/spiderenv/spider/server"
)

// Serve on a free loopback port until the context ends; a client then
// speaks PROTOCOL.md to the printed address.
func Example() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- server.New(server.Config{MaxGames: 1024}).Serve(ctx, ln) }()
	fmt.Println("protocol version", server.Version)
	cancel()
	fmt.Println("stopped cleanly:", <-done == nil)
	// Output:
	// protocol version 1
	// stopped cleanly: true
}
