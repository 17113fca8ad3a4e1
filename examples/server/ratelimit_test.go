package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestClientNet(t *testing.T) {
	assert.Equal(t, "192.0.2.7", clientNet("192.0.2.7:5555"))
	assert.Equal(t, "2001:db8:1:2::/64", clientNet("[2001:db8:1:2:aaaa:bbbb:cccc:dddd]:443"))
	assert.Equal(t, clientNet("[2001:db8:1:2::1]:1"), clientNet("[2001:db8:1:2:ffff::9]:2"), "one /64, one bucket")
	assert.Equal(t, "pipe", clientNet("pipe"))
}

// TestLimiterBuckets: a bucket refuses past its burst, says when to come
// back, refills at the rate, and is forgotten once idle.
func TestLimiterBuckets(t *testing.T) {
	l := newLimiter(1, 2)
	now := time.Now()
	_, ok := l.take("a", now)
	assert.True(t, ok)
	_, ok = l.take("a", now)
	assert.True(t, ok)
	after, ok := l.take("a", now)
	assert.False(t, ok, "past the burst")
	assert.InDelta(t, time.Second, after, float64(10*time.Millisecond))
	_, ok = l.take("b", now)
	assert.True(t, ok, "another key")
	_, ok = l.take("a", now.Add(time.Second))
	assert.True(t, ok, "refilled")

	_, _ = l.take("c", now.Add(idleBucket+2*time.Second)) // sweeps
	assert.Len(t, l.buckets, 1, "idle buckets forgotten")
	assert.Nil(t, newLimiter(0, 10), "no rate, no limiter")
}
