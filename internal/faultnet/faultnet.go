// Package faultnet injects network faults for the reliability tests
// (docs/reliability.md, Faults): a TCP link to a server that a test cuts
// and restores.
package faultnet

import (
	"io"
	"net"
	"sync"
)

// Link forwards TCP connections to a server until it is cut: then it
// drops every open connection and refuses new ones, as a network
// partition would, until it is restored.
type Link struct {
	listener net.Listener
	target   string
	mu       sync.Mutex
	cut      bool
	open     map[net.Conn]bool
}

// NewLink listens on a free loopback port and forwards to target
// (host:port). Close ends it.
func NewLink(target string) (*Link, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	link := &Link{listener: l, target: target, open: map[net.Conn]bool{}}
	go link.serve()
	return link, nil
}

// Addr is the address clients connect to instead of the target.
func (l *Link) Addr() string { return l.listener.Addr().String() }

// Close stops the link and drops its connections.
func (l *Link) Close() {
	_ = l.listener.Close()
	l.SetCut(true)
}

func (l *Link) serve() {
	for {
		client, err := l.listener.Accept()
		if err != nil {
			return
		}
		l.mu.Lock()
		if l.cut {
			l.mu.Unlock()
			_ = client.Close()
			continue
		}
		server, err := net.Dial("tcp", l.target)
		if err != nil {
			l.mu.Unlock()
			_ = client.Close()
			continue
		}
		l.open[client], l.open[server] = true, true
		l.mu.Unlock()
		go func() { _, _ = io.Copy(server, client); _ = server.Close() }()
		go func() { _, _ = io.Copy(client, server); _ = client.Close() }()
	}
}

// SetCut cuts (true) or restores (false) the link.
func (l *Link) SetCut(cut bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cut = cut
	if cut {
		for c := range l.open {
			_ = c.Close()
		}
		clear(l.open)
	}
}
