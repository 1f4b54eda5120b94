// Package faultnet injects network faults for the reliability tests
// (docs/reliability.md, Faults): a TCP link to a server that a test cuts
// (connections reset) or holds (bytes swallowed, nothing reset), and
// restores.
package faultnet

import (
	"io"
	"net"
	"sync"
)

// Link forwards TCP connections to a server. Cut, it drops every open
// connection and refuses new ones, as a partition that resets would. Held,
// it keeps every connection open and accepts new ones but forwards no
// byte, as a partition that drops packets would: a peer waits for an
// answer until its own deadline.
type Link struct {
	listener net.Listener
	target   string
	mu       sync.Mutex
	cut      bool
	held     bool
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
		switch {
		case l.cut:
			l.mu.Unlock()
			_ = client.Close()
			continue
		case l.held:
			// Accepted, and never answered.
			l.open[client] = true
			l.mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, client) }()
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
		go func() { l.pump(server, client); _ = server.Close() }()
		go func() { l.pump(client, server); _ = client.Close() }()
	}
}

// pump copies src to dst, swallowing what arrives while the link is held.
func (l *Link) pump(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			l.mu.Lock()
			held := l.held
			l.mu.Unlock()
			if !held {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// SetCut cuts (true) or restores (false) the link.
func (l *Link) SetCut(cut bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cut = cut
	if cut {
		l.dropAll()
	}
}

// SetHeld holds (true) or restores (false) the link. On restore, the
// connections that lived through the hold are dropped: bytes were lost
// in them, as their peers' deadlines would have ended them anyway.
func (l *Link) SetHeld(held bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	was := l.held
	l.held = held
	if was && !held {
		l.dropAll()
	}
}

func (l *Link) dropAll() {
	for c := range l.open {
		_ = c.Close()
	}
	clear(l.open)
}
