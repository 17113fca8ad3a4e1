// Command latencyproxy forwards TCP connections to another address and
// delays what passes by a fixed time in each direction: a database across
// a network, on loopback, for measuring what round trips cost.
//
//	go run ./tools/latencyproxy -listen 127.0.0.1:15432 -to 127.0.0.1:5432 -delay 250us
//
// Each direction of a connection keeps its order; what arrives is held
// until its time has come, then written. It runs until interrupted.
package main

import (
	"context"
	"flag"
	"log"
	"net"
	"os"
	"os/signal"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:15432", "address to listen on")
	to := flag.String("to", "127.0.0.1:5432", "address to forward to")
	delay := flag.Duration("delay", 250*time.Microsecond, "delay of each direction")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	context.AfterFunc(ctx, func() { ln.Close() })
	log.Printf("latencyproxy: %s -> %s, %v each way", ln.Addr(), *to, *delay)
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Fatal(err)
		}
		go forward(c, *to, *delay)
	}
}

// forward joins c to a new connection to addr, both ways delayed.
func forward(c net.Conn, addr string, delay time.Duration) {
	defer c.Close()
	d, err := net.Dial("tcp", addr)
	if err != nil {
		log.Print(err)
		return
	}
	defer d.Close()
	done := make(chan struct{}, 2)
	go func() { pipe(d, c, delay); done <- struct{}{} }()
	go func() { pipe(c, d, delay); done <- struct{}{} }()
	<-done // either side closed: close both
}

// chunk is what one read got, and when.
type chunk struct {
	b  []byte
	at time.Time
}

// pipe copies from src to dst, each chunk delay after it was read.
func pipe(dst, src net.Conn, delay time.Duration) {
	q := make(chan chunk, 4096)
	go func() {
		defer close(q)
		for {
			b := make([]byte, 64<<10)
			n, err := src.Read(b)
			if n > 0 {
				q <- chunk{b[:n], time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		if w := time.Until(c.at.Add(delay)); w > 0 {
			time.Sleep(w)
		}
		if _, err := dst.Write(c.b); err != nil {
			src.Close() // the reader ends
			for range q {
			}
			return
		}
	}
	dst.Close()
}
