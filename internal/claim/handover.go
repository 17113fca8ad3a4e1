package claim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/parleychat/parley/messaging/driver"
)

// HandoverPrefix is the prefix of the keys of handover objects: one per
// copy of a database into a bucket (storage/storecopy writes them, once;
// nothing rewrites them), at HandoverPrefix + from + "/" + to + ".json".
const HandoverPrefix = "parley-handovers/"

// HandoverNote is what Handover.Note says.
const HandoverNote = "A copy handed the files under prefixes, made by the Parley database from, to the database to. " +
	"Shared: both databases may serve them and neither deletes them. Do not edit or delete this object."

// Handover records that a copy handed the files under Prefixes (made by
// the database From, or handed to it) to the database To, a copy of it.
//
// A shared handover (Shared: the copy's bucket is the source's, a
// database-only move) freezes Prefixes: both databases serve the files
// under them and neither moves aside or deletes one, since either may
// still name it; From makes its new files under a new prefix of its own
// (see Prefix). An exclusive handover (a copy into another bucket, which
// From never uses) makes the files under Prefixes To's own.
type Handover struct {
	Note     string    `json:"note"`
	From     string    `json:"from_installation_id"`
	To       string    `json:"to_installation_id"`
	Prefixes []string  `json:"prefixes"`
	Shared   bool      `json:"shared"`
	At       time.Time `json:"at"`
}

// HandoverKey returns the key of the handover object of from to to.
func HandoverKey(from, to string) string { return HandoverPrefix + from + "/" + to + ".json" }

// Marshal returns the bytes of the handover object of h.
func (h Handover) Marshal() ([]byte, error) {
	data, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// LoadHandovers reads every handover object of b. A blob store that is not
// a driver.Lister has none (a copy cannot write one there either).
func LoadHandovers(ctx context.Context, b Opener) ([]Handover, error) {
	l, ok := b.(driver.Lister)
	if !ok {
		return nil, nil
	}
	var keys []string
	if err := l.List(ctx, HandoverPrefix, func(o driver.Object) error {
		keys = append(keys, o.Key)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("list the handovers %s: %w", HandoverPrefix, err)
	}
	var hs []Handover
	for _, k := range keys {
		r, err := b.Open(ctx, k)
		if errors.Is(err, driver.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(io.LimitReader(r, MaxBytes))
		_ = r.Close()
		if err != nil {
			return nil, err
		}
		var h Handover
		if err := json.Unmarshal(data, &h); err != nil || h.From == "" || h.To == "" {
			return nil, fmt.Errorf("%w: the handover %s cannot be read (%v): restore it", ErrMalformed, k, err)
		}
		hs = append(hs, h)
	}
	return hs, nil
}

// Rights is what the handovers of a bucket leave to one installation.
type Rights struct {
	// Own is the prefix of the installation's new files: keyPrefix + id +
	// "/", or, once shared handovers froze that, keyPrefix + id + "/g" +
	// their number + "/". Own is never frozen.
	Own string
	// Served are the prefixes whose files the installation serves: its
	// own base prefix (every generation) and those handed to it.
	Served []string
	// Exclusive are the prefixes handed to it by exclusive handovers.
	Exclusive []string
	// Frozen are the prefixes of the shared handovers it is part of, from
	// or to it: no one deletes or moves aside a file under them, but
	// under Own.
	Frozen []string
	// Legacy is true when it may delete keys keyPrefix + attachment id
	// (files from before installation ids): no shared handover involves it.
	Legacy bool
	// SharedWith names the installations it shares frozen files with:
	// those of its shared handovers, and theirs in turn (a database-only
	// copy of a database-only copy shares the first one's files too).
	SharedWith []string
	// HandedFrom is the installation that handed it files, if any (the
	// last handover's).
	HandedFrom string
}

// RightsOf returns what hs leave to the installation id.
func RightsOf(hs []Handover, keyPrefix, id string) Rights {
	base := keyPrefix + id + "/"
	r := Rights{Legacy: true, Served: []string{base}}
	gen := 0
	for _, h := range hs {
		switch id {
		case h.From:
			if h.Shared {
				gen++
				r.Legacy = false
				r.Frozen = append(r.Frozen, h.Prefixes...)
				r.SharedWith = append(r.SharedWith, h.To)
			}
		case h.To:
			r.Served = append(r.Served, h.Prefixes...)
			r.HandedFrom = h.From
			if h.Shared {
				r.Legacy = false
				r.Frozen = append(r.Frozen, h.Prefixes...)
				r.SharedWith = append(r.SharedWith, h.From)
			} else {
				r.Exclusive = append(r.Exclusive, h.Prefixes...)
			}
		}
	}
	r.SharedWith = sharedWith(hs, id, r.SharedWith)
	r.Own = base
	if gen > 0 {
		r.Own = base + "g" + strconv.Itoa(gen) + "/"
	}
	return r
}

// sharedWith returns direct, the installations that id shares files
// with by the shared handovers of hs, and after them those that they
// share files with in turn, other than id.
func sharedWith(hs []Handover, id string, direct []string) []string {
	out := direct
	seen := map[string]bool{id: true}
	for _, x := range direct {
		seen[x] = true
	}
	for i := 0; i < len(out); i++ {
		for _, h := range hs {
			if !h.Shared {
				continue
			}
			for _, next := range []string{h.From, h.To} {
				if (h.From == out[i] || h.To == out[i]) && !seen[next] {
					seen[next] = true
					out = append(out, next)
				}
			}
		}
	}
	return out
}

// MayDelete reports whether the installation may delete or move aside the
// object at key, a key under keyPrefix: one under Own, or under an
// exclusive handover and no frozen prefix, or (with Legacy) keyPrefix and
// an attachment id.
func (r Rights) MayDelete(keyPrefix, key string) bool {
	switch {
	case Under(key, []string{r.Own}):
		return true
	case Under(key, r.Frozen):
		return false
	case Under(key, r.Exclusive):
		return true
	}
	rest, ok := strings.CutPrefix(key, keyPrefix)
	return ok && r.Legacy && rest != "" && !strings.Contains(rest, "/")
}

// Serves reports whether the installation serves the object at key as
// the file of the attachment id: key is keyPrefix + id, or a served
// prefix, an optional generation "g<n>/", and id.
func (r Rights) Serves(keyPrefix, key, id string) bool {
	p, ok := strings.CutSuffix(key, id)
	if !ok || id == "" {
		return false
	}
	if p == keyPrefix {
		return true
	}
	for _, s := range r.Served {
		rest, ok := strings.CutPrefix(p, s)
		if !ok {
			continue
		}
		if rest == "" {
			return true
		}
		if g, ok := strings.CutSuffix(rest, "/"); ok && len(g) > 1 && g[0] == 'g' {
			if _, err := strconv.Atoi(g[1:]); err == nil {
				return true
			}
		}
	}
	return false
}

// Under reports whether key is the key of an object under one of
// prefixes.
func Under(key string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(key, p) && len(key) > len(p) {
			return true
		}
	}
	return false
}
