package main

import (
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/parleychat/parley/messaging"
)

// limiter is the server's rate limit (-rate, -burst): a token bucket per
// caller, and one per client address for requests whose credentials were
// refused, so that guessing tokens is throttled. The API asks it through
// httpadapter.Options.Limit, and GET /chat/me asks it the same way, so
// that no path authenticates outside it.
//
// Behind a proxy every client has the proxy's address: refused credentials
// then share one bucket (a host reads its proxy's X-Forwarded-For instead).
type limiter struct {
	every rate.Limit
	burst int

	mu      sync.Mutex
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

// Buckets idle for idleBucket are forgotten (refilled by then at any
// usable rate); at most maxBuckets are kept.
const (
	idleBucket = 10 * time.Minute
	maxBuckets = 100_000
)

// newLimiter returns a limiter of perSecond requests a second, in bursts
// of burst, or nil when perSecond is not positive (no limit).
func newLimiter(perSecond float64, burst int) *limiter {
	if perSecond <= 0 {
		return nil
	}
	return &limiter{every: rate.Limit(perSecond), burst: max(1, burst), buckets: map[string]*bucket{}}
}

// Limit is an httpadapter.Options.Limit: the caller's bucket, or for a
// refused request (no caller) its client address's.
func (l *limiter) Limit(r *http.Request, caller messaging.Contact) (time.Duration, bool) {
	key := "caller " + caller.ID
	if caller.ID == "" {
		key = "address " + clientNet(r.RemoteAddr)
	}
	return l.take(key, time.Now())
}

// clientNet is the client of a remote address as a bucket knows it: an
// IPv4 address, or the /64 of an IPv6 address (one host's share, which a
// client can fill with addresses of its own).
func clientNet(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.To4() != nil {
		return host
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// take takes a token of key's bucket, or reports how long until one.
func (l *limiter) take(key string, now time.Time) (time.Duration, bool) {
	l.mu.Lock()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxBuckets || now.Sub(l.swept) > idleBucket {
			l.sweep(now)
		}
		b = &bucket{lim: rate.NewLimiter(l.every, l.burst)}
		l.buckets[key] = b
	}
	b.seen = now
	l.mu.Unlock()
	res := b.lim.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now) // a refused request takes no token
		return d, false
	}
	return 0, true
}

// sweep forgets the idle buckets; when all are busy and there are too
// many, it forgets them all (each starts full again). l.mu is held.
func (l *limiter) sweep(now time.Time) {
	l.swept = now
	for k, b := range l.buckets {
		if now.Sub(b.seen) > idleBucket {
			delete(l.buckets, k)
		}
	}
	if len(l.buckets) >= maxBuckets {
		clear(l.buckets)
	}
}
